"""How fast a thread file becomes a Thread, against the parsers alone in the same run.

Synthetic threads (user and assistant messages, tool calls with arguments and results,
reasoning thoughts with their replay payload) are written as JSON of about 1 MB and 10 MB and
as YAML of about 1 MB. ``turnwire.load_thread(path)`` (reading within the limits, decoding,
validating into the frozen ``Thread``, rebasing pointers) is timed against, on the same file:

* ``json.loads`` of its bytes: the floor for JSON (parsing only, no validation, no model);
* ``yaml.safe_load`` of its bytes: PyYAML's pure-Python loader, what turnwire used before;
* ``yaml.load(..., Loader=yaml.CSafeLoader)``: libyaml's loader, the floor for YAML.

Subject and floor are measured in alternation (medians), so a noisy machine slows both alike.
Target: a 1 MB JSON thread within 3x ``json.loads``.

Run: ``uv run python benchmarks/load.py`` (``--quick`` for fewer runs; ``--slow`` also times
``yaml.safe_load`` of the 10 MB thread, about a minute).
"""

from __future__ import annotations

import argparse
import functools
import gc
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

import turnwire

ENCRYPTED = "gAAAAB" + "x" * 300


def _at(second: int) -> str:
    day, rest = divmod(second, 86400)
    return f"2026-01-{1 + day:02d}T{rest // 3600:02d}:{rest // 60 % 60:02d}:{rest % 60:02d}Z"


def synthetic_thread(cycles: int) -> dict[str, Any]:
    """A thread-file mapping: per cycle a question, a thought, a tool call and an answer."""
    messages: list[dict[str, Any]] = []
    thoughts: list[dict[str, Any]] = []
    calls: list[dict[str, Any]] = []
    for cycle in range(cycles):
        when = _at(cycle * 10)
        messages.append(
            {
                "id": f"u{cycle}",
                "role": "user",
                "content": f"Question {cycle}: what now?",
                "created_at": when,
            }
        )
        if cycle % 4 == 0:
            thoughts.append(
                {
                    "id": f"rs_{cycle}",
                    "replay_compatibility": "openai-responses-reasoning-v1",
                    "created_at": when,
                    "seq": 1,
                    "payload": {
                        "variant": "responses-reasoning",
                        "item": {
                            "type": "reasoning",
                            "id": f"rs_{cycle}",
                            "summary": [{"type": "summary_text", "text": f"plan {cycle}"}],
                            "encrypted_content": ENCRYPTED,
                        },
                        "paired_item_id": f"fc_{cycle}",
                        "prefix_fingerprint": None,
                    },
                }
            )
        calls.append(
            {
                "id": f"call_{cycle}|fc_{cycle}",
                "tool": "lookup",
                "args": {"q": f"item {cycle}", "limit": 5, "filters": {"kind": "doc"}},
                "result": {"text": f"result {cycle}: " + "found " * 6},
                "created_at": when,
                "seq": 2,
            }
        )
        messages.append(
            {
                "id": f"msg_{cycle}",
                "role": "assistant",
                "content": f"Answer {cycle}: " + "words " * 12,
                "created_at": when,
                "seq": 3,
            }
        )
    return {
        "version": 1,
        "model": "gpt-5",
        "system_prompt": "You answer questions.",
        "tools": [
            {
                "name": "lookup",
                "description": "Look something up",
                "parameters": {"type": "object", "properties": {"q": {"type": "string"}}},
            }
        ],
        "messages": messages,
        "thoughts": thoughts,
        "tool_calls": calls,
    }


def thread_of_size(target: int, dump: Callable[[dict[str, Any]], bytes]) -> tuple[bytes, int]:
    """The bytes of a synthetic thread of about ``target`` bytes, and its message count."""
    per_cycle = len(dump(synthetic_thread(100))) / 100
    cycles = max(1, round(target / per_cycle))
    doc = synthetic_thread(cycles)
    return dump(doc), len(doc["messages"])


def dump_json(doc: dict[str, Any]) -> bytes:
    return json.dumps(doc).encode()  # ensure_ascii, as json.dump writes by default


def dump_yaml(doc: dict[str, Any]) -> bytes:
    return yaml.dump(
        doc, Dumper=getattr(yaml, "CSafeDumper", yaml.SafeDumper), sort_keys=False
    ).encode()


def _json(path: Path) -> Any:
    return json.loads(path.read_bytes())


def _pure_yaml(path: Path) -> Any:
    return yaml.safe_load(path.read_bytes())


def timed(fn: Callable[[], Any], runs: int) -> float:
    """Median seconds of ``runs`` calls."""
    samples = []
    for _ in range(runs):
        gc.collect()
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def interleaved(
    subject: Callable[[], Any], floor: Callable[[], Any], runs: int
) -> tuple[float, float]:
    """Median seconds of ``subject`` and of ``floor``, measured in alternation."""
    subject_samples, floor_samples = [], []
    for _ in range(runs):
        for fn, samples in ((subject, subject_samples), (floor, floor_samples)):
            gc.collect()
            start = time.perf_counter()
            fn()
            samples.append(time.perf_counter() - start)
    return statistics.median(subject_samples), statistics.median(floor_samples)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer runs")
    parser.add_argument("--slow", action="store_true", help="also yaml.safe_load of 10 MB")
    args = parser.parse_args()
    runs_small, runs_large, runs_yaml = (5, 3, 1) if args.quick else (21, 7, 3)
    c_loader = getattr(yaml, "CSafeLoader", None)

    print(f"turnwire load benchmark (Python {sys.version.split()[0]}, median of runs)")
    print(
        f"{'file':<14} {'messages':>8} {'size':>7} {'turnwire ms':>12} {'floor':>24} "
        f"{'floor ms':>9} {'ratio':>7}"
    )

    def row(
        label: str, messages: int, size: int, subject_s: float, floor: str, floor_s: float
    ) -> None:
        print(
            f"{label:<14} {messages:>8} {size / 1e6:>6.2f}M {subject_s * 1e3:>12.1f} "
            f"{floor:>24} {floor_s * 1e3:>9.1f} {subject_s / floor_s:>6.2f}x"
        )

    def faster(label: str, subject_s: float, peer: str, peer_s: float) -> None:
        print(
            f"{label:<14} {'':>8} {'':>7} {'':>12} {peer:>24} {peer_s * 1e3:>9.1f} "
            f"-> turnwire {peer_s / subject_s:.0f}x faster"
        )

    with tempfile.TemporaryDirectory() as folder:
        ratios: dict[str, float] = {}
        for label, target, runs in (
            ("JSON 1 MB", 1_000_000, runs_small),
            ("JSON 10 MB", 10_000_000, runs_large),
        ):
            data, messages = thread_of_size(target, dump_json)
            path = Path(folder) / f"thread-{target}.json"
            path.write_bytes(data)
            assert turnwire.load_thread(path) == turnwire.load_thread(json.loads(data))
            subject_s, floor_s = interleaved(
                functools.partial(turnwire.load_thread, path), functools.partial(_json, path), runs
            )
            ratios[label] = subject_s / floor_s
            row(label, messages, len(data), subject_s, "json.loads", floor_s)
            if target < 5_000_000 or args.slow:
                pure_s = timed(functools.partial(_pure_yaml, path), runs_yaml)
                faster("", subject_s, "yaml.safe_load (pure)", pure_s)
            else:
                print(f"{'':<14} yaml.safe_load of 10 MB skipped (about a minute; --slow)")

        data, messages = thread_of_size(1_000_000, dump_yaml)
        path = Path(folder) / "thread.yaml"
        path.write_bytes(data)
        assert turnwire.load_thread(path) == turnwire.load_thread(yaml.safe_load(data))
        if c_loader is not None:
            subject_s, floor_s = interleaved(
                lambda: turnwire.load_thread(path),
                lambda: yaml.load(path.read_bytes(), Loader=c_loader),
                runs_yaml,
            )
            row("YAML 1 MB", messages, len(data), subject_s, "yaml.load(CSafeLoader)", floor_s)
        else:
            subject_s = timed(lambda: turnwire.load_thread(path), runs_yaml)
            print("YAML 1 MB: PyYAML has no libyaml here; no C floor")
        pure_s = timed(functools.partial(_pure_yaml, path), runs_yaml)
        faster("", subject_s, "yaml.safe_load (pure)", pure_s)

    verdict = "met" if ratios["JSON 1 MB"] <= 3 else "NOT met"
    print(f"1 MB JSON within {ratios['JSON 1 MB']:.2f}x of json.loads (target 3x: {verdict})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
