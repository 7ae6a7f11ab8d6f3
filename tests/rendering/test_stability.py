"""What a request is made of never depends on the process that renders it: the same thread
renders to the same bytes in another process (another hash seed, another clock), tool
declarations and their schemas keep the order they were given in."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import turnwire

from ..conftest import REPO_EXAMPLES, SECRET, render_body


def _render_in_a_process(seed: str) -> bytes:
    environment = {
        **os.environ,
        "PYTHONHASHSEED": seed,
        "TURNWIRE_ENVELOPE_SECRET": SECRET,
        "TZ": "Pacific/Kiritimati" if seed == "1" else "America/Adak",
    }
    environment.pop("OPENAI_API_KEY", None)
    done = subprocess.run(
        [sys.executable, "-m", "turnwire", "render", str(REPO_EXAMPLES / "weather.yaml"), "-q"],
        capture_output=True,
        env=environment,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_the_same_thread_renders_to_the_same_bytes_in_another_process():
    first, second = _render_in_a_process("1"), _render_in_a_process("2")
    assert first == second
    assert json.loads(first)["input"]  # a real body, not an empty one


def test_tools_and_their_schemas_keep_the_order_they_were_given_in():
    schema = {
        "type": "object",
        "required": ["zeta", "alpha"],
        "properties": {"zeta": {"type": "string"}, "alpha": {"type": "integer"}},
        "additionalProperties": False,
    }
    thread = turnwire.load_thread(
        {
            "version": 1,
            "model": "gpt-5",
            "tools": [
                {"name": "zulu", "parameters": schema},
                {"name": "alpha", "parameters": {"type": "object"}},
            ],
            "messages": [
                {"id": "u1", "role": "user", "content": "hi", "created_at": "2026-01-01T00:00:00Z"}
            ],
        }
    )
    body = render_body(thread)
    names = [tool["name"] for tool in body["tools"]]
    assert names == ["zulu", "alpha"]
    sent = body["tools"][0]["parameters"]
    assert list(sent) == ["type", "required", "properties", "additionalProperties"]
    assert list(sent["properties"]) == ["zeta", "alpha"]
