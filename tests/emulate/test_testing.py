"""turnwire.testing: the context manager, and the pytest fixture its entry point registers."""

from __future__ import annotations

import subprocess
import sys

import openai

import turnwire.testing


def test_the_context_manager_serves_a_script():
    with turnwire.testing.emulator(script=[{"text": "Hello!"}]) as api:
        assert api.base_url.startswith("http://127.0.0.1:")
        with openai.OpenAI(base_url=api.base_url, api_key="x", max_retries=0) as client:
            assert client.responses.create(model="gpt-5", input="Hi").output_text == "Hello!"


def test_the_fixture_comes_from_the_entry_point(turnwire_emulator):
    turnwire_emulator.script([{"text": "From the fixture."}])
    with openai.OpenAI(base_url=turnwire_emulator.base_url, api_key="x", max_retries=0) as client:
        answer = client.responses.create(model="gpt-5", input="Hi")
    assert answer.output_text == "From the fixture."


def test_the_plugin_is_inert_until_used():
    code = (
        "import sys, turnwire.testing; "
        "print(sorted(m for m in sys.modules if m.startswith('turnwire.')))"
    )
    loaded = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert "turnwire.emulate" not in loaded.stdout
    assert "turnwire.testing" in loaded.stdout
