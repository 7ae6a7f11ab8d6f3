"""What the client's tests share: a thread file asking for a tool call, the recorded answers
to it, and a run of it against a scripted server (retries without waiting, no jitter)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import turnwire

from ..conftest import REPLAY, make_container, prefix_fingerprint, thread
from .server import recorded

TEXT = recorded("text_simple_gpt-4o-mini.sse")
CALL = recorded("function_call_legacy_noseq_gpt-4o.sse")
AFTER_CALL = recorded("text_after_tool_legacy_noseq_gpt-4o.sse")
ERROR_400 = {
    "error": {
        "message": "Invalid value",
        "type": "invalid_request_error",
        "code": None,
        "param": None,
    }
}

THREAD = """\
version: 1
model: gpt-4o
tools:
  - {name: get_capital, parameters: {type: object, properties: {country: {type: string}}}}
messages:
  - {id: u1, role: user, content: "What's the weather?", created_at: "2026-01-01T10:00:00Z"}
"""


@pytest.fixture
def thread_file(tmp_path: Path) -> Path:
    path = tmp_path / "thread.yaml"
    path.write_text(THREAD)
    return path


class Sleeps(list):
    async def __call__(self, seconds: float) -> None:
        self.append(round(seconds, 3))


def run(server, source, *, settings=None, sleeps=None, handlers=None, container=None, **options):
    container = container or make_container(
        {"client": {"retry": {"max_retries": 2}}, **(settings or {})}
    )
    return turnwire.api.run(
        source,
        container=container,
        base_url=server.base_url,
        save=isinstance(source, Path),
        handlers=handlers
        if handlers is not None
        else {"get_capital": lambda country="?": f"the capital of {country}"},
        sleep=sleeps if sleeps is not None else Sleeps(),
        jitter=lambda: 0.0,
        **options,
    )


def assert_unchanged(path: Path) -> None:
    assert path.read_text() == THREAD


def replay_thread(path: Path) -> Path:
    """A thread file whose answer is paired with a replayed reasoning item (fingerprint valid)."""
    base = thread(
        model="gpt-5",
        messages=[
            {"id": "u1", "role": "user", "content": "hi", "created_at": "2026-01-01T10:00:00Z"}
        ],
    )
    fp = prefix_fingerprint(base, REPLAY)
    path.write_text(
        json.dumps(
            {
                "version": 1,
                "model": "gpt-5",
                "messages": [
                    {
                        "id": "u1",
                        "role": "user",
                        "content": "hi",
                        "created_at": "2026-01-01T10:00:00Z",
                    },
                    {
                        "id": "msg_1",
                        "role": "assistant",
                        "content": "hello",
                        "created_at": "2026-01-01T10:00:02Z",
                        "seq": 1,
                    },
                ],
                "thoughts": [
                    {
                        "id": "rs_1",
                        "created_at": "2026-01-01T10:00:02Z",
                        "seq": 0,
                        "replay_compatibility": "openai-responses-reasoning-v1",
                        "payload": {
                            "variant": "responses-reasoning",
                            "item": {
                                "type": "reasoning",
                                "id": "rs_1",
                                "summary": [],
                                "encrypted_content": "gAAAA-x",
                            },
                            "paired_item_id": "msg_1",
                            "prefix_fingerprint": fp,
                        },
                    }
                ],
            }
        )
    )
    return path


PHRASES = [
    "The encrypted content for item rs_1 could not be verified. (invalid_encrypted_content)",
    "Item 'rs_1' of type 'reasoning' was provided without its required following item.",
    "Item 'msg_1' of type 'message' was provided without its required preceding item of type "
    "'reasoning'.",
    "Item with id 'rs_1' not found. Items are not persisted when `store` is set to false.",
    "Item 'msg_1' of type 'message' was provided without its required 'reasoning' item: 'rs_1'.",
    "Item 'fc_1' of type 'function_call' was provided without its required 'reasoning' item: "
    "'rs_1'.",
]
