"""Golden bodies for representative threads (tests/golden/NAME.yaml [+ NAME.config.yaml]).

The expected bodies are reviewed files. ``TURNWIRE_UPDATE_GOLDEN=1`` rewrites them after an
intended change; a missing expected file fails the test rather than being created silently.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import yaml

from .conftest import render_body

GOLDEN = Path(__file__).parent / "golden"
THREADS = sorted(p for p in GOLDEN.glob("*.yaml") if not p.name.endswith(".config.yaml"))


@pytest.mark.parametrize("thread_path", THREADS, ids=[p.stem for p in THREADS])
def test_golden_body(thread_path):
    config_path = thread_path.with_suffix(".config.yaml")
    settings = yaml.safe_load(config_path.read_text()) if config_path.exists() else None
    body = render_body(thread_path, settings, model=None)
    text = json.dumps(body, indent=2, ensure_ascii=False) + "\n"
    expected = thread_path.with_suffix(".json")
    if os.environ.get("TURNWIRE_UPDATE_GOLDEN") == "1":
        expected.write_text(text)
    assert expected.exists(), (
        f"no golden body {expected.name}; review one with TURNWIRE_UPDATE_GOLDEN=1"
    )
    assert text == expected.read_text()
