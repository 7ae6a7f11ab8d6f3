"""Meta-tests: the contract file is complete, documented, and mirrored by names elsewhere."""

from __future__ import annotations

import ast
import inspect
import re
from pathlib import Path

import pluggy
import pytest

import turnwire
from turnwire import hookspecs
from turnwire.config.options import RenderOptions
from turnwire.hookspecs import CLIENT_HOOKS, STAGES
from turnwire.rendering.container import Container
from turnwire.stages import DEFAULT_PLUGINS

TESTS = Path(__file__).resolve().parent

# Per-call data arguments; every other argument is injected by name from a provider.
DATA_ARGUMENTS = {
    "content",
    "attrs",
    "standing_instructions",
    "memories",
    "retrievables",
    "handle",
    "system_prompt",
    "media",
    "message",
    "tool_call",
    "tool",
    "hosted_item",
    "context_item",
    "hosted_tools",
    "thought",
    "thoughts",
    "instructions",
    "tools",
    "input",
    "through_item",
    "description",
}
PER_RENDER = {"warn", "scratch", "stages"}


def _specs():
    return [(name, getattr(hookspecs, name)) for name in STAGES]


def test_stages_lists_every_hookspec_in_file_order():
    declared = [
        name
        for name, obj in vars(hookspecs).items()
        if callable(obj) and hasattr(obj, "turnwire_spec")
    ]
    assert declared == list(STAGES) + list(CLIENT_HOOKS)


ALL_HOOKS = [(name, getattr(hookspecs, name)) for name in (*STAGES, *CLIENT_HOOKS)]


@pytest.mark.parametrize(("name", "spec"), ALL_HOOKS)
def test_every_hookspec_is_documented(name, spec):
    doc = inspect.getdoc(spec)
    assert doc and doc.splitlines()[0].endswith(".")
    for parameter in inspect.signature(spec).parameters:
        assert f":param {parameter}:" in doc, f"{name} does not document {parameter}"
    assert ":returns:" in doc
    assert "Runs once per" in doc
    if spec.turnwire_spec["firstresult"]:
        assert "Stops at the first non-None result." in doc
    else:
        assert "Calls every implementation (collect-all)." in doc
        assert name.startswith("on_")


@pytest.mark.parametrize(("name", "spec"), _specs())
def test_option_arguments_are_named_like_providers(name, spec):
    providers = set(Container.providers)
    options = set(RenderOptions.__struct_fields__)
    for parameter in inspect.signature(spec).parameters:
        if parameter in DATA_ARGUMENTS or parameter in PER_RENDER:
            continue
        assert parameter in providers and parameter in options, (name, parameter)


def test_every_stage_has_a_provider_of_the_same_name():
    assert set(STAGES) <= set(Container.providers)


def _hook_tests() -> dict[str, list[tuple[Path, ast.FunctionDef | ast.AsyncFunctionDef]]]:
    """Every test function named ``test_hook_*`` in a test module under tests/, by name."""
    found: dict[str, list[tuple[Path, ast.FunctionDef | ast.AsyncFunctionDef]]] = {}
    for path in sorted(TESTS.rglob("test_*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name.startswith(
                "test_hook_"
            ):
                found.setdefault(node.name, []).append((path, node))
    return found


HOOK_TESTS = _hook_tests()


@pytest.mark.parametrize("name", [*STAGES, *CLIENT_HOOKS])
def test_every_hook_has_a_test_hook_function(name):
    """datasette's ``test_plugin_hooks_have_tests``: for every hookspec a ``test_hook_<name>``
    test exists under tests/, once, that names the hook (a plugin implementing it, or its
    container provider) and asserts on what it did."""
    found = HOOK_TESTS.get(f"test_hook_{name}", [])
    assert found, f"no test_hook_{name} under tests/"
    assert len(found) == 1, [str(path.relative_to(TESTS)) for path, _ in found]
    path, node = found[0]
    text = path.read_text()
    # the test's body, and the module-level plugins and helpers it names
    module = {
        n.name: n
        for n in ast.parse(text).body
        if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
    }
    used = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
    body = (ast.get_source_segment(text, node) or "").split(":", 1)[1]
    sources = [body, *(ast.get_source_segment(text, module[n]) or "" for n in used & set(module))]
    assert any(re.search(rf"\b{name}\b", source) for source in sources), (
        f"test_hook_{name} never names {name}"
    )
    assert any(isinstance(n, ast.Assert) for n in ast.walk(node)), (
        f"test_hook_{name} asserts nothing"
    )


def test_every_test_hook_function_names_a_hook():
    assert sorted(HOOK_TESTS) == sorted(f"test_hook_{name}" for name in (*STAGES, *CLIENT_HOOKS))


def test_every_built_in_is_trylast_and_implements_a_known_hook():
    manager = pluggy.PluginManager("turnwire")
    manager.add_hookspecs(hookspecs)
    implemented = set()
    for plugin in DEFAULT_PLUGINS:
        manager.register(plugin)
        for hook in manager.get_hookcallers(plugin) or []:
            implemented.add(hook.name)
            for impl in hook.get_hookimpls():
                if impl.plugin is plugin:
                    assert impl.trylast, f"{plugin.__name__}.{hook.name} is not trylast"
    manager.check_pending()
    assert implemented == {*STAGES, "filter_tool_call_id"}


def test_hookspecs_imports_only_pluggy_at_run_time():
    source = Path(hookspecs.__file__).read_text()
    runtime = source.split("if TYPE_CHECKING:")[0]
    imports = [line for line in runtime.splitlines() if line.startswith(("import ", "from "))]
    assert imports == [
        "from __future__ import annotations",
        "from typing import TYPE_CHECKING, Any",
        "import pluggy",
    ]


def test_hookimpl_is_exported_at_the_top_level():
    assert turnwire.hookimpl is hookspecs.hookimpl
