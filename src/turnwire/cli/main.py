"""The ``turnwire`` command: its parser, and :func:`main`, which runs one command.

Each command group lives in a module of its own (:mod:`~turnwire.cli.render`,
:mod:`~turnwire.cli.run`, :mod:`~turnwire.cli.threads`, :mod:`~turnwire.cli.inspection`), and
everything they print goes out through :mod:`turnwire.cli.printer`.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import warnings
from collections.abc import Callable, Sequence
from typing import Any

from turnwire.cli.diff import diff_command
from turnwire.cli.emulate import add_record_arguments, emulate_command
from turnwire.cli.inspection import (
    check_config_command,
    demo_command,
    plugins_command,
    schema_command,
)
from turnwire.cli.options import Attached, config_options, logging_options, renamed
from turnwire.cli.printer import LogHandler, echo, echo_json
from turnwire.cli.render import fingerprint_command, render_command
from turnwire.cli.run import Decision, run_command
from turnwire.cli.threads import threads_command
from turnwire.errors import ConfigError, InputError, TurnwireError

__all__ = ["main"]


def _version() -> str:
    # The package's own constant: no scan of the installed distributions (a test keeps it
    # equal to the installed metadata).
    from turnwire import __version__

    return __version__


_OUTPUT_SCHEMA_HELP = (
    "a JSON Schema the answer must follow (structured outputs; a JSON or YAML file holding "
    "the schema, or {name, schema, strict, description}); overrides the thread's "
    "output_schema and request.output_schema"
)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="turnwire",
        description="Render stored conversations into exact OpenAI Responses API requests.",
        parents=[logging_options(top=True)],
    )
    parser.add_argument("--version", action="version", version=f"turnwire {_version()}")
    logs = logging_options(top=False)
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    render_config = config_options(example="request.temperature=0.2")
    run_config = config_options(example="client.retry.max_retries=5")
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
        dest="attached",
        action=Attached,
        default=[],
        metavar="PATH",
        help="with --thread: a file to attach to the question, copied into the store (repeatable)",
    )
    run.add_argument(
        "--file-url",
        dest="attached",
        action=Attached,
        metavar="URL",
        help="with --thread: an http(s) URL the API fetches, attached by reference (repeatable)",
    )
    run.add_argument(
        "--file-id",
        dest="attached",
        action=Attached,
        metavar="KIND:ID[:DETAIL]",
        help="with --thread: a file uploaded to the API, attached by reference: image:file-... "
        "or document:file-..., an image's detail after it (image:file-...:low) (repeatable)",
    )
    renamed(
        run,
        "--store",
        "--db",
        metavar="URL_OR_PATH",
        help="with --thread: the store, a SQLite file or a postgresql:// URL (default: "
        "store.location, $TURNWIRE_STORE, then $XDG_DATA_HOME/turnwire/threads.db; --db: its "
        "name before, deprecated)",
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
        action=Decision,
        dest="decisions",
        metavar="ID",
        help="approve the pending MCP approval request ID before sending (repeatable)",
    )
    run.add_argument(
        "--deny",
        action=Decision,
        dest="decisions",
        metavar="ID",
        help="deny the pending MCP approval request ID before sending (repeatable)",
    )
    run.add_argument(
        "--reason",
        action=Decision,
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
        description=(
            "Validate configuration files merged over the defaults, plugins included; warn of "
            "valid settings that replay no reasoning (a replay mode whose replay_compatibility "
            "leaves out the tag turnwire records, or tags listed while replay is off)."
        ),
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

    store_config = argparse.ArgumentParser(add_help=False)
    store_config.add_argument(
        "--config",
        action="append",
        default=[],
        metavar="FILE",
        help="a configuration profile (its store: section applies); repeatable",
    )
    store_options = argparse.ArgumentParser(add_help=False, parents=[store_config])
    renamed(
        store_options,
        "--store",
        "--db",
        metavar="URL_OR_PATH",
        help="the store: a SQLite file (its folder must exist) or a postgresql:// URL "
        "(default: store.location, $TURNWIRE_STORE, then "
        "$XDG_DATA_HOME/turnwire/threads.db; --db: its name before, deprecated)",
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
    renamed(
        demo,
        "--store",
        "--db",
        help="where to store the demo thread (default: a temp folder; --db: its name before, "
        "deprecated)",
    )

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

    diff = commands.add_parser(
        "diff",
        parents=[logs],
        help="say whether one request body extends another, or where it stops",
        description="Compare two request bodies (JSON, as `turnwire render` prints them) the "
        "way reasoning replay and the prompt cache do: the same model, instructions and tools, "
        "and BEFORE's input as the first items of AFTER's. Exit 0 when AFTER extends BEFORE, 1 "
        "when not (the first difference is printed).",
    )
    diff.add_argument("before", help="the earlier request body (a JSON file)")
    diff.add_argument("after", help="the later request body")

    schema = commands.add_parser(
        "schema",
        parents=[logs],
        help="print the JSON Schema of a file turnwire reads",
        description="Print the JSON Schema (draft 2020-12) of thread files or configuration "
        "files, generated from the Structs that validate them.",
    )
    schema.add_argument("kind", choices=("thread", "config"), help="a thread file or a config")

    emulate = commands.add_parser(
        "emulate",
        parents=[logs],
        help="serve an offline Responses API that enforces the API's rules",
        description="Serve POST /v1/responses (streamed and not), /v1/responses/compact and "
        "/v1/responses/input_tokens until interrupted: scripted answers, every request checked "
        "with the API's rules and answered with its status and error body, sealed "
        "encrypted_content, prompt caching reported; or, with --record, a proxy to a real "
        "endpoint that stores each exchange, and with --replay, answers from those recordings. "
        "Blobs are sealed under the key in $TURNWIRE_EMULATE_KEY (hex), else a random one per "
        "run.",
    )
    emulate.add_argument("--host", default="127.0.0.1", help="the address to listen on")
    emulate.add_argument(
        "--port", type=int, default=8787, help="the port to listen on (0: a free one)"
    )
    emulate.add_argument(
        "--script",
        action="append",
        default=[],
        metavar="FILE",
        help="a script of answers (YAML or JSON); repeatable, played in order",
    )
    emulate.add_argument(
        "--organization",
        default="org-emulator",
        help="the organization blobs are bound to (a request's OpenAI-Organization overrides)",
    )
    emulate.add_argument(
        "--state-ttl",
        type=float,
        default=None,
        metavar="SECONDS",
        help="how long a minted blob stays valid (default: for the run)",
    )
    emulate.add_argument(
        "--max-body-bytes",
        type=int,
        default=32 * 1024 * 1024,
        metavar="N",
        help="the largest request body read",
    )
    emulate.add_argument(
        "--cache-min-tokens",
        type=int,
        default=1024,
        metavar="N",
        help="the shortest shared prefix reported as cached_tokens",
    )
    emulate.add_argument(
        "--cache-block-tokens",
        type=int,
        default=128,
        metavar="N",
        help="cached_tokens is a multiple of this",
    )
    add_record_arguments(emulate)
    return parser


_COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {
    "render": render_command,
    "run": run_command,
    "fingerprint": fingerprint_command,
    "check-config": check_config_command,
    "plugins": plugins_command,
    "threads": threads_command,
    "demo": demo_command,
    "schema": schema_command,
    "diff": diff_command,
    "emulate": emulate_command,
}


def _fail(args: argparse.Namespace, err: TurnwireError) -> None:
    """The one error line on stderr; with --json, the same as a JSON object on stdout."""
    echo(f"error: {err.code}: {err}", file=sys.stderr)
    if getattr(args, "json", False):
        import msgspec

        error: dict[str, Any] = {"code": err.code, "message": str(err), "status": err.status}
        for name in ("path", "http_status", "event", "field", "item_id"):
            value = getattr(err, name, None)
            if isinstance(value, str | int) and value != "":
                error[name] = value
        echo_json(msgspec.json.encode({"error": error}).decode(), flush=True)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command; return its exit status (2 for bad input, 1 for a failed run)."""
    args = _parser().parse_args(argv)
    logging.basicConfig(
        level=logging.WARNING if args.verbose else logging.ERROR,
        format="turnwire: %(levelname)s: %(message)s",
        handlers=[LogHandler()],
    )
    if args.trace:
        logging.getLogger("turnwire.trace").setLevel(logging.DEBUG)
    with warnings.catch_warnings():
        # A deprecated spelling in the configuration (store.path) says so, once, in a line.
        warnings.simplefilter("default", DeprecationWarning)
        warnings.showwarning = _show_warning
        return _command(args)


def _show_warning(message: Warning | str, *_: object, **__: object) -> None:
    echo(f"turnwire: warning: {message}", file=sys.stderr)


def _not_text(args: argparse.Namespace) -> str | None:
    """The option or argument whose value is not text (bytes that are not UTF-8 reach Python
    as lone surrogates, which no request, store or terminal can carry)."""
    for name, value in vars(args).items():
        for item in value if isinstance(value, list) else [value]:
            if isinstance(item, str):
                try:
                    item.encode()
                except UnicodeEncodeError:
                    return name.replace("_", "-")
    return None


def _command(args: argparse.Namespace) -> int:
    try:
        where = _not_text(args)
        if where is not None:
            raise ConfigError(
                f"the value of {where} is not UTF-8 text; give command-line values as UTF-8",
                path=f"$.{where}",
            )
        return _COMMANDS[args.command](args)
    except TurnwireError as err:
        _fail(args, err)
        # `run` fails with 1 whatever the cause; the other commands say 2 for bad input.
        return 2 if isinstance(err, InputError) and args.command != "run" else 1
    except KeyboardInterrupt:
        echo("error: E_INTERRUPTED: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # The reader went away (`| head`): nothing more to write, nowhere to say so. Standard
        # output goes to the null device, so the flush at exit raises nothing either.
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, sys.stdout.fileno())
        os.close(null)
        return 141


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
