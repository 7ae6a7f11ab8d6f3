"""Events through the Client's stream path, against the decoder alone, a floor and the SDK.

Two kinds of streams: one synthetic stream of 50,000 events (lifecycle events, an output item,
49,990 text deltas with ``logprobs`` and ``obfuscation`` as the real API sends them, the done
events and ``response.completed`` with the full text), on 16 KiB chunks and on one event per
chunk (what a live server flushes); and the recorded Responses streams in
``tests/data/conformance/streams`` that end in a terminal event, one event per chunk, all of
them read in one go. Each is read, in the same rounds, by:

* client (synthetic only): the answer path of a run of a default ``turnwire.Client``,
  ``Run._answer``: the request POSTed through the client's own ``Transport`` to an in-memory
  ``httpx.MockTransport`` that answers with the chunks, the transport's reading of each chunk
  (the request deadline, ``client.request_timeout_s``, and the size limit; no idle watchdog at
  the default ``client.stream_idle_timeout_s: 0``), then ``read_stream`` as below;
* reading: what the client runs on each chunk and event once the transport has it,
  ``turnwire.client.reading.read_stream`` with the arguments ``read_answer`` gives it (the
  client's container and accumulator, the run's observer as ``Run._answer`` hands it over,
  none here as no observer is registered, and the decoded-size bound from
  ``client.max_stream_bytes``), over an async iterator of the chunks;
* decoder: ``SSEDecoder.feed_data`` + ``decode_event`` + the ``ResponseAccumulator`` alone;
* floor: no turnwire code, the plainest reader correct for these streams: the bytes split on
  LF LF (the part after the last pair kept for the next chunk), each block on LF, each
  ``data: `` line decoded by msgspec into the same event types (the typed union, then the
  unknown-event fallback);
* the official SDK (synthetic only): ``client.responses.stream(...)`` over an in-memory
  transport, iterating its typed events (it also accumulates the response), in the first
  rounds only (it is slow).

Every reader runs once per round, the order rotated round by round (``benchmarks/_rounds.py``);
times are medians per event, each ratio the median of the rounds' ratios. Targets: the client
path within 1.5x the floor on 16 KiB chunks and 2x on one event per chunk (``reading`` is held
to them on the recorded streams, which the client line does not read), and at least 30x
faster than the SDK's ``responses.stream``.

Run: ``uv run python benchmarks/stream.py`` (``--quick``: fewer rounds, 5,000 events).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import msgspec
from _rounds import Samples, alternate, ratio, skipped, verdict

from turnwire.client._run import Run
from turnwire.client.dispatch import Client
from turnwire.client.reading import DECODED_BUDGET, read_stream
from turnwire.client.sse import SSEDecoder
from turnwire.wire.accumulator import ResponseAccumulator
from turnwire.wire.events import StreamEvent, UnknownEvent, decode_event

DELTAS = 49_990
REPO = Path(__file__).resolve().parents[1]
RECORDED = REPO / "tests" / "data" / "conformance" / "streams"


def synthetic_stream(deltas: int = DELTAS) -> tuple[bytes, list[bytes], int]:
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
    text = "word " * deltas
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
        for _ in range(deltas)
    ]
    usage = {
        "input_tokens": 10,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": deltas,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": deltas + 10,
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


def decoder_read(chunks: list[bytes]) -> int:
    decoder, accumulator = SSEDecoder(), ResponseAccumulator()
    done = []
    for chunk in chunks:
        done += accumulator.feed([decode_event(data) for data in decoder.feed_data(chunk)])
    done += accumulator.feed([decode_event(data) for data in decoder.close_data()])
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


def per_event_chunks(data: bytes) -> list[bytes]:
    """``data`` cut after each blank line (either line ending), one event per chunk."""
    normal = data.replace(b"\r\n", b"\n")
    return [frame + b"\n\n" for frame in normal.split(b"\n\n") if frame.strip()]


class ClientPath:
    """The Client's reading of an answer, driven on one event loop kept across calls."""

    def __init__(self, answer: list[list[bytes]]) -> None:
        self.loop = asyncio.new_event_loop()
        self.answer = answer  # what the mock server sends next: the chunks of one answer

        def handler(request: httpx.Request) -> httpx.Response:
            return httpx.Response(
                200,
                headers={"content-type": "text/event-stream"},
                stream=_Chunks(self.answer[0]),
            )

        self.client = Client(
            base_url="http://stream.invalid/v1",
            api_key="sk-benchmark",
            client=httpx.AsyncClient(transport=httpx.MockTransport(handler)),
        )
        self.run = Run(self.client)
        # What Run._answer hands read_answer: the run's observer (None when nothing observes
        # it), or its emit on a turnwire that looked observers up per event.
        self.emit = getattr(self.run, "observer", self.run.emit)
        self.max_decoded = self.client.transport.max_stream_bytes * DECODED_BUDGET

    async def _read(self, chunks: list[bytes]) -> Any:
        async def arrive() -> Any:
            for chunk in chunks:
                yield chunk

        arriving = arrive()
        try:
            return await read_stream(
                arriving,
                None,
                container=self.client.container,
                emit=self.emit,
                max_decoded=self.max_decoded,
            )
        finally:
            await arriving.aclose()

    def close(self) -> None:
        self.loop.run_until_complete(self.client.aclose())
        self.loop.run_until_complete(asyncio.sleep(0))  # the finalisers of unclosed generators
        self.loop.run_until_complete(self.loop.shutdown_asyncgens())
        self.loop.close()

    def read(self, streams: list[list[bytes]]) -> int:
        """Each stream through ``read_stream``, as the client reads an answer."""

        async def all_of() -> int:
            return len([await self._read(chunks) for chunks in streams])

        return self.loop.run_until_complete(all_of())

    def exchange(self, chunks: list[bytes]) -> int:
        """One answer through ``Run._answer``: POST, the transport's reading, read_stream."""
        self.answer[:] = [chunks]
        generation = self.loop.run_until_complete(self.run._answer(b'{"stream":true}', True, None))
        return len(generation.outputs)


class _Chunks(httpx.AsyncByteStream):
    def __init__(self, chunks: list[bytes]) -> None:
        self.chunks = chunks

    async def __aiter__(self) -> Any:
        for chunk in self.chunks:
            yield chunk


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
        with client.responses.stream(model="gpt-5", input="hi") as stream:
            for _ in stream:
                count += 1
        return count

    return read


def recorded_streams(path: ClientPath) -> tuple[list[list[bytes]], int, int]:
    """The recorded streams the client reads to an answer (one event per chunk), how many
    events they hold, and how many files were left out (no terminal event)."""
    kept, events, left = [], 0, 0
    for file in sorted(RECORDED.glob("*.sse")):
        chunks = per_event_chunks(file.read_bytes())
        try:
            path.read([chunks])
        except Exception:
            left += 1
            continue
        kept.append(chunks)
        events += floor_read(chunks)
    return kept, events, left


def us(samples: Samples, name: str, events: int) -> str:
    return f"{statistics.median(samples[name]) / events * 1e6:.2f} us/event"


def report(label: str, samples: Samples, events: int, target: float) -> None:
    print(f"  {label}:")
    if "client" in samples:
        client = ratio(samples, "client", "floor")
        print(
            f"    client    {us(samples, 'client', events)}  {client:.2f}x the floor "
            f"({verdict(client, target)})  [Run._answer: the POST, the transport's reading "
            "of each chunk (deadline, size limit), then read_stream]"
        )
    reading = ratio(samples, "reading", "floor")
    print(
        f"    reading   {us(samples, 'reading', events)}  {reading:.2f}x the floor"
        + ("" if "client" in samples else f" ({verdict(reading, target)})")
        + "  [read_stream alone, as the client calls it: decode, size bound, accumulator, "
        "progress events to the run's observer]"
    )
    print(
        f"    decoder   {us(samples, 'decoder', events)}  "
        f"{ratio(samples, 'decoder', 'floor'):.2f}x the floor  [SSEDecoder + decode_event + "
        "accumulator alone]"
    )
    print(
        f"    floor     {us(samples, 'floor', events)}  [split on blank lines + msgspec "
        "decode of each data line]"
    )
    if samples.get("sdk"):
        faster = ratio(samples, "sdk", "client" if "client" in samples else "reading")
        print(
            f"    SDK       {us(samples, 'sdk', events)}  client {faster:.0f}x faster "
            f"({verdict(faster, 30, at_least=True)})  [responses.stream: typed events and "
            f"its accumulated response; {len(samples['sdk'])} rounds]"
        )


def rounds_with_peer(
    subjects: dict[str, Callable[[], object]],
    peer: Callable[[], object] | None,
    rounds: int,
    peer_rounds: int,
) -> Samples:
    """``rounds`` rounds of ``subjects``; the first ``peer_rounds`` of them with ``peer``."""
    first = min(rounds, peer_rounds) if peer is not None else 0
    samples = alternate({**subjects, "sdk": peer}, first) if peer is not None and first else {}
    later = alternate(subjects, rounds - first)
    merged: Samples = {name: samples.get(name, []) + later[name] for name in subjects}
    merged["sdk"] = samples.get("sdk", [])
    return merged


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    rounds, sdk_rounds = (3, 1) if args.quick else (11, 3)
    data, frames, events = synthetic_stream(4_990 if args.quick else DELTAS)
    assert floor_read(chunked(data)) == floor_read(frames) == events
    path = ClientPath([frames])
    sdk = sdk_reader()
    print(
        f"stream benchmark (Python {sys.version.split()[0]}; {rounds} rounds, every reader "
        "alternated; us/event medians, ratios the median of each round's; no forced collection)"
    )
    print(f"synthetic: {events} events, {len(data) / 1e6:.1f} MB")
    for label, chunks, target in (
        ("16 KiB chunks", chunked(data), 1.5),
        ("one event per chunk", frames, 2.0),
    ):
        subjects: dict[str, Callable[[], object]] = {
            "client": lambda chunks=chunks: path.exchange(chunks),
            "reading": lambda chunks=chunks: path.read([chunks]),
            "decoder": lambda chunks=chunks: decoder_read(chunks),
            "floor": lambda chunks=chunks: floor_read(chunks),
        }
        peer = None if sdk is None else (lambda chunks=chunks: sdk(chunks))
        report(label, rounds_with_peer(subjects, peer, rounds, sdk_rounds), events, target)
    if sdk is None:
        skipped("official SDK", "the openai package is not installed")

    streams, recorded_events, left = recorded_streams(path)
    flat = [chunk for chunks in streams for chunk in chunks]
    print(
        f"recorded: {len(streams)} streams of tests/data/conformance/streams ({left} without a "
        f"terminal event left out), {recorded_events} events, one event per chunk, read in one go"
    )
    subjects = {
        "reading": lambda: path.read(streams),
        "decoder": lambda: [decoder_read(chunks) for chunks in streams],
        "floor": lambda: floor_read(flat),
    }
    report("recorded", alternate(subjects, rounds * 20), recorded_events, 2.0)
    path.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
