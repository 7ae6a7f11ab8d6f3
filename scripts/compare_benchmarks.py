"""Every benchmark of two revisions, side by side: the ratios each prints, and how they moved.

A benchmark prints its own ratios (a subject against a floor or a peer measured in the same
run), so two revisions compare by those ratios, not by raw times. This script checks out
``BASE`` (a commit, default: the one before the working tree's HEAD) into a temporary
worktree, then runs each benchmark of ``benchmarks/`` alternately on the base and on this
checkout, round after round (a slow spell of a shared machine then slows both alike), and
prints, per line that holds ratios, the median of each side and the change.

Run: ``uv run python scripts/compare_benchmarks.py BASE [--rounds N] [--only NAME ...]``.
A benchmark the base does not have, or that fails on one side, is reported and skipped.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RATIO = re.compile(r"(\d+(?:\.\d+)?)x\b")
NUMBER = re.compile(r"\d+(?:\.\d+)?")
QUICK = {"cold_start.py": ["--runs", "5"]}


def _run(checkout: Path, script: str) -> str | None:
    environment = {**os.environ, "PYTHONPATH": str(checkout / "src")}
    arguments = QUICK.get(script, ["--quick"])
    done = subprocess.run(
        [sys.executable, str(checkout / "benchmarks" / script), *arguments],
        check=False,
        cwd=checkout,
        env=environment,
        capture_output=True,
        text=True,
        timeout=1800,
    )
    if done.returncode != 0:
        print(f"  {checkout.name}/{script} failed ({done.returncode}): {done.stderr[-400:]}")
        return None
    return done.stdout


def _ratios(output: str) -> dict[str, list[float]]:
    """Each line that holds ratios, by its text with the numbers left out (and, for lines that
    read alike, such as the rows of a table, their first number and how many came before):
    its ratios."""
    found: dict[str, list[float]] = {}
    for line in output.splitlines():
        values = [float(v) for v in RATIO.findall(line)]
        if not values:
            continue
        label = NUMBER.sub("#", line).strip()
        if label in found or any(key.startswith(label + " [") for key in found):
            first = NUMBER.search(line)
            label = f"{label} [{first[0] if first else len(found)}]"
        found[label] = values
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("base", nargs="?", default="HEAD~1", help="the revision to compare with")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--only", nargs="*", default=None, help="benchmark file names")
    args = parser.parse_args()
    scripts = sorted(p.name for p in (ROOT / "benchmarks").glob("*.py"))
    if args.only:
        scripts = [s for s in scripts if s in args.only or s.removesuffix(".py") in args.only]
    folder = Path(tempfile.mkdtemp(prefix="turnwire-base-"))
    base = folder / "base"
    subprocess.run(
        ["git", "worktree", "add", "-q", "--detach", str(base), args.base], cwd=ROOT, check=True
    )
    try:
        for script in scripts:
            if not (base / "benchmarks" / script).exists():
                print(f"{script}: not in {args.base}, skipped")
                continue
            runs: dict[str, list[dict[str, list[float]]]] = {"base": [], "head": []}
            for _ in range(args.rounds):
                for side, checkout in (("base", base), ("head", ROOT)):
                    output = _run(checkout, script)
                    if output is not None:
                        runs[side].append(_ratios(output))
            if not runs["base"] or not runs["head"]:
                print(f"{script}: no run on both sides")
                continue
            print(f"\n{script} ({args.rounds} rounds each, medians; base {args.base} vs this tree)")
            labels = [label for label in runs["head"][0] if label in runs["base"][0]]
            for label in labels:
                sides = []
                for side in ("base", "head"):
                    columns = [r[label] for r in runs[side] if label in r]
                    width = min(len(c) for c in columns)
                    sides.append([statistics.median(c[i] for c in columns) for i in range(width)])
                pairs = zip(sides[0], sides[1], strict=False)
                shown = "  ".join(
                    f"{b:g}x -> {h:g}x ({(h / b - 1) * 100:+.0f}%)" if b else f"{b:g}x -> {h:g}x"
                    for b, h in pairs
                )
                print(f"  {label[:70]:<70}  {shown}")
            for label in runs["head"][0]:
                if label not in runs["base"][0]:
                    print(f"  {label[:70]:<70}  new: {runs['head'][0][label]}")
    finally:
        subprocess.run(["git", "worktree", "remove", "--force", str(base)], cwd=ROOT, check=False)
        shutil.rmtree(folder, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
