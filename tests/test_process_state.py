"""A long-lived process keeps no state that grows with what it renders or runs.

Every module-level container of every turnwire module (dicts, sets, lists, and anything else
with a length) is measured before and after rendering many different threads (each with
its own MCP credentials, configuration and records) and running turns against a local
server: none may be bigger afterwards. Containers and plugin managers are never module-level.
"""

from __future__ import annotations

import gc
import importlib
from pathlib import Path
from typing import Any

import pluggy

import turnwire
from turnwire.rendering._incremental.memo import RenderMemo
from turnwire.rendering.container import Container
from turnwire.rendering.container_cache import ContainerCache

from .client.server import Reply, ScriptedServer, recorded
from .conftest import make_container


def _modules() -> list[Any]:
    src = Path(turnwire.__file__).parent
    found = []
    for path in sorted(src.rglob("*.py")):
        parts = list(path.relative_to(src.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        if parts[-1] == "__main__":
            continue
        found.append(importlib.import_module(".".join(parts)))
    return found


def _sizes() -> dict[str, int]:
    sizes = {}
    for module in _modules():
        for name, value in vars(module).items():
            if isinstance(value, type) or (callable(value) and not hasattr(value, "__len__")):
                continue
            try:
                size = len(value)
            except TypeError:
                continue
            sizes[f"{module.__name__}.{name}"] = size
    return sizes


def _thread(n: int) -> turnwire.Thread:
    return turnwire.load_thread(
        {
            "version": 1,
            "model": "gpt-4o",
            "system_prompt": f"Prompt {n}.",
            "memories": [{"id": f"m{n}", "content": f"memory {n}"}],
            "hosted_tools": [
                {
                    "type": "mcp",
                    "server_label": f"crm{n}",
                    "server_url": f"https://mcp{n}.example.com/sse",
                    "headers": {"Authorization": f"Bearer token-{n:04d}-abcdefgh"},
                }
            ],
            "messages": [
                {
                    "id": f"u{n}",
                    "role": "user",
                    "content": f"question {n}",
                    "created_at": "2026-01-01T00:00:00Z",
                }
            ],
        }
    )


def test_nothing_module_level_grows_with_renders_and_runs(tmp_path: Path) -> None:
    # Warm every module and lazily built constant first.
    turnwire.render(
        _thread(0), container=make_container({"tools": {"allow_thread_mcp_servers": ["*"]}})
    )
    gc.collect()
    before = _sizes()
    for n in range(1, 40):
        profile = tmp_path / f"p{n}.yaml"
        profile.write_text(
            f"request:\n  temperature: 0.{n % 10}\ntools:\n  allow_thread_mcp_servers: ['*']\n"
        )
        turnwire.render(_thread(n), config_files=[profile])
    with ScriptedServer([Reply.sse(recorded("text_simple_gpt-4o-mini.sse"))]) as server:
        for n in range(40, 45):
            turnwire.run(
                _thread(n),
                container=make_container({"tools": {"allow_thread_mcp_servers": ["*"]}}),
                base_url=server.base_url,
            )
    gc.collect()
    after = _sizes()
    grown = {
        name: (before.get(name, 0), size)
        for name, size in after.items()
        if size > before.get(name, 0)
    }
    assert grown == {}


def test_no_container_memo_cache_or_plugin_manager_is_module_level() -> None:
    kinds = (Container, ContainerCache, RenderMemo, pluggy.PluginManager)
    found = [
        f"{module.__name__}.{name}"
        for module in _modules()
        for name, value in vars(module).items()
        if isinstance(value, kinds)
    ]
    assert found == []
