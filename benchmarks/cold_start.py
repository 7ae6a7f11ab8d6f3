"""What a process pays from its start to its exit, wall against wall, with and without bytecode.

Fresh interpreter processes, each timed from ``Popen`` to its exit (wall time, the parent's
clock), for these subjects:

* the floor: ``python -c pass``, an empty interpreter;
* ``turnwire render examples/weather.yaml``: the command line (its console script), the body
  written to a pipe;
* the library: ``import turnwire``, ``build_container``, two renders of the same thread, and
  two ``render(thread, config_files=[])`` (its phases timed inside the child, printed apart);
* the dependencies alone: importing msgspec, pluggy, dependency-injector, httpx and PyYAML, as
  an application that imports them itself pays (dependency-injector then imports pydantic and
  Starlette when they are installed, which turnwire holds off: ``turnwire.rendering.container``);
* render's floor: every module other than turnwire's own that ``turnwire render`` imports (the
  standard library's included, listed by an untimed run of the command), imported alone and
  nothing else: what the command would cost if turnwire's own code cost nothing;
* a peer: ``import openai`` alone, what a user of the official SDK pays before any request.

Each runs in two modes, and every subject of both modes runs once per round, in an order
rotated round by round (``benchmarks/_rounds.py``):

* with bytecode: every module's ``.pyc`` present (written to a private cache,
  ``PYTHONPYCACHEPREFIX``, by an untimed first run), as after an install that compiles it;
* without bytecode: the standard library's ``.pyc`` present, none for the virtual
  environment's packages or this checkout (turnwire, its dependencies), which each process then
  compiles from source and cannot write (``PYTHONDONTWRITEBYTECODE=1``), as after an install
  that does not compile and a read-only or throwaway environment.

Neither mode touches the environment's own ``__pycache__`` folders. Each subject's line gives its
wall time and its ratio to the empty interpreter of the same mode in the same round (whole
against whole: no time is subtracted). Target: ``turnwire render`` of a small thread, with
bytecode, at most 8x ``python -c pass``; render's floor says how much of that its dependencies
leave (msgspec, pluggy and importlib.metadata for the plugins' entry points, dependency-injector
and the asyncio it imports whatever is installed, PyYAML, argparse).

The last line is what pydantic costs of importing dependency-injector (``-X importtime``): on its
own, through turnwire (held off: 0 unless pydantic was imported first), and with
``TURNWIRE_DI_PYDANTIC=1`` (turnwire's opt-out: dependency-injector imported as it imports
itself).

Run: ``uv run python benchmarks/cold_start.py`` (``--rounds N``; ``--quick`` for 3).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import sysconfig
import tempfile
from collections.abc import Callable
from pathlib import Path

from _rounds import alternate, ms, ratio, verdict

REPO = Path(__file__).resolve().parents[1]
THREAD = REPO / "examples" / "weather.yaml"

LIBRARY = """
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

DEPENDENCIES = "import msgspec, pluggy, dependency_injector.containers, httpx, yaml"

# Run once, untimed: the modules ``turnwire render`` imports, turnwire's own left out, in the
# order they were first imported.
RECORD = """
import json, os, sys
from turnwire.cli.main import main
out = os.dup(1)
os.dup2(os.open(os.devnull, os.O_WRONLY), 1)
status = main(["render", {thread!r}])
sys.stdout.flush()
os.dup2(out, 1)
assert status == 0, status
print(json.dumps([name for name in sys.modules
                  if name.partition(".")[0] != "turnwire" and name != "__main__"]))
"""

# Those modules and nothing else: whatever else one of them would import is refused, as it was
# in the recorded run (dependency-injector's optional imports, held off by turnwire there).
FLOOR = """
import importlib, sys
names = {names!r}
allowed = set(names)
class Only:
    def find_spec(self, name, path=None, target=None):
        if name not in allowed:
            raise ModuleNotFoundError(name, name=name)
        return None
sys.meta_path.insert(0, Only())
for name in names:
    try:
        importlib.import_module(name)
    except ImportError:
        pass
"""
DI_PLAIN = "import dependency_injector.containers, dependency_injector.providers"
DI_TURNWIRE = "import turnwire.rendering.container"


def cli() -> list[str]:
    """The ``turnwire`` console script beside this interpreter, else ``python -m turnwire``."""
    script = Path(sys.executable).parent / "turnwire"
    if script.exists():
        return [str(script)]
    return [sys.executable, "-m", "turnwire"]


SUBJECTS: dict[str, tuple[list[str], str]] = {
    "empty": ([sys.executable, "-c", "pass"], "python -c pass (floor)"),
    "cli": ([*cli(), "render", str(THREAD)], "turnwire render examples/weather.yaml"),
    "library": (
        [sys.executable, "-c", LIBRARY.format(thread=str(THREAD))],
        "import, container, 2 renders, 2 config_files renders",
    ),
    "deps": ([sys.executable, "-c", DEPENDENCIES], "import msgspec+pluggy+DI+httpx+yaml"),
    # "floor": render's dependencies alone, added by ``main`` once they are recorded
    "openai": ([sys.executable, "-c", "import openai"], "import openai (peer)"),
}


def render_floor() -> tuple[list[str], str]:
    """The command importing what ``turnwire render`` imports, turnwire's own modules aside."""
    env = {**os.environ, "TURNWIRE_ENVELOPE_SECRET": "benchmark"}
    env.pop("TURNWIRE_DI_PYDANTIC", None)
    done = subprocess.run(
        [sys.executable, "-c", RECORD.format(thread=str(THREAD))],
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO,
        check=True,
    )
    names = json.loads(done.stdout)
    label = "render's floor: its dependencies alone"
    return [sys.executable, "-c", FLOOR.format(names=names)], label


def caches(folder: Path) -> dict[str, dict[str, str]]:
    """The environment of each mode: a private bytecode cache, filled once by untimed runs
    (all of it for ``bytecode``; the standard library's part only for ``source``)."""
    base = {**os.environ, "TURNWIRE_ENVELOPE_SECRET": "benchmark"}
    modes = {}
    stdlib = Path(sysconfig.get_paths()["stdlib"]).resolve()
    for mode in ("bytecode", "source"):
        prefix = folder / mode
        env = {**base, "PYTHONPYCACHEPREFIX": str(prefix)}
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        for command, _ in SUBJECTS.values():
            subprocess.run(command, capture_output=True, env=env, cwd=REPO, check=False)
        if mode == "source":  # keep the standard library's bytecode only
            _prune(prefix, prefix / stdlib.relative_to(stdlib.anchor))
        modes[mode] = {**env, "PYTHONDONTWRITEBYTECODE": "1"}
    return modes


def _prune(prefix: Path, kept: Path) -> None:
    """Remove every ``.pyc`` under ``prefix`` that is not under ``kept``."""
    for path in prefix.rglob("*.pyc"):
        if kept not in path.parents:
            path.unlink()


def process(command: list[str], env: dict[str, str], out: list[str]) -> Callable[[], None]:
    def run() -> None:
        done = subprocess.run(
            command, capture_output=True, text=True, env=env, cwd=REPO, check=False
        )
        if done.returncode != 0:
            raise SystemExit(f"{command[-1][:60]!r} failed:\n{done.stderr}")
        out.append(done.stdout)

    return run


def pyc_count(prefix: str) -> int:
    return sum(1 for _ in Path(prefix).rglob("*.pyc"))


def pydantic_import_ms(code: str, runs: int, env: dict[str, str]) -> float:
    """Median milliseconds ``-X importtime`` charges to importing ``pydantic`` (0 if not)."""
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
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--quick", action="store_true", help="3 rounds")
    args = parser.parse_args()
    rounds = 3 if args.quick else args.rounds

    subjects_in_order = list(SUBJECTS.items())
    subjects_in_order.insert(2, ("floor", render_floor()))  # after the command it is the floor of
    SUBJECTS.clear()
    SUBJECTS.update(subjects_in_order)
    with tempfile.TemporaryDirectory(prefix="turnwire-cold-") as folder:
        modes = caches(Path(folder))
        have_openai = (
            subprocess.run(
                SUBJECTS["openai"][0], capture_output=True, env=modes["bytecode"], check=False
            ).returncode
            == 0
        )
        outputs: dict[str, list[str]] = {}
        subjects = {}
        for mode, env in modes.items():
            for name, (command, _) in SUBJECTS.items():
                if name == "openai" and not have_openai:
                    continue
                outputs[f"{mode} {name}"] = []
                subjects[f"{mode} {name}"] = process(command, env, outputs[f"{mode} {name}"])
        counts = {mode: pyc_count(env["PYTHONPYCACHEPREFIX"]) for mode, env in modes.items()}
        samples = alternate(subjects, rounds)

        print(
            f"cold start (Python {sys.version.split()[0]}; {rounds} rounds, every process of "
            "both modes alternated; wall time from spawn to exit, ms median (min); each ratio "
            "the median of its round's, against the empty interpreter of the same mode)"
        )
        for mode in modes:
            what = (
                "every module's .pyc present"
                if mode == "bytecode"
                else "stdlib .pyc only; turnwire and its dependencies compiled from source"
            )
            print(f"{mode} ({what}; {counts[mode]} .pyc in the private cache):")
            for name, (_, label) in SUBJECTS.items():
                key = f"{mode} {name}"
                if key not in samples:
                    print(f"  {label}: skipped (the openai package is not installed)")
                    continue
                line = f"  {label:<52} {ms(samples[key])}"
                if name != "empty":
                    over = ratio(samples, key, f"{mode} empty")
                    line += f"  {over:.1f}x the empty interpreter"
                    if name == "cli" and mode == "bytecode":
                        line += f" ({verdict(over, 8)})"
                    if name == "floor":
                        own = statistics.median(
                            c - f for c, f in zip(samples[f"{mode} cli"], samples[key], strict=True)
                        )
                        line += f"; turnwire's own part of the command {own * 1e3:.1f} ms"
                print(line)
            phases = [json.loads(out) for out in outputs[f"{mode} library"]]
            pydantic = any(p.pop("pydantic") for p in phases)
            median = {key: statistics.median(p[key] for p in phases) for key in phases[0]}
            print(
                "    inside the library process: "
                + ", ".join(
                    f"{label} {median[key] * 1e3:.1f} ms"
                    for key, label in (
                        ("import", "import turnwire"),
                        ("container", "build_container"),
                        ("first", "first render"),
                        ("second", "second"),
                        ("config_files", "render(config_files=[])"),
                    )
                )
                + f"; pydantic imported: {'yes' if pydantic else 'no'}"
            )
        env = modes["bytecode"]
        plain = pydantic_import_ms(DI_PLAIN, rounds, env)
        held_off = pydantic_import_ms(DI_TURNWIRE, rounds, env)
        opted_out = pydantic_import_ms(DI_TURNWIRE, rounds, {**env, "TURNWIRE_DI_PYDANTIC": "1"})
        print(
            "pydantic's share of importing dependency_injector (-X importtime, cumulative, "
            f"with bytecode): plain {plain:.1f} ms; through turnwire.rendering.container "
            f"{held_off:.1f} ms; with TURNWIRE_DI_PYDANTIC=1 {opted_out:.1f} ms"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
