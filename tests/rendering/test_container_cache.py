"""The warm container cache: ``render(config_files=...)`` reuses a build while its inputs hold."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import turnwire
from turnwire.rendering.container_cache import ContainerCache

THREAD = {
    "version": 1,
    "model": "gpt-5",
    "messages": [
        {"id": "u1", "role": "user", "content": "hi", "created_at": "2026-01-01T10:00:00Z"}
    ],
}


@pytest.fixture
def profile(tmp_path: Path) -> Path:
    path = tmp_path / "profile.yaml"
    path.write_text("plugins:\n  load_entrypoints: false\nrender:\n  self_identity: bot\n")
    return path


def test_an_unchanged_profile_gives_the_same_container(profile):
    cache = ContainerCache()
    first = cache.get([profile])
    assert cache.get([profile]) is first
    assert cache.get([str(profile)]) is first
    assert first.settings().render.self_identity == "bot"


def test_a_changed_file_is_a_new_build(profile):
    cache = ContainerCache()
    first = cache.get([profile])
    profile.write_text("plugins:\n  load_entrypoints: false\nrender:\n  self_identity: eve\n")
    second = cache.get([profile])
    assert second is not first
    assert second.settings().render.self_identity == "eve"


def test_a_changed_variable_read_by_a_placeholder_is_a_new_build(profile, monkeypatch):
    profile.write_text(
        "plugins:\n  load_entrypoints: false\nrender:\n  self_identity: ${TW_TEST_WHO:nobody}\n"
    )
    monkeypatch.delenv("TW_TEST_WHO", raising=False)
    cache = ContainerCache()
    first = cache.get([profile])
    assert first.settings().render.self_identity == "nobody"
    monkeypatch.setenv("TW_TEST_UNREAD", "x")  # not read by the build: no rebuild
    assert cache.get([profile]) is first
    monkeypatch.setenv("TW_TEST_WHO", "carol")
    second = cache.get([profile])
    assert second is not first
    assert second.settings().render.self_identity == "carol"
    assert cache.get([profile]) is second


def test_a_changed_envelope_secret_is_a_new_build(profile, monkeypatch):
    cache = ContainerCache()
    first = cache.get([profile])
    monkeypatch.setenv("TURNWIRE_ENVELOPE_SECRET", "another secret")
    assert cache.get([profile]) is not first


def test_a_newly_installed_plugin_is_a_new_build(profile, tmp_path, monkeypatch):
    """A distribution appearing on sys.path (its .dist-info folder) rebuilds with its plugin."""
    profile.write_text("plugins:\n  load_entrypoints: true\n")
    site = tmp_path / "site"
    site.mkdir()
    monkeypatch.syspath_prepend(str(site))
    cache = ContainerCache()
    first = cache.get([profile])
    assert cache.get([profile]) is first
    assert "shouty" not in first.plugin_manager().list_name_plugin().__repr__()

    (site / "shouty_plugin.py").write_text(
        "from turnwire.hookspecs import hookimpl\n"
        "@hookimpl(tryfirst=True)\n"
        "def render_thought(thought):\n"
        "    return 'SHOUT'\n"
    )
    info = site / "shouty-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: shouty\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[turnwire.plugins]\nshouty = shouty_plugin\n")
    os.utime(site, ns=(1, 1))  # a folder mtime other than the one seen, whatever the clock
    second = cache.get([profile])
    assert second is not first
    assert second.plugin_manager().get_plugin("shouty") is not None


def test_render_with_a_caller_owned_cache_reuses_the_build_and_its_memo(profile):
    cache = ContainerCache()
    first = turnwire.render(THREAD, config_files=[profile], cache=cache)
    assert len(cache) == 1
    container = cache.get([profile])
    assert container.render_memo().body is not None  # the first render left its body
    again = turnwire.render(THREAD, config_files=[profile], cache=cache)
    assert again.body == first.body
    assert cache.get([profile]) is container


def test_render_without_a_cache_keeps_nothing_between_calls(profile, monkeypatch):
    built = []
    real = turnwire.rendering.renderer.build_container

    def counting(*args, **kwargs):
        built.append(real(*args, **kwargs))
        return built[-1]

    monkeypatch.setattr(turnwire.rendering.renderer, "build_container", counting)
    first = turnwire.render(THREAD, config_files=[profile])
    again = turnwire.render(THREAD, config_files=[profile])
    assert again.body == first.body
    assert len(built) == 2 and built[0] is not built[1]


def test_the_cache_is_bounded_and_clearable(tmp_path):
    cache = ContainerCache(maxsize=2)
    files = []
    for n in range(3):
        path = tmp_path / f"p{n}.yaml"
        path.write_text(f"plugins:\n  load_entrypoints: false\nrequest:\n  model: m{n}\n")
        files.append(path)
        cache.get([path])
    assert len(cache) == 2
    cache.clear()
    assert len(cache) == 0


def test_an_unreadable_file_reports_as_before(tmp_path):
    with pytest.raises(turnwire.ConfigError):
        ContainerCache().get([tmp_path / "missing.yaml"])


def test_a_renderer_renders_like_render(profile):
    renderer = turnwire.api.Renderer([profile])
    expected = turnwire.render(THREAD, config_files=[profile])
    assert renderer.render(THREAD).body == expected.body
    assert renderer.render(THREAD).body == expected.body
    renderer.clear()
    assert renderer.container.render_memo().body is None
