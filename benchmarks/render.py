"""How fast a stored thread becomes request bytes, against floors and peers in the same run.

Threads of 1,000 and 10,000 timeline records (user messages, some with an image; reasoning
thoughts with 1 KB of encrypted content, all replayed; own answers; tool calls with outputs)
are rendered end to end with ``turnwire.render`` (pointer loading, every stage, the pairing
sweep with prefix fingerprints, the body, the preflight check, the bytes), with records never
seen before: each render gets an empty render memo (the container, its plugin manager and
stage plan are warm, as in a long-lived process meeting a new thread).

Both sizes and all three subjects run in alternation, round after round; milliseconds are
medians, and each ratio is the median over rounds of the two subjects' times in the same round
(a slow spell of a shared machine then slows both sides of a ratio alike). Printed:

* ms per render and the ratio to the floor: msgspec-encoding the finished body alone;
* the ratio to the Python floor: a hand-written minimal renderer of this thread's shapes
  (nonces, envelopes, items, the sweep's SHA-256 prefix fingerprints, the body) producing the
  same bytes with turnwire's own primitives (nonce deriver, text helpers, hashing), without
  stages, plugins, memo or preflight;
* the 10k/1k time ratio (linear scaling is about 10);
* what of the 10k render is the check of records built in code (``turnwire.model.checks``);
* a re-render of the same 10k thread through the warm memo, against the encode floor;
* the ratio to the official SDK's request preparation (``maybe_transform`` + its JSON dump) of
  the same body, and to pydantic-ai's conversion of the same conversation when it is installed
  (``uv sync --group bench``).

Run: ``uv run python benchmarks/render.py`` (``--quick`` for a short run).
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import gc
import os
import statistics
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import msgspec

import turnwire
from turnwire.model.records import (
    REPLAY_TAG,
    Media,
    Message,
    ReasoningPayload,
    Thought,
    Thread,
    Tool,
    ToolCall,
    ToolResult,
)
from turnwire.rendering.body import encode_body
from turnwire.stages.fingerprint import fingerprint_prefix
from turnwire.wire import ReasoningItem, SummaryText

os.environ.setdefault("TURNWIRE_ENVELOPE_SECRET", "benchmark-secret")

SETTINGS = {
    "render": {"reasoning_replay": "encrypted", "replay_compatibility": [REPLAY_TAG]},
    "plugins": {"load_entrypoints": False},
}
T0 = datetime(2026, 1, 1, tzinfo=UTC)
ENCRYPTED = "gAAAAB" + "x" * 1018
PNG = bytes(range(256)) * 4


def synthetic_thread(records: int) -> Thread:
    """``records`` timeline records in cycles of user, thought, answer, tool call."""
    messages: list[Message] = []
    thoughts: list[Thought] = []
    calls: list[ToolCall] = []
    for cycle in range(records // 4):
        base = T0 + timedelta(seconds=10 * cycle)
        attachments = (
            (Media(id=f"img{cycle}", kind="image", mime_type="image/png", data=PNG),)
            if cycle % 10 == 0
            else ()
        )
        messages.append(
            Message(
                id=f"u{cycle}",
                role="user",
                content=f"Question {cycle}?",
                attachments=attachments,
                created_at=base,
            )
        )
        item = ReasoningItem(
            id=f"rs_{cycle}",
            summary=(SummaryText(text=f"plan {cycle}"),),
            encrypted_content=ENCRYPTED,
        )
        thoughts.append(
            Thought(
                id=f"rs_{cycle}",
                replay_compatibility=REPLAY_TAG,
                created_at=base,
                seq=1,
                payload=ReasoningPayload(
                    item=item, paired_item_id=f"fc_{cycle}", prefix_fingerprint=None
                ),
            )
        )
        calls.append(
            ToolCall(
                id=f"call_{cycle}|fc_{cycle}",
                tool="lookup",
                args={"q": f"item {cycle}"},
                created_at=base,
                seq=2,
                result=ToolResult(text=f"result {cycle} " * 8),
            )
        )
        messages.append(
            Message(
                id=f"msg_{cycle}",
                role="assistant",
                content=f"Answer {cycle}: " + "words " * 20,
                created_at=base,
                seq=3,
            )
        )
    tool = Tool(
        name="lookup",
        description="Look something up",
        parameters={"type": "object", "properties": {"q": {"type": "string"}}},
    )
    return Thread(
        model="gpt-5",
        system_prompt="You answer questions.",
        tools=(tool,),
        messages=tuple(messages),
        thoughts=tuple(thoughts),
        tool_calls=tuple(calls),
    )


def with_valid_fingerprints(thread: Thread, settings: turnwire.Settings) -> Thread:
    """Give every thought the fingerprint of the prefix it will follow, so all are replayed.

    A first render accepts every fingerprint (the fingerprint stage is overridden to agree
    with a placeholder); its input is the final prefix, hashed once, linearly.
    """
    from dependency_injector import providers

    replace = msgspec.structs.replace
    placeholder = tuple(
        replace(t, payload=replace(t.payload, prefix_fingerprint="accept"))
        for t in thread.thoughts
        if t.payload is not None
    )
    accepting = turnwire.build_container(settings=settings)
    with accepting.fingerprint_prefix.override(providers.Object(lambda: "accept")):
        final = turnwire.render(
            replace(thread, thoughts=placeholder), container=accepting, model="gpt-5"
        )
    items = final.rendered.input
    by_id: dict[str, str] = {}
    scratch: dict[str, Any] = {}
    for index, item in enumerate(items):
        if isinstance(item, ReasoningItem) and item.id is not None:
            by_id[item.id] = fingerprint_prefix(
                model="gpt-5",
                instructions=final.rendered.instructions,
                tools=final.rendered.tools,
                input=items,
                through_item=index,
                fingerprint_binding="prefix",
                endpoint=accepting.endpoint(),
                scratch=scratch,
            )
    thoughts = tuple(
        replace(t, payload=replace(t.payload, prefix_fingerprint=by_id[t.id]))
        for t in thread.thoughts
        if t.payload is not None
    )
    return replace(thread, thoughts=thoughts)


def minimal_renderer(thread: Thread, reference: Any, secret: str) -> Callable[[], bytes]:
    """A hand-written renderer of this benchmark's thread shapes, producing turnwire's bytes.

    The Python floor of a from-scratch render: turnwire's own text helpers, wire Structs,
    nonce deriver (:class:`~turnwire.config.nonce.EnvelopeNonce`, a fresh one each render, as the
    cold render gets) and prefix hashing, so that the ratio measures what the architecture
    adds (stages, relay, memo, the separate sweep and preflight passes), not a slower
    primitive on either side. The leading instructions and tool declarations are taken from
    ``reference`` (they cost O(1)).
    """
    import base64
    import hashlib

    from turnwire.config.nonce import EnvelopeNonce
    from turnwire.config.options import EnvelopeAttrs
    from turnwire.stages._text import escape_attr, iso, neutralise
    from turnwire.stages.envelopes import envelope
    from turnwire.stages.fingerprint import canonical_items, prefix_tail
    from turnwire.stages.media import media_marker
    from turnwire.wire import (
        FunctionCall,
        FunctionCallOutput,
        InputImage,
        InputMessage,
        InputText,
        OutputMessage,
        OutputText,
    )

    instructions = reference.rendered.instructions
    tools = reference.rendered.tools
    plain = msgspec.json.Encoder()
    tail = prefix_tail("gpt-5", instructions, tools)

    def render() -> bytes:
        nonce = EnvelopeNonce(secret)
        entries = [
            (r.created_at, r.seq, rank, i, r)
            for rank, records in enumerate((thread.messages, thread.thoughts, thread.tool_calls))
            for i, r in enumerate(records)
        ]
        entries.sort()
        out: list[Any] = []
        hasher = hashlib.sha256(b'{"input":[')
        hashed = 0
        after_reasoning = False
        for entry in entries:
            record = entry[4]
            if isinstance(record, Message):
                if record.role == "user":
                    tag = f"message_{nonce(record.id)}"
                    text = (
                        f'<{tag} from="{escape_attr("user")}" role="user" '
                        f'createdAt="{iso(record.created_at)}">\n'
                        f"{neutralise(record.content or '', tag)}\n</{tag}>"
                    )
                    blocks: list[Any] = [InputText(text=text)]
                    for media in record.attachments:
                        data = base64.b64encode(media.data or b"").decode("ascii")
                        blocks.append(InputText(text=media_marker(media)))
                        blocks.append(
                            InputImage(
                                detail="auto", image_url=f"data:{media.mime_type};base64,{data}"
                            )
                        )
                    out.append(InputMessage(role="user", content=tuple(blocks)))
                else:
                    text = neutralise(record.content or "")
                    if after_reasoning:
                        out.append(
                            OutputMessage(
                                role="assistant",
                                status="completed",
                                id=record.id,
                                content=(OutputText(text=text, annotations=()),),
                                phase=record.phase,
                            )
                        )
                    else:
                        out.append(InputMessage(role="assistant", content=text, phase=None))
                after_reasoning = False
            elif isinstance(record, ToolCall):
                call_id, item_id = record.split_id()
                attrs = EnvelopeAttrs(nonce=nonce(record.id), kind="tool-result", tool=record.tool)
                output = envelope("untrusted_content", record.result.text or "", attrs)
                out.append(
                    FunctionCall(
                        call_id=call_id,
                        name=record.tool,
                        arguments=plain.encode(record.args).decode(),
                        id=item_id if after_reasoning else None,
                    )
                )
                out.append(FunctionCallOutput(call_id=call_id, output=output))
                after_reasoning = False
            else:
                if len(out) > hashed:
                    if hashed:
                        hasher.update(b",")
                    hasher.update(canonical_items(out[hashed:]))
                    hashed = len(out)
                final = hasher.copy()
                final.update(tail)
                assert record.payload is not None
                if final.hexdigest() == record.payload.prefix_fingerprint:
                    out.append(record.payload.item)
                    after_reasoning = True
        body = msgspec.structs.replace(reference.request, input=tuple(out))
        return encode_body(body)

    return render


def timed(fn: Callable[[], Any], runs: int) -> float:
    """Median seconds of ``runs`` calls."""
    samples = []
    for _ in range(runs):
        gc.collect()
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def interleaved(*functions: Callable[[], Any], runs: int) -> list[list[float]]:
    """Seconds of each call of each function, ``runs`` rounds, the functions in alternation
    within a round so that a noisy machine slows all of a round alike."""
    samples: list[list[float]] = [[] for _ in functions]
    for _ in range(runs):
        for fn, kept in zip(functions, samples, strict=True):
            gc.collect()
            start = time.perf_counter()
            fn()
            kept.append(time.perf_counter() - start)
    return samples


def paired(subject: list[float], floor: list[float]) -> float:
    """The median over rounds of ``subject / floor`` measured in the same round: a slow spell
    of a shared machine slows both sides of a round, so it cancels out of the ratio (a ratio
    of two medians taken from different rounds keeps it)."""
    return statistics.median(s / f for s, f in zip(subject, floor, strict=True))


def cold_render(thread: Thread, container: Any) -> Callable[[], Any]:
    """``turnwire.render`` with records never seen before: an empty render memo and a nonce
    deriver that has derived no nonce yet (the same secret), each call."""
    from turnwire.config.nonce import EnvelopeNonce
    from turnwire.rendering._incremental.memo import RenderMemo
    from turnwire.rendering.container import overriding

    secret = os.environ["TURNWIRE_ENVELOPE_SECRET"]

    def render() -> Any:
        with (
            overriding(container.render_memo, RenderMemo()),
            overriding(container.envelope_nonce, EnvelopeNonce(secret)),
        ):
            return turnwire.render(thread, container=container, model="gpt-5")

    return render


def sdk_prepare(body: dict[str, Any]) -> Callable[[], Any]:
    from openai._compat import model_dump  # noqa: F401  (import check: the SDK is installed)
    from openai._utils import maybe_transform
    from openai.types.responses import response_create_params

    try:
        from openai._utils._json import openapi_dumps
    except ImportError:  # pragma: no cover - older SDKs
        import json

        def openapi_dumps(value: Any) -> bytes:
            return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()

    def prepare() -> bytes:
        params = maybe_transform(body, response_create_params.ResponseCreateParamsStreaming)
        return openapi_dumps(params)

    return prepare


def pydantic_ai_convert(thread: Thread) -> Callable[[], Any] | None:
    try:
        from pydantic_ai.messages import (
            BinaryContent,
            ModelRequest,
            ModelResponse,
            TextPart,
            ThinkingPart,
            ToolCallPart,
            ToolReturnPart,
            UserPromptPart,
        )
        from pydantic_ai.models import ModelRequestParameters
        from pydantic_ai.models.openai import OpenAIResponsesModel
        from pydantic_ai.providers.openai import OpenAIProvider
    except ImportError:
        return None
    history: list[Any] = []
    entries = sorted(
        [*thread.messages, *thread.thoughts, *thread.tool_calls],
        key=lambda r: (r.created_at, r.seq),
    )
    for record in entries:
        if isinstance(record, Message) and record.role == "user":
            content: list[Any] = [record.content or ""]
            content += [
                BinaryContent(data=m.data or b"", media_type=m.mime_type)
                for m in record.attachments
            ]
            history.append(ModelRequest(parts=[UserPromptPart(content=content)]))
        elif isinstance(record, Thought) and record.payload is not None:
            history.append(
                ModelResponse(
                    parts=[
                        ThinkingPart(
                            content="plan",
                            id=record.id,
                            signature=ENCRYPTED,
                            provider_name="openai",
                        )
                    ]
                )
            )
        elif isinstance(record, ToolCall):
            history.append(
                ModelResponse(
                    parts=[
                        ToolCallPart(
                            tool_name=record.tool,
                            args=record.args,
                            tool_call_id=record.call_id,
                            id=record.item_id,
                        )
                    ]
                )
            )
            history.append(
                ModelRequest(
                    parts=[
                        ToolReturnPart(
                            tool_name=record.tool,
                            content=record.result.text if record.result else "",
                            tool_call_id=record.call_id,
                        )
                    ]
                )
            )
        elif isinstance(record, Message):
            history.append(
                ModelResponse(parts=[TextPart(content=record.content or "", id=record.id)])
            )
    model = OpenAIResponsesModel("gpt-5", provider=OpenAIProvider(api_key="sk-benchmark"))
    parameters = ModelRequestParameters()

    def convert() -> Any:
        return asyncio.run(model._map_messages(history, {}, parameters))

    return convert


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer runs")
    args = parser.parse_args()
    runs = 5 if args.quick else 25

    settings = turnwire.load_settings(overrides=SETTINGS)
    container = turnwire.build_container(settings=settings)
    secret = os.environ["TURNWIRE_ENVELOPE_SECRET"]
    sizes = (1_000, 10_000)
    subjects: list[Callable[[], Any]] = []
    shapes: dict[int, tuple[int, int]] = {}
    bodies: dict[int, dict[str, Any]] = {}
    threads: dict[int, Thread] = {}
    requests: dict[int, Any] = {}
    for records in sizes:
        thread = threads[records] = with_valid_fingerprints(synthetic_thread(records), settings)
        rendered = cold_render(thread, container)()
        kinds = [type(i).__name__ for i in rendered.rendered.input]
        assert kinds.count("ReasoningItem") == records // 4, "every reasoning item must replay"
        minimal = minimal_renderer(thread, rendered, secret)
        assert minimal() == rendered.body, "the minimal renderer must give the same bytes"
        subjects += [
            cold_render(thread, container),
            minimal,
            functools.partial(encode_body, rendered.request),
        ]
        shapes[records] = (len(rendered.rendered.input), len(rendered.body))
        bodies[records] = rendered.json
        requests[records] = rendered.request
    # Both sizes in the same rounds: the 10k/1k scaling is paired like the other ratios.
    samples = interleaved(*subjects, runs=runs)
    results: dict[int, dict[str, float]] = {}
    for position, records in enumerate(sizes):
        render_s, python_s, floor_s = samples[3 * position : 3 * position + 3]
        results[records] = {
            "render": statistics.median(render_s),
            "python": statistics.median(python_s),
            "floor": statistics.median(floor_s),
            "render/floor": paired(render_s, floor_s),
            "render/python": paired(render_s, python_s),
            "python/floor": paired(python_s, floor_s),
        }
    scaling = paired(samples[3], samples[0])

    # What of a cold render is the check of records built in code (a thread the loader read,
    # from a file or a store, is not checked again): the same thread, the same rounds.
    from turnwire.model.checks import check_thread

    check_samples, check_render_samples = interleaved(
        functools.partial(check_thread, threads[10_000]),
        cold_render(threads[10_000], container),
        runs=runs,
    )
    check_s = statistics.median(check_samples)

    warm = functools.partial(turnwire.render, threads[10_000], container=container, model="gpt-5")
    warm()
    warm_samples, warm_floor_samples = interleaved(
        warm, functools.partial(encode_body, requests[10_000]), runs=runs
    )
    warm_s = statistics.median(warm_samples)

    print(
        f"turnwire render benchmark (Python {sys.version.split()[0]}; {runs} rounds, each "
        "subject alternated with its floors; ms are medians, ratios medians of each round's)"
    )
    print("records never seen before (an empty render memo per render):")
    print(
        f"{'records':>8} {'items':>7} {'body':>9} {'render ms':>10} {'python ms':>10} "
        f"{'floor ms':>9} {'render/floor':>13} {'render/python':>14}"
    )
    for records, r in results.items():
        items, size = shapes[records]
        print(
            f"{records:>8} {items:>7} {size / 1e6:>8.2f}M {r['render'] * 1e3:>10.2f}"
            f" {r['python'] * 1e3:>10.2f} {r['floor'] * 1e3:>9.2f}"
            f" {r['render/floor']:>12.1f}x {r['render/python']:>13.2f}x"
        )
    print(f"scaling 10k/1k: {scaling:.1f}x (linear is about 10; target within 11)")
    ten = results[10_000]
    print(
        f"10k render within {ten['render/floor']:.1f}x of the encode floor (target 22x)"
        f" and {ten['render/python']:.2f}x the minimal Python renderer (target 1.2x);"
        f" the minimal renderer itself is {ten['python/floor']:.1f}x the floor"
    )
    print(
        f"of a 10k render, checking the records built in code takes {check_s * 1e3:.2f} ms "
        f"({paired(check_samples, check_render_samples):.0%}; a thread read from a file or a "
        "store is not checked again, and a renderer checks a record once)"
    )
    print(
        f"the same 10k thread again through the warm memo: {warm_s * 1e3:.2f} ms, "
        f"{paired(warm_samples, warm_floor_samples):.2f}x the encode floor"
    )

    sdk = sdk_prepare(bodies[1_000])
    sdk_s = timed(sdk, 1 if args.quick else 3)
    ratio = sdk_s / results[1_000]["render"]
    print(
        f"official SDK request preparation, 1k records: {sdk_s * 1e3:.0f} ms "
        f"-> turnwire is {ratio:.0f}x faster (target at least 50x)"
    )

    peer = pydantic_ai_convert(synthetic_thread(1_000))
    if peer is None:
        print("pydantic-ai: not installed (uv sync --group bench) - skipped")
    else:
        peer_s = timed(peer, runs)
        print(
            f"pydantic-ai OpenAIResponsesModel._map_messages, 1k records: "
            f"{peer_s * 1e3:.1f} ms -> turnwire is {peer_s / results[1_000]['render']:.1f}x "
            "its speed (it renders less: no envelopes, no sweep, no fingerprints)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
