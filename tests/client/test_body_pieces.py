"""A rendered body goes to the server as its pieces: the exact bytes, one ``Content-Length``,
never chunked, and the same pieces again on a retry."""

from __future__ import annotations

import asyncio

from turnwire.client.transport import RetryPolicy, Transport
from turnwire.rendering.body import EncodedBody

from .server import Reply, ScriptedServer

ANSWER = {"id": "resp_1", "object": "response", "status": "completed", "output": []}


async def _post(base_url: str, body: EncodedBody | bytes, retries: int = 0) -> bytes:
    async def no_wait(_: float) -> None:
        return None

    transport = Transport(base_url=base_url, retry=RetryPolicy(max_retries=retries), sleep=no_wait)
    try:
        async with transport.exchange(body, stream=False) as answer:
            return b"".join([chunk async for chunk in answer.chunks])
    finally:
        await transport.aclose()


def test_pieces_arrive_as_one_body_with_its_length() -> None:
    whole = b'{"model":"m","input":[' + b",".join(b'"%d"' % i for i in range(5000)) + b"]}"
    cut = len(whole) // 3
    body = EncodedBody((whole[:10], memoryview(whole)[10:cut], whole[cut:]))
    with ScriptedServer([Reply.json(200, ANSWER)]) as server:
        asyncio.run(_post(server.base_url, body))
    (seen,) = server.requests
    assert seen.body == whole
    assert seen.headers["content-length"] == str(len(whole))
    assert "transfer-encoding" not in seen.headers


def test_a_retry_sends_the_same_pieces_again() -> None:
    body = EncodedBody((b'{"model":"m",', b'"input":[]}'))
    with ScriptedServer(
        [Reply.json(500, {"error": {"message": "x"}}), Reply.json(200, ANSWER)]
    ) as s:
        asyncio.run(_post(s.base_url, body, retries=1))
    assert [seen.body for seen in s.requests] == [bytes(body)] * 2


def test_plain_bytes_and_a_single_piece_are_sent_as_bytes() -> None:
    with ScriptedServer([Reply.json(200, ANSWER)]) as server:
        asyncio.run(_post(server.base_url, b'{"a":1}'))
        asyncio.run(_post(server.base_url, EncodedBody((b'{"a":2}',))))
    assert [seen.body for seen in server.requests] == [b'{"a":1}', b'{"a":2}']
    assert all(seen.headers["content-length"] == "7" for seen in server.requests)


def test_a_run_sends_each_later_request_as_pieces(tmp_path, monkeypatch) -> None:
    """The tool loop's second request is rendered warm: the client hands the transport the
    body's pieces (not joined bytes), and the server receives exactly those bytes."""
    import turnwire

    from ..conftest import REPLAY, make_container
    from .server import recorded

    handed: list[object] = []
    real = Transport.exchange

    def spy(self, body, **kwargs):  # type: ignore[no-untyped-def]
        handed.append(body)
        return real(self, body, **kwargs)

    monkeypatch.setattr(Transport, "exchange", spy)
    thread = tmp_path / "t.yaml"
    thread.write_text(
        "version: 1\nmodel: gpt-5\ntools:\n  - {name: weather, parameters: {type: object, "
        "properties: {location: {type: string}}}}\nmessages:\n  - {id: u1, role: user, "
        'content: "Weather in Florence?", created_at: "2026-01-01T10:00:00Z"}\n'
    )
    call = recorded("reasoning_summary_encrypted_function_call_gpt-5.sse")
    text = recorded("reasoning_summary_encrypted_text_turn2_gpt-5.sse")
    with ScriptedServer([Reply.sse(call), Reply.sse(text)]) as server:
        turnwire.api.run(
            thread,
            container=make_container(REPLAY),
            base_url=server.base_url,
            handlers={"weather": lambda location: "40 C"},
        )
    assert len(handed) == len(server.requests) == 2
    second = handed[1]
    assert isinstance(second, EncodedBody) and len(second.parts) > 1
    assert server.requests[1].body == bytes(second)
    assert server.requests[1].headers["content-length"] == str(len(second))
