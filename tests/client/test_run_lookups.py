"""A run looks its observers up once, as it starts, and sends a body in pieces in few writes:
work per request that does not grow with what the hooks or the thread hold."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from httpcore._backends.anyio import AnyIOStream
from pluggy import HookCaller

import turnwire
from turnwire import hookimpl
from turnwire.client.transport import COALESCED_BYTES, _writes

from ..conftest import make_container
from .server import Reply, ScriptedServer
from .streams import WEATHER_THREAD, call_answer, text_answer


def _script(calls: int) -> list[Reply]:
    script = [
        Reply.sse(
            call_answer(
                "get_weather", '{"location":"Paris"}', call_id=f"call_{n}", item_id=f"fc_{n}"
            )
        )
        for n in range(calls)
    ]
    return [*script, Reply.sse(text_answer("Sunny."))]


class Seen:
    def __init__(self) -> None:
        self.bodies: list[bytes] = []
        self.generations: list[str] = []

    @hookimpl
    def on_prompt_assembled(self, body, model, attempt_kind):
        self.bodies.append(body)

    @hookimpl
    def on_raw_generation(self, generation, model):
        self.generations.append(generation.response_id)


def _run(server: ScriptedServer, container: Any, **kwargs: Any) -> turnwire.RunResult:
    async def main() -> turnwire.RunResult:
        async with turnwire.Client(
            container,
            base_url=server.base_url,
            api_key="sk-test-key",
            handlers={"get_weather": lambda location: f"sunny in {location}"},
        ) as client:
            return await client.run(turnwire.load_thread(WEATHER_THREAD), **kwargs)

    return asyncio.run(main())


@pytest.mark.parametrize("observed", [False, True], ids=["no observer", "observers"])
def test_a_run_looks_each_observer_hook_up_once_however_many_requests(monkeypatch, observed):
    """Four requests: ``on_prompt_assembled`` and ``on_raw_generation`` are looked up as the run
    starts, never per request (they were looked up again for every request and answer)."""
    looked: list[str] = []
    real = HookCaller.get_hookimpls

    def counting(self: HookCaller) -> Any:
        looked.append(self.name)
        return real(self)

    seen = Seen()
    container = make_container(extra_plugins=[seen] if observed else [])
    monkeypatch.setattr(HookCaller, "get_hookimpls", counting)
    with ScriptedServer(_script(3)) as server:
        result = _run(server, container)
    assert result.requests == 4
    assert looked.count("on_prompt_assembled") == 1
    assert looked.count("on_raw_generation") == 1
    if observed:  # and the observers found see every request and answer
        assert seen.bodies == [r.body for r in server.requests]
        assert len(seen.generations) == 4


def test_an_observer_registered_during_a_run_is_seen_from_the_next_run_on():
    seen = Seen()
    container = make_container()
    registered: list[bool] = []

    def handler(location: str) -> str:
        if not registered:  # while the run's first call runs
            container.plugin_manager().register(seen)
            registered.append(True)
        return f"sunny in {location}"

    async def main() -> None:
        async with turnwire.Client(
            container,
            base_url=server.base_url,
            api_key="sk-test-key",
            handlers={"get_weather": handler},
        ) as client:
            first = await client.run(turnwire.load_thread(WEATHER_THREAD))
            assert first.requests == 3 and seen.bodies == [] and seen.generations == []
            await client.run(first.thread)

    with ScriptedServer([*_script(2), Reply.sse(text_answer("Still.", msg_id="msg_2"))]) as server:
        asyncio.run(main())
    assert seen.bodies == [server.requests[-1].body]
    assert len(seen.generations) == 1


def test_a_body_in_pieces_goes_out_in_one_write(monkeypatch):
    """A warm render's body is kept in pieces (the last body's items, then the new ones): they
    go to the socket as one write, not one write (and one trip through the loop) each."""
    writes: list[int] = []
    real = AnyIOStream.write

    async def counting(self: Any, buffer: bytes, timeout: float | None = None) -> None:
        if buffer:  # (h11 ends a message with an empty write)
            writes.append(len(buffer))
        await real(self, buffer, timeout)

    monkeypatch.setattr(AnyIOStream, "write", counting)
    with ScriptedServer(_script(3), keep_alive=True) as server:
        result = _run(server, make_container())
    assert result.requests == 4
    sizes = [len(r.body) for r in server.requests]
    # Each request: its headers, then its body in one write.
    assert [w for w in writes if w in sizes] == sizes
    assert len(writes) == 2 * len(sizes)


def test_the_writes_hold_the_pieces_in_order_and_copy_no_large_piece():
    small = [b"a" * 10, memoryview(b"b" * 20), b"c" * 30]
    large = b"L" * (COALESCED_BYTES + 1)
    for parts in (
        tuple(small),
        (*small, large, *small),
        (large,),
        (b"x" * (COALESCED_BYTES - 5), b"y" * 10, b"z"),
        (),
    ):
        writes = _writes(parts)
        assert b"".join(writes) == b"".join(parts)
        assert all(len(w) <= COALESCED_BYTES or len(w) == len(large) for w in writes)
        assert [w for w in writes if len(w) > COALESCED_BYTES] == [
            p for p in parts if len(p) > COALESCED_BYTES
        ]
        assert all(any(w is p for p in parts) for w in writes if len(w) > COALESCED_BYTES)
    assert len(_writes(tuple(small))) == 1
    assert len(_writes((*small, large, *small))) == 3
