"""Meta-tests: the contract file is complete, documented, and mirrored by names elsewhere."""

from __future__ import annotations

import inspect
from pathlib import Path

import pluggy
import pytest

import turnwire
from turnwire import hookspecs
from turnwire.config.options import RenderOptions
from turnwire.hookspecs import CLIENT_HOOKS, STAGES
from turnwire.rendering.container import Container
from turnwire.stages import DEFAULT_PLUGINS

# Hook → the test module that covers its built-in (names mirror each other).
TEST_MODULE = {
    "render_untrusted_content": "stages/test_envelopes.py",
    "render_trusted_content": "stages/test_envelopes.py",
    "render_standing_instructions": "stages/test_instructions.py",
    "render_memories": "stages/test_memories.py",
    "render_retrievable_safety_directive": "stages/test_retrievables.py",
    "render_first_party_retrievables": "stages/test_retrievables.py",
    "render_third_party_public_retrievables": "stages/test_retrievables.py",
    "render_third_party_private_retrievables": "stages/test_retrievables.py",
    "render_retrievables": "stages/test_retrievables.py",
    "render_retrievable_handle_body": "stages/test_artifacts.py",
    "render_artifact_handle_body": "stages/test_artifacts.py",
    "render_system_prompt": "stages/test_system_prompt.py",
    "render_media_blocks": "stages/test_media.py",
    "render_timeline_message": "stages/test_timeline.py",
    "render_tool_call_result": "stages/test_tool_results.py",
    "render_reasoning_item": "stages/test_reasoning.py",
    "render_thought": "stages/test_thoughts.py",
    "render_hosted_item": "stages/test_hosted.py",
    "render_hosted_item_text": "stages/test_hosted.py",
    "filter_thoughts": "stages/test_reasoning.py",
    "fingerprint_prefix": "stages/test_fingerprint.py",
    "tools_to_wire": "stages/test_tools.py",
    "description_to_json_schema": "stages/test_tools.py",
    "on_prompt_assembled": "client/test_dispatch.py",
    "on_raw_generation": "client/test_dispatch.py",
    "on_stream_event": "client/test_progress.py",
    "filter_tool_call_id": "client/test_dispatch.py",
    "parse_text_tool_calls": "client/test_text_tool_calls.py",
}

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


@pytest.mark.parametrize("name", [*STAGES, *CLIENT_HOOKS])
def test_every_hook_has_a_test_module(name):
    path = Path(__file__).parent / TEST_MODULE[name]
    assert path.is_file()
    assert name in path.read_text() or name.replace("render_", "") in path.read_text()


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
