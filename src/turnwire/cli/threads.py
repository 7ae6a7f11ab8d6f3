"""``turnwire threads``: list, show, export, import, compact, delete and copy stored threads."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from turnwire.cli.options import open_store
from turnwire.cli.printer import echo, echo_json, plain

__all__ = ["threads_command"]


def threads_command(args: argparse.Namespace) -> int:
    """Run ``threads ACTION`` on the store the options name."""
    if args.action == "copy":
        return _copy(args)
    with open_store(args) as store:
        if args.action == "list":
            _list(args, store)
        elif args.action == "show":
            _show(args, store)
        elif args.action == "export":
            _export(args, store)
        elif args.action == "import":
            _import(args, store)
        elif args.action == "compact":
            _compact(args, store)
        elif args.action == "delete":
            store.delete_thread(args.id)
            if not args.quiet:
                echo(f"deleted {args.id}", file=sys.stderr)
    return 0


def _list(args: argparse.Namespace, store: Any) -> None:
    import msgspec

    summaries = store.list_threads()
    if args.json:
        echo_json(msgspec.json.encode(summaries).decode())
        return
    for item in summaries:
        echo(
            f"{item.id}  {item.turns:>4} turns  {item.updated_at:%Y-%m-%d %H:%M}  "
            f"{plain(item.model or '-')}  {plain(item.title or '')}".rstrip()
        )
    if not summaries and not args.quiet:
        echo(f"no threads in {getattr(store, 'url', store.path)}", file=sys.stderr)


def _show(args: argparse.Namespace, store: Any) -> None:
    import msgspec

    from turnwire import dump_thread
    from turnwire.rendering.windows import transcript
    from turnwire.wire.hosted_tools import redacted_tools

    thread = store.export_thread(args.id)
    if args.transcript:
        echo(transcript(thread), end="")
        return
    # For reading: MCP credentials shown as [redacted] (`export` keeps them).
    shown = tuple(redacted_tools(thread.hosted_tools))
    thread = msgspec.structs.replace(thread, hosted_tools=shown)
    echo_json(msgspec.json.format(dump_thread(thread)).decode())


def _export(args: argparse.Namespace, store: Any) -> None:
    import msgspec

    from turnwire import dump_thread

    if args.file == "-":
        thread = store.export_thread(args.id)
        echo_json(msgspec.json.format(dump_thread(thread)).decode())
        return
    store.export_file(args.id, args.file)
    if not args.quiet:
        echo(f"exported {args.id} to {args.file}", file=sys.stderr)


def _import(args: argparse.Namespace, store: Any) -> None:
    from turnwire import load_settings, load_thread
    from turnwire.files.pointers import ContextAssembler, file_roots

    # The thread's files are copied into the store, read from where the file's own pointers
    # may lead (its folder, or files.roots), so later runs find them there.
    files = load_settings(args.config).files
    origin = Path.cwd() if args.file == "-" else Path(args.file).resolve().parent
    assembler = ContextAssembler.from_settings(files, file_roots(None, files, [origin]))
    thread_id = store.import_thread(
        load_thread(args.file), thread_id=args.id, title=args.title, files=assembler
    )
    echo(thread_id)


def _compact(args: argparse.Namespace, store: Any) -> None:
    import msgspec

    from turnwire import build_container, compact_thread

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
        echo_json(msgspec.json.encode(payload).decode())
    elif not args.quiet:
        echo(
            f"compacted {args.id}: {plain(result.record.id)} "
            f"({usage.get('input_tokens')} input tokens, {usage.get('output_tokens')} output)",
            file=sys.stderr,
        )


def _copy(args: argparse.Namespace) -> int:
    from turnwire.store import copy_threads

    with open_store(args, args.source) as source, open_store(args, args.target) as target:
        copied = copy_threads(source, target, args.ids)
    for thread_id in copied:
        echo(thread_id)
    if not args.quiet:
        into = getattr(target, "url", target.path)
        echo(f"copied {len(copied)} thread(s) to {into}", file=sys.stderr)
    return 0
