"""How fast a stored thread becomes request bytes, against floors and peers in the same run.

Threads of 1,000 and 10,000 timeline records (user messages, some with an image; reasoning
thoughts with 1 KB of encrypted content, all replayed; own answers; tool calls with outputs)
are rendered end to end with ``turnwire.render`` (pointer loading, every stage, the pairing
sweep with prefix fingerprints, the body, the preflight check, the bytes), with records never
seen before: each render gets an empty render memo (the container, its plugin manager and
stage plan are warm, as in a long-lived process meeting a new thread).

Every subject runs in alternation with its floors and peers, round after round; milliseconds
are medians (min beside), and each ratio is the median over rounds of the two subjects' times
in the same round (a slow spell of a shared machine then slows both sides alike). Printed:

* ms per render and the ratio to the floor: msgspec-encoding the finished body alone;
* the ratio to the Python floor: a hand-written minimal renderer of this thread's shapes
  (nonces, envelopes, items, the sweep's SHA-256 prefix fingerprints, the body) producing the
  same bytes with turnwire's own primitives (nonce deriver, text helpers, hashing), without
  stages, plugins, memo or preflight;
* the 10k/1k time ratio (linear scaling is about 10);
* what of the 10k render is the check of records built in code (``turnwire.model.checks``);
* warm: a 10k thread re-rendered through a warm memo with one new record appended each round
  (a new ``Thread`` whose tuples extend the last one rendered: the work of the next request,
  not a cache hit of the same object), against the encode floor of its body;
* peers, alternated with turnwire's cold 1k render and its floor, on the same 1k thread: the
  official SDK's request preparation (``maybe_transform`` + its JSON dump) of the finished body
  turnwire rendered (the SDK renders nothing: its input is already the request), and
  pydantic-ai's conversion of the same conversation from its own message objects
  (``OpenAIResponsesModel._map_messages``: input dicts, not encoded; no envelopes, no sweep,
  no fingerprints), when it is installed (``uv sync --group bench``).

No collection is forced before a timed call (``benchmarks/_rounds.py``).

Run: ``uv run python benchmarks/render.py`` (``--quick`` for a short run).
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import os
import statistics
import sys
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

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _rounds import alternate, ms, skipped, verdict

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


def paired(subject: list[float], floor: list[float]) -> float:
    """The median over rounds of ``subject / floor`` measured in the same round."""
    return statistics.median(s / f for s, f in zip(subject, floor, strict=True))


def growing_by_one(thread: Thread, count: int) -> list[Thread]:
    """``thread``, then ``count`` threads each extending the one before by one user message
    (the same tuples plus one record, as the client builds the next request's thread)."""
    later = max(r.created_at for r in (*thread.messages, *thread.thoughts, *thread.tool_calls))
    threads = [thread]
    for n in range(count):
        asked = Message(
            id=f"next{n}",
            role="user",
            content=f"And then {n}?",
            created_at=later + timedelta(seconds=n + 1),
        )
        thread = msgspec.structs.replace(thread, messages=(*thread.messages, asked))
        threads.append(thread)
    return threads


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

    loop = asyncio.new_event_loop()

    def convert() -> Any:
        return loop.run_until_complete(model._map_messages(history, {}, parameters))

    return convert


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer rounds")
    args = parser.parse_args()
    rounds = 5 if args.quick else 25
    peer_rounds = 2 if args.quick else 7

    settings = turnwire.load_settings(overrides=SETTINGS)
    container = turnwire.build_container(settings=settings)
    secret = os.environ["TURNWIRE_ENVELOPE_SECRET"]
    sizes = (1_000, 10_000)
    subjects: dict[str, Callable[[], Any]] = {}
    shapes: dict[int, tuple[int, int]] = {}
    bodies: dict[int, dict[str, Any]] = {}
    threads: dict[int, Thread] = {}
    for records in sizes:
        thread = threads[records] = with_valid_fingerprints(synthetic_thread(records), settings)
        rendered = cold_render(thread, container)()
        kinds = [type(i).__name__ for i in rendered.rendered.input]
        assert kinds.count("ReasoningItem") == records // 4, "every reasoning item must replay"
        minimal = minimal_renderer(thread, rendered, secret)
        assert minimal() == rendered.body, "the minimal renderer must give the same bytes"
        subjects[f"render {records}"] = cold_render(thread, container)
        subjects[f"python {records}"] = minimal
        subjects[f"floor {records}"] = functools.partial(encode_body, rendered.request)
        shapes[records] = (len(rendered.rendered.input), len(rendered.body))
        bodies[records] = rendered.json
    # Both sizes in the same rounds: the 10k/1k scaling is paired like the other ratios.
    samples = alternate(subjects, rounds)

    print(
        f"turnwire render benchmark (Python {sys.version.split()[0]}; {rounds} rounds, each "
        "subject alternated with its floors and peers; ms median (min); ratios the median of "
        "each round's; no forced collection)"
    )
    print("records never seen before (an empty render memo per render):")
    for records in sizes:
        items, size = shapes[records]
        render_s, python_s, floor_s = (
            samples[f"{kind} {records}"] for kind in ("render", "python", "floor")
        )
        over = paired(render_s, floor_s)
        print(f"  {records} records ({items} items, a {size / 1e6:.2f} MB body):")
        print(
            f"    turnwire.render  {ms(render_s)}  {over:.1f}x the floor"
            + (f" ({verdict(over, 22)})" if records == 10_000 else "")
            + f", {paired(render_s, python_s):.2f}x the minimal renderer"
            + (f" ({verdict(paired(render_s, python_s), 1.2)})" if records == 10_000 else "")
            + "  [thread -> bytes: every stage, the sweep, fingerprints, preflight]"
        )
        print(
            f"    minimal          {ms(python_s)}  {paired(python_s, floor_s):.1f}x the floor"
            "  [the same bytes by a hand-written renderer on turnwire's primitives]"
        )
        print(f"    floor            {ms(floor_s)}  [msgspec-encoding the finished body alone]")
    scaling = paired(samples["render 10000"], samples["render 1000"])
    print(f"  scaling 10k/1k: {scaling:.1f}x (linear is about 10; target within 11)")

    # What of a cold render is the check of records built in code (a thread the loader read,
    # from a file or a store, is not checked again): the same thread, the same rounds.
    from turnwire.model.checks import check_thread

    checks = alternate(
        {
            "check": functools.partial(check_thread, threads[10_000]),
            "render": cold_render(threads[10_000], container),
        },
        rounds,
    )
    print(
        f"  of a 10k render, checking the records built in code takes {ms(checks['check'])} "
        f"({paired(checks['check'], checks['render']):.0%}; a thread read from a file or a "
        "store is not checked again, and a renderer checks a record once)"
    )

    # Warm: each round renders the next thread, one record longer than the one before.
    warm_container = turnwire.build_container(settings=settings)
    sequence = growing_by_one(threads[10_000], rounds)
    turnwire.render(sequence[0], container=warm_container, model="gpt-5")
    upcoming = iter(sequence[1:])
    last: list[Any] = []

    def warm() -> None:
        last[:] = [turnwire.render(next(upcoming), container=warm_container, model="gpt-5")]

    def warm_floor() -> None:
        encode_body(last[0].request)

    # The floor encodes the body the warm render of the same round made: it runs after it.
    warm_samples: dict[str, list[float]] = {"warm": [], "floor": []}
    for _ in range(rounds):
        part = alternate({"warm": warm, "floor": warm_floor}, 1)
        for name, values in part.items():
            warm_samples[name] += values
    warm_ratio = paired(warm_samples["warm"], warm_samples["floor"])
    print("warm: a 10k thread with one new user message each round, through the warm memo:")
    print(
        f"    turnwire.render  {ms(warm_samples['warm'])}  {warm_ratio:.2f}x the floor"
        "  [a new Thread extending the last one rendered: the next request's work]"
    )
    print(f"    floor            {ms(warm_samples['floor'])}  [encoding that body alone]")

    peers: dict[str, Callable[[], Any]] = {
        "turnwire": subjects["render 1000"],
        "floor": subjects["floor 1000"],
        "sdk": sdk_prepare(bodies[1_000]),
    }
    converted = pydantic_ai_convert(threads[1_000])
    if converted is not None:
        peers["pydantic-ai"] = converted
    got = alternate(peers, peer_rounds)
    print(f"peers on the same 1k thread ({peer_rounds} rounds, alternated with turnwire):")
    print(
        f"    turnwire.render  {ms(got['turnwire'])}  {paired(got['turnwire'], got['floor']):.1f}x"
        " the floor  [thread -> request bytes, cold]"
    )
    faster = paired(got["sdk"], got["turnwire"])
    print(
        f"    official SDK     {ms(got['sdk'])}  turnwire {faster:.0f}x faster "
        f"({verdict(faster, 50, at_least=True)})  [maybe_transform + JSON dump of the finished "
        "body turnwire rendered: preparation only, no rendering]"
    )
    if converted is None:
        skipped("pydantic-ai", "not installed: uv sync --group bench")
    else:
        theirs = paired(got["pydantic-ai"], got["turnwire"])
        print(
            f"    pydantic-ai      {ms(got['pydantic-ai'])}  {theirs:.2f}x turnwire's time  "
            "[its messages of the same conversation -> input dicts (_map_messages), not "
            "encoded; no envelopes, no sweep, no fingerprints]"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
