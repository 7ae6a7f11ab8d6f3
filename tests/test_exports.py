"""The public surface: a sorted __all__ that names exactly what is exported."""

from __future__ import annotations

import turnwire
import turnwire.wire


def _isort_key(name: str) -> tuple[int, str]:
    if name.isupper():
        return (0, name)
    return (1, name) if name[0].isupper() else (2, name)


def test_all_is_sorted_and_complete():
    for module in (turnwire, turnwire.wire):
        assert module.__all__ == sorted(module.__all__, key=_isort_key)
        for name in module.__all__:
            assert hasattr(module, name), name


PUBLIC = [
    "Approval",
    "Artifact",
    "Client",
    "ClientError",
    "ConfigError",
    "Container",
    "ContainerCache",
    "HttpError",
    "Identity",
    "InputError",
    "Media",
    "Memory",
    "Message",
    "OutputSchema",
    "OutputValidationError",
    "PostgresStore",
    "PreflightError",
    "ReasoningPayload",
    "RenderError",
    "RenderedRequest",
    "Renderer",
    "Retrievable",
    "RunResult",
    "SQLiteStore",
    "Settings",
    "StoreConflictError",
    "StoreError",
    "StreamError",
    "Thought",
    "Thread",
    "ThreadFileError",
    "ThreadStore",
    "Tool",
    "ToolCall",
    "ToolResult",
    "TurnwireError",
    "UnknownThreadError",
    "Usage",
    "build_container",
    "compact",
    "compact_thread",
    "dump_thread",
    "hookimpl",
    "load_settings",
    "load_thread",
    "open_store",
    "render",
    "run",
    "run_thread",
    "save_thread",
]


def test_the_public_surface_is_pinned():
    """Adding or removing a top-level name is a decision: this list changes with it."""
    assert turnwire.__all__ == PUBLIC


def test_names_that_moved_still_import_with_a_warning_naming_their_home():
    import importlib
    import warnings

    assert set(turnwire._MOVED).isdisjoint(turnwire.__all__)
    for name, home in turnwire._MOVED.items():
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            value = getattr(turnwire, name)
        assert value is getattr(importlib.import_module(home), name)
        assert [str(w.message) for w in caught] == [
            f"turnwire.{name} is deprecated: import it from {home}"
        ]
        assert all(w.category is DeprecationWarning for w in caught)


def test_no_container_or_plugin_manager_at_module_level():
    from turnwire.rendering import container

    assert not any(isinstance(v, container.Container) for v in vars(container).values())
    import pluggy

    for module_name in (
        "turnwire.rendering.plugins",
        "turnwire.rendering.container",
        "turnwire.api",
    ):
        module = __import__(module_name, fromlist=["x"])
        assert not any(isinstance(v, pluggy.PluginManager) for v in vars(module).values())


def test_only_the_container_imports_dependency_injector():
    from pathlib import Path

    src = Path(turnwire.__file__).parent
    importers = sorted(
        str(p.relative_to(src)) for p in src.rglob("*.py") if "dependency_injector" in p.read_text()
    )
    assert importers == ["rendering/container.py"]


def test_every_export_loads_lazily_from_the_module_named():
    import ast
    import importlib
    from pathlib import Path

    assert set(turnwire._EXPORTS) == set(turnwire.__all__)
    for name, module in turnwire._EXPORTS.items():
        assert getattr(turnwire, name) is getattr(importlib.import_module(module), name)
    # What type checkers see (the TYPE_CHECKING imports) is exactly what loads at run time.
    tree = ast.parse(Path(turnwire.__file__).read_text())
    guarded = next(node for node in tree.body if isinstance(node, ast.If))
    seen = {
        alias.name: node.module
        for node in guarded.body
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
    }
    assert seen == turnwire._EXPORTS


def test_every_error_class_lives_in_errors_and_the_common_ones_are_top_level():
    import inspect

    import turnwire.errors

    classes = {
        name
        for name, value in vars(turnwire.errors).items()
        if inspect.isclass(value)
        and issubclass(value, Exception)
        and value.__module__ == "turnwire.errors"
    }
    assert classes <= set(turnwire.errors.__all__)
    for module in _source_modules():
        for name, value in vars(module).items():
            ours = inspect.isclass(value) and value.__module__ == module.__name__
            if ours and issubclass(value, Exception) and not name.startswith("_"):
                assert module is turnwire.errors, f"{module.__name__}.{name}"
    top = {name for name in turnwire.__all__ if name.endswith("Error")}
    assert top <= classes
    assert {"TurnwireError", "InputError", "ClientError"} <= top


def _source_modules():
    import importlib
    from pathlib import Path

    src = Path(turnwire.__file__).parent
    for path in sorted(src.rglob("*.py")):
        parts = list(path.relative_to(src.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        if parts[-1] == "__main__":
            continue
        yield importlib.import_module(".".join(parts))


def test_unknown_attribute_is_an_attribute_error():
    import pytest

    with pytest.raises(AttributeError, match="no attribute 'Clinet'"):
        _ = turnwire.Clinet  # type: ignore[attr-defined]


def test_the_version_constant_is_the_installed_distributions():
    from importlib import metadata

    assert turnwire.__version__ == metadata.version("turnwire")


def _imports(tree: object) -> list[tuple[str, bool]]:
    """Each ``turnwire`` module an AST imports, and whether the import sits in a function."""
    import ast

    found: list[tuple[str, bool]] = []

    def walk(node: ast.AST, nested: bool) -> None:
        for child in ast.iter_child_nodes(node):
            inner = nested or isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef)
            if isinstance(child, ast.Import):
                found.extend((alias.name, inner) for alias in child.names)
            elif isinstance(child, ast.ImportFrom) and child.module:
                found.append((child.module, inner))
                if child.module == "turnwire":
                    found.extend((f"turnwire.{alias.name}", inner) for alias in child.names)
            walk(child, inner)

    assert isinstance(tree, ast.AST)
    walk(tree, False)
    return found


def test_nothing_below_the_api_facade_imports_it():
    """``turnwire.api`` sits above the render core and the client: no module below imports
    it, and the client imports the render core at module level only."""
    import ast
    from pathlib import Path

    src = Path(turnwire.__file__).parent
    above = {"__init__.py", "api.py", "cli/main.py", "demo/__init__.py"}
    facade, lazy = [], []
    for path in sorted(src.rglob("*.py")):
        name = str(path.relative_to(src))
        if name in above:
            continue
        for module, nested in _imports(ast.parse(path.read_text())):
            if module == "turnwire.api":
                facade.append(name)
            if nested and name.startswith("client/") and module == "turnwire.rendering.renderer":
                lazy.append(name)
    assert facade == []
    assert lazy == []


def test_the_api_facade_re_exports_the_render_core():
    import turnwire.api
    import turnwire.rendering.renderer

    for name in turnwire.rendering.renderer.__all__:
        assert getattr(turnwire.api, name) is getattr(turnwire.rendering.renderer, name), name
