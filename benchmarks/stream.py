"""Events per second through turnwire's SSE decoder and output slots, against a floor and the SDK.

One synthetic stream of 50,000 events (lifecycle events, an output item, 49,990 text deltas
with ``logprobs`` and ``obfuscation`` as the real API sends them, the done events and
``response.completed`` with the full text) is read four ways in the same run:

* turnwire: :meth:`SSEDecoder.feed_data` + :func:`decode_event` + :class:`ResponseAccumulator`;
* turnwire with event objects: the same through :meth:`SSEDecoder.feed` (a
  :class:`ServerSentEvent` per event);
* the floor: no turnwire code at all, the plainest reader correct for this stream: the bytes are
  split on LF LF (the part after the last pair is kept for the next chunk), each block on LF,
  and each ``data: `` line is decoded by msgspec into the same event types (the typed union,
  then the unknown-event fallback), with no slot work;
* the official SDK end to end: ``client.responses.create(stream=True)`` over an in-memory
  transport, iterating its typed events.

Each is measured on 16 KiB chunks and on one event per chunk (what a live server flushes). The
readers take turns within every round (the machine may be shared and noisy); a ratio against
the floor or the SDK is the median of the rounds' ratios, and times are medians.
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

import msgspec

from turnwire.client.sse import SSEDecoder
from turnwire.wire.accumulator import ResponseAccumulator
from turnwire.wire.events import StreamEvent, UnknownEvent, decode_event

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
        done += accumulator.feed([decode_event(data) for data in decoder.feed_data(chunk)])
    done += accumulator.feed([decode_event(data) for data in decoder.close_data()])
    assert done and len(done[0].text) == 5 * DELTAS
    return len(done)


def turnwire_objects_read(chunks: list[bytes]) -> int:
    decoder, accumulator = SSEDecoder(), ResponseAccumulator()
    done = []
    for chunk in chunks:
        done += accumulator.feed([decode_event(e.data) for e in decoder.feed(chunk)])
    done += accumulator.feed([decode_event(e.data) for e in decoder.close()])
    assert done and len(done[0].text) == 5 * DELTAS
    return len(done)


_TYPED = msgspec.json.Decoder(StreamEvent)
_UNKNOWN = msgspec.json.Decoder(UnknownEvent)


def floor_read(chunks: list[bytes]) -> int:
    typed, unknown = _TYPED.decode, _UNKNOWN.decode
    rest = b""
    count = 0
    for chunk in chunks:
        blocks = (rest + chunk).split(b"\n\n")
        rest = blocks.pop()
        for block in blocks:
            for line in block.split(b"\n"):
                if line[:6] == b"data: ":
                    try:
                        typed(line[6:])
                    except msgspec.ValidationError:
                        unknown(line[6:])
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


Reader = Callable[[list[bytes]], int]


def timed(fn: Reader, chunks: list[bytes]) -> float:
    gc.collect()
    start = time.perf_counter()
    fn(chunks)
    return time.perf_counter() - start


def compare(
    chunks: list[bytes], runs: int, sdk: Reader | None, sdk_runs: int
) -> dict[str, list[float]]:
    """Seconds per run of each reader, the readers taking turns within every round."""
    readers: dict[str, Reader] = {
        "turnwire": turnwire_read,
        "objects": turnwire_objects_read,
        "floor": floor_read,
    }
    seconds: dict[str, list[float]] = {name: [] for name in [*readers, "sdk"]}
    for round_ in range(runs):
        order = list(readers.items())
        if round_ % 2:
            order.reverse()
        for name, fn in order:
            seconds[name].append(timed(fn, chunks))
        if sdk is not None and round_ < sdk_runs:
            seconds["sdk"].append(timed(sdk, chunks))
    return seconds


def per_event(seconds: dict[str, list[float]], name: str, events: int) -> str:
    return f"{statistics.median(seconds[name]) / events * 1e6:.2f} us/ev"


def over_floor(seconds: dict[str, list[float]], name: str) -> float:
    """The median over the rounds of the reader's time over the floor's in the same round."""
    return statistics.median(t / f for t, f in zip(seconds[name], seconds["floor"], strict=True))


def verdict(met: bool) -> str:
    return "met" if met else "NOT met"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    runs, sdk_runs = (3, 1) if args.quick else (9, 3)
    data, frames, events = synthetic_stream()
    print(
        f"stream benchmark: {events} events, {len(data) / 1e6:.1f} MB "
        f"(Python {sys.version.split()[0]}, {runs} alternated rounds, medians)"
    )
    assert floor_read(chunked(data)) == floor_read(frames) == events
    sdk = sdk_reader()
    targets = {"16 KiB chunks": 1.3, "1 event/chunk": 2.0}
    for label, chunks in (("16 KiB chunks", chunked(data)), ("1 event/chunk", frames)):
        seconds = compare(chunks, runs, sdk, sdk_runs)
        ours, objects = over_floor(seconds, "turnwire"), over_floor(seconds, "objects")
        target = targets[label]
        print(
            f"  {label:<14} turnwire {per_event(seconds, 'turnwire', events)}"
            f"   floor {per_event(seconds, 'floor', events)}"
            f"   turnwire/floor time {ours:.2f}x (target <= {target}x: {verdict(ours <= target)})"
            f"   with event objects (feed) {objects:.2f}x"
        )
        if seconds["sdk"]:
            paired = zip(seconds["sdk"], seconds["turnwire"], strict=False)  # the same rounds
            theirs = statistics.median(slow / fast for slow, fast in paired)
            print(
                f"  {'':<14} SDK {per_event(seconds, 'sdk', events)}"
                f"   turnwire {theirs:.0f}x faster than the SDK"
                f" (target >= 30x: {verdict(theirs >= 30)})"
            )
    if sdk is None:
        print("  the openai package is not installed: SDK comparison skipped")
    return 0


if __name__ == "__main__":
    sys.exit(main())
