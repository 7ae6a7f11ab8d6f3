"""The ``turnwire`` command."""

from __future__ import annotations

import argparse
import logging
import re
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from turnwire.errors import ConfigError, InputError, TurnwireError, validation_location

if TYPE_CHECKING:
    from turnwire.model.records import Message

__all__ = ["main"]


def _version() -> str:
    # The package's own constant: no scan of the installed distributions (a test keeps it
    # equal to the installed metadata).
    from turnwire import __version__

    return __version__


def _logging_options(*, top: bool) -> argparse.ArgumentParser:
    """-v / --quiet / --trace, accepted before the subcommand and after it."""
    options = argparse.ArgumentParser(add_help=False)
    # Below the subcommand the defaults are suppressed, so they never undo what was given above.
    default: Any = False if top else argparse.SUPPRESS
    loudness = options.add_mutually_exclusive_group()
    loudness.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        default=default,
        help="log every warning (each render warning, retries, plugin notes) to stderr",
    )
    loudness.add_argument(
        "-q",
        "--quiet",
        action="store_true",
        default=default,
        help="print errors only: no warnings, no summary lines",
    )
    options.add_argument(
        "--trace",
        action="store_true",
        default=default,
        help="log every stage call to stderr (sets plugins.trace: true)",
    )
    return options


def _config_options(*, example: str) -> argparse.ArgumentParser:
    """--config / --profile / --set, for every command that builds settings."""
    options = argparse.ArgumentParser(add_help=False)
    options.add_argument(
        "--config",
        action="append",
        default=[],
        metavar="FILE",
        help="a configuration profile, merged over the defaults (repeatable)",
    )
    options.add_argument(
        "--profile",
        action="append",
        default=[],
        metavar="NAME",
        help="a profile shipped with turnwire, by name (production, local-dev, strict-media, "
        "examples); merged before the --config files (repeatable)",
    )
    options.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help=f"one setting, as a YAML value ({example}); repeatable, applied last",
    )
    options.add_argument(
        "--context",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a render-context value stages may ask for (with render.system_prompt_template: "
        "true, {KEY} in the system prompt); repeatable",
    )
    return options


_OUTPUT_SCHEMA_HELP = (
    "a JSON Schema the answer must follow (structured outputs; a JSON or YAML file holding "
    "the schema, or {name, schema, strict, description}); overrides the thread's "
    "output_schema and request.output_schema"
)


def _output_schema(args: argparse.Namespace) -> Any:
    """The ``--output-schema`` file as an :class:`~turnwire.model.structured.OutputSchema`."""
    location = getattr(args, "output_schema", None)
    if not location:
        return None
    import msgspec

    from turnwire.config.settings import CONFIG_FILES
    from turnwire.errors import OutputSchemaError
    from turnwire.files.loading import format_for
    from turnwire.model.structured import OutputSchema, schema_name

    path = Path(location)
    data = CONFIG_FILES.parse(CONFIG_FILES.read(path), name=str(path), format=format_for(path))
    if not isinstance(data, dict):
        raise OutputSchemaError(f"--output-schema {location}: the file must hold a mapping")
    wrapped = isinstance(data.get("schema"), dict) and set(data) <= {
        "name",
        "schema",
        "strict",
        "description",
    }
    if not wrapped:
        data = {"name": schema_name(data.get("title", path.stem)), "schema": data}
    try:
        return msgspec.convert(data, OutputSchema)
    except msgspec.ValidationError as err:
        where, detail = validation_location(err)
        raise OutputSchemaError(
            f"--output-schema {location}: {where}: {detail}", path=where
        ) from err


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="turnwire",
        description="Render stored conversations into exact OpenAI Responses API requests.",
        parents=[_logging_options(top=True)],
    )
    parser.add_argument("--version", action="version", version=f"turnwire {_version()}")
    logs = _logging_options(top=False)
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    render_config = _config_options(example="request.temperature=0.2")
    run_config = _config_options(example="client.retry.max_retries=5")
    render = commands.add_parser(
        "render",
        parents=[logs, render_config],
        help="print the request body a thread renders to",
        description="Print the exact request body `turnwire run` would POST, as JSON (an MCP "
        "server's header values and token shown as [redacted]).",
    )
    render.add_argument(
        "thread", help="a thread file (YAML or JSON, schema version 1), or - for stdin"
    )
    render.add_argument("--model", help="the model (overrides the thread and the config)")
    render.add_argument(
        "--output-schema", metavar="FILE", help=_OUTPUT_SCHEMA_HELP.replace("the answer", "it")
    )

    run = commands.add_parser(
        "run",
        parents=[logs, run_config],
        help="send a thread, stream the answer, run its tools",
        description="Send a thread, stream the answer, run its tools until the model stops.",
    )
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
    run.add_argument(
        "--db",
        metavar="URL_OR_PATH",
        help="with --thread: the store, a SQLite file or a postgresql:// URL (default: "
        "store.url, store.path, $TURNWIRE_STORE, then $XDG_DATA_HOME/turnwire/threads.db)",
    )
    run.add_argument(
        "--base-url",
        help="the Responses endpoint (default: client.base_url, $OPENAI_BASE_URL, "
        "https://api.openai.com/v1)",
    )
    run.add_argument("--model", help="the model (overrides the thread and the config)")
    run.add_argument(
        "--once", action="store_true", help="one request; record tool calls without running them"
    )
    run.add_argument(
        "--json",
        action="store_true",
        help="print one JSON object at the end instead of streaming text "
        '(a failure prints {"error": ...})',
    )
    run.add_argument(
        "--save", action="store_true", help="write the extended thread back to the thread file"
    )
    run.add_argument(
        "--approve",
        action=_Decision,
        dest="decisions",
        metavar="ID",
        help="approve the pending MCP approval request ID before sending (repeatable)",
    )
    run.add_argument(
        "--deny",
        action=_Decision,
        dest="decisions",
        metavar="ID",
        help="deny the pending MCP approval request ID before sending (repeatable)",
    )
    run.add_argument(
        "--reason",
        action=_Decision,
        dest="decisions",
        metavar="TEXT",
        help="the reason the model reads for the --approve or --deny just before it",
    )
    run.add_argument("--output-schema", metavar="FILE", help=_OUTPUT_SCHEMA_HELP)

    fingerprint = commands.add_parser(
        "fingerprint",
        parents=[logs, render_config],
        help="stamp imported reasoning with the fingerprint these settings render",
        description="Give every thought that has a replay payload but no prefix_fingerprint "
        "(reasoning imported from elsewhere) the fingerprint of the prefix it has in the "
        "request these settings render, so it replays. Writes the thread file in place.",
    )
    fingerprint.add_argument("thread", help="a thread file (YAML or JSON, schema version 1)")
    fingerprint.add_argument("--model", help="the model (overrides the thread and the config)")
    fingerprint.add_argument(
        "-o",
        "--output",
        metavar="FILE",
        help="write the stamped thread here instead (- for stdout, as JSON)",
    )
    fingerprint.add_argument(
        "--seal-hosted",
        action="store_true",
        help="also seal every hosted item under this deployment's envelope secret, so they "
        "replay as items (only for a thread file you trust: an item can declare tools or "
        "approve MCP calls)",
    )

    check = commands.add_parser(
        "check-config",
        parents=[logs],
        help="validate configuration files",
        description="Validate configuration files merged over the defaults, plugins included.",
    )
    check.add_argument("files", nargs="*", metavar="FILE", help="configuration profiles, in order")
    check.add_argument(
        "--profile",
        action="append",
        default=[],
        metavar="NAME",
        help="a profile shipped with turnwire, by name; merged before the files (repeatable)",
    )
    check.add_argument(
        "--print",
        dest="print_settings",
        action="store_true",
        help="print the merged, validated settings as YAML (header values that look secret, "
        "and every MCP header value and token, are masked)",
    )

    store_options = argparse.ArgumentParser(add_help=False)
    store_config = argparse.ArgumentParser(add_help=False)
    store_config.add_argument(
        "--config",
        action="append",
        default=[],
        metavar="FILE",
        help="a configuration profile (its store: section applies); repeatable",
    )
    store_options = argparse.ArgumentParser(add_help=False, parents=[store_config])
    store_options.add_argument(
        "--db",
        metavar="URL_OR_PATH",
        help="the store: a SQLite file (its folder must exist) or a postgresql:// URL "
        "(default: store.url, store.path, $TURNWIRE_STORE, then "
        "$XDG_DATA_HOME/turnwire/threads.db)",
    )
    threads = commands.add_parser(
        "threads", parents=[logs], help="the stored threads", description="The stored threads."
    )
    actions = threads.add_subparsers(dest="action", required=True, metavar="ACTION")
    listing = actions.add_parser(
        "list", parents=[logs, store_options], help="every thread, most recent first"
    )
    listing.add_argument("--json", action="store_true", help="print JSON")
    show = actions.add_parser(
        "show",
        parents=[logs, store_options],
        help="a thread, as a thread file (JSON; MCP credentials masked)",
    )
    show.add_argument("id", help="the thread's id (see `turnwire threads list`)")
    show.add_argument(
        "--transcript",
        action="store_true",
        help="the conversation as plain text (who said what, tool calls and results)",
    )
    export = actions.add_parser(
        "export", parents=[logs, store_options], help="write a thread to a thread file"
    )
    export.add_argument("id", help="the thread's id")
    export.add_argument(
        "file",
        help="the thread file to write (.yaml/.yml: YAML, else JSON), the thread's files "
        "copied beside it into FILE.files/; or - for stdout (pointers into the store)",
    )
    importing = actions.add_parser(
        "import", parents=[logs, store_options], help="store a thread file as a new thread"
    )
    importing.add_argument("file", help="a thread file (YAML or JSON), or - for stdin")
    importing.add_argument("--id", help="the new thread's id (default: a fresh one)")
    importing.add_argument("--title", help="a title for `threads list`")
    compacting = actions.add_parser(
        "compact",
        parents=[logs, store_options],
        help="compact a thread: later requests send one compaction item for its turns so far",
        description="Send the thread's rendered input to the compact endpoint "
        "(POST /responses/compact) and store the compaction item it returns as a turn; later "
        "requests send that item in place of every turn before it. No turn is deleted. "
        "The --config profiles apply whole here (render, request, client, store).",
    )
    compacting.add_argument("id", help="the thread's id")
    compacting.add_argument(
        "--base-url",
        help="the Responses endpoint (default: client.base_url, $OPENAI_BASE_URL, "
        "https://api.openai.com/v1)",
    )
    compacting.add_argument("--model", help="the model (overrides the thread and the config)")
    compacting.add_argument(
        "--json", action="store_true", help="print the compaction record and usage as JSON"
    )
    delete = actions.add_parser(
        "delete", parents=[logs, store_options], help="delete a thread and its turns"
    )
    delete.add_argument("id", help="the thread's id")
    copy = actions.add_parser(
        "copy",
        parents=[logs, store_config],
        help="copy threads from one store to another, as they are",
        description="Copy threads between stores (SQLite files, postgresql:// URLs) with "
        "their ids, titles, timestamps, turns and imported files.",
    )
    copy.add_argument(
        "--from",
        dest="source",
        required=True,
        metavar="URL_OR_PATH",
        help="the store to copy from: a SQLite file or a postgresql:// URL",
    )
    copy.add_argument(
        "--to",
        dest="target",
        required=True,
        metavar="URL_OR_PATH",
        help="the store to copy into (created when new; a SQLite file's folder must exist)",
    )
    copy.add_argument("ids", nargs="*", metavar="ID", help="the threads to copy (default: all)")

    demo = commands.add_parser(
        "demo",
        parents=[logs],
        help="a whole conversation, offline, on recorded answers",
        description="Run a whole conversation end to end with no network and no key.",
    )
    demo.add_argument("--db", help="where to store the demo thread (default: a temp folder)")

    plugins = commands.add_parser(
        "plugins",
        parents=[logs],
        help="list plugins, versions and their hooks",
        description="List the built-in and installed plugins, their versions and hooks.",
    )
    plugins.add_argument(
        "--config",
        action="append",
        default=[],
        metavar="FILE",
        help="a configuration profile (its plugins: section applies)",
    )
    plugins.add_argument("--json", action="store_true", help="print JSON")

    schema = commands.add_parser(
        "schema",
        parents=[logs],
        help="print the JSON Schema of a file turnwire reads",
        description="Print the JSON Schema (draft 2020-12) of thread files or configuration "
        "files, generated from the Structs that validate them.",
    )
    schema.add_argument("kind", choices=("thread", "config"), help="a thread file or a config")
    return parser


class _Decision(argparse.Action):
    """``--approve ID`` / ``--deny ID`` append a decision; ``--reason TEXT`` gives the one just
    before it its reason."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        decisions: list[list[Any]] = list(getattr(namespace, self.dest, None) or [])
        if option_string == "--reason":
            if not decisions or decisions[-1][2] is not None:
                parser.error("--reason goes right after the --approve ID or --deny ID it explains")
            decisions[-1][2] = values
        else:
            if any(decision[0] == values for decision in decisions):
                parser.error(f"{values}: decided twice")
            decisions.append([values, option_string == "--approve", None])
        setattr(namespace, self.dest, decisions)


def _approvals(args: argparse.Namespace) -> dict[str, Any] | None:
    from turnwire.model.approvals import Approval

    decisions = args.decisions or []
    return {d[0]: Approval(approve=d[1], reason=d[2]) for d in decisions} or None


def _shown(text: object, limit: int = 400) -> str:
    """``text`` for one terminal line (:func:`_plain`), cut at ``limit``."""
    clean = _plain(text)
    return clean if len(clean) <= limit else clean[:limit] + "..."


def _print_pending(thread: Any, stream: Any) -> None:
    from turnwire.model.approvals import pending_approvals

    for record in pending_approvals(thread):
        view = record.view
        label = _shown(getattr(view, "server_label", "?"), 64)
        name = _shown(getattr(view, "name", "?"), 64)
        arguments = _shown(getattr(view, "arguments", ""))
        print(
            f"[approval pending {_shown(record.id, 80)}: {label} {name}({arguments}); "
            "--approve or --deny it on the next run]",
            file=stream,
        )


def _pending_json(thread: Any) -> list[dict[str, Any]]:
    from turnwire.model.approvals import pending_approvals

    return [
        {
            "id": record.id,
            "server_label": record.item.get("server_label"),
            "name": record.item.get("name"),
            "arguments": record.item.get("arguments"),
        }
        for record in pending_approvals(thread)
    ]


def _overrides(assignments: Sequence[str]) -> dict[str, Any]:
    """``--set a.b=value`` assignments as one settings layer (values parsed as YAML, within the
    limits of configuration files)."""
    from turnwire.config.settings import CONFIG_FILES, merge

    tree: dict[str, Any] = {}
    for assignment in assignments:
        key, equals, raw = assignment.partition("=")
        if not equals or not key or any(not part for part in key.split(".")):
            raise ConfigError(
                f"--set {assignment!r}: write KEY=VALUE, such as request.temperature=0.2"
            )
        value: Any = (
            CONFIG_FILES.parse(raw.encode(), name=f"--set {key}", format="yaml") if raw else ""
        )
        for part in reversed(key.split(".")):
            value = {part: value}
        tree = merge(tree, value)
    return tree


def _config_files(args: argparse.Namespace) -> list[Any]:
    """The shipped profiles named by --profile, then the --config files, in order."""
    from turnwire.config.settings import profile_path

    files = getattr(args, "config", None) or getattr(args, "files", [])
    return [*(profile_path(name) for name in getattr(args, "profile", [])), *files]


def _container(args: argparse.Namespace) -> Any:
    from turnwire.config.settings import merge
    from turnwire.rendering.container import build_container

    overrides = _overrides(getattr(args, "set", []))
    if getattr(args, "trace", False):  # --trace turns tracing on, whatever the profile says
        overrides = merge(overrides, {"plugins": {"trace": True}})
    container = build_container(_config_files(args), overrides=overrides)
    if container.settings().plugins.trace:  # and a profile that turns it on is shown too
        logging.getLogger("turnwire.trace").setLevel(logging.DEBUG)
    return container


def _render_context(args: argparse.Namespace) -> dict[str, str]:
    """``--context KEY=VALUE`` pairs (values stay strings)."""
    values: dict[str, str] = {}
    for assignment in getattr(args, "context", []):
        key, equals, value = assignment.partition("=")
        if not equals or not key.isidentifier():
            raise ConfigError(
                f"--context {assignment!r}: write KEY=VALUE with a name for KEY, such as "
                "--context user=Ana"
            )
        values[key] = value
    return values


def _summarise_warnings(args: argparse.Namespace, warnings: Sequence[str]) -> None:
    """At the default level, one line for what -v would show in full."""
    if not warnings or args.verbose or args.quiet:
        return
    more = f" (and {len(warnings) - 1} more)" if len(warnings) > 1 else ""
    print(f"turnwire: warning: {warnings[0]}{more}; -v shows each", file=sys.stderr)


def _check_context_read(args: argparse.Namespace, container: Any) -> None:
    """--context with nothing to read it: the built-in system prompt fills its placeholders
    only under ``render.system_prompt_template``, and no plugin stage takes the values."""
    if not getattr(args, "context", None) or args.quiet:
        return
    if container.settings().render.system_prompt_template:
        return
    hook = container.plugin_manager().hook
    for name in dir(hook):
        caller = getattr(hook, name)
        for impl in getattr(caller, "get_hookimpls", list)():
            module = getattr(impl.function, "__module__", "") or ""
            if "render_context" in impl.argnames and not module.startswith("turnwire.stages"):
                return  # a plugin's stage reads them
    print(
        "turnwire: warning: --context is not used: render.system_prompt_template is off and "
        "no plugin stage reads render_context (--set render.system_prompt_template=true fills "
        "the prompt's {name} placeholders)",
        file=sys.stderr,
    )


def _render(args: argparse.Namespace) -> int:
    from turnwire.rendering.renderer import render

    context = _render_context(args)  # a malformed --context fails before anything else
    container = _container(args)
    _check_context_read(args, container)
    rendered = render(
        args.thread,
        container=container,
        model=args.model,
        render_context=context,
        output_type=_output_schema(args),
    )
    sys.stdout.buffer.write(_without_credentials(rendered) + b"\n")
    sys.stdout.flush()
    _summarise_warnings(args, rendered.rendered.warnings)
    return 0


def _without_credentials(rendered: Any) -> bytes:
    """The body, with every MCP server's credentials replaced by ``[redacted]``."""
    import msgspec

    from turnwire.rendering.body import encode_body
    from turnwire.wire.hosted_tools import redacted_tools

    body = rendered.request
    shown = tuple(redacted_tools(body.tools or ()))
    if all(a is b for a, b in zip(shown, body.tools or (), strict=True)):
        return bytes(rendered.body)
    return encode_body(msgspec.structs.replace(body, tools=shown))


def _fingerprint(args: argparse.Namespace) -> int:
    from turnwire.files.thread_file import dump_thread, load_thread, save_thread
    from turnwire.rendering.fingerprints import stamp_fingerprints
    from turnwire.rendering.renderer import resolve_model

    container = _container(args)
    thread = load_thread(args.thread)
    sealed = 0
    if args.seal_hosted and thread.hosted_items:
        import msgspec

        from turnwire.model.hosted import seal

        nonce = container.envelope_nonce()
        items = tuple(seal(record, nonce) for record in thread.hosted_items)
        sealed = sum(a.seal != b.seal for a, b in zip(items, thread.hosted_items, strict=True))
        thread = msgspec.structs.replace(thread, hosted_items=items)
    stamped, report = stamp_fingerprints(
        thread,
        container=container,
        model=resolve_model(thread, container, args.model),
        render_context=_render_context(args),
        roots=[Path(args.thread).resolve().parent],
    )
    target = args.output or args.thread
    if target == "-":
        sys.stdout.buffer.write(dump_thread(stamped) + b"\n")
    elif report.stamped or sealed or target != args.thread:
        save_thread(stamped, target)
    if not args.quiet:
        where = "stdout" if target == "-" else target
        total = len(report.stamped) + len(report.skipped)
        print(f"stamped {len(report.stamped)} of {total} thoughts ({where})", file=sys.stderr)
        if args.seal_hosted:
            print(f"sealed {sealed} hosted items", file=sys.stderr)
        for thought_id, reason in sorted(report.skipped.items()):
            print(f"  not stamped: {thought_id}: {reason}", file=sys.stderr)
    return 0


def _run(args: argparse.Namespace) -> int:
    import msgspec

    from turnwire.api import run

    # A run can wait (retries, a slow stream): its warnings are progress the user should see,
    # the libraries' own too.
    _show_warnings(args)
    if not args.quiet:
        logging.getLogger().setLevel(logging.WARNING)

    streamed: list[bool] = []  # whether any text delta arrived

    def on_text(delta: str) -> None:
        if not streamed:
            streamed.append(True)
        sys.stdout.write(_terminal_text(delta))
        sys.stdout.flush()

    def on_tool_result(call: object) -> None:
        from turnwire._redact import redact
        from turnwire.model.records import ToolCall

        assert isinstance(call, ToolCall)
        result = call.result
        shown = "" if result is None else (result.text or "(artifact)")
        mark = "error" if call.is_error else "ok"
        if not args.quiet:
            show.end_line()
            # A progress line, like a log record: no secret in it (a tool may return one).
            args_text = redact(msgspec.json.encode(call.args).decode())
            line = f"{_plain(call.tool)}({_plain(args_text)}) {mark}: {_plain(redact(shown)[:200])}"
            print(f"[tool {line}]", file=sys.stderr)

    show = _Progress(sys.stderr)
    on_event = None if args.quiet else show

    text_sink = None if args.json else on_text
    output_type = _output_schema(args)
    # What was asked first (the command's own usage), then the configuration it runs under.
    if args.thread_id and (args.thread or args.save):
        raise ConfigError("--thread runs a stored thread: give no THREAD file and no --save")
    if not args.thread_id and not args.thread:
        raise ConfigError("give a THREAD file, or --thread ID for a stored thread")
    if not args.thread_id and (args.prompt or args.file):
        raise ConfigError("--prompt and --file go with --thread; add them to the file")
    context = _render_context(args)
    container = _container(args)
    _check_context_read(args, container)
    if args.thread_id:
        from turnwire.api import run_thread

        with _store(args) as store:
            result = run_thread(
                args.thread_id,
                store=store,
                prompt=args.prompt,
                files=args.file,
                container=container,
                base_url=args.base_url,
                model=args.model,
                once=args.once,
                on_text=text_sink,
                on_tool_result=on_tool_result,
                on_event=on_event,
                render_context=context,
                approvals=_approvals(args),
                output_type=output_type,
            )
    else:
        result = run(
            args.thread,
            container=container,
            base_url=args.base_url,
            model=args.model,
            once=args.once,
            save=args.save,
            on_text=text_sink,
            on_tool_result=on_tool_result,
            on_event=on_event,
            render_context=context,
            approvals=_approvals(args),
            output_type=output_type,
        )
    if args.json:
        payload = {
            "response": msgspec.to_builtins(result.response),
            "records": msgspec.to_builtins(result.records),
            "usage": {
                "total": msgspec.to_builtins(result.usage),
                "generations": msgspec.to_builtins(result.generations),
            },
        }
        pending = _pending_json(result.thread)
        if pending:
            payload["pending_approvals"] = pending
        if result.parsed is not None:
            payload["parsed"] = msgspec.to_builtins(result.parsed)
        if result.refusal is not None:
            payload["refusal"] = result.refusal
        if result.compaction is not None:
            payload["compaction"] = {
                "record": msgspec.to_builtins(result.compaction.record),
                "usage": result.compaction.compacted.usage,
            }
        print(msgspec.json.encode(payload).decode())
    else:
        if not streamed:
            # A server that sends its items whole (no text deltas, or the items only in its
            # terminal response): the answer is printed once it is known.
            answer = "\n\n".join(m.content for m in result.records.messages if m.content)
            sys.stdout.write(_terminal_text(answer))
        print()
        if result.refusal is not None:
            # The answer itself, never a summary line: shown even with --quiet.
            print(f"[refusal] {_plain(result.refusal)}", file=sys.stderr)
        sources = citations(result.records.messages)
        if sources:
            print("\nSources:")
            for line in sources:
                print(f"  {line}")
        _print_pending(result.thread, sys.stderr)
        if args.save and not args.quiet:
            print(f"saved {args.thread}", file=sys.stderr)
    return 0


# Control (Cc: escape sequences, breaks), format (Cf: bidi overrides and isolates, zero-width
# characters), line and paragraph separators (Zl, Zp) and lone surrogates (Cs).
_UNSAFE = frozenset({"Cc", "Cf", "Zl", "Zp", "Cs"})


# C0 and C1 controls but line feed and tab: what starts a terminal escape sequence (a window
# title, a cleared screen, OSC 52's clipboard write) or moves the cursor.
_CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def _terminal_text(text: str) -> str:
    """Streamed text from the server for a terminal: line breaks and tabs kept, every other
    control character left out (the stored record keeps the text as it came)."""
    return text if text.isprintable() else _CONTROLS.sub("", text)


def _plain(value: object) -> str:
    """A value from the server or a thread as one terminal-safe line: no escape sequences, no
    breaks, nothing that reorders or hides text (each run of such characters is one space)."""
    from unicodedata import category

    out: list[str] = []
    unsafe = False
    for char in str(value):
        if char.isprintable() or category(char) not in _UNSAFE:
            out.append(char)
            unsafe = False
        elif not unsafe:
            out.append(" ")
            unsafe = True
    return "".join(out).strip()


def citations(messages: Iterable[Message]) -> list[str]:
    """The distinct citations on ``messages``' text, numbered, as ``turnwire run`` lists them
    after the answer: url citations by title and URL, file citations by file name and id."""
    seen: dict[tuple[str, str], str] = {}
    for message in messages:
        for annotation in message.annotations:
            kind = annotation.get("type")
            if kind == "url_citation" and annotation.get("url"):
                url = _plain(annotation["url"])
                title = _plain(annotation.get("title") or "")
                key, text = ("url", url), f"{title} <{url}>" if title else f"<{url}>"
            elif kind in ("file_citation", "container_file_citation", "file_path"):
                file_id = _plain(annotation.get("file_id") or "")
                name = _plain(annotation.get("filename") or "")
                key = ("file", file_id or name)
                text = f"file {name} ({file_id})" if name and file_id else f"file {name or file_id}"
            else:
                continue
            if key[1] and key not in seen:
                seen[key] = text
    return [f"[{number}] {text}" for number, text in enumerate(seen.values(), 1)]


class _Progress:
    """``turnwire run``'s progress on stderr: reasoning summaries as they stream (dimmed on a
    terminal, else each line prefixed ``[reasoning] ``) and each tool call as it starts."""

    DIM, RESET, PREFIX = "\x1b[2m", "\x1b[0m", "[reasoning] "

    def __init__(self, stream: Any) -> None:
        self.stream = stream
        self.tty = bool(getattr(stream, "isatty", lambda: False)())
        self._open: tuple[int, int] | None = None

    def end_line(self) -> None:
        if self._open is not None:
            self.stream.write((self.RESET if self.tty else "") + "\n")
            self.stream.flush()
            self._open = None

    def __call__(self, event: Any) -> None:
        from turnwire.client.progress import ReasoningSummaryDeltaEvent, ToolStartedEvent

        if isinstance(event, ReasoningSummaryDeltaEvent):
            key = (event.output_index, event.summary_index)
            if key != self._open:
                self.end_line()
                self.stream.write(self.DIM if self.tty else self.PREFIX)
                self._open = key
            text = _terminal_text(event.delta)
            delta = text if self.tty else text.replace("\n", "\n" + self.PREFIX)
            self.stream.write(delta)
            self.stream.flush()
        elif isinstance(event, ToolStartedEvent):
            self.end_line()
            print(f"[tool {_plain(event.call.tool)} started]", file=self.stream, flush=True)
        elif self._open is not None and not type(event).__name__.startswith("Reasoning"):
            self.end_line()


def _store(args: argparse.Namespace, location: str | None = None) -> Any:
    from turnwire.config.settings import load_settings
    from turnwire.errors import StoreError
    from turnwire.store import open_store
    from turnwire.store.postgres import is_postgres_url

    settings = load_settings(getattr(args, "config", ())).store
    explicit = location or getattr(args, "db", None) or settings.url or settings.path
    if explicit and not is_postgres_url(explicit):
        folder = Path(explicit).expanduser().resolve().parent
        if not folder.is_dir():
            # A typo in --db must not quietly start a new, empty store somewhere else.
            raise StoreError(f"the store's folder {folder} does not exist; create it first")
    return open_store(explicit or None, folder=settings.folder)


def _threads(args: argparse.Namespace) -> int:
    import msgspec

    from turnwire.files.thread_file import dump_thread, load_thread

    if args.action == "copy":
        return _copy(args)
    with _store(args) as store:
        if args.action == "list":
            summaries = store.list_threads()
            if args.json:
                print(msgspec.json.encode(summaries).decode())
                return 0
            for item in summaries:
                print(
                    f"{item.id}  {item.turns:>4} turns  {item.updated_at:%Y-%m-%d %H:%M}  "
                    f"{_plain(item.model or '-')}  {_plain(item.title or '')}".rstrip()
                )
            if not summaries and not args.quiet:
                print(f"no threads in {getattr(store, 'url', store.path)}", file=sys.stderr)
        elif args.action == "show":
            thread = store.export_thread(args.id)
            if args.transcript:
                from turnwire.rendering.windows import transcript

                sys.stdout.write(transcript(thread))
            else:  # for reading: MCP credentials shown as [redacted] (`export` keeps them)
                from turnwire.wire.hosted_tools import redacted_tools

                shown = tuple(redacted_tools(thread.hosted_tools))
                thread = msgspec.structs.replace(thread, hosted_tools=shown)
                print(msgspec.json.format(dump_thread(thread)).decode())
        elif args.action == "export":
            if args.file == "-":
                thread = store.export_thread(args.id)
                print(msgspec.json.format(dump_thread(thread)).decode())
            else:
                store.export_file(args.id, args.file)
                if not args.quiet:
                    print(f"exported {args.id} to {args.file}", file=sys.stderr)
        elif args.action == "import":
            from turnwire.config.settings import load_settings
            from turnwire.files.pointers import ContextAssembler, file_roots

            # The thread's files are copied into the store, read from where the file's own
            # pointers may lead (its folder, or files.roots), so later runs find them there.
            files = load_settings(args.config).files
            origin = Path.cwd() if args.file == "-" else Path(args.file).resolve().parent
            assembler = ContextAssembler.from_settings(files, file_roots(None, files, [origin]))
            thread_id = store.import_thread(
                load_thread(args.file), thread_id=args.id, title=args.title, files=assembler
            )
            print(thread_id)
        elif args.action == "compact":
            _compact(args, store)
        elif args.action == "delete":
            store.delete_thread(args.id)
            if not args.quiet:
                print(f"deleted {args.id}", file=sys.stderr)
    return 0


def _compact(args: argparse.Namespace, store: Any) -> None:
    import msgspec

    from turnwire.api import compact_thread
    from turnwire.rendering.container import build_container

    result = compact_thread(
        args.id,
        store=store,
        container=build_container(args.config),
        base_url=args.base_url,
        model=args.model,
    )
    usage = result.compacted.usage
    if args.json:
        payload = {"record": msgspec.to_builtins(result.record), "usage": usage}
        print(msgspec.json.encode(payload).decode())
    elif not args.quiet:
        print(
            f"compacted {args.id}: {_plain(result.record.id)} "
            f"({usage.get('input_tokens')} input tokens, {usage.get('output_tokens')} output)",
            file=sys.stderr,
        )


def _copy(args: argparse.Namespace) -> int:
    from turnwire.store import copy_threads

    with _store(args, args.source) as source, _store(args, args.target) as target:
        copied = copy_threads(source, target, args.ids)
    for thread_id in copied:
        print(thread_id)
    if not args.quiet:
        into = getattr(target, "url", target.path)
        print(f"copied {len(copied)} thread(s) to {into}", file=sys.stderr)
    return 0


def _demo(args: argparse.Namespace) -> int:
    from turnwire.demo import run_demo

    return int(run_demo(db=args.db))


def _printable(settings: Any) -> dict[str, Any]:
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
    return tree


def _show_warnings(args: argparse.Namespace) -> None:
    """An inspection command shows what loading found (a plugin name no plugin has, a
    plugin's settings no plugin reads), not only -v."""
    if not args.quiet:
        logging.getLogger("turnwire").setLevel(logging.WARNING)


def _check_config(args: argparse.Namespace) -> int:
    from turnwire.config.settings import load_settings
    from turnwire.rendering.container import build_container

    _show_warnings(args)
    files = _config_files(args)
    settings = load_settings(files)
    # Loading the plugins validates plugins.settings against each plugin's own schema too.
    manager = build_container(settings=settings).plugin_manager()
    loaded = [info.name for info in manager.describe() if not info.builtin]
    if args.print_settings:
        import yaml

        print(yaml.safe_dump(_printable(settings), sort_keys=False, allow_unicode=True), end="")
    if not args.quiet:
        names = ", ".join(str(file) for file in files) or "the defaults"
        plugins = f" (plugins: {', '.join(loaded)})" if loaded else ""
        print(f"ok: {names}{plugins}", file=sys.stderr if args.print_settings else sys.stdout)
    return 0


def _plugins(args: argparse.Namespace) -> int:
    import msgspec

    from turnwire.rendering.container import build_container

    _show_warnings(args)
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


def _fail(args: argparse.Namespace, err: TurnwireError) -> None:
    """The one error line on stderr; with --json, the same as a JSON object on stdout."""
    print(f"error: {err.code}: {err}", file=sys.stderr)
    if getattr(args, "json", False):
        import msgspec

        error: dict[str, Any] = {"code": err.code, "message": str(err), "status": err.status}
        for name in ("path", "http_status", "event", "field", "item_id"):
            value = getattr(err, name, None)
            if isinstance(value, str | int) and value != "":
                error[name] = value
        print(msgspec.json.encode({"error": error}).decode(), flush=True)


def _schema(args: argparse.Namespace) -> int:
    import msgspec

    from turnwire.config.schema import config_schema, thread_schema

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
        "fingerprint": _fingerprint,
        "check-config": _check_config,
        "plugins": _plugins,
        "threads": _threads,
        "demo": _demo,
        "schema": _schema,
    }
    try:
        return handlers[args.command](args)
    except TurnwireError as err:
        _fail(args, err)
        # `run` fails with 1 whatever the cause; the other commands say 2 for bad input.
        return 2 if isinstance(err, InputError) and args.command != "run" else 1
    except KeyboardInterrupt:
        print("error: E_INTERRUPTED: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
