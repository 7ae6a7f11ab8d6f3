"""A proxy the environment names that httpx cannot use is a configuration error, one line,
the variable named and its value (which may hold a password) not shown."""

from __future__ import annotations

import pytest

import turnwire
from turnwire.errors import ConfigError

from ..conftest import thread, turnwire_process, user


@pytest.mark.parametrize(
    ("variable", "value", "expected"),
    [
        ("ALL_PROXY", "socks5://user:pw-secret@127.0.0.1:9", "socksio"),
        ("HTTPS_PROXY", "ftp://user:pw-secret@127.0.0.1:9", "http://, https:// or socks5://"),
    ],
)
def test_an_unusable_proxy_is_a_config_error(
    monkeypatch: pytest.MonkeyPatch, variable: str, value: str, expected: str
) -> None:
    monkeypatch.setenv(variable, value)
    with pytest.raises(ConfigError, match=expected) as refused:
        turnwire.run(thread(model="gpt-5", messages=[user()]), base_url="http://127.0.0.1:9/v1")
    assert variable in str(refused.value) and "pw-secret" not in str(refused.value)


def test_the_command_line_prints_one_error_line(tmp_path) -> None:  # type: ignore[no-untyped-def]
    import json

    path = tmp_path / "t.json"
    path.write_text(json.dumps({"version": 1, "model": "gpt-5", "messages": [user()]}))
    done = turnwire_process(
        "run",
        str(path),
        "--base-url",
        "http://127.0.0.1:9/v1",
        env={"HTTPS_PROXY": "ftp://127.0.0.1:9", "OPENAI_API_KEY": "sk-test-key-0000"},
    )
    assert done.returncode == 1
    lines = done.stderr.strip().splitlines()
    assert lines[-1].startswith("error: E_INVALID_OPENAI_RESPONSES_OPTIONS: HTTPS_PROXY")
    assert "Traceback" not in done.stderr
