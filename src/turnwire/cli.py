"""The ``turnwire`` command."""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence
from typing import Any

from turnwire.errors import ConfigError, InputError, TurnwireError

__all__ = ["main"]


def _version() -> str:
    from importlib import metadata

    try:
        return metadata.version("turnwire")
    except metadata.PackageNotFoundError:  # pragma: no cover - a bare checkout
        return "unknown"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="turnwire",
        description="Render stored conversations into exact OpenAI Responses API requests.",
    )
    parser.add_argument("--version", action="version", version=f"turnwire {_version()}")
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
    render.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="one setting, as a YAML value (request.temperature=0.2); repeatable",
    )

    run = commands.add_parser("run", help="send a thread, stream the answer, run its tools")
    run.add_argument("thread", nargs="?", help="a thread file (YAML or JSON, schema version 1)")
    run.add_argument(
        "--thread", dest="thread_id", metavar="ID", help="a thread of the store instead of a file"
    )
    run.add_argument("--prompt", default="", help="with --thread: the user's new question")
    run.add_argument(
        "--file",
        action="append",
        default=[],
        metavar="PATH",
        help="with --thread: a file to attach to the question (repeatable)",
    )
    run.add_argument("--db", help="the store file (default: store.path, $TURNWIRE_STORE)")
    run.add_argument("--base-url", help="the Responses endpoint (default: client.base_url)")
    run.add_argument(
        "--config",
        action="append",
        default=[],
        metavar="FILE",
        help="a configuration profile, merged over the defaults (repeatable)",
    )
    run.add_argument("--model", help="the model (overrides the thread and the config)")
    run.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="one setting, as a YAML value (client.retry.max_retries=5); repeatable",
    )
    run.add_argument(
        "--once", action="store_true", help="one request; record tool calls without running them"
    )
    run.add_argument(
        "--json",
        action="store_true",
        help="print one JSON object at the end instead of streaming text",
    )
    run.add_argument(
        "--save", action="store_true", help="write the extended thread back to the thread file"
    )

    check = commands.add_parser("check-config", help="validate configuration files")
    check.add_argument("files", nargs="+", metavar="FILE")

    store_options = argparse.ArgumentParser(add_help=False)
    store_options.add_argument(
        "--db",
        help="the store file (default: store.path, "
        "$TURNWIRE_STORE, then $XDG_DATA_HOME/turnwire/threads.db)",
    )
    store_options.add_argument("--config", action="append", default=[], metavar="FILE")
    threads = commands.add_parser("threads", help="the stored threads")
    actions = threads.add_subparsers(dest="action", required=True)
    listing = actions.add_parser(
        "list", parents=[store_options], help="every thread, most recent first"
    )
    listing.add_argument("--json", action="store_true")
    show = actions.add_parser(
        "show", parents=[store_options], help="a thread, as a thread file (JSON)"
    )
    show.add_argument("id")
    export = actions.add_parser(
        "export", parents=[store_options], help="write a thread to a thread file"
    )
    export.add_argument("id")
    export.add_argument("file")
    importing = actions.add_parser(
        "import", parents=[store_options], help="store a thread file as a new thread"
    )
    importing.add_argument("file")
    importing.add_argument("--id", help="the new thread's id (default: a fresh one)")
    importing.add_argument("--title")
    delete = actions.add_parser(
        "delete", parents=[store_options], help="delete a thread and its turns"
    )
    delete.add_argument("id")

    demo = commands.add_parser("demo", help="a whole conversation, offline, on recorded answers")
    demo.add_argument("--db", help="where to store the demo thread (default: a temp folder)")

    plugins = commands.add_parser("plugins", help="list plugins, versions and their hooks")
    plugins.add_argument(
        "--config",
        action="append",
        default=[],
        metavar="FILE",
        help="a configuration profile (its plugins: section applies)",
    )
    plugins.add_argument("--json", action="store_true", help="print JSON")

    schema = commands.add_parser("schema", help="print the JSON Schema of a file turnwire reads")
    schema.add_argument("kind", choices=("thread", "config"), help="a thread file or a config")
    return parser


def _overrides(assignments: Sequence[str]) -> dict[str, Any]:
    """``--set a.b=value`` assignments as one settings layer (values parsed as YAML)."""
    import yaml

    from turnwire.settings import merge

    tree: dict[str, Any] = {}
    for assignment in assignments:
        key, equals, raw = assignment.partition("=")
        if not equals or not key or any(not part for part in key.split(".")):
            raise ConfigError(
                f"--set {assignment!r}: write KEY=VALUE, such as request.temperature=0.2"
            )
        try:
            value: Any = yaml.safe_load(raw) if raw else ""
        except yaml.YAMLError as err:
            raise ConfigError(f"--set {assignment!r}: the value is not YAML: {err}") from err
        for part in reversed(key.split(".")):
            value = {part: value}
        tree = merge(tree, value)
    return tree


def _container(args: argparse.Namespace) -> Any:
    from turnwire.container import build_container

    return build_container(args.config, overrides=_overrides(getattr(args, "set", [])))


def _render(args: argparse.Namespace) -> int:
    from turnwire.api import render

    rendered = render(args.thread, container=_container(args), model=args.model)
    sys.stdout.buffer.write(rendered.body + b"\n")
    sys.stdout.flush()
    return 0


def _run(args: argparse.Namespace) -> int:
    import msgspec

    from turnwire.api import run

    # A run can wait (retries, a slow stream): its warnings are progress the user should see.
    logging.getLogger("turnwire").setLevel(logging.WARNING)
    logging.getLogger().setLevel(logging.WARNING)

    def on_text(delta: str) -> None:
        sys.stdout.write(delta)
        sys.stdout.flush()

    def on_tool_result(call: object) -> None:
        from turnwire.model import ToolCall

        assert isinstance(call, ToolCall)
        result = call.result
        shown = "" if result is None else (result.text or "(artifact)")
        mark = "error" if call.is_error else "ok"
        print(
            f"[tool {call.tool}({msgspec.json.encode(call.args).decode()}) {mark}: {shown[:200]}]",
            file=sys.stderr,
            flush=True,
        )

    text_sink = None if args.json else on_text
    if args.thread_id:
        from turnwire.api import run_thread

        if args.thread or args.save:
            raise ConfigError("--thread runs a stored thread: give no THREAD file and no --save")
        with _store(args) as store:
            result = run_thread(
                args.thread_id,
                store=store,
                prompt=args.prompt,
                files=args.file,
                container=_container(args),
                base_url=args.base_url,
                model=args.model,
                once=args.once,
                on_text=text_sink,
                on_tool_result=on_tool_result,
            )
    else:
        if not args.thread:
            raise ConfigError("give a THREAD file, or --thread ID for a stored thread")
        if args.prompt or args.file:
            raise ConfigError("--prompt and --file go with --thread; add them to the file")
        result = run(
            args.thread,
            container=_container(args),
            base_url=args.base_url,
            model=args.model,
            once=args.once,
            save=args.save,
            on_text=text_sink,
            on_tool_result=on_tool_result,
        )
    if args.json:
        payload = {
            "response": msgspec.to_builtins(result.response),
            "records": msgspec.to_builtins(result.records),
        }
        print(msgspec.json.encode(payload).decode())
    else:
        print()
        if args.save:
            print(f"saved {args.thread}", file=sys.stderr)
    return 0


def _store(args: argparse.Namespace) -> Any:
    from turnwire.settings import load_settings
    from turnwire.store.sqlite import SQLiteStore, default_store_path

    path = args.db or load_settings(getattr(args, "config", ())).store.path
    return SQLiteStore(path or default_store_path())


def _threads(args: argparse.Namespace) -> int:
    import msgspec

    from turnwire.thread_file import dump_thread, load_thread, save_thread

    with _store(args) as store:
        if args.action == "list":
            summaries = store.list_threads()
            if args.json:
                print(msgspec.json.encode(summaries).decode())
                return 0
            for item in summaries:
                print(
                    f"{item.id}  {item.turns:>4} turns  {item.updated_at:%Y-%m-%d %H:%M}  "
                    f"{item.model or '-'}  {item.title or ''}".rstrip()
                )
            if not summaries:
                print(f"no threads in {store.path}", file=sys.stderr)
        elif args.action == "show":
            print(msgspec.json.format(dump_thread(store.export_thread(args.id))).decode())
        elif args.action == "export":
            save_thread(store.export_thread(args.id), args.file)
            print(f"exported {args.id} to {args.file}", file=sys.stderr)
        elif args.action == "import":
            thread_id = store.import_thread(
                load_thread(args.file), thread_id=args.id, title=args.title
            )
            print(thread_id)
        elif args.action == "delete":
            store.delete_thread(args.id)
            print(f"deleted {args.id}", file=sys.stderr)
    return 0


def _demo(args: argparse.Namespace) -> int:
    from turnwire.demo import run_demo

    return int(run_demo(db=args.db))


def _check_config(args: argparse.Namespace) -> int:
    from turnwire.container import build_container
    from turnwire.settings import load_settings

    settings = load_settings(args.files)
    # Loading the plugins validates plugins.settings against each plugin's own schema too.
    manager = build_container(settings=settings).plugin_manager()
    loaded = [info.name for info in manager.describe() if not info.builtin]
    print(f"ok: {', '.join(args.files)}" + (f" (plugins: {', '.join(loaded)})" if loaded else ""))
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


def _schema(args: argparse.Namespace) -> int:
    import msgspec

    from turnwire.schema import config_schema, thread_schema

    schema = thread_schema() if args.kind == "thread" else config_schema()
    print(msgspec.json.format(msgspec.json.encode(schema), indent=2).decode())
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
    handlers = {
        "render": _render,
        "run": _run,
        "check-config": _check_config,
        "plugins": _plugins,
        "threads": _threads,
        "demo": _demo,
        "schema": _schema,
    }
    try:
        return handlers[args.command](args)
    except TurnwireError as err:
        print(f"error: {err.code}: {err}", file=sys.stderr)
        # `run` fails with 1 whatever the cause; the other commands say 2 for bad input.
        return 2 if isinstance(err, InputError) and args.command != "run" else 1
    except KeyboardInterrupt:
        print("error: E_INTERRUPTED: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
