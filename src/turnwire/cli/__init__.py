"""The command line: ``turnwire`` and its subcommands (entry point :func:`main`)."""

from turnwire.cli.main import main

__all__ = ["main"]
