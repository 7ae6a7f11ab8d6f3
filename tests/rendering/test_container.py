"""The container: providers mirror build_input's signature, the media-policy Selector, overrides."""

from __future__ import annotations

import inspect
import json

import pytest
from dependency_injector import providers

import turnwire
import turnwire.wire
from turnwire.config.options import MediaPolicy, RenderOptions
from turnwire.hookspecs import STAGES
from turnwire.rendering.container import Container

from ..conftest import at, make_container, render_body, thread, user

AUDIO = {
    "id": "s1",
    "kind": "audio",
    "mime_type": "audio/ogg",
    "filename": "n.ogg",
    "data_base64": "T2dnUw==",
    "stash": [
        {"key": "text:transcript", "value": "hello there", "trust_tier": "third-party-private"}
    ],
}


def test_providers_mirror_the_signature_one_for_one():
    options = set(RenderOptions.__struct_fields__)
    assert options <= set(Container.providers)
    assert set(STAGES) <= set(Container.providers)
    parameters = set(inspect.signature(turnwire.rendering.pipeline.build_input).parameters)
    # per call: the thread, and the run's unstamped reasoning; injected: the other three
    assert parameters == {"thread", "pending", "plan", "options", "render_memo"}
    assert {"plan", "options", "render_memo"} <= {"plan", "options", *Container.providers}
    assert "render_memo" in Container.providers
    assert "thread" not in Container.providers and "pending" not in Container.providers


@pytest.mark.parametrize(
    ("configured", "expected"),
    [
        ("throw", MediaPolicy(default="throw")),
        ("synthetic-description", MediaPolicy(default="synthetic-description")),
        (
            {"audio": "fallback-stash", "video": "synthetic-description"},
            MediaPolicy(
                default="throw",
                per_kind={"audio": "fallback-stash", "video": "synthetic-description"},
            ),
        ),
    ],
)
def test_the_media_policy_selector_follows_configuration(configured, expected):
    container = make_container({"render": {"unsupported_media_policy": configured}})
    assert container.unsupported_media_policy() == expected


def test_per_modality_policy_renders_audio_and_video_differently():
    video = {**AUDIO, "id": "v1", "kind": "video", "mime_type": "video/mp4", "filename": "c.mp4"}
    t = thread(messages=[user("u1", "see", 0, attachments=[AUDIO, video])])
    parts = render_body(
        t,
        {
            "render": {
                "unsupported_media_policy": {
                    "audio": "fallback-stash",
                    "video": "synthetic-description",
                }
            }
        },
    )["input"][0]["content"]
    assert "\nhello there\n" in parts[1]["text"]
    assert "[media: c.mp4, video/mp4, 4 B]" in parts[2]["text"]


def test_any_provider_can_be_overridden_in_a_with_block_and_is_restored():
    container = make_container()
    t = thread(messages=[user("u1", "see", 0, attachments=[AUDIO])])
    with pytest.raises(turnwire.errors.UnsupportedMediaError):
        turnwire.render(t, container=container, model="m")
    with container.unsupported_media_policy.override(
        providers.Object(MediaPolicy(default="synthetic-description"))
    ):
        assert "[media: n.ogg" in json.dumps(
            turnwire.render(t, container=container, model="m").json
        )
    with pytest.raises(turnwire.errors.UnsupportedMediaError):
        turnwire.render(t, container=container, model="m")


def test_option_providers_override_too():
    container = make_container()
    t = thread(system_prompt="SYS", messages=[user()])
    with container.system_prompt_channel.override("system-item"):
        body = turnwire.render(t, container=container, model="m").json
    assert body["input"][0]["role"] == "system" and "instructions" not in body
    with container.override_providers(self_identity="someone-else"):
        assert container.render_options(model="m").self_identity == "someone-else"


def test_containers_are_independent():
    first, second = make_container(), make_container()
    with first.bucket_order.override(("timeline",)):
        assert second.bucket_order() == (
            "standing_instructions",
            "memories",
            "retrievables",
            "timeline",
        )


def test_profile_files_build_the_container(tmp_path):
    profile = tmp_path / "p.yaml"
    profile.write_text("render: {self_identity: agent-7}\nplugins: {load_entrypoints: false}\n")
    container = turnwire.build_container([profile])
    assert container.self_identity() == "agent-7"
    assert container.plugin_manager() is container.plugin_manager()


# ------------------------------------------------------------------ two deployment profiles


def _paths(value, prefix="$"):
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _paths(item, f"{prefix}.{key}")
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _paths(item, f"{prefix}[{index}]")
    else:
        yield prefix, value


def _differences(a, b):
    left, right = dict(_paths(a)), dict(_paths(b))
    return {path for path in left.keys() | right.keys() if left.get(path) != right.get(path)}


def test_two_profiles_differ_exactly_where_the_profiles_differ():
    t = thread(
        system_prompt="SYS",
        memories=[{"id": "m1", "content": "tea"}],
        messages=[
            user("u1", "listen", 0, attachments=[AUDIO]),
            {"id": "msg_1", "role": "assistant", "content": "ok", "created_at": at(1)},
        ],
    )
    base = {"render": {"unsupported_media_policy": "synthetic-description"}}
    media = render_body(t, {"render": {"unsupported_media_policy": "fallback-stash"}})
    plain = render_body(t, base)
    assert _differences(plain, media) == {"$.input[0].content[1].text"}

    channel = render_body(
        t, {"render": {**base["render"], "system_prompt_channel": "developer-item"}}
    )
    assert channel["input"][0] == {
        "type": "message",
        "role": "developer",
        "content": [{"type": "input_text", "text": plain["instructions"]}],
    }
    assert channel["input"][1:] == plain["input"]
    assert {k: v for k, v in channel.items() if k not in ("input", "instructions")} == {
        k: v for k, v in plain.items() if k not in ("input", "instructions")
    }

    trailing = render_body(
        t, {"render": {**base["render"], "bucket_order": ["timeline", "memories"]}}
    )
    assert trailing["instructions"] == "SYS"
    assert trailing["input"][:-1] == plain["input"]
    assert trailing["input"][-1]["content"][0]["text"] == plain["instructions"].split("\n\n", 1)[1]


# ------------------------------------------------------------------ the output-slot seam


def test_the_response_accumulator_is_an_overridable_seam_the_client_uses():
    import msgspec
    import yaml

    from turnwire.rendering.container import overriding
    from turnwire.wire.accumulator import ResponseAccumulator
    from turnwire.wire.response import MessageOutput

    from ..client.conftest import AFTER_CALL, CALL, THREAD
    from ..client.server import Reply, ScriptedServer
    from ..conftest import make_container

    made: list[object] = []

    class Shouting(ResponseAccumulator):
        def __init__(self) -> None:
            super().__init__()
            made.append(self)

        def feed(self, events):
            return [
                msgspec.structs.replace(
                    generation,
                    outputs=tuple(
                        msgspec.structs.replace(o, text=o.text.upper())
                        if isinstance(o, MessageOutput)
                        else o
                        for o in generation.outputs
                    ),
                )
                for generation in super().feed(events)
            ]

    container = make_container()
    assert container.response_accumulator() is ResponseAccumulator
    with overriding(container.response_accumulator, Shouting):
        with ScriptedServer([Reply.sse(CALL), Reply.sse(AFTER_CALL)]) as server:
            result = turnwire.api.run(
                turnwire.load_thread(yaml.safe_load(THREAD)),
                container=container,
                base_url=server.base_url,
                handlers={"get_capital": lambda country: "Paris"},
            )
    assert len(made) == 2  # a fresh accumulator per streamed response
    answer = result.records.messages[0].content
    assert answer == answer.upper() and any(c.isalpha() for c in answer)
    assert container.response_accumulator() is ResponseAccumulator


def test_threads_first_using_a_container_share_its_single_instances():
    """A container's plugin manager is built once however many threads ask for it first at
    the same moment (a server sharing one container between request threads), so a plugin
    registered through it is the one every thread sees; the nonce deriver, the stage plan
    cache and the render memo are held by the same kind of provider (their builds are too
    quick to race reliably in a test)."""
    import threading
    import time

    slow: list[int] = []

    class SlowToRegister:
        """A plugin whose registration takes a while (pluggy lists its attributes), which
        holds the plugin manager's build open while the other threads arrive."""

        def __dir__(self) -> list[str]:
            slow.append(1)
            time.sleep(0.05)
            return []

    container = make_container(extra_plugins=[SlowToRegister()])
    start = threading.Barrier(6)
    seen: list[int] = []

    def first_use() -> None:
        start.wait()
        seen.append(id(container.plugin_manager()))

    threads = [threading.Thread(target=first_use) for _ in range(6)]
    for worker in threads:
        worker.start()
    for worker in threads:
        worker.join()
    assert slow  # the slow plugin did hold the build open
    assert len(seen) == 6 and len(set(seen)) == 1
    for name in ("plugin_manager", "envelope_nonce", "stage_plan_cache", "render_memo"):
        assert type(getattr(Container, name)) is providers.ThreadSafeSingleton, name


def test_reset_override_keeps_the_settings_and_plugins_and_drops_only_overrides():
    from dependency_injector import providers

    from turnwire.rendering.relay import HOOK

    marker = object()
    container = turnwire.build_container(overrides={"request": {"model": "gpt-5"}})
    container.render_memories.override(providers.Object(marker))
    assert container.render_memories() is marker
    container.reset_override()
    assert container.render_memories() is HOOK
    assert container.settings().request.model == "gpt-5"
    assert container.render_options().model == "gpt-5"


def test_every_stage_and_render_option_has_its_provider():
    from turnwire.config.options import RenderOptions
    from turnwire.hookspecs import STAGES

    container = turnwire.build_container()
    names = set(container.providers)
    assert set(STAGES) <= names
    assert set(RenderOptions.__struct_fields__) <= names
    assert set(container.stage_plan.kwargs) == set(STAGES)
    assert set(container.render_options.kwargs) == set(RenderOptions.__struct_fields__)


def test_only_the_container_imports_dependency_injector():
    from pathlib import Path

    src = Path(turnwire.__file__).parent
    importers = sorted(
        str(p.relative_to(src)) for p in src.rglob("*.py") if "dependency_injector" in p.read_text()
    )
    assert importers == ["rendering/container.py"]
