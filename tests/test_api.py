"""``turnwire.api``, the thin functions over the client: it re-exports the render core, and nothing
below it imports it."""

from __future__ import annotations

import turnwire
import turnwire.wire


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
