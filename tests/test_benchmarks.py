"""The benchmarks stay runnable: each imports and parses its options, and the agent loop runs
once at a tiny size. No timing is read (speed is measured in ``benchmarks/``, as ratios)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from .conftest import REPO

BENCHMARKS = sorted(
    path.name for path in (REPO / "benchmarks").glob("*.py") if not path.name.startswith("_")
)


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *args], cwd=REPO, capture_output=True, text=True, timeout=120, check=False
    )


def test_every_benchmark_is_found():
    assert {"client_loop.py", "render.py", "stream.py", "store.py"} <= set(BENCHMARKS)


@pytest.mark.parametrize("name", BENCHMARKS)
def test_each_benchmark_imports_and_describes_itself(name):
    done = _run(f"benchmarks/{name}", "--help")
    assert done.returncode == 0, done.stderr
    assert "usage:" in done.stdout


def test_the_agent_loop_runs_at_a_tiny_size():
    done = _run("benchmarks/agent_loop.py", "--quick", "--sizes", "40", "80")
    assert done.returncode == 0, done.stderr
    assert "reloaded from a SQLite store" in done.stdout
    assert "x the floor" in done.stdout
