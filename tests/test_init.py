"""The public surface (``turnwire/__init__.py``): a sorted ``__all__`` that names exactly what is
exported, every export loaded lazily from the module named, names that moved importing with a
warning, no container or plugin manager at module level, and a downstream script that type-checks
under ``mypy --strict``."""

from __future__ import annotations

from pathlib import Path

import turnwire
import turnwire.wire

from .conftest import mypy_strict


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
    "ToolFunction",
    "ToolResult",
    "TurnwireError",
    "UnknownThreadError",
    "Usage",
    "build_container",
    "check_thread",
    "client_tool",
    "compact",
    "compact_thread",
    "custom_tool",
    "dump_thread",
    "hookimpl",
    "load_settings",
    "load_thread",
    "open_store",
    "render",
    "run",
    "run_thread",
    "save_thread",
    "tool",
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


def test_unknown_attribute_is_an_attribute_error():
    import pytest

    with pytest.raises(AttributeError, match="no attribute 'Clinet'"):
        _ = turnwire.Clinet  # type: ignore[attr-defined]


def test_the_version_constant_is_the_installed_distributions():
    from importlib import metadata

    assert turnwire.__version__ == metadata.version("turnwire")


DOWNSTREAM = Path(__file__).parent / "typing" / "downstream.py"


def test_downstream_script_type_checks_and_typos_are_type_errors(tmp_path: Path) -> None:
    status, output = mypy_strict(DOWNSTREAM, tmp_path / "cache")
    assert status == 0, output
    typo = tmp_path / "typo.py"
    text = DOWNSTREAM.read_text()
    assert "result.response.finish_reason" in text
    typo.write_text(
        text.replace("result.response.finish_reason", "result.response.finish_raeson").replace(
            "result.records.tool_calls", "result.record.tool_calls"
        )
    )
    status, output = mypy_strict(typo, tmp_path / "cache")
    assert status == 1
    assert '"ResponseMeta" has no attribute "finish_raeson"' in output
    assert '"RunResult[Any]" has no attribute "record"' in output


def test_a_run_asked_for_a_struct_is_typed_by_it_and_a_store_is_a_thread_store(
    tmp_path: Path,
) -> None:
    """``run(..., output_schema=Invoice)`` is a ``RunResult[Invoice]`` (its ``parsed`` an
    ``Invoice | None``), a bare ``RunResult`` is ``RunResult[Any]``, and ``open_store`` gives a
    ``ThreadStore``: misuse of either is a type error, not an ``Any`` that lets it through."""
    typo = tmp_path / "typo.py"
    text = DOWNSTREAM.read_text()
    for found in ("parsed.number} {parsed.total", "len(store.list_threads())"):
        assert found in text
    typo.write_text(
        text.replace("parsed.number} {parsed.total", "parsed.numbr} {parsed.total")
        .replace("len(store.list_threads())", "len(store.list_thread())")
        .replace("return thread.with_user_message(", "return thread.with_user_mesage(")
        + "\n\ndef not_a_struct(path: str) -> object:\n"
        + "    return turnwire.run(path, output_schema=int).parsed\n"
    )
    status, output = mypy_strict(typo, tmp_path / "cache")
    assert status == 1
    assert '"Invoice" has no attribute "numbr"' in output
    assert '"ThreadStore" has no attribute "list_thread"' in output
    assert '"Thread" has no attribute "with_user_mesage"' in output
    assert 'Value of type variable "Shape" of "run" cannot be "int"' in output


def test_a_tool_keeps_its_functions_signature_for_type_checkers(tmp_path: Path) -> None:
    """``@turnwire.tool`` gives a ``ToolFunction`` called as the function is: a wrong argument
    is a type error, and ``tools=`` takes it with plain functions."""
    typo = tmp_path / "typo.py"
    text = DOWNSTREAM.read_text()
    assert 'get_weather("Paris", days=2)' in text
    typo.write_text(text.replace('get_weather("Paris", days=2)', 'get_weather("Paris", dayz=2)'))
    status, output = mypy_strict(typo, tmp_path / "cache")
    assert status == 1
    assert 'Unexpected keyword argument "dayz"' in output
