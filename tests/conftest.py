"""Shared fixtures: fresh containers and plugin managers per test, and an oracle-checked render."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import settings as hypothesis_settings

import turnwire
import turnwire.api
import turnwire.rendering.renderer
from turnwire import build_container, load_settings
from turnwire.config.settings import merge

from .oracle import validate_body, validate_open_responses, validate_openapi
from .postgres import location, postgres_server, postgres_url  # noqa: F401 (fixtures for every folder)

# No test asserts on time: Hypothesis's per-example deadline (200 ms by default) would fail an
# example that is only slow on a busy machine, so every property runs without one. The examples
# are drawn the same on every run (a seed derived from each test), so a run of the README's
# test command is repeatable; TURNWIRE_HYPOTHESIS_RANDOM=1 draws new ones, and so does a fuzz
# campaign (TURNWIRE_FUZZ_EXAMPLES=N) or a run given --hypothesis-seed=N (see
# pytest_configure). A failure prints the example and the @reproduce_failure line that repeats it.
RANDOM_EXAMPLES = (
    os.environ.get("TURNWIRE_HYPOTHESIS_RANDOM") == "1" or "TURNWIRE_FUZZ_EXAMPLES" in os.environ
)
hypothesis_settings.register_profile(
    "turnwire", deadline=None, derandomize=not RANDOM_EXAMPLES, print_blob=True
)
hypothesis_settings.register_profile(
    "turnwire-seeded", deadline=None, derandomize=False, print_blob=True
)
hypothesis_settings.load_profile("turnwire")


def pytest_configure(config: pytest.Config) -> None:
    # A seed given on the command line is honoured (derandomize would take precedence).
    if config.getoption("hypothesis_seed", None) is not None:
        hypothesis_settings.load_profile("turnwire-seeded")


# The recorded traffic the tests read, kept in the repository (origins and licences:
# tests/data/conformance/SOURCES.md).
REPO = Path(__file__).resolve().parents[1]
CONFORMANCE = REPO / "tests" / "data" / "conformance"
GOLDEN = REPO / "tests" / "golden"
REPO_EXAMPLES = REPO / "examples"
SECRET = "test-envelope-secret"


@pytest.fixture(autouse=True)
def _envelope_secret(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TURNWIRE_ENVELOPE_SECRET", SECRET)


_REAL_RENDER = turnwire.rendering.renderer.render


def _render_checked(*args: Any, **kwargs: Any) -> turnwire.RenderedRequest:
    rendered = _REAL_RENDER(*args, **kwargs)
    validate_body(rendered.json)
    validate_open_responses(rendered.json)
    validate_openapi(rendered.json)
    return rendered


@pytest.fixture(autouse=True)
def _every_render_is_checked_by_the_oracle(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every body any test renders in-process validates against the official SDK types,
    against the Open Responses specification's types and against the API's OpenAPI
    description. The client renders through ``turnwire.rendering.renderer.render`` (looked up on the
    module at each call), so its requests are checked too."""
    monkeypatch.setattr(turnwire, "render", _render_checked)
    monkeypatch.setattr(turnwire.api, "render", _render_checked)
    monkeypatch.setattr(turnwire.rendering.renderer, "render", _render_checked)


def make_container(
    settings: dict[str, Any] | None = None, *, extra_plugins: Iterable[Any] = ()
) -> turnwire.Container:
    """A container over the packaged defaults plus ``settings``, without entry points."""
    tree = merge({"plugins": {"load_entrypoints": False}}, settings or {})
    return build_container(settings=load_settings(overrides=tree), extra_plugins=extra_plugins)


def render_body(
    thread: turnwire.Thread | dict[str, Any],
    settings: dict[str, Any] | None = None,
    *,
    container: turnwire.Container | None = None,
    model: str | None = "gpt-5",
    extra_plugins: Iterable[Any] = (),
) -> dict[str, Any]:
    """Render through the public API and check the body against the SDK's own types."""
    container = container or make_container(settings, extra_plugins=extra_plugins)
    return turnwire.render(thread, container=container, model=model).json


@pytest.fixture
def render() -> Callable[..., dict[str, Any]]:
    return render_body


T0 = "2026-01-01T10:00:00Z"


def at(second: int, ms: int = 0) -> str:
    return f"2026-01-01T10:00:{second:02d}.{ms:03d}Z"


def thread(**fields: Any) -> turnwire.Thread:
    """A thread from a thread-file mapping (so tests exercise the schema too)."""
    return turnwire.load_thread({"version": 1, **fields})


def user(mid: str = "u1", content: str = "hi", second: int = 0, **extra: Any) -> dict[str, Any]:
    return {"id": mid, "role": "user", "content": content, "created_at": at(second), **extra}


def assistant(mid: str, content: str, second: int, seq: int = 0, **extra: Any) -> dict[str, Any]:
    return {
        "id": mid,
        "role": "assistant",
        "content": content,
        "created_at": at(second),
        "seq": seq,
        **extra,
    }


WEATHER_TOOL = {
    "name": "get_weather",
    "description": "Weather",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
}
"""A tool the tool-call builder's records name."""


def call(
    cid: str, second: int, *, seq: int = 0, result: dict | None = None, tool: str = "get_weather"
) -> dict[str, Any]:
    """A tool call record (``get_weather`` for Paris) answered with ``result`` (``21C``)."""
    return {
        "id": cid,
        "tool": tool,
        "args": {"city": "Paris"},
        "created_at": at(second),
        "seq": seq,
        "result": result if result is not None else {"text": "21C"},
    }


def load_json(path: Path) -> Any:
    return json.loads(path.read_text())


def to_dict(value: Any) -> Any:
    return msgspec.to_builtins(value)


def prefix_fingerprint(
    thread_value: turnwire.Thread,
    settings: dict[str, Any] | None = None,
    *,
    model: str = "gpt-5",
    extra_items: tuple[Any, ...] = (),
) -> str:
    """The fingerprint a recorder stores for a reasoning item produced after ``thread_value``."""
    from turnwire.stages.fingerprint import fingerprint_prefix

    container = make_container(settings)
    rendered = turnwire.render(thread_value, container=container, model=model)
    prefix = [*rendered.rendered.input[: rendered.fingerprintable_length], *extra_items]
    return fingerprint_prefix(
        model=model,
        instructions=rendered.rendered.instructions,
        tools=rendered.rendered.tools,
        input=prefix,
        through_item=len(prefix),
        fingerprint_binding=container.fingerprint_binding(),
        endpoint=container.endpoint(),
        scratch={},
    )


def reasoning_thought(
    tid: str,
    second: int,
    *,
    fingerprint: str | None,
    paired: str | None,
    seq: int = 0,
    encrypted: str | None = "gAAAA-enc",
    summary: str = "plan",
    content: str = "",
) -> dict[str, Any]:
    item: dict[str, Any] = {
        "type": "reasoning",
        "id": tid,
        "summary": [{"type": "summary_text", "text": summary}] if summary else [],
    }
    if encrypted is not None:
        item["encrypted_content"] = encrypted
    return {
        "id": tid,
        "content": content,
        "created_at": at(second),
        "seq": seq,
        "replay_compatibility": "openai-responses-reasoning-v1",
        "payload": {
            "variant": "responses-reasoning",
            "item": item,
            "paired_item_id": paired,
            "prefix_fingerprint": fingerprint,
        },
    }


REPLAY = {
    "render": {
        "reasoning_replay": "encrypted",
        "replay_compatibility": ["openai-responses-reasoning-v1"],
    }
}


def turnwire_process(*args: str, cwd: Path | None = None, env: dict[str, str] | None = None) -> Any:
    """``python -m turnwire ARGS`` as a real process, with the test envelope secret and
    without any API key from the environment."""
    import os
    import subprocess
    import sys

    environment = {**os.environ, "TURNWIRE_ENVELOPE_SECRET": SECRET, **(env or {})}
    if "OPENAI_API_KEY" not in (env or {}):
        environment.pop("OPENAI_API_KEY", None)
    return subprocess.run(
        [sys.executable, "-m", "turnwire", *args],
        capture_output=True,
        text=True,
        env=environment,
        cwd=cwd or Path(__file__).parents[1],
        timeout=120,
        check=False,
    )


def mypy_strict(path: Path, cache: Path) -> tuple[int, str]:
    """``mypy --strict`` on ``path``, in this process: its exit status and output. mypy raises
    the interpreter's recursion limit for its run; the limit is put back afterwards, so no later
    test runs under mypy's."""
    import sys

    from mypy import api

    limit = sys.getrecursionlimit()
    try:
        out, err, status = api.run(
            ["--strict", "--no-error-summary", "--cache-dir", str(cache), str(path)]
        )
    finally:
        sys.setrecursionlimit(limit)
    return status, out + err
