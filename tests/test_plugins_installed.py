"""Plugins installed for real: turnwire's wheel and the plugins in a fresh virtual environment.

Nothing here imports the checkout: the commands run from a temporary folder, with the wheel's
packaged default configuration and the plugins' entry points.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from .client.server import Reply, ScriptedServer
from .conftest import SECRET
from .oracle import validate_body

REPO = Path(__file__).resolve().parents[1]
PLUGINS = ("turnwire-redact", "turnwire-markdown-context", "turnwire-local-tools")

# One worker builds and installs the wheels once for the whole module.
pytestmark = pytest.mark.xdist_group("installed_wheels")

THREAD = """\
version: 1
model: gpt-5
memories:
  - {id: m1, content: "Prefers tea"}
tools:
  - {name: crm}
messages:
  - {id: u1, role: user, content: "who owns the account?", created_at: "2026-01-01T10:00:00Z"}
tool_calls:
  - {id: c1, tool: crm, created_at: "2026-01-01T10:00:01Z",
     result: {text: "owner: bob@corp.com"}}
"""


def _uv(*args: str, cwd: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "uv", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
        # Offline: uv's cache, which the suite's own `uv sync` filled, holds every package
        # (tests reach nothing beyond 127.0.0.1).
        env={**os.environ, "UV_PYTHON_DOWNLOADS": "never", "UV_OFFLINE": "1"},
    )
    assert done.returncode == 0, done.stderr


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("installed")
    _uv("build", "--wheel", "--out-dir", str(root / "dist"), str(REPO), cwd=root)
    (wheel,) = (root / "dist").glob("turnwire-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        assert "turnwire/default.yaml" in names
        packaged = archive.read("turnwire/default.yaml").decode()
        for profile in (REPO / "config").glob("*.yaml"):
            shipped = archive.read(f"turnwire/profiles/{profile.name}").decode()
            assert shipped == profile.read_text()
        assert "MIT License" in archive.read("turnwire/LICENSE").decode()
        assert any(name.endswith(".dist-info/licenses/LICENSE") for name in names)
    assert packaged == (REPO / "config" / "default.yaml").read_text()
    venv = root / "venv"
    _uv("venv", "--python", sys.executable, str(venv), cwd=root)
    _uv(
        "pip",
        "install",
        # The plugins' `turnwire` is the wheel above, not the checkout that the workspace's
        # tool.uv.sources names (pyproject.toml).
        "--no-sources",
        "--python",
        str(venv / "bin" / "python"),
        str(wheel),
        *(str(REPO / "plugins" / name) for name in PLUGINS),
        cwd=root,
    )
    work = root / "work"
    work.mkdir()
    (work / "thread.yaml").write_text(THREAD)
    return work


def turnwire_cmd(work: Path, *args: str) -> subprocess.CompletedProcess[str]:
    binary = work.parent / "venv" / "bin" / "turnwire"
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    env["TURNWIRE_ENVELOPE_SECRET"] = SECRET
    return subprocess.run(
        [str(binary), *args],
        cwd=work,
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        check=False,
    )


def render(work: Path, config: str | None = None) -> dict:
    args = ["render", "thread.yaml"]
    if config is not None:
        (work / "profile.yaml").write_text(config)
        args += ["--config", "profile.yaml"]
    done = turnwire_cmd(work, *args)
    assert done.returncode == 0, done.stderr
    body = json.loads(done.stdout)
    validate_body(body)
    return body


def test_the_installed_turnwire_runs_outside_the_checkout(installed):
    assert not (installed / "config").exists()
    assert render(installed, "plugins: {load_entrypoints: false}\n")["store"] is False


def test_the_shipped_profiles_are_usable_by_name_from_the_wheel(installed):
    done = turnwire_cmd(installed, "check-config", "--profile", "strict-media", "--print")
    assert done.returncode == 0, done.stderr
    assert "profiles/strict-media.yaml" in done.stderr
    body = render_args(installed, "--profile", "production", "--set", "plugins.allow=[]")
    assert body["store"] is False


def render_args(work: Path, *args: str) -> dict:
    done = turnwire_cmd(work, "render", "thread.yaml", *args)
    assert done.returncode == 0, done.stderr
    body = json.loads(done.stdout)
    validate_body(body)
    return body


def test_turnwire_plugins_lists_distributions_versions_and_hooks(installed):
    done = turnwire_cmd(installed, "plugins", "--json")
    assert done.returncode == 0, done.stderr
    listed = {p["name"]: p for p in json.loads(done.stdout)["plugins"]}
    assert listed["redact"]["distribution"] == "turnwire-redact"
    assert listed["redact"]["version"] == "0.1.0"
    assert listed["redact"]["hooks"] == ["render_untrusted_content"]
    assert listed["markdown_context"]["hooks"] == [
        "render_first_party_retrievables",
        "render_memories",
    ]
    assert listed["turnwire.stages.envelopes"]["builtin"] is True
    text = turnwire_cmd(installed, "plugins").stdout
    assert "redact" in text and "turnwire-redact 0.1.0" in text


def test_both_plugins_change_the_rendered_request(installed):
    plain = render(installed, "plugins: {load_entrypoints: false}\n")
    assert "bob@corp.com" in plain["input"][2]["output"]
    assert plain["instructions"].startswith("<memories>")
    body = render(installed)
    assert "bob@corp.com" not in body["input"][2]["output"]
    assert "[redacted email]" in body["input"][2]["output"]
    assert body["instructions"].startswith("## What you remember\n\n- Prefers tea")


def test_a_block_listed_plugin_does_not_load(installed):
    body = render(installed, "plugins: {block: [redact]}\n")
    assert "bob@corp.com" in body["input"][2]["output"]
    assert body["instructions"].startswith("## What you remember")
    listed = json.loads(
        turnwire_cmd(installed, "plugins", "--json", "--config", "profile.yaml").stdout
    )
    assert listed["skipped"] == {"redact": "block-listed"}


def test_a_plugin_missing_from_the_allow_list_does_not_load(installed):
    body = render(installed, "plugins: {allow: [redact]}\n")
    assert "[redacted email]" in body["input"][2]["output"]
    assert body["instructions"].startswith("<memories>")


@pytest.mark.parametrize("listed", ["allow", "block"])
def test_a_misspelled_plugin_name_in_allow_or_block_is_reported(installed, listed):
    """The redaction plugin misspelled in plugins.allow would be silently off."""
    (installed / "profile.yaml").write_text(f"plugins: {{{listed}: [redcat]}}\n")
    done = turnwire_cmd(installed, "-v", "render", "thread.yaml", "--config", "profile.yaml")
    assert done.returncode == 0, done.stderr
    assert f"plugins.{listed} names 'redcat', which is no installed plugin" in done.stderr
    assert "redact" in done.stderr.partition("which is no installed plugin (installed: ")[2]
    checked = turnwire_cmd(installed, "check-config", "profile.yaml")  # no -v needed there
    assert checked.returncode == 0 and "which is no installed plugin" in checked.stderr


def test_plugin_settings_apply_and_bad_ones_fail_at_load_time(installed):
    body = render(
        installed,
        "plugins: {settings: {markdown_context: {memories_title: Known},"
        " redact: {replacement: '<gone>'}}}\n",
    )
    assert body["instructions"].startswith("## Known")
    assert "owner: <gone>" in body["input"][2]["output"]
    (installed / "profile.yaml").write_text("plugins: {settings: {redact: {emails: nope}}}\n")
    done = turnwire_cmd(installed, "render", "thread.yaml", "--config", "profile.yaml")
    assert done.returncode == 2
    assert done.stderr.startswith(
        "error: E_INVALID_OPENAI_RESPONSES_OPTIONS: $.plugins.settings.redact.emails:"
    )


def test_tracing_logs_every_stage_call(installed):
    (installed / "profile.yaml").write_text("plugins: {trace: true}\n")
    done = turnwire_cmd(installed, "--trace", "render", "thread.yaml", "--config", "profile.yaml")
    assert done.returncode == 0, done.stderr
    assert "render_untrusted_content" in done.stderr and "render_memories" in done.stderr


def test_the_trace_flag_alone_or_a_profile_alone_traces(installed):
    (installed / "plain.yaml").write_text("plugins: {trace: false}\n")
    flag = turnwire_cmd(installed, "--trace", "render", "thread.yaml", "--config", "plain.yaml")
    assert flag.returncode == 0 and "render_untrusted_content" in flag.stderr, flag.stderr
    (installed / "traced.yaml").write_text("plugins: {trace: true}\n")
    profile = turnwire_cmd(installed, "render", "thread.yaml", "--config", "traced.yaml")
    assert profile.returncode == 0 and "render_untrusted_content" in profile.stderr
    quiet = turnwire_cmd(installed, "render", "thread.yaml", "--config", "plain.yaml")
    assert "render_untrusted_content" not in quiet.stderr


def test_check_config_validates_plugin_settings_too(installed):
    (installed / "good.yaml").write_text("plugins: {settings: {redact: {phones: false}}}\n")
    done = turnwire_cmd(installed, "check-config", "good.yaml")
    assert done.returncode == 0, done.stderr
    assert "plugins: " in done.stdout and "redact" in done.stdout
    (installed / "bad.yaml").write_text("plugins: {settings: {redact: {phones: maybe}}}\n")
    bad = turnwire_cmd(installed, "check-config", "bad.yaml")
    assert bad.returncode == 2 and "$.plugins.settings.redact.phones" in bad.stderr


LOCAL_THREAD = """\
version: 1
model: qwen3-8b
tools:
  - {name: get_weather, parameters: {type: object, properties: {city: {type: string}}}}
messages:
  - {id: u1, role: user, content: "Weather in Paris?", created_at: "2026-01-01T10:00:00Z"}
"""


def _text_answer(text: str) -> dict:
    return {
        "id": "resp_local",
        "object": "response",
        "status": "completed",
        "model": "qwen3-8b",
        "output": [
            {
                "type": "message",
                "id": "msg_local",
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": text, "annotations": []}],
            }
        ],
        "usage": {"input_tokens": 5, "output_tokens": 5, "total_tokens": 10},
    }


def test_local_tools_loads_from_its_wheel_and_reads_calls_written_as_text(installed):
    listed = json.loads(turnwire_cmd(installed, "plugins", "--json").stdout)["plugins"]
    local = next(p for p in listed if p["name"] == "local_tools")
    assert (local["distribution"], local["hooks"]) == (
        "turnwire-local-tools",
        ["parse_text_tool_calls"],
    )
    (installed / "local.yaml").write_text(LOCAL_THREAD)
    call = '{"name": "get_weather", "arguments": {"city": "Paris"}}'
    text = f"Checking.\n<tool_call>\n{call}\n</tool_call>"
    (installed / "local-config.yaml").write_text(
        "client: {stream: false, retry: {max_retries: 0}}\n"
        "plugins: {settings: {local_tools: {format: hermes}}}\n"
    )
    with ScriptedServer([Reply.json(200, _text_answer(text))]) as server:
        done = turnwire_cmd(
            installed, "run", "local.yaml", "--base-url", server.base_url,
            "--config", "local-config.yaml", "--once", "--json",
        )  # fmt: skip
    assert done.returncode == 0, done.stderr
    records = json.loads(done.stdout)["records"]
    assert [(c["tool"], c["args"]) for c in records["tool_calls"]] == [
        ("get_weather", {"city": "Paris"})
    ]
    assert [m["content"] for m in records["messages"]] == ["Checking."]
    (installed / "bad.yaml").write_text("plugins: {settings: {local_tools: {format: xml}}}\n")
    bad = turnwire_cmd(installed, "check-config", "bad.yaml")
    assert bad.returncode == 2 and "$.plugins.settings.local_tools.format" in bad.stderr
