"""An emulator per test, on a real socket of 127.0.0.1, and the official SDK pointed at it."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator, Mapping, Sequence

import openai
import pytest

import turnwire.testing

# A weather conversation: a question gets reasoning and a get_weather call, its output the
# answer, anything else a greeting.
SCRIPT = {
    "answers": [
        {"match": {"last_item": "function_call_output"}, "text": "It is sunny in Paris."},
        {
            "match": {"last_user": "(?i)weather"},
            "reasoning": {"summary": ["Looking up the weather"]},
            "tool_calls": [{"name": "get_weather", "arguments": {"city": "Paris"}}],
        },
    ],
    "default": {"text": "Hello there, friend."},
}


@pytest.fixture
def api() -> Iterator[turnwire.testing.EmulatorHandle]:
    with turnwire.testing.emulator() as handle:
        yield handle


@pytest.fixture
def sdk(api: turnwire.testing.EmulatorHandle) -> Iterator[openai.OpenAI]:
    with openai.OpenAI(base_url=api.base_url, api_key="x", max_retries=0) as client:
        yield client


def refused_command(arguments: Sequence[str], env: Mapping[str, str] | None = None) -> str:
    """``turnwire emulate ARGUMENTS`` run in a process, which must refuse them as a usage
    error (exit 2) before it serves anything: its standard error."""
    done = subprocess.run(
        [sys.executable, "-m", "turnwire", "emulate", *arguments],
        capture_output=True,
        check=False,
        text=True,
        env=env,
        timeout=30,
    )
    assert done.returncode == 2, done.stderr
    return done.stderr
