"""How turnwire imports dependency-injector: without the packages it would import on its own.

dependency-injector imports pydantic (or pydantic-settings), FastAPI, fast-depends, Starlette
and Werkzeug when they are installed; ``turnwire.rendering.container`` holds them off for the
duration of that import (``TURNWIRE_DI_PYDANTIC=1`` opts out). Each case runs in a fresh
process, since what is imported is the point.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import threading
from pathlib import Path
from typing import Any

import pytest

from turnwire.rendering import container

from .conftest import REPO, SECRET

HELD_OFF = ("pydantic", "pydantic_settings", "fastapi", "fast_depends", "starlette", "werkzeug")


def _python(code: str, *, env: dict[str, str] | None = None, path: Path | None = None) -> str:
    """Run ``code`` in a fresh interpreter; its stdout (the test fails on a non-zero exit)."""
    environment = {**os.environ, "TURNWIRE_ENVELOPE_SECRET": SECRET}
    environment.pop("TURNWIRE_DI_PYDANTIC", None)
    environment.update(env or {})
    if path is not None:
        environment["PYTHONPATH"] = os.pathsep.join(
            filter(None, [str(path), environment.get("PYTHONPATH")])
        )
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        env=environment,
        cwd=REPO,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


RENDER = """
    import json, sys
    before = list(sys.meta_path)
    {first}
    import turnwire
    container = turnwire.build_container()
    container.plugin_manager()
    body = turnwire.render("examples/weather.yaml", container=container).body
    print(json.dumps({{
        "imported": sorted(m for m in sys.modules if m.partition(".")[0] in {held!r}),
        "none": sorted(name for name, module in sys.modules.items() if module is None),
        "meta_path": sys.meta_path == before,
        "body": body.decode(),
    }}))
"""


def _render(first: str = "", env: dict[str, str] | None = None) -> dict[str, Any]:
    return json.loads(_python(RENDER.format(first=first, held=HELD_OFF), env=env))  # type: ignore[no-any-return]


def test_rendering_imports_none_of_them_and_leaves_the_import_system_as_it_was():
    seen = _render()
    assert seen["imported"] == []
    assert seen["none"] == []  # nothing marked unimportable in sys.modules
    assert seen["meta_path"] is True


def test_they_import_and_work_afterwards():
    out = _python(
        """
        import turnwire
        turnwire.render("examples/weather.yaml")
        import pydantic, starlette.requests
        class Point(pydantic.BaseModel):
            x: int
        print(Point(x="3").x, starlette.requests.Request.__name__)
        """
    )
    assert out.split() == ["3", "Request"]


def test_pydantic_imported_first_stays_and_the_render_is_the_same():
    plain = _render()
    first = _render("import pydantic")
    assert "pydantic" in first["imported"]
    assert first["body"] == plain["body"]
    assert first["none"] == [] and first["meta_path"] is True


def test_the_opt_out_imports_dependency_injector_as_it_imports_itself():
    opted_out = _render(env={"TURNWIRE_DI_PYDANTIC": "1"})
    plain = _python(
        f"import json, sys, dependency_injector.containers; print(json.dumps(sorted("
        f"m for m in sys.modules if m.partition('.')[0] in {HELD_OFF!r})))"
    )
    assert opted_out["imported"] == json.loads(plain)
    assert "pydantic" in opted_out["imported"]  # installed here, with the test dependencies
    assert opted_out["body"] == _render()["body"]


# --------------------------------------------------------------- what dependency-injector reads
# Stand-ins for the optional packages, so that every check runs whether or not they are
# installed: the shapes dependency-injector reads from each (Starlette is the real one).
FAKES = {
    "pydantic_settings/__init__.py": """
        class BaseSettings:
            def model_dump(self, mode="python", **kwargs):
                return {"answer": 42}
        """,
    "fastapi/__init__.py": "",
    "fastapi/params.py": """
        class Depends:
            def __init__(self, dependency):
                self.dependency = dependency
        """,
    "fast_depends/__init__.py": "",
    "fast_depends/dependencies/__init__.py": "",
    "fast_depends/dependencies/model.py": """
        class Dependant:
            def __init__(self, dependency):
                self.dependency = dependency
        """,
    "werkzeug/__init__.py": "",
    "werkzeug/local.py": """
        class LocalProxy:
            pass
        """,
}

PROBE = """
    import inspect, json
    {first}
    import turnwire.rendering.container
    from dependency_injector import errors, providers, wiring
    import fast_depends.dependencies.model, fastapi.params, starlette.requests, werkzeug.local
    import pydantic_settings

    class Request(starlette.requests.Request):
        pass

    def marker(default):
        parameter = inspect.Parameter("x", inspect.Parameter.KEYWORD_ONLY, default=default)
        return wiring._extract_marker(parameter)

    provide = wiring.Provide["service"]
    config = providers.Configuration()
    try:
        config.from_pydantic(pydantic_settings.BaseSettings())
        from_pydantic = config()
    except errors.Error as err:
        from_pydantic = str(err)
    print(json.dumps({{
        "fastapi marker": marker(fastapi.params.Depends(provide)) is provide,
        "fast-depends marker": marker(fast_depends.dependencies.model.Dependant(provide))
        is provide,
        "plain marker": marker(provide) is provide,
        "no marker": marker(object()) is None,
        "starlette request excluded": wiring.is_excluded_from_inspect(Request),
        "werkzeug proxy excluded": wiring.is_excluded_from_inspect(werkzeug.local.LocalProxy()),
        "class not excluded": not wiring.is_excluded_from_inspect(dict),
        "from_pydantic": from_pydantic,
    }}))
"""

FIRST = (
    "import fast_depends.dependencies.model, fastapi.params, starlette.requests, "
    "werkzeug.local, pydantic_settings"
)


@pytest.fixture(scope="module")
def fakes(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("optional")
    for name, text in FAKES.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(textwrap.dedent(text))
    return folder


def _probe(fakes: Path, first: str = "", **env: str) -> dict[str, Any]:
    return json.loads(_python(PROBE.format(first=first), env=env, path=fakes))  # type: ignore[no-any-return]


def test_wiring_reads_what_it_held_off_on_use_as_it_reads_it_at_import(fakes: Path):
    held_off = _probe(fakes)
    opted_out = _probe(fakes, TURNWIRE_DI_PYDANTIC="1")
    imported_first = _probe(fakes, FIRST)
    wiring_answers = {key: value for key, value in held_off.items() if key != "from_pydantic"}
    assert set(wiring_answers.values()) == {True}
    for other in (opted_out, imported_first):
        assert {key: value for key, value in other.items() if key != "from_pydantic"} == (
            wiring_answers
        )


def test_from_pydantic_needs_pydantic_before_turnwire_or_the_opt_out(fakes: Path):
    # dependency-injector decides at its import whether pydantic-settings is there: held off,
    # its Configuration.from_pydantic says it is not installed (documented in the container).
    assert _probe(fakes)["from_pydantic"] == (
        "Unable to load pydantic configuration - pydantic_settings is not installed. "
        "Install pydantic or install Dependency Injector with pydantic extras: "
        '"pip install dependency-injector[pydantic2]"'
    )
    assert _probe(fakes, TURNWIRE_DI_PYDANTIC="1")["from_pydantic"] == {"answer": 42}
    assert _probe(fakes, "import pydantic_settings")["from_pydantic"] == {"answer": 42}
    assert _probe(fakes, TURNWIRE_DI_PYDANTIC="0")["from_pydantic"] != {"answer": 42}


# --------------------------------------------------------------- the hold itself, in this process


def test_the_hold_refuses_only_its_packages_and_only_to_its_thread():
    hold = container._HoldOff(frozenset({"somepackage"}))
    with pytest.raises(ModuleNotFoundError, match="TURNWIRE_DI_PYDANTIC=1"):
        hold.find_spec("somepackage.sub", None)
    assert hold.find_spec("somepackage_other", None) is None
    assert hold.refused == {"somepackage.sub"}
    elsewhere: list[object] = []
    thread = threading.Thread(target=lambda: elsewhere.append(hold.find_spec("somepackage", None)))
    thread.start()
    thread.join()
    assert elsewhere == [None]


def test_the_hold_is_undone_even_when_the_import_fails():
    before = list(sys.meta_path)
    with pytest.raises(ModuleNotFoundError), container._holding_off(frozenset({"heldpkg"})):
        import heldpkg  # type: ignore[import-not-found]  # noqa: F401
    assert sys.meta_path == before


@pytest.mark.parametrize(
    ("environ", "imported", "expected"),
    [
        ({}, False, container._WIRING | container._PYDANTIC),
        ({"TURNWIRE_DI_PYDANTIC": "0"}, False, container._WIRING | container._PYDANTIC),
        ({"TURNWIRE_DI_PYDANTIC": ""}, False, container._WIRING | container._PYDANTIC),
        ({}, True, container._WIRING),
        ({"TURNWIRE_DI_PYDANTIC": "1"}, False, frozenset()),
    ],
)
def test_what_is_held_off(
    monkeypatch: pytest.MonkeyPatch, environ: dict[str, str], imported: bool, expected: object
):
    if imported:
        monkeypatch.setitem(sys.modules, "pydantic_settings", sys.modules[__name__])
    else:
        for name in container._PYDANTIC:
            monkeypatch.delitem(sys.modules, name, raising=False)
    assert container._held_off(environ) == expected


@pytest.mark.parametrize(
    ("version", "verified"),
    [
        ("4.49.1", True),
        ("4.49", True),
        ("4.60.0", True),
        ("4.48.2", False),  # before the release the registries were checked against
        ("5.0.0", False),  # another major release: imported as it imports itself
        ("3.99.0", False),
        ("4.x", False),
        ("", False),
    ],
)
def test_only_a_verified_release_is_held_off(version: str, verified: bool):
    assert container._verified(version) is verified
    held = container._held_off({}, version)
    assert (held != frozenset()) is verified


def test_the_installed_release_is_one_the_hold_knows():
    import dependency_injector

    assert container._verified(dependency_injector.__version__)
    assert container._held_off({}) == container._held_off({}, dependency_injector.__version__)


def test_a_wiring_module_without_its_registry_is_a_clear_import_error():
    import types

    wiring = types.ModuleType("wiring")
    wiring.INSPECT_EXCLUSION_FILTERS = []  # type: ignore[attr-defined]
    container._read_on_use(wiring, {"starlette.requests"})  # the list there: extended
    assert len(wiring.INSPECT_EXCLUSION_FILTERS) == 1  # type: ignore[attr-defined]
    with pytest.raises(ImportError, match=r"MARKER_EXTRACTORS.*TURNWIRE_DI_PYDANTIC=1"):
        container._read_on_use(wiring, {"fastapi"})
