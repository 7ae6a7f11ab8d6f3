"""The section "Three clients, one emulator" of ``docs/emulate.md`` runs as written.

The page's script is written to a file, ``turnwire emulate`` is started by the page's own
command (the port made a free one), and each Python block runs unchanged in a process of its
own, in page order, with the page's two variables set: the official SDK (JSON and streamed), a
request the emulator refuses, an openai-agents ``Agent`` whose tool is called, and turnwire.
Each must print what the page shows, and the emulator's log must be the page's log.

Nothing leaves 127.0.0.1: each block runs under an audit hook that refuses (and reports) any
name lookup or connection to another address, so openai-agents' trace export, which
``set_tracing_disabled(True)`` on the page turns off, would fail the test. The key is a dummy.
"""

from __future__ import annotations

import itertools
import os
import re
import shlex
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import yaml

import turnwire.testing

REPO = Path(__file__).resolve().parents[2]
PAGE = REPO / "docs" / "emulate.md"
SECTION = "Three clients, one emulator"

# Every Python block of the page, by its heading, and the test that runs it. The worked
# example of record and replay is the one left out: it records from the real API, with a key.
RUN_HERE = ["The official SDK", "A request the API refuses", "openai-agents", "turnwire"]
NOT_RUN = {"A worked example"}

# Run before a block: a name lookup or a connection anywhere but the loopback is refused, and
# said on stderr (a refused export may be swallowed and only logged by the library).
GUARD = """\
import runpy, sys

LOOPBACK = {"127.0.0.1", "localhost", "::1"}


def guard(event, args):
    host = None
    if event == "socket.getaddrinfo":
        host = args[0]
    elif event == "socket.connect" and isinstance(args[1], tuple):
        host = args[1][0]
    if isinstance(host, bytes):
        host = host.decode()
    if host is not None and host not in LOOPBACK:
        print(f"NETWORK: {event} {host}", file=sys.stderr, flush=True)
        raise ConnectionRefusedError(f"the page test reaches only 127.0.0.1, not {host}")


sys.addaudithook(guard)
block = sys.argv[1]
sys.argv = [block]
runpy.run_path(block, run_name="__main__")
"""


@dataclass
class Block:
    heading: str
    language: str
    code: str
    after: str  # the prose up to the next block


def _blocks() -> list[Block]:
    parts = re.split(r"^```(\w*)\n(.*?)^```\n", PAGE.read_text(encoding="utf-8"), flags=re.S | re.M)
    blocks = []
    heading = ""
    for index in range(1, len(parts), 3):
        before, language, code, after = parts[index - 1 : index + 3]
        headings = re.findall(r"^#{2,3} (.+)$", before, re.M)
        heading = headings[-1] if headings else heading
        blocks.append(Block(heading, language, code, after))
    return blocks


BLOCKS = _blocks()


def _section() -> list[Block]:
    """The blocks from the section's heading to the next ``##`` heading."""
    text = PAGE.read_text(encoding="utf-8")
    start = text.index(f"\n## {SECTION}\n")
    end = text.index("\n## ", start + 1)
    inside = _split(text[start:end])
    return [block for block in BLOCKS if (block.language, block.code) in inside]


def _split(text: str) -> set[tuple[str, str]]:
    return {(m[0], m[1]) for m in re.findall(r"^```(\w*)\n(.*?)^```\n", text, flags=re.S | re.M)}


SECTION_BLOCKS = _section()
PYTHON = {block.heading: block.code for block in SECTION_BLOCKS if block.language == "python"}


def _prints() -> dict[str, list[str]]:
    """Per Python block, the lines of the ``text`` block after it that "It prints:" shows."""
    prints = {}
    for block, following in itertools.pairwise(SECTION_BLOCKS):
        if block.language == "python" and block.after.strip() == "It prints:":
            assert following.language == "text", block.heading
            prints[block.heading] = following.code.splitlines()
    return prints


PRINTS = _prints()


def _one(language: str, heading: str | None = None) -> Block:
    found = [
        block
        for block in SECTION_BLOCKS
        if block.language == language and heading in (None, block.heading)
    ]
    assert len(found) == 1, (language, heading, found)
    return found[0]


@dataclass
class Done:
    stdout: str
    stderr: str


@dataclass
class Session:
    base_url: str
    runs: dict[str, Done]
    log: list[str]


def _start(command: str, folder: Path) -> tuple[subprocess.Popen[str], str, str]:
    """The page's ``turnwire emulate ...`` line, on a free port: the process, the URL it
    serves and the line that says so."""
    words = shlex.split(command)
    assert words[:2] == ["turnwire", "emulate"] and words[-1] == "&", words
    arguments = words[2:-1]
    arguments[arguments.index("--port") + 1] = "0"
    process = subprocess.Popen(
        [sys.executable, "-m", "turnwire", "emulate", *arguments],
        cwd=folder,
        stderr=subprocess.PIPE,
        text=True,
        env={name: value for name, value in os.environ.items() if name != "TURNWIRE_EMULATE_KEY"},
    )
    assert process.stderr is not None
    first = process.stderr.readline()
    match = re.match(r"turnwire emulate: serving (http://127\.0\.0\.1:\d+/v1) ", first)
    assert match, first
    return process, match[1], first.rstrip("\n")


def _environment(command: str, base_url: str, folder: Path) -> dict[str, str]:
    """The variables the page's ``export`` line sets, its port the emulator's."""
    words = shlex.split(command)
    assert words[0] == "export", words
    exported = dict(word.split("=", 1) for word in words[1:])
    assert exported["OPENAI_BASE_URL"] == "http://127.0.0.1:8787/v1"
    exported["OPENAI_BASE_URL"] = base_url
    env = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith(("OPENAI_", "TURNWIRE_"))
    }
    return {
        **env,
        **exported,
        "XDG_CONFIG_HOME": str(folder / "config"),
        "XDG_DATA_HOME": str(folder / "data"),
    }


def _run(code: str, name: str, folder: Path, env: dict[str, str], *warnings: str) -> Done:
    (folder / "guard.py").write_text(GUARD, encoding="utf-8")
    script = folder / f"{name}.py"
    script.write_text(code, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-W", "error", *warnings, str(folder / "guard.py"), str(script)],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    assert "NETWORK:" not in done.stderr, done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    return Done(done.stdout, done.stderr)


def _play(folder: Path) -> Session:
    """The section played as a reader would: one emulator, the blocks in page order."""
    script = _one("yaml", SECTION).code
    assert script.startswith("# answers.yaml\n")
    (folder / "answers.yaml").write_text(script, encoding="utf-8")
    start, export = _one("sh", SECTION).code.strip().splitlines()
    process, base_url, serving = _start(start, folder)
    try:
        env = _environment(export, base_url, folder)
        runs = {}
        for number, heading in enumerate(RUN_HERE):
            # Runner.run_sync leaves its event loop open, and with it the AsyncOpenAI
            # client's connection, which Python reports as a ResourceWarning at exit.
            quiet = ("-W", "ignore::ResourceWarning") if heading == "openai-agents" else ()
            # A file named for no module the block imports (turnwire.py would shadow turnwire).
            runs[heading] = _run(PYTHON[heading], f"block_{number}", folder, env, *quiet)
        process.send_signal(signal.SIGINT)
        _, errors = process.communicate(timeout=30)
    finally:
        process.kill()
    assert process.returncode == 0, errors
    log = [serving, *(line for line in errors.splitlines() if line != "turnwire emulate: stopped")]
    return Session(base_url, runs, log)


def test_the_page_holds_the_blocks_this_test_runs() -> None:
    python = [block.heading for block in BLOCKS if block.language == "python"]
    assert list(PYTHON) == RUN_HERE
    assert set(python) == {"In tests", *RUN_HERE, *NOT_RUN}
    assert set(PRINTS) == set(RUN_HERE)
    # The script, the commands, the log and the CI job are the section's other blocks.
    assert [block.language for block in SECTION_BLOCKS if block.language != "python"] == [
        "yaml",
        "sh",
        "text",
        "text",
        "text",
        "text",
        "text",
        "yaml",
    ]


def test_each_block_prints_what_the_page_says_and_the_log_is_the_pages(tmp_path: Path) -> None:
    session = _play(tmp_path)
    for heading in RUN_HERE:
        assert session.runs[heading].stdout.splitlines() == PRINTS[heading], heading
    shown = _one("text", "The emulator's log").code.splitlines()
    logged = [line.replace(session.base_url, "http://127.0.0.1:8787/v1") for line in session.log]
    assert logged == shown


def test_the_in_tests_block_runs(tmp_path: Path) -> None:
    code = next(block.code for block in BLOCKS if block.heading == "In tests")
    env = {name: value for name, value in os.environ.items() if not name.startswith("OPENAI_")}
    _run(code, "block", tmp_path, {**env, "OPENAI_API_KEY": "sk-dummy"})


def test_the_guard_refuses_the_trace_export_the_page_turns_off(tmp_path: Path) -> None:
    """Without ``set_tracing_disabled(True)``, openai-agents would send the run's trace to
    api.openai.com: under the guard the attempt is refused and reported (the run itself still
    succeeds), which is what makes the page's run proof that nothing left the machine."""
    code = PYTHON["openai-agents"].replace("set_tracing_disabled(True)\n", "")
    assert code != PYTHON["openai-agents"]
    script = _one("yaml", SECTION).code
    (tmp_path / "answers.yaml").write_text(script, encoding="utf-8")
    with turnwire.testing.emulator(script=tmp_path / "answers.yaml") as api:
        env = {name: value for name, value in os.environ.items() if not name.startswith("OPENAI")}
        env.update(OPENAI_BASE_URL=api.base_url, OPENAI_API_KEY="sk-dummy")
        (tmp_path / "guard.py").write_text(GUARD, encoding="utf-8")
        (tmp_path / "block.py").write_text(code, encoding="utf-8")
        done = subprocess.run(
            [sys.executable, str(tmp_path / "guard.py"), str(tmp_path / "block.py")],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
            env=env,
        )
    assert done.stdout.splitlines() == PRINTS["openai-agents"]
    assert "NETWORK: socket.getaddrinfo api.openai.com" in done.stderr


def test_the_ci_job_starts_the_emulator_the_tests_point_at() -> None:
    block = _one("yaml", "A CI job")
    job = yaml.safe_load(block.code)["jobs"]["test"]
    env = job["env"]
    port = re.fullmatch(r"http://127\.0\.0\.1:(\d+)/v1", env["OPENAI_BASE_URL"])
    assert port, env
    assert env["OPENAI_API_KEY"] == "unused"  # no secret
    assert env["OPENAI_AGENTS_DISABLE_TRACING"] == "1"
    runs = [step.get("run", "") for step in job["steps"]]
    assert "uv sync --frozen" in runs
    start = next(run for run in runs if "turnwire emulate" in run)
    assert f"--script tests/answers.yaml --port {port[1]} " in start
    assert f"http://127.0.0.1:{port[1]}/v1/responses" in start
    assert runs.index(start) < runs.index("uv run pytest")
