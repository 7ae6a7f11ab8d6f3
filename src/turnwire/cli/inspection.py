"""The commands that look at an installation rather than a thread: ``check-config``,
``plugins`` and ``schema``; and ``demo``, which shows one working."""

from __future__ import annotations

import argparse
import logging
import sys
from typing import Any

from turnwire.cli.options import config_files, show_warnings
from turnwire.cli.printer import echo, echo_json

__all__ = ["check_config_command", "demo_command", "plugins_command", "schema_command"]

logger = logging.getLogger("turnwire")


def check_config_command(args: argparse.Namespace) -> int:
    """Validate the merged settings and the plugins they load; with --print, show them.
    Settings that are valid but replay no reasoning they could are warned of."""
    from turnwire import build_container, load_settings
    from turnwire.config.settings import replay_problems

    show_warnings(args)
    files = config_files(args)
    settings = load_settings(files)
    for problem in replay_problems(settings.render):
        logger.warning("%s", problem, extra={"kind": "replays-nothing"})
    # Loading the plugins validates plugins.settings against each plugin's own schema too.
    manager = build_container(settings=settings).plugin_manager()
    loaded = [info.name for info in manager.describe() if not info.builtin]
    if args.print_settings:
        import yaml

        echo(yaml.safe_dump(_printable(settings), sort_keys=False, allow_unicode=True), end="")
    if not args.quiet:
        names = ", ".join(str(file) for file in files) or "the defaults"
        plugins = f" (plugins: {', '.join(loaded)})" if loaded else ""
        echo(f"ok: {names}{plugins}", file=sys.stderr if args.print_settings else sys.stdout)
    return 0


def _printable(settings: Any) -> dict[str, Any]:
    """The settings as a tree, with every credential they hold replaced by ``[redacted]``."""
    import msgspec

    from turnwire._redact import is_secret_header, redact

    tree: dict[str, Any] = msgspec.to_builtins(settings)
    tree["client"]["base_url"] = redact(tree["client"]["base_url"])  # user:password@
    headers = tree["client"]["headers"]
    for name in headers:
        if is_secret_header(name):
            headers[name] = "[redacted]"
    for tool in tree["tools"].get("hosted", ()):  # an MCP server's: every value
        if tool.get("headers"):
            tool["headers"] = dict.fromkeys(tool["headers"], "[redacted]")
        if "authorization" in tool:
            tool["authorization"] = "[redacted]"
    # A credential the configuration copied into an ordinary field (``${OPENAI_API_KEY}`` in
    # request.metadata, say): every other text goes through the one redaction routine too.
    redacted: dict[str, Any] = _redacted(tree, redact)
    return redacted


def _redacted(value: Any, redact: Any) -> Any:
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {key: _redacted(item, redact) for key, item in value.items()}
    if isinstance(value, list):
        return [_redacted(item, redact) for item in value]
    return value


def plugins_command(args: argparse.Namespace) -> int:
    """List the built-in and installed plugins, their versions and hooks."""
    import msgspec

    from turnwire import build_container

    show_warnings(args)
    manager = build_container(args.config).plugin_manager()
    infos = manager.describe()
    if args.json:
        payload = {"plugins": msgspec.to_builtins(infos), "skipped": manager.skipped}
        echo_json(msgspec.json.encode(payload).decode())
        return 0
    width = max(len(info.name) for info in infos)
    for info in infos:
        origin = f"{info.distribution} {info.version}"
        kind = "built-in" if info.builtin else "plugin"
        echo(f"{info.name:<{width}}  {kind:<8}  {origin}")
        echo(f"{'':<{width}}  hooks: {', '.join(info.hooks)}")
    for name, reason in sorted(manager.skipped.items()):
        echo(f"{name:<{width}}  skipped   ({reason})")
    return 0


def schema_command(args: argparse.Namespace) -> int:
    """Print the JSON Schema of thread files or of configuration files."""
    import msgspec

    from turnwire.config.schema import config_schema, thread_schema

    schema = thread_schema() if args.kind == "thread" else config_schema()
    echo_json(msgspec.json.format(msgspec.json.encode(schema), indent=2).decode())
    return 0


def demo_command(args: argparse.Namespace) -> int:
    """Run the offline demo conversation."""
    from turnwire.demo import run_demo

    return int(run_demo(db=args.store))
