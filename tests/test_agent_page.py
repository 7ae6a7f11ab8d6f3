"""Every code block of ``docs/agent.md`` (Build an agent) runs as written, against a local
server that answers as the Responses API does (:mod:`tests.agent_server`), and prints what the
page says it prints.

The whole support agent is held to the bar of issue 26: at most about 45 lines, no JSON Schema
written by hand, ``mypy --strict`` clean, two turns in two processes with the image on turn 1
and the reasoning of turn 1 replayed on turn 2.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from .agent_server import AgentServer
from .conftest import REPO, mypy_strict

PAGE = REPO / "docs" / "agent.md"
PHOTO = REPO / "src" / "turnwire" / "demo" / "data" / "potato.png"


def _blocks() -> list[tuple[str, str, str, str]]:
    """``(heading, language, code, the prose after it)`` for each fenced block of the page."""
    blocks = []
    heading = ""
    parts = re.split(r"^```(\w*)\n(.*?)^```\n", PAGE.read_text(encoding="utf-8"), flags=re.S | re.M)
    # parts: prose, language, code, prose, language, code, ..., prose
    for index in range(1, len(parts), 3):
        before, language, code, after = parts[index - 1 : index + 3]
        headings = re.findall(r"^## (.+)$", before, re.M)
        heading = headings[-1] if headings else heading
        blocks.append((heading, language, code, after))
    return blocks


BLOCKS = _blocks()
PYTHON = {heading: code for heading, language, code, _ in BLOCKS if language == "python"}
PRINTS = {
    heading: re.findall(r"`([^`]+)`", re.split(r"\.\s", after.strip())[0])
    for heading, language, _, after in BLOCKS
    if language == "python" and re.match(r"\s*(It|This) prints", after)
}


def _run(code: str, folder: Path, server: AgentServer, *args: str) -> str:
    script = folder / "block.py"
    script.write_text(code, encoding="utf-8")
    env = {
        **os.environ,
        "OPENAI_BASE_URL": server.base_url,
        "OPENAI_API_KEY": "sk-page-test",
        "XDG_CONFIG_HOME": str(folder / "config"),
        "XDG_DATA_HOME": str(folder / "data"),
    }
    env.pop("TURNWIRE_ENVELOPE_SECRET", None)
    done = subprocess.run(
        [sys.executable, "-W", "error", str(script), *args],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr, done.stderr  # a callback that raised is only logged
    return done.stdout


def test_the_page_holds_the_blocks_this_test_runs() -> None:
    headings = [heading for heading, language, _, _ in BLOCKS if language == "python"]
    assert headings == [
        "The whole agent",
        "Tools from functions",
        "A stored thread, step by step",
        "Streaming text and progress",
        "Structured answers",
        "Settings in code",
        "Errors",
        "Inside a web server",
    ]
    # Every block but three, each with a test of its own below, says what it prints, and is
    # checked for it.
    own_tests = {"The whole agent", "Inside a web server", "Streaming text and progress"}
    assert set(PRINTS) == set(headings) - own_tests


@pytest.mark.parametrize("heading", sorted(PRINTS))
def test_each_block_prints_what_the_page_says(heading: str, tmp_path: Path) -> None:
    with AgentServer() as server:
        out = _run(PYTHON[heading], tmp_path, server).splitlines()
    expected = PRINTS[heading]
    found = [line for line in out if line in expected]
    assert found == expected, (out, expected)


def test_the_streaming_block_shows_the_tool_the_usage_and_the_answer(tmp_path: Path) -> None:
    with AgentServer() as server:
        out = _run(PYTHON["Streaming text and progress"], tmp_path, server).splitlines()
    assert re.fullmatch(r"\[\d+ tokens in, 24 out\]", out[0])
    assert out[1] == "[lookup_order ran]"
    assert re.fullmatch(r"\[\d+ tokens in, 24 out\]", out[2]) and out[2] != out[0]
    assert out[3:] == ["Here is what I found: Order 7 is on its way."]
    assert len(server.requests) == 2


def test_the_support_agent_is_short_typed_and_has_no_hand_written_schema(tmp_path: Path) -> None:
    code = PYTHON["The whole agent"]
    lines = [line for line in code.splitlines() if line.strip()]
    assert len(code.splitlines()) <= 50 and len(lines) <= 45, len(lines)
    assert '"properties"' not in code and '"type": "object"' not in code
    path = tmp_path / "support_agent.py"
    path.write_text(code, encoding="utf-8")
    status, output = mypy_strict(path, tmp_path / "cache")
    assert status == 0, output


def test_the_support_agent_keeps_one_conversation_across_two_processes(tmp_path: Path) -> None:
    code = PYTHON["The whole agent"]
    commands = next(block for _, language, block, _ in BLOCKS if language == "sh")
    runs = [line.split() for line in commands.strip().splitlines()]
    shutil.copy(PHOTO, tmp_path / "photo.png")
    (tmp_path / "returns.md").write_text("# Returns\n\nBroken goods: a refund or a new one.\n")
    with AgentServer() as server:
        outputs = []
        for run in runs:
            assert run[:2] == ["python", "support_agent.py"], run
            prompt_and_files = _arguments(" ".join(run[2:]))
            outputs.append(_run(code, tmp_path, server, *prompt_and_files))
            (tmp_path / "photo.png").unlink(missing_ok=True)  # the store keeps its own copy
        bodies = [seen.json for seen in server.requests]
        minted = list(server.reasoning)
    # Turn 1: the photo and the document went with the question; the model called a tool.
    first = bodies[0]
    assert first["store"] is False
    assert "reasoning.encrypted_content" in first["include"]
    sent = str(first["input"])
    assert "input_image" in sent and "returns.md" in sent
    assert {tool["name"] for tool in first["tools"]} == {"lookup_order", "open_ticket"}
    assert outputs[0].startswith("Here is what I found: Order 42 left the warehouse")
    assert "(2 requests, 2 messages kept)" in outputs[0]
    # Turn 2, another process: its first request replays turn 1's reasoning, every item with
    # its encrypted_content, each followed by the item it produced, and the photo again.
    turn_two = bodies[2]
    replayed = [item for item in turn_two["input"] if item.get("type") == "reasoning"]
    assert [item["encrypted_content"] for item in replayed] == minted[:2]
    for index, item in enumerate(turn_two["input"]):
        if item.get("type") == "reasoning":
            assert turn_two["input"][index + 1]["type"] in {"function_call", "message"}
    assert "input_image" in str(turn_two["input"])
    assert turn_two["input"][: len(first["input"])] == first["input"][: len(first["input"])]
    assert outputs[1].startswith("Here is what I found: Ticket T-")
    assert "(2 requests, 4 messages kept)" in outputs[1]


def _arguments(line: str) -> list[str]:
    """A shell line's words, a double-quoted run as one."""
    return [quoted or bare for quoted, bare in re.findall(r'"([^"]*)"|(\S+)', line)]


def test_the_web_server_answers_two_threads_at_once_on_one_client(tmp_path: Path) -> None:
    driver = """

import asyncio
import httpx

async def drive() -> None:
    async with app.router.lifespan_context(app):
        header = turnwire.Thread.create("Be brief.", model="gpt-5")
        ids = [store.create_thread(header) for _ in range(2)]
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://app") as http:
            answers = await asyncio.gather(
                *(http.post(f"/threads/{i}", json={"prompt": f"Hi {n}"}) for n, i in enumerate(ids))
            )
        for answer in answers:
            print(answer.status_code, answer.json()["answer"])

asyncio.run(drive())
"""
    with AgentServer() as server:
        out = _run(PYTHON["Inside a web server"] + driver, tmp_path, server).splitlines()
    assert sorted(out) == ["200 You said: Hi 0", "200 You said: Hi 1"]
    assert server.connections <= 2
