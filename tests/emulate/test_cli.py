"""``turnwire emulate`` as a user runs it: it serves until interrupted, then exits 0."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import openai

from .conftest import refused_command


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
    said = refused_command(["--port", "0"], {"TURNWIRE_EMULATE_KEY": "zz", "PATH": ""})
    assert "TURNWIRE_EMULATE_KEY is not hexadecimal" in said


def _serve(*arguments: str, env: dict[str, str]) -> tuple[subprocess.Popen[str], str, str]:
    process = subprocess.Popen(
        [sys.executable, "-m", "turnwire", "emulate", "--port", "0", *arguments],
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert process.stderr is not None
    line = process.stderr.readline()
    assert line.startswith("turnwire emulate: serving http://127.0.0.1:"), line
    return process, line.split()[3], line


def _stop(process: subprocess.Popen[str]) -> str:
    process.send_signal(signal.SIGINT)
    _, errors = process.communicate(timeout=10)
    assert process.returncode == 0, errors
    return errors


def test_it_records_from_an_upstream_and_replays_without_it(tmp_path: Path):
    import os

    import turnwire.testing

    key = "sk-upstream-secret-for-the-cli"
    recordings = tmp_path / "recordings"
    env = {**os.environ, "UPSTREAM_KEY": key}
    env.pop("OPENAI_API_KEY", None)
    with turnwire.testing.emulator(script={"default": {"text": "Recorded answer."}}) as real:
        process, base_url, started = _serve(
            "--record",
            str(recordings),
            "--upstream",
            real.base_url,
            "--upstream-key-env",
            "UPSTREAM_KEY",
            env=env,
        )
        try:
            with openai.OpenAI(base_url=base_url, api_key="x", max_retries=0) as client:
                said = client.responses.create(model="gpt-5", input="Hi").output_text
                with client.responses.stream(model="gpt-5", input="Hi") as stream:
                    streamed = stream.get_final_response().output_text
            errors = _stop(process)
        finally:
            process.kill()
    assert said == streamed == "Recorded answer."
    assert f"(recording {real.base_url} into {recordings}; Ctrl-C stops)" in started
    assert "POST /v1/responses 200" in errors
    assert len(list(recordings.glob("responses-*.json"))) == 2
    for written in [errors, *(path.read_text() for path in recordings.iterdir())]:
        assert key not in written
    process, base_url, started = _serve("--replay", str(recordings), env=env)  # upstream gone
    try:
        with openai.OpenAI(base_url=base_url, api_key="x", max_retries=0) as client:
            assert client.responses.create(model="gpt-5", input="Hi").output_text == said
            with client.responses.stream(model="gpt-5", input="Hi") as stream:
                assert stream.get_final_response().output_text == streamed
            try:
                client.responses.create(model="gpt-5", input="Hello")
            except openai.BadRequestError as err:
                assert err.code == "replay_miss"
                assert 'input differs: recorded "Hi" sent "Hello"' in err.message
            else:
                raise AssertionError("a request nothing recorded was answered")
        errors = _stop(process)
    finally:
        process.kill()
    assert f"(replaying 2 recordings from {recordings}; Ctrl-C stops)" in started
    assert "replay miss:" in errors and "POST /v1/responses 400 (replay-miss)" in errors


def test_record_without_its_key_and_script_with_replay_are_refused(tmp_path: Path):
    import os

    env = {key: value for key, value in os.environ.items() if key != "OPENAI_API_KEY"}
    for arguments, said in (
        (["--record", str(tmp_path)], "E_OPENAI_API_KEY_MISSING"),
        (["--record", str(tmp_path)], "$OPENAI_API_KEY, which is not set"),
        (["--replay", str(tmp_path), "--script", "a.yaml"], "--script gives local answers"),
        (["--upstream", "http://127.0.0.1:9/v1"], "give --record DIR too"),
        (["--replay", str(tmp_path / "missing")], "not a directory of recordings"),
    ):
        assert said in refused_command(["--port", "0", *arguments], env)
    assert "not allowed with argument" in refused_command(["--record", "a", "--replay", "b"])
