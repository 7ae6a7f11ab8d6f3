"""The envelope secret by default: made once, owner-only, in the config folder; the variable wins.

Every test here points XDG_CONFIG_HOME (and HOME where it matters) into a temporary folder and
removes the test-wide TURNWIRE_ENVELOPE_SECRET, so nothing is written into the real home.
"""

from __future__ import annotations

import logging
import os
import re
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from turnwire import ConfigError
from turnwire.config.secret import envelope_secret
from turnwire.plugin import EnvelopeNonce

from ..conftest import make_container


@pytest.fixture
def config_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.delenv("TURNWIRE_ENVELOPE_SECRET", raising=False)
    monkeypatch.delenv("TURNWIRE_STORE", raising=False)
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    return tmp_path / "config"


def _nonce(settings: dict | None = None) -> EnvelopeNonce:
    nonce = make_container(settings).envelope_nonce()
    assert isinstance(nonce, EnvelopeNonce)
    return nonce


def _records(caplog: pytest.LogCaptureFixture, kind: str) -> list[logging.LogRecord]:
    return [r for r in caplog.records if getattr(r, "kind", None) == kind]


def test_without_the_variable_a_secret_is_made_once_owner_only_and_its_place_logged(
    config_home, caplog
):
    caplog.set_level(logging.INFO, logger="turnwire")
    first = _nonce()
    path = config_home / "turnwire" / "envelope-secret"
    assert first.keyed
    text = path.read_text()
    assert re.fullmatch(r"[0-9a-f]{64}\n", text)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert [p.name for p in path.parent.iterdir()] == ["envelope-secret"]  # no temporary left
    (created,) = _records(caplog, "envelope-secret-created")
    assert str(path) in created.getMessage()
    # Made once: the next container reads it, logs nothing, derives the same nonces.
    second = _nonce()
    assert second("m1") == first("m1") and path.read_text() == text
    assert len(_records(caplog, "envelope-secret-created")) == 1
    # The same text in the variable gives the same nonces: copy it to share between hosts.
    assert EnvelopeNonce(text.strip())("m1") == first("m1")
    assert EnvelopeNonce(None)("m1") != first("m1")
    # The value itself is nowhere.
    secret = text.strip()
    for record in caplog.records:
        assert secret not in record.getMessage()
    container = make_container()
    assert secret not in repr(container.envelope_nonce()) + repr(container.settings())


def test_without_xdg_config_home_the_secret_goes_under_home(config_home, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", "relative/is/ignored")
    nonce = _nonce()
    path = Path(os.environ["HOME"]) / ".config" / "turnwire" / "envelope-secret"
    assert nonce("m1") == EnvelopeNonce(path.read_text().strip())("m1")
    monkeypatch.delenv("XDG_CONFIG_HOME")
    assert _nonce()("m1") == nonce("m1")


def test_a_setting_names_the_file_and_the_variable_still_wins(config_home, tmp_path, monkeypatch):
    named = tmp_path / "secrets" / "turnwire.key"
    nonce = _nonce({"render": {"envelope_secret_file": str(named)}})
    assert nonce("m1") == EnvelopeNonce(named.read_text().strip())("m1")
    assert stat.S_IMODE(named.stat().st_mode) == 0o600
    assert not (config_home / "turnwire").exists()
    # An existing file is used as it is.
    named.write_text("chosen by the deployer\n")
    assert _nonce({"render": {"envelope_secret_file": str(named)}})("m1") == EnvelopeNonce(
        "chosen by the deployer"
    )("m1")
    monkeypatch.setenv("TURNWIRE_ENVELOPE_SECRET", "from-the-environment")
    other = tmp_path / "other" / "secret"
    chosen = _nonce({"render": {"envelope_secret_file": str(other)}})
    assert chosen("m1") == EnvelopeNonce("from-the-environment")("m1")
    assert not other.parent.exists()


def test_when_the_config_folder_cannot_be_written_the_secret_goes_beside_the_store(
    config_home, tmp_path, monkeypatch
):
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(blocker))  # mkdir under a file fails, even as root
    store = tmp_path / "db" / "threads.db"
    nonce = _nonce({"store": {"location": str(store)}})
    beside = store.parent / "envelope-secret"
    assert nonce("m1") == EnvelopeNonce(beside.read_text().strip())("m1")
    assert stat.S_IMODE(beside.stat().st_mode) == 0o600


@pytest.mark.parametrize("kind", ["directory", "fifo", "empty"])
def test_a_configured_secret_that_is_not_a_usable_file_is_a_config_error(
    config_home, tmp_path, kind
):
    path = tmp_path / "secret"
    if kind == "directory":
        path.mkdir()
    elif kind == "fifo":
        os.mkfifo(path)
    else:
        path.write_text("  \n")
    with pytest.raises(ConfigError) as caught:
        envelope_secret(env_var=None, secret_file=str(path), store_path=None)
    assert caught.value.path == "$.render.envelope_secret_file"
    assert str(path) in str(caught.value)


def test_a_secret_others_can_read_is_used_with_a_warning(config_home, tmp_path, caplog):
    path = tmp_path / "secret"
    path.write_text("shared-secret\n")
    path.chmod(0o644)
    assert envelope_secret(env_var=None, secret_file=str(path), store_path=None) == b"shared-secret"
    (warned,) = _records(caplog, "envelope-secret-permissions")
    assert "chmod 600" in warned.getMessage() and "shared-secret" not in warned.getMessage()


RACER = textwrap.dedent("""
    import logging, sys
    from turnwire.config.secret import envelope_secret

    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    print("ready", flush=True)
    sys.stdin.readline()
    print(envelope_secret(env_var=None, secret_file=None, store_path=None).decode(), flush=True)
""")


def test_processes_that_race_to_make_the_secret_all_get_the_same_one(config_home):
    env = {**os.environ, "XDG_CONFIG_HOME": str(config_home)}
    racers = [
        subprocess.Popen(
            [sys.executable, "-c", RACER],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        for _ in range(4)
    ]
    for racer in racers:
        assert racer.stdout is not None and racer.stdout.readline() == "ready\n"
    for racer in racers:  # release them together
        assert racer.stdin is not None
        racer.stdin.write("go\n")
        racer.stdin.flush()
    results = [racer.communicate(timeout=60) for racer in racers]
    assert [racer.returncode for racer in racers] == [0, 0, 0, 0], results
    path = config_home / "turnwire" / "envelope-secret"
    secret = path.read_text().strip()
    assert {out.strip() for out, _ in results} == {secret}
    assert sum("created a new envelope secret" in err for _, err in results) == 1
    assert sorted(p.name for p in path.parent.iterdir()) == ["envelope-secret"]
