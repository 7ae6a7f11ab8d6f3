"""Events per second through turnwire's SSE decoder and output slots, against a floor and the SDK.

One synthetic stream of 50,000 events (lifecycle events, an output item, 49,990 text deltas
with ``logprobs`` and ``obfuscation`` as the real API sends them, the done events and
``response.completed`` with the full text) is read three ways in the same run:

* turnwire: :class:`SSEDecoder` + :func:`decode_event` + :class:`ResponseAccumulator`;
* the floor: the same framing and msgspec decoding, with no slot work;
* the official SDK end to end: ``client.responses.create(stream=True)`` over an in-memory
  transport, iterating its typed events.

Each is measured on 16 KiB chunks and on one event per chunk (what a live server flushes).
Run: ``uv run python benchmarks/stream.py`` (``--quick`` for fewer runs).
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import sys
import time
from collections.abc import Callable

from turnwire.client.slots import ResponseAccumulator
from turnwire.client.sse import SSEDecoder
from turnwire.wire.events import decode_event

DELTAS = 49_990


def synthetic_stream() -> tuple[bytes, list[bytes], int]:
    """The stream's bytes, the same split one event per chunk, and the event count."""
    response = {
        "id": "resp_1",
        "object": "response",
        "status": "in_progress",
        "model": "gpt-5",
        "output": [],
        "usage": None,
        "created_at": 1,
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
    }
    text = "word " * DELTAS
    message = {
        "type": "message",
        "id": "msg_1",
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": text, "annotations": [], "logprobs": []}],
    }
    events: list[dict] = [
        {"type": "response.created", "response": response},
        {"type": "response.in_progress", "response": response},
        {
            "type": "response.output_item.added",
            "output_index": 0,
            "item": {**message, "status": "in_progress", "content": []},
        },
        {
            "type": "response.content_part.added",
            "item_id": "msg_1",
            "output_index": 0,
            "content_index": 0,
            "part": {"type": "output_text", "text": "", "annotations": [], "logprobs": []},
        },
    ]
    events += [
        {
            "type": "response.output_text.delta",
            "item_id": "msg_1",
            "output_index": 0,
            "content_index": 0,
            "delta": "word ",
            "logprobs": [],
            "obfuscation": "x7Kq",
        }
        for _ in range(DELTAS)
    ]
    usage = {
        "input_tokens": 10,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": DELTAS,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": DELTAS + 10,
    }
    events += [
        {
            "type": "response.output_text.done",
            "item_id": "msg_1",
            "output_index": 0,
            "content_index": 0,
            "text": text,
            "logprobs": [],
        },
        {
            "type": "response.content_part.done",
            "item_id": "msg_1",
            "output_index": 0,
            "content_index": 0,
            "part": message["content"][0],
        },
        {"type": "response.output_item.done", "output_index": 0, "item": message},
        {
            "type": "response.completed",
            "response": {**response, "status": "completed", "output": [message], "usage": usage},
        },
    ]
    frames = []
    for number, event in enumerate(events):
        event["sequence_number"] = number
        frames.append(f"event: {event['type']}\ndata: {json.dumps(event)}\n\n".encode())
    return b"".join(frames), frames, len(events)


def chunked(data: bytes, size: int = 16_384) -> list[bytes]:
    return [data[i : i + size] for i in range(0, len(data), size)]


def turnwire_read(chunks: list[bytes]) -> int:
    decoder, accumulator = SSEDecoder(), ResponseAccumulator()
    done = []
    for chunk in chunks:
        done += accumulator.feed([decode_event(e.data) for e in decoder.feed(chunk)])
    assert done and len(done[0].text) == 5 * DELTAS
    return len(done)


def floor_read(chunks: list[bytes]) -> int:
    decoder = SSEDecoder()
    count = 0
    for chunk in chunks:
        for event in decoder.feed(chunk):
            decode_event(event.data)
            count += 1
    return count


def sdk_reader() -> Callable[[list[bytes]], int] | None:
    try:
        import httpx2
        from openai import OpenAI
    except ImportError:
        return None

    def read(chunks: list[bytes]) -> int:
        def handler(request: httpx2.Request) -> httpx2.Response:
            return httpx2.Response(
                200, headers={"content-type": "text/event-stream"}, content=iter(chunks)
            )

        client = OpenAI(
            api_key="sk-benchmark",
            base_url="http://sdk.invalid/v1",
            http_client=httpx2.Client(transport=httpx2.MockTransport(handler)),
        )
        count = 0
        for _ in client.responses.create(model="gpt-5", input="hi", stream=True):
            count += 1
        return count

    return read


def rate(fn: Callable[[list[bytes]], int], chunks: list[bytes], events: int, runs: int) -> float:
    samples = []
    for _ in range(runs):
        gc.collect()
        start = time.perf_counter()
        fn(chunks)
        samples.append(time.perf_counter() - start)
    return events / statistics.median(samples)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    runs = 3 if args.quick else 7
    data, frames, events = synthetic_stream()
    print(
        f"stream benchmark: {events} events, {len(data) / 1e6:.1f} MB "
        f"(Python {sys.version.split()[0]}, median of {runs} runs)"
    )
    sdk = sdk_reader()
    for label, chunks in (("16 KiB chunks", chunked(data)), ("1 event/chunk", frames)):
        ours = rate(turnwire_read, chunks, events, runs)
        floor = rate(floor_read, chunks, events, runs)
        line = (
            f"  {label:<14} turnwire {ours / 1e3:7.0f}k ev/s   floor {floor / 1e3:7.0f}k ev/s"
            f"   turnwire/floor {ours / floor:.2f} (target >= 0.5)"
        )
        if sdk is not None:
            theirs = rate(sdk, chunks, events, 1 if args.quick else 3)
            line += (
                f"   SDK {theirs / 1e3:5.1f}k ev/s   turnwire/SDK {ours / theirs:.0f}x"
                " (target >= 30x)"
            )
        print(line)
    if sdk is None:
        print("  the openai package is not installed: SDK comparison skipped")
    return 0


if __name__ == "__main__":
    sys.exit(main())
