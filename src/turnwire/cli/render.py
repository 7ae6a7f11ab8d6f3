"""``turnwire render`` and ``turnwire fingerprint``: what a thread renders to, offline."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from turnwire.cli.options import (
    check_context_read,
    container,
    output_schema,
    render_context,
    summarise_warnings,
)
from turnwire.cli.printer import echo, echo_json

__all__ = ["fingerprint_command", "render_command"]


def render_command(args: argparse.Namespace) -> int:
    """Print the exact body ``run`` would send, MCP credentials masked."""
    from turnwire import render

    context = render_context(args)  # a malformed --render-context fails before anything else
    built = container(args)
    check_context_read(args, built)
    rendered = render(
        args.thread,
        container=built,
        model=args.model,
        render_context=context,
        output_schema=output_schema(args),
    )
    echo_json(_without_credentials(rendered), flush=True, exact=True)
    summarise_warnings(args, rendered.rendered.warnings)
    if not args.quiet and not built.envelope_nonce().keyed:
        echo(
            "turnwire: warning: no envelope secret could be read or made, so the envelope "
            "nonces in this body are the unkeyed ones anyone can compute; set "
            "TURNWIRE_ENVELOPE_SECRET (render.envelope_secret_env) or "
            "render.envelope_secret_file",
            file=sys.stderr,
        )
    return 0


def _without_credentials(rendered: Any) -> bytes:
    """The body, with every MCP server's credentials replaced by ``[redacted]``."""
    import msgspec

    from turnwire.wire.hosted_tools import redacted_tools

    body = rendered.request
    shown = tuple(redacted_tools(body.tools or ()))
    if all(a is b for a, b in zip(shown, body.tools or (), strict=True)):
        return bytes(rendered.body)
    # The body as sent (its extra fields, a plugin's changes), only its tools replaced.
    sent = msgspec.json.decode(rendered.body)
    sent["tools"] = msgspec.to_builtins(shown)
    return msgspec.json.encode(sent)


def fingerprint_command(args: argparse.Namespace) -> int:
    """Stamp imported reasoning (and with --seal-hosted, seal hosted items); write the thread."""
    from turnwire import dump_thread, load_thread, save_thread
    from turnwire.rendering.fingerprints import stamp_fingerprints
    from turnwire.rendering.renderer import resolve_model

    built = container(args)
    thread = load_thread(args.thread)
    sealed = 0
    if args.seal_hosted and thread.hosted_items:
        import msgspec

        from turnwire.model.hosted import seal, thread_anchor

        nonce, anchor = built.envelope_nonce(), thread_anchor(thread)
        items = tuple(seal(record, nonce, anchor) for record in thread.hosted_items)
        sealed = sum(a.seal != b.seal for a, b in zip(items, thread.hosted_items, strict=True))
        thread = msgspec.structs.replace(thread, hosted_items=items)
    stamped, report = stamp_fingerprints(
        thread,
        container=built,
        model=resolve_model(thread, built, args.model),
        render_context=render_context(args),
        roots=[Path(args.thread).resolve().parent],
    )
    target = args.output or args.thread
    if target == "-":
        echo_json(dump_thread(stamped))
    elif report.stamped or sealed or target != args.thread:
        save_thread(stamped, target)
    if not args.quiet:
        where = "stdout" if target == "-" else target
        total = len(report.stamped) + len(report.skipped)
        echo(f"stamped {len(report.stamped)} of {total} thoughts ({where})", file=sys.stderr)
        if args.seal_hosted:
            echo(f"sealed {sealed} hosted items", file=sys.stderr)
        for thought_id, reason in sorted(report.skipped.items()):
            echo(f"  not stamped: {thought_id}: {reason}", file=sys.stderr)
    return 0
