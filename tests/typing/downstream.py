"""A downstream script, checked by ``mypy --strict`` in tests/test_public_api.py."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any, assert_type

import msgspec

import turnwire


def summary(path: str) -> str:
    result = turnwire.run(path, base_url="http://127.0.0.1:9/v1", api_key="sk-example", once=True)
    calls = [call.tool for call in result.records.tool_calls]
    text = " ".join(message.content or "" for message in result.records.messages)
    return f"{result.response.finish_reason} {result.iterations} {calls} {text}"


async def main(container: turnwire.Container, thread: turnwire.Thread) -> turnwire.RunResult:
    async with turnwire.Client(container, api_key="sk-example") as client:
        return await client.run(thread, once=True)


def stored(store: turnwire.ThreadStore, thread_id: str) -> int:
    result: turnwire.RunResult = turnwire.run_thread(thread_id, store=store, prompt="hi")
    return len(result.thread.messages)


class Invoice(msgspec.Struct):
    number: str
    total: float


def invoice_number(path: str) -> str:
    result = turnwire.run(path, base_url="http://127.0.0.1:9/v1", output_schema=Invoice)
    assert_type(result, turnwire.RunResult[Invoice])
    parsed = result.parsed  # an Invoice, or None (a refusal, no answer)
    return "" if parsed is None else f"{parsed.number} {parsed.total:.2f}"


def plain_json(path: str) -> object:
    schema = {"type": "object", "properties": {}, "required": [], "additionalProperties": False}
    result: turnwire.RunResult = turnwire.run(path, output_schema=schema)  # RunResult[Any]
    return result.parsed


async def typed_client(
    container: turnwire.Container, thread: turnwire.Thread
) -> turnwire.RunResult[Invoice]:
    async with turnwire.Client(container, api_key="sk-example") as client:
        return await client.run(thread, output_schema=Invoice)


def stored_invoice(store: turnwire.ThreadStore, thread_id: str) -> Invoice | None:
    return turnwire.run_thread(thread_id, store=store, prompt="bill", output_schema=Invoice).parsed


async def long_lived(store: turnwire.ThreadStore, thread_id: str) -> Invoice | None:
    async with turnwire.Client(profile="local-dev", overrides={"request": {"temperature": 0}}) as c:
        await c.run_thread(thread_id, store=store, prompt="hi", files=["photo.png"])
        result = await c.run_thread(thread_id, store=store, prompt="bill", output_schema=Invoice)
        assert_type(result, turnwire.RunResult[Invoice])
        await c.compact_thread(thread_id, store=store)
        return result.parsed


def answer_text(result: turnwire.RunResult) -> str:
    return result.text


def opened(location: str) -> int:
    with turnwire.open_store(location) as store:
        assert_type(store, turnwire.ThreadStore)
        return len(store.list_threads())


def built(photo: str) -> turnwire.Thread:
    question = turnwire.Message.user("What is this?", files=[photo])
    thread = turnwire.Thread.create("Be brief.", model="gpt-5", messages=[question])
    turnwire.check_thread(thread)
    return thread.with_user_message("And this?", files=[photo])


@turnwire.tool
def get_weather(city: str, days: int = 1) -> str:
    """The weather in a city."""
    return city * days


@turnwire.tool(name="lookup", strict=False)
async def lookup_order(order_id: int) -> dict[str, int]:
    """Look an order up."""
    return {"order": order_id}


def plain_tool(text: str) -> str:
    return text


def with_tools(path: str) -> str:
    forecast: str = get_weather("Paris", days=2)  # still the function, typed as it was
    declared: turnwire.Tool = get_weather.declaration
    made: turnwire.ToolFunction[[int], Coroutine[Any, Any, dict[str, int]]] = lookup_order
    result = turnwire.run(path, tools=[get_weather, lookup_order, plain_tool])
    return f"{forecast} {declared.name} {made.name} {result.iterations}"


def handle(error: turnwire.TurnwireError) -> str:
    if isinstance(error, turnwire.HttpError):
        return f"{error.code} {error.status}"
    return error.code


if __name__ == "__main__":
    with turnwire.SQLiteStore(":memory:") as store:
        print(stored(store, "t"), asyncio.run(main(turnwire.build_container(), turnwire.Thread())))
