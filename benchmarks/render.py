"""How fast a stored thread becomes request bytes, against a floor and peers in the same run.

Threads of 1,000 and 10,000 timeline records (user messages, some with an image; reasoning
thoughts with 1 KB of encrypted content, all replayed; own answers; tool calls with outputs)
are rendered end to end with ``turnwire.render`` (pointer loading, every stage, the pairing
sweep with prefix fingerprints, the body, the preflight check, the bytes). Printed:

* ms per render and the ratio to the floor: msgspec-encoding the finished body alone;
* the 10k/1k time ratio (linear scaling is about 10);
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
from turnwire.model import (
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
from turnwire.request import encode_body
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


def timed(fn: Callable[[], Any], runs: int) -> float:
    """Median seconds of ``runs`` calls."""
    samples = []
    for _ in range(runs):
        gc.collect()
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def interleaved(
    subject: Callable[[], Any], floor: Callable[[], Any], runs: int
) -> tuple[float, float]:
    """Median seconds of ``subject`` and of ``floor``, measured in alternation so that a noisy
    machine slows both alike."""
    subject_samples, floor_samples = [], []
    for _ in range(runs):
        for fn, samples in ((subject, subject_samples), (floor, floor_samples)):
            gc.collect()
            start = time.perf_counter()
            fn()
            samples.append(time.perf_counter() - start)
    return statistics.median(subject_samples), statistics.median(floor_samples)


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
    runs_small, runs_large = (5, 3) if args.quick else (21, 9)

    settings = turnwire.load_settings(overrides=SETTINGS)
    container = turnwire.build_container(settings=settings)
    results: dict[int, dict[str, float]] = {}
    bodies: dict[int, dict[str, Any]] = {}
    for records in (1_000, 10_000):
        thread = with_valid_fingerprints(synthetic_thread(records), settings)
        rendered = turnwire.render(thread, container=container, model="gpt-5")
        kinds = [type(i).__name__ for i in rendered.rendered.input]
        assert kinds.count("ReasoningItem") == records // 4, "every reasoning item must replay"
        runs = runs_small if records == 1_000 else runs_large
        render_s, floor_s = interleaved(
            functools.partial(turnwire.render, thread, container=container, model="gpt-5"),
            functools.partial(encode_body, rendered.request),
            runs,
        )
        results[records] = {
            "render": render_s,
            "floor": floor_s,
            "items": len(rendered.rendered.input),
            "bytes": len(rendered.body),
        }
        bodies[records] = rendered.json

    print(f"turnwire render benchmark (Python {sys.version.split()[0]}, median of runs)")
    print(
        f"{'records':>8} {'items':>7} {'body':>9} {'render ms':>10} {'floor ms':>9} "
        f"{'render/floor':>13}"
    )
    for records, r in results.items():
        print(
            f"{records:>8} {r['items']:>7} {r['bytes'] / 1e6:>8.2f}M {r['render'] * 1e3:>10.2f}"
            f" {r['floor'] * 1e3:>9.2f} {r['render'] / r['floor']:>12.1f}x"
        )
    scaling = results[10_000]["render"] / results[1_000]["render"]
    print(f"scaling 10k/1k: {scaling:.1f}x (linear is about 10; target within 11)")
    print(
        f"10k render within {results[10_000]['render'] / results[10_000]['floor']:.1f}x "
        "of the floor (target 20x, stretch 10x)"
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
        peer_s = timed(peer, runs_small)
        print(
            f"pydantic-ai OpenAIResponsesModel._map_messages, 1k records: "
            f"{peer_s * 1e3:.1f} ms -> turnwire is {peer_s / results[1_000]['render']:.1f}x "
            "its speed (it renders less: no envelopes, no sweep, no fingerprints)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
