"""The layer table of ``docs/architecture.md`` holds in the code.

Every module of ``src/turnwire`` belongs to one floor of the table; an import (at module level
or inside a function; ``if TYPE_CHECKING:`` blocks aside, since they never run) may name a
module on its own floor or a lower one, never a higher one, and no set of modules imports
itself round in a circle.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src"
TABLE = ROOT / "docs" / "architecture.md"


def _modules() -> dict[str, Path]:
    found = {}
    for path in (SRC / "turnwire").rglob("*.py"):
        parts = list(path.relative_to(SRC).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


MODULES = _modules()


def _floors() -> dict[str, int]:
    """Module prefix -> floor, read from the table's rows ``| N | `a`, `b` | job |``."""
    floors: dict[str, int] = {}
    for line in TABLE.read_text(encoding="utf-8").splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) >= 2 and cells[0].isdigit():
            for name in re.findall(r"`([\w.]+)`", cells[1]):
                floors[name] = int(cells[0])
    return floors


FLOORS = _floors()


def _floor(module: str) -> int | None:
    name = module
    while name:
        if name in FLOORS:
            return FLOORS[name]
        name = name.rpartition(".")[0]
    return None


def _resolve(name: str) -> str | None:
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def _type_checking_nodes(tree: ast.AST) -> set[int]:
    skipped: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skipped.update(id(inner) for statement in node.body for inner in ast.walk(statement))
    return skipped


def imports_of(module: str) -> set[str]:
    """The turnwire modules ``module`` imports when it runs (its own name left out)."""
    path = MODULES[module]
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skipped = _type_checking_nodes(tree)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: set[str | None] = set()
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            found.update(_resolve(alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                full = ".".join(base + ([node.module] if node.module else []))
            else:
                full = node.module or ""
            for alias in node.names:
                submodule = f"{full}.{alias.name}"
                found.add(submodule if submodule in MODULES else _resolve(full))
    return {name for name in found if name and name.startswith("turnwire") and name != module}


GRAPH = {module: imports_of(module) for module in MODULES}


def test_the_table_names_every_module() -> None:
    assert FLOORS, f"no layer table found in {TABLE}"
    unplaced = sorted(module for module in MODULES if _floor(module) is None)
    assert unplaced == [], f"modules on no floor of the layer table: {unplaced}"


def test_the_table_names_only_modules_that_exist() -> None:
    assert sorted(name for name in FLOORS if name not in MODULES) == []


def test_no_import_climbs_a_floor() -> None:
    upward = sorted(
        f"{module} (floor {_floor(module)}) imports {target} (floor {_floor(target)})"
        for module, targets in GRAPH.items()
        for target in targets
        if (_floor(target) or 0) > (_floor(module) or 0)
    )
    assert upward == []


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph.get(node, ())):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_no_modules_import_each_other_in_a_circle() -> None:
    assert _cycles(GRAPH) == []


@pytest.mark.parametrize(
    ("graph", "expected"),
    [
        ({"a": {"b"}, "b": {"a"}}, [["a", "b"]]),
        ({"a": {"b"}, "b": {"c"}, "c": set()}, []),
        ({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}, [["a", "b", "c"]]),
    ],
)
def test_the_cycle_finder_finds_cycles(
    graph: dict[str, set[str]], expected: list[list[str]]
) -> None:
    assert _cycles(graph) == expected


def test_the_import_reader_sees_imports_inside_functions_and_not_type_checking(
    tmp_path: Path,
) -> None:
    source = (
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from turnwire.api import run\n"
        "def f():\n    from turnwire.errors import TurnwireError\n"
    )
    tree = ast.parse(source)
    skipped = _type_checking_nodes(tree)
    names = {
        node.module
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and id(node) not in skipped
    }
    assert names == {"typing", "turnwire.errors"}


# What rendering imports, measured in a fresh process (``sys.modules``): a render sends nothing,
# reads no answer and stores nothing, so neither the HTTP stack nor the client, the store or the
# emulator loads; nor what dependency-injector would import on its own (see
# ``turnwire.rendering.container``).
RENDER_NEVER_IMPORTS = (
    "httpx",
    "httpcore",
    "anyio",
    "pydantic",
    "pydantic_core",
    "pydantic_settings",
    "starlette",
    "fastapi",
    "werkzeug",
    "turnwire.api",
    "turnwire.client",
    "turnwire.emulate",
    "turnwire.store",
)

_RENDERS = {
    "turnwire render": (
        "import os, sys\n"
        "from turnwire.cli.main import main\n"
        "out = os.dup(1)\n"
        "os.dup2(os.open(os.devnull, os.O_WRONLY), 1)\n"
        "status = main(['render', 'examples/weather.yaml'])\n"
        "sys.stdout.flush()\n"
        "os.dup2(out, 1)\n"
        "assert status == 0, status\n"
    ),
    "turnwire.render": (
        "import sys, turnwire\nturnwire.render('examples/weather.yaml', config_files=[])\n"
    ),
}


@pytest.mark.parametrize("how", sorted(_RENDERS))
def test_rendering_imports_no_http_client_store_emulator_or_pydantic(how: str) -> None:
    import json
    import os
    import subprocess
    import sys

    code = _RENDERS[how] + (
        "import json\n"
        f"never = {RENDER_NEVER_IMPORTS!r}\n"
        "print(json.dumps(sorted(m for m in sys.modules if any(\n"
        "    m == name or m.startswith(name + '.') for name in never))))\n"
    )
    env = {**os.environ, "TURNWIRE_ENVELOPE_SECRET": "layers"}
    env.pop("TURNWIRE_DI_PYDANTIC", None)
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == []
