"""One name per concept across the command line, the configuration and Python.

``output_schema`` (``--output-schema``, ``request.output_schema``, ``output_schema=``),
``render_context`` (``--render-context``, ``render_context=``) and the store's location
(``--store``, ``store.location``, ``open_store(location)``, ``$TURNWIRE_STORE``). The spellings
before keep working for one version, each with a warning that names the new one.
"""

from __future__ import annotations

import warnings

import msgspec
import pytest

import turnwire

from .conftest import make_container, thread, user


class Answer(msgspec.Struct):
    value: int


def _thread() -> turnwire.Thread:
    return thread(model="gpt-5", messages=[user()])


def test_render_takes_output_schema_and_the_old_output_type_with_a_warning() -> None:
    container = make_container()
    new = turnwire.render(_thread(), container=container, output_schema=Answer).body
    with pytest.warns(DeprecationWarning, match="output_type= is deprecated: pass output_schema="):
        old = turnwire.render(_thread(), container=container, output_type=Answer).body
    assert new == old
    assert b'"name":"Answer"' in new
    with warnings.catch_warnings(), pytest.raises(TypeError, match="not both"):
        warnings.simplefilter("ignore", DeprecationWarning)
        turnwire.render(_thread(), container=container, output_schema=Answer, output_type=Answer)


def test_a_renderer_takes_output_schema_too() -> None:
    renderer = turnwire.Renderer(container=make_container())
    new = renderer.render(_thread(), output_schema=Answer).body
    with pytest.warns(DeprecationWarning, match="output_schema="):
        assert renderer.render(_thread(), output_type=Answer).body == new


def _thread_file(tmp_path) -> str:  # type: ignore[no-untyped-def]
    import json

    path = tmp_path / "t.json"
    path.write_text(
        json.dumps(
            {"version": 1, "model": "gpt-5", "system_prompt": "Help {user}.", "messages": [user()]}
        )
    )
    return str(path)


def test_render_context_on_the_command_line_and_its_old_name(tmp_path) -> None:  # type: ignore[no-untyped-def]
    import json

    from .conftest import turnwire_process

    thread_path = _thread_file(tmp_path)
    common = ("render", thread_path, "--set", "render.system_prompt_template=true")
    new = turnwire_process(*common, "--render-context", "user=Ana")
    old = turnwire_process(*common, "--context", "user=Ana")
    assert new.returncode == old.returncode == 0, (new.stderr, old.stderr)
    assert json.loads(new.stdout)["instructions"] == json.loads(old.stdout)["instructions"]
    assert json.loads(new.stdout)["instructions"].startswith("Help Ana.")
    assert "deprecated" not in new.stderr
    assert "--context is deprecated: use --render-context" in old.stderr


def test_the_store_on_the_command_line_and_its_old_name(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from .conftest import turnwire_process

    db = str(tmp_path / "threads.db")
    new = turnwire_process("threads", "list", "--store", db)
    old = turnwire_process("threads", "list", "--db", db)
    assert new.returncode == old.returncode == 0, (new.stderr, old.stderr)
    assert "deprecated" not in new.stderr
    assert "--db is deprecated: use --store" in old.stderr


def test_store_location_in_the_configuration_and_its_old_names(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from .conftest import turnwire_process

    db = str(tmp_path / "threads.db")
    assert turnwire.load_settings(overrides={"store": {"location": db}}).store.where == db
    with pytest.warns(DeprecationWarning, match="store.path is deprecated: write store.location"):
        assert turnwire.load_settings(overrides={"store": {"path": db}}).store.where == db
    url = "postgresql://u@127.0.0.1:9/d"
    with pytest.warns(DeprecationWarning, match="store.url is deprecated"):
        assert turnwire.load_settings(overrides={"store": {"url": url}}).store.where == url
    with pytest.raises(turnwire.ConfigError, match="set `location` alone"):
        turnwire.load_settings(overrides={"store": {"location": db, "url": url}})
    profile = tmp_path / "p.yaml"
    profile.write_text(f"store:\n  path: {db}\n")
    old = turnwire_process("threads", "list", "--config", str(profile))
    assert old.returncode == 0, old.stderr
    assert "turnwire: warning: store.path is deprecated: write store.location" in old.stderr
    assert (tmp_path / "threads.db").exists()  # the old key still names the store
