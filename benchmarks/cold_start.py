"""What a process pays before its first request body: import, container, first render.

Each figure is the median of fresh interpreter processes, measured in the same run as two
floors (an empty interpreter; importing msgspec, pluggy and dependency-injector alone) and a
peer (importing the official ``openai`` package, which a user of the SDK pays before any
request). Inside the child the phases are timed separately: import, ``build_container``
(settings loaded and validated, plugins discovered), the first render, a second render, and
a repeated ``render(thread, config_files=[...])`` (the kept container: its fixed cost).

The import of ``dependency_injector`` is measured twice: as turnwire imports it (pydantic, which
its providers module tries at import only for ``Configuration.from_pydantic``, held off) and
plainly; the difference is what turnwire saves a process that does not otherwise import
pydantic. ``pydantic imported`` says whether ``import turnwire`` plus a render pulled it in.

Run: ``uv run python benchmarks/cold_start.py`` (``--runs N``).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
THREAD = REPO / "examples" / "weather.yaml"

CHILD = """
import json, time
t0 = time.perf_counter()
import turnwire
t1 = time.perf_counter()
container = turnwire.build_container()
container.plugin_manager()
t2 = time.perf_counter()
turnwire.render({thread!r}, container=container)
t3 = time.perf_counter()
turnwire.render({thread!r}, container=container)
t4 = time.perf_counter()
turnwire.render({thread!r}, config_files=[])
t5 = time.perf_counter()
turnwire.render({thread!r}, config_files=[])
t6 = time.perf_counter()
import sys
print(json.dumps({{"import": t1 - t0, "container": t2 - t1, "first": t3 - t2,
                   "second": t4 - t3, "config_files": t6 - t5,
                   "pydantic": "pydantic" in sys.modules}}))
"""

DI_PLAIN = "import dependency_injector.containers, dependency_injector.providers"
DI_TURNWIRE = "import turnwire.rendering.container"


def wall(code: str, runs: int, extra: dict[str, str] | None = None) -> tuple[float, list[str]]:
    samples, outputs = [], []
    env = {**os.environ, "TURNWIRE_ENVELOPE_SECRET": "benchmark", **(extra or {})}
    for _ in range(runs):
        start = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-c", code],
            capture_output=True,
            text=True,
            check=True,
            env=env,
            cwd=REPO,
        )
        samples.append(time.perf_counter() - start)
        outputs.append(done.stdout)
    return statistics.median(samples), outputs


def pydantic_import_ms(code: str, runs: int, extra: dict[str, str]) -> float:
    """Median milliseconds ``-X importtime`` charges to importing ``pydantic`` (0 if not)."""
    env = {**os.environ, "TURNWIRE_ENVELOPE_SECRET": "benchmark", **extra}
    samples = []
    for _ in range(runs):
        done = subprocess.run(
            [sys.executable, "-X", "importtime", "-c", code],
            capture_output=True,
            text=True,
            check=True,
            env=env,
            cwd=REPO,
        )
        cost = 0.0
        for line in done.stderr.splitlines():
            parts = [part.strip() for part in line.split("|")]
            if len(parts) == 3 and parts[2] == "pydantic":
                cost = int(parts[1]) / 1e3
        samples.append(cost)
    return statistics.median(samples)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=9)
    args = parser.parse_args()
    runs = args.runs

    empty, _ = wall("pass", runs)
    deps, _ = wall("import msgspec, pluggy, dependency_injector.containers, httpx, yaml", runs)
    total, outputs = wall(CHILD.format(thread=str(THREAD)), runs)
    phases = [json.loads(out) for out in outputs]
    pydantic = any(p.pop("pydantic") for p in phases)
    median = {key: statistics.median(p[key] for p in phases) for key in phases[0]}
    print(f"cold start (median of {runs} fresh processes, Python {sys.version.split()[0]})")
    print(f"  empty interpreter                        {empty * 1e3:8.1f} ms  (floor)")
    print(f"  import msgspec+pluggy+DI+httpx+yaml      {deps * 1e3:8.1f} ms")
    print(
        f"  turnwire: whole process to second render {total * 1e3:8.1f} ms  "
        f"({total / empty:.1f}x the empty interpreter)"
    )
    for key, label in (
        ("import", "import turnwire"),
        ("container", "build_container + plugins"),
        ("first", "first render"),
        ("second", "second render"),
        ("config_files", "repeated render(config_files=[])"),
    ):
        print(f"    {label:<38} {median[key] * 1e3:8.1f} ms")
    print(f"    pydantic imported                      {'yes' if pydantic else 'no':>8}")
    plain = pydantic_import_ms(DI_PLAIN, runs, {})
    held_off = pydantic_import_ms(DI_TURNWIRE, runs, {})
    opted_out = pydantic_import_ms(DI_TURNWIRE, runs, {"TURNWIRE_DI_PYDANTIC": "1"})
    print(
        "  pydantic's share of importing dependency_injector (-X importtime, cumulative):"
        f"\n    plain import                           {plain:8.1f} ms"
        f"\n    through turnwire.rendering.container             {held_off:8.1f} ms"
        f"\n    through it with TURNWIRE_DI_PYDANTIC=1 {opted_out:8.1f} ms"
    )
    try:
        peer, _ = wall("import openai", runs)
    except subprocess.CalledProcessError:
        print("  import openai: not installed - skipped")
    else:
        ratio = peer / (total - empty) if total > empty else float("nan")
        print(
            f"  import openai (peer, import only)        {peer * 1e3:8.1f} ms  "
            f"(turnwire's whole start-up costs {1 / ratio:.2f}x of it, net of the interpreter)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
