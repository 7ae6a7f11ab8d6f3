"""``turnwire run``: send a thread (a file, or one of the store), stream the answer, run its
tools; the answer, its sources and the approvals it waits for, printed as plain text."""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from turnwire.cli.options import (
    check_context_read,
    container,
    open_store,
    output_schema,
    render_context,
    show_warnings,
)
from turnwire.cli.printer import Progress, echo, echo_json, plain, shown
from turnwire.errors import ConfigError

if TYPE_CHECKING:
    from turnwire import Message, RunResult, Usage

__all__ = ["Decision", "citations", "print_pending", "run_command"]


class Decision(argparse.Action):
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
    from turnwire import Approval

    decisions = args.decisions or []
    return {d[0]: Approval(approve=d[1], reason=d[2]) for d in decisions} or None


def print_pending(thread: Any, stream: Any) -> None:
    """One line on ``stream`` for each MCP approval request ``thread`` waits for."""
    from turnwire.model.approvals import pending_approvals

    for record in pending_approvals(thread):
        view = record.view
        label = shown(getattr(view, "server_label", "?"), 64)
        name = shown(getattr(view, "name", "?"), 64)
        arguments = shown(getattr(view, "arguments", ""))
        echo(
            f"[approval pending {shown(record.id, 80)}: {label} {name}({arguments}); "
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


def citations(messages: Iterable[Message]) -> list[str]:
    """The distinct citations on ``messages``' text, numbered, as ``turnwire run`` lists them
    after the answer: url citations by title and URL, file citations by file name and id."""
    seen: dict[tuple[str, str], str] = {}
    for message in messages:
        for annotation in message.annotations:
            kind = annotation.get("type")
            if kind == "url_citation" and annotation.get("url"):
                url = plain(annotation["url"])
                title = plain(annotation.get("title") or "")
                key, text = ("url", url), f"{title} <{url}>" if title else f"<{url}>"
            elif kind in ("file_citation", "container_file_citation", "file_path"):
                file_id = plain(annotation.get("file_id") or "")
                name = plain(annotation.get("filename") or "")
                key = ("file", file_id or name)
                text = f"file {name} ({file_id})" if name and file_id else f"file {name or file_id}"
            else:
                continue
            if key[1] and key not in seen:
                seen[key] = text
    return [f"[{number}] {text}" for number, text in enumerate(seen.values(), 1)]


def run_command(args: argparse.Namespace) -> int:
    """Run the thread until the model stops (or once, with --once); print what it answered."""
    from turnwire import run, run_thread

    # A run can wait (retries, a slow stream): its warnings are progress the user should see,
    # the libraries' own too.
    show_warnings(args)
    if not args.quiet:
        logging.getLogger().setLevel(logging.WARNING)

    streamed: list[bool] = []  # whether any text delta arrived

    def on_text(delta: str) -> None:
        if not streamed:
            streamed.append(True)
        echo(delta, end="", flush=True)

    progress = Progress(sys.stderr)
    text_sink = None if args.json else on_text
    on_event = None if args.quiet else progress
    on_tool_result = _tool_results(args, progress)
    schema = output_schema(args)
    # What was asked first (the command's own usage), then the configuration it runs under.
    if args.thread_id and (args.thread or args.save):
        raise ConfigError("--thread runs a stored thread: give no THREAD file and no --save")
    if not args.thread_id and not args.thread:
        raise ConfigError("give a THREAD file, or --thread ID for a stored thread")
    if not args.thread_id and (args.prompt or args.attached):
        raise ConfigError(
            "--prompt, --file, --file-url and --file-id go with --thread; add them to the file"
        )
    files = question_files(args.attached)
    context = render_context(args)
    built = container(args)
    check_context_read(args, built)
    if args.thread_id:
        with open_store(args) as store:
            result = run_thread(
                args.thread_id,
                store=store,
                prompt=args.prompt,
                files=files,
                container=built,
                base_url=args.base_url,
                model=args.model,
                once=args.once,
                on_text=text_sink,
                on_tool_result=on_tool_result,
                on_event=on_event,
                render_context=context,
                approvals=_approvals(args),
                output_schema=schema,
            )
    else:
        result = run(
            args.thread,
            container=built,
            base_url=args.base_url,
            model=args.model,
            once=args.once,
            save=args.save,
            on_text=text_sink,
            on_tool_result=on_tool_result,
            on_event=on_event,
            render_context=context,
            approvals=_approvals(args),
            output_schema=schema,
        )
    if args.json:
        echo_json(_payload(result))
        return 0
    if not streamed:
        # A server that sends its items whole (no text deltas, or the items only in its
        # terminal response): the answer is printed once it is known.
        echo("\n\n".join(m.content for m in result.records.messages if m.content), end="")
    echo()
    if result.refusal is not None:
        # The answer itself, never a summary line: shown even with --quiet.
        echo(f"[refusal] {plain(result.refusal)}", file=sys.stderr)
    sources = citations(result.records.messages)
    if sources:
        echo("\nSources:")
        for line in sources:
            echo(f"  {line}")
    print_pending(result.thread, sys.stderr)
    if args.save and not args.quiet:
        echo(f"saved {args.thread}", file=sys.stderr)
    return 0


_KINDS = ("image", "document")  # what the API takes by reference


def question_files(attached: Iterable[tuple[str, str]]) -> list[Any]:
    """The question's files, in the order given: a ``--file`` path as it is, a ``--file-url``
    or ``--file-id`` as the :class:`~turnwire.Media` reference it names.

    :raises ConfigError: a reference that is not one, naming the option and its value.
    """
    from typing import get_args

    from turnwire._redact import without_query_secrets
    from turnwire.errors import ThreadFileError
    from turnwire.model.records import Media
    from turnwire.wire.content import ImageDetail

    details = get_args(ImageDetail)

    files: list[Any] = []
    for option, value in attached:
        # A URL's query may hold a signature (a presigned URL): the message shows none.
        where = f"{option} {shown(without_query_secrets(value), 200)}"
        if option == "--file":
            files.append(value)
            continue
        try:
            if option == "--file-url":
                files.append(Media.from_url(value))
                continue
            kind, _, rest = value.partition(":")
            file_id, with_detail, detail = rest.partition(":")
            if kind not in _KINDS or not file_id:
                raise ConfigError(
                    f"{where}: say what the file holds and its id: image:ID or document:ID "
                    "(an image's detail after it: image:ID:low)"
                )
            if with_detail and kind != "image":
                raise ConfigError(f"{where}: only an image takes a detail")
            if with_detail and detail not in details:
                raise ConfigError(f"{where}: an image's detail is one of {', '.join(details)}")
            files.append(
                Media.from_file_id(file_id, kind=kind, detail=detail or None)  # type: ignore[arg-type]
            )
        except ThreadFileError as err:
            raise ConfigError(f"{where}: {err}") from None
    return files


def _tool_results(args: argparse.Namespace, progress: Progress) -> Any:
    """The ``on_tool_result`` callback: one line on stderr for each tool call that ran."""

    def on_tool_result(call: object) -> None:
        import msgspec

        from turnwire import ToolCall
        from turnwire._redact import redact

        assert isinstance(call, ToolCall)
        result = call.result
        answer = "" if result is None else (result.text or "(artifact)")
        mark = "error" if call.is_error else "ok"
        if not args.quiet:
            progress.end_line()
            # A progress line, like a log record: no secret in it (a tool may return one).
            arguments = redact(msgspec.json.encode(call.args).decode())
            line = f"{plain(call.tool)}({plain(arguments)}) {mark}: {plain(redact(answer)[:200])}"
            echo(f"[tool {line}]", file=sys.stderr)

    return on_tool_result


def _usage_json(usage: Usage | None) -> dict[str, Any] | None:
    """A usage as ``run --json`` prints it: its counts and its ``cache_hit_ratio`` (cached over
    input; null when there was no input)."""
    import msgspec

    if usage is None:
        return None
    return {**msgspec.to_builtins(usage), "cache_hit_ratio": usage.cache_hit_ratio}


def _payload(result: RunResult) -> str:
    """``run --json``'s object: the response, the records, the usage, what is pending."""
    import msgspec

    payload: dict[str, Any] = {
        "response": msgspec.to_builtins(result.response),
        "records": msgspec.to_builtins(result.records),
        "usage": {
            "total": _usage_json(result.usage),
            "generations": [
                {**msgspec.to_builtins(stats), "usage": _usage_json(stats.usage)}
                for stats in result.generations
            ],
        },
    }
    # How each request related to the one before it (the first to the last of the previous
    # run, for a stored thread): whether it extended it, else where and why not.
    payload["prefix"] = msgspec.to_builtins(result.prefix)
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
    return msgspec.json.encode(payload).decode()
