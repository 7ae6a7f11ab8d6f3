"""The ``turnwire`` command."""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence

from turnwire.errors import InputError, TurnwireError

__all__ = ["main"]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="turnwire",
        description="Render stored conversations into exact OpenAI Responses API requests.",
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="log warnings to stderr")
    parser.add_argument(
        "--trace",
        action="store_true",
        help="log every stage call to stderr (with plugins.trace: true)",
    )
    commands = parser.add_subparsers(dest="command", required=True)

    render = commands.add_parser("render", help="print the request body a thread renders to")
    render.add_argument("thread", help="a thread file (YAML or JSON, schema version 1)")
    render.add_argument(
        "--config",
        action="append",
        default=[],
        metavar="FILE",
        help="a configuration profile, merged over the defaults (repeatable)",
    )
    render.add_argument("--model", help="the model (overrides the thread and the config)")

    check = commands.add_parser("check-config", help="validate configuration files")
    check.add_argument("files", nargs="+", metavar="FILE")

    plugins = commands.add_parser("plugins", help="list plugins, versions and their hooks")
    plugins.add_argument(
        "--config",
        action="append",
        default=[],
        metavar="FILE",
        help="a configuration profile (its plugins: section applies)",
    )
    plugins.add_argument("--json", action="store_true", help="print JSON")
    return parser


def _render(args: argparse.Namespace) -> int:
    from turnwire.api import render

    rendered = render(args.thread, config_files=args.config, model=args.model)
    sys.stdout.buffer.write(rendered.body + b"\n")
    sys.stdout.flush()
    return 0


def _check_config(args: argparse.Namespace) -> int:
    from turnwire.settings import load_settings

    load_settings(args.files)
    print(f"ok: {', '.join(args.files)}")
    return 0


def _plugins(args: argparse.Namespace) -> int:
    import msgspec

    from turnwire.container import build_container

    manager = build_container(args.config).plugin_manager()
    infos = manager.describe()
    if args.json:
        payload = {"plugins": msgspec.to_builtins(infos), "skipped": manager.skipped}
        print(msgspec.json.encode(payload).decode())
        return 0
    width = max(len(info.name) for info in infos)
    for info in infos:
        origin = f"{info.distribution} {info.version}"
        kind = "built-in" if info.builtin else "plugin"
        print(f"{info.name:<{width}}  {kind:<8}  {origin}")
        print(f"{'':<{width}}  hooks: {', '.join(info.hooks)}")
    for name, reason in sorted(manager.skipped.items()):
        print(f"{name:<{width}}  skipped   ({reason})")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command; return its exit status (2 for bad input, 1 for a failed run)."""
    args = _parser().parse_args(argv)
    logging.basicConfig(
        level=logging.WARNING if args.verbose else logging.ERROR,
        format="turnwire: %(levelname)s: %(message)s",
    )
    if args.trace:
        logging.getLogger("turnwire.trace").setLevel(logging.DEBUG)
    handlers = {"render": _render, "check-config": _check_config, "plugins": _plugins}
    try:
        return handlers[args.command](args)
    except InputError as err:
        print(f"error: {err.code}: {err}", file=sys.stderr)
        return 2
    except TurnwireError as err:
        print(f"error: {err.code}: {err}", file=sys.stderr)
        return 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
