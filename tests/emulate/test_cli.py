"""``turnwire emulate`` as a user runs it: it serves until interrupted, then exits 0."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import openai


def test_it_serves_a_script_until_interrupted(tmp_path: Path):
    script = tmp_path / "answers.json"
    script.write_text('[{"text": "From the command line."}]')
    process = subprocess.Popen(
        [sys.executable, "-m", "turnwire", "emulate", "--port", "0", "--script", str(script)],
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stderr is not None
        line = process.stderr.readline()
        assert line.startswith("turnwire emulate: serving http://127.0.0.1:")
        base_url = line.split()[3]
        with openai.OpenAI(base_url=base_url, api_key="sk-secret-key", max_retries=0) as client:
            answer = client.responses.create(model="gpt-5", input="Hi")
        assert answer.output_text == "From the command line."
        process.send_signal(signal.SIGINT)
        _, errors = process.communicate(timeout=10)
    finally:
        process.kill()
    assert process.returncode == 0
    assert "POST /v1/responses 200" in errors
    assert "sk-secret-key" not in errors


def test_a_bad_key_variable_is_refused(tmp_path: Path):
    done = subprocess.run(
        [sys.executable, "-m", "turnwire", "emulate", "--port", "0"],
        capture_output=True,
        check=False,
        text=True,
        env={"TURNWIRE_EMULATE_KEY": "zz", "PATH": ""},
        timeout=30,
    )
    assert done.returncode == 2
    assert "TURNWIRE_EMULATE_KEY is not hexadecimal" in done.stderr
