"""What the client's tests share: a thread file asking for a tool call, the recorded answers
to it, and a run of it against a scripted server (retries without waiting, no jitter)."""

from __future__ import annotations

from pathlib import Path

import pytest

import turnwire

from ..conftest import make_container
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
