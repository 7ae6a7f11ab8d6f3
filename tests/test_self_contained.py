"""The repository stands alone: nothing it runs reads a path outside the checkout."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

# Places that reach out of the checkout: a sibling folder by name, or enough `parents[...]` /
# `..` hops from a file two levels deep to leave the repository.
_OUTSIDE = re.compile(
    r"""\.\./shared|["']shared["']|parents\[[3-9]\]|parents\[2\]\.parent|\.\./\.\./\.\."""
)


def _tracked(*folders: str) -> list[Path]:
    listed = subprocess.run(
        ["git", "ls-files", "--", *folders],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    return [REPO / name for name in listed if name.endswith((".py", ".sh", ".toml", ".cfg"))]


def test_no_test_benchmark_or_script_reads_outside_the_repository() -> None:
    files = [*_tracked("tests", "benchmarks", "scripts", "plugins", ".ci", "src"), REPO / ".ci/run"]
    assert len(files) > 50
    offenders = [
        f"{path.relative_to(REPO)}:{number}: {line.strip()}"
        for path in files
        if path != Path(__file__).resolve()
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if _OUTSIDE.search(line)
    ]
    assert offenders == []


def test_the_conformance_copy_is_complete_and_attributed() -> None:
    data = REPO / "tests" / "data" / "conformance"
    sources = (data / "SOURCES.md").read_text()
    recorded = [
        path
        for path in data.rglob("*")
        if path.is_file() and path.suffix in (".sse", ".jsonl", ".json")
    ]
    assert len(recorded) >= 50
    unattributed = [path.name for path in recorded if f"`{path.name}`" not in sources]
    assert unattributed == []
    for licence in ("MIT", "Apache-2.0"):
        assert licence in sources
