"""The repository stands alone: nothing it runs reads a path outside the checkout."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

# Places that reach out of the checkout: a sibling folder by name, or enough `..` hops from a
# file two levels deep to leave the repository. `parents[N]` is checked against each file's own
# depth (:func:`_climbs_out`).
_OUTSIDE = re.compile(r"""\.\./shared|["']shared["']|\.\./\.\./\.\.""")
_PARENTS = re.compile(r"parents\[(\d+)\]((?:\.parent)*)")


def _climbs_out(path: Path, line: str) -> bool:
    """``line`` of ``path`` takes a ``Path(__file__)`` above the repository's root folder:
    ``parents[N]`` of a file ``d`` folders below the root is the root when ``N == d``."""
    depth = len(path.relative_to(REPO).parts) - 1
    return any(
        int(match[1]) + match[2].count(".parent") > depth for match in _PARENTS.finditer(line)
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
        if _OUTSIDE.search(line) or _climbs_out(path, line)
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


def test_the_parents_check_knows_each_files_depth() -> None:
    assert not _climbs_out(REPO / "src/turnwire/config/settings.py", "x.parents[3] / 'config'")
    assert _climbs_out(REPO / "src/turnwire/config/settings.py", "x.parents[4]")
    assert _climbs_out(REPO / "tests/test_x.py", "x.parents[1].parent")
    assert not _climbs_out(REPO / "tests/test_x.py", "x.parents[1]")
