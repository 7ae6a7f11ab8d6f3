"""``turnwire render`` says so when its envelopes use the unkeyed nonce (no secret could be
read or made): such nonces are stable but anyone can compute them."""

from __future__ import annotations

import json
from pathlib import Path

from ..conftest import turnwire_process, user


def test_render_warns_when_the_nonce_is_unkeyed(tmp_path: Path) -> None:
    thread = tmp_path / "t.json"
    thread.write_text(json.dumps({"version": 1, "model": "gpt-5", "messages": [user()]}))
    blocker = tmp_path / "a-file"
    blocker.write_text("no folder can be made under a file, not even by root")
    environment = {
        "TURNWIRE_ENVELOPE_SECRET": "",
        "XDG_CONFIG_HOME": str(blocker),
        "XDG_DATA_HOME": str(blocker),
    }
    done = turnwire_process("render", str(thread), env=environment)
    assert done.returncode == 0, done.stderr
    assert "unkeyed ones anyone can compute" in done.stderr


def test_render_is_quiet_with_a_secret(tmp_path: Path) -> None:
    thread = tmp_path / "t.json"
    thread.write_text(json.dumps({"version": 1, "model": "gpt-5", "messages": [user()]}))
    done = turnwire_process("render", str(thread), env={"TURNWIRE_ENVELOPE_SECRET": "s" * 32})
    assert done.returncode == 0 and "unkeyed" not in done.stderr
