"""How fast a thread file becomes a Thread, against the parsers alone in the same run.

Synthetic threads (user and assistant messages, tool calls with arguments and results,
reasoning thoughts with their replay payload) are written as JSON of about 1 MB and 10 MB and
as YAML of about 1 MB. ``turnwire.load_thread(path)`` (reading within the limits, decoding,
validating into the frozen ``Thread``, rebasing pointers) is timed against, on the same file:

* ``msgspec.json.decode`` of its bytes: the floor for JSON (the fastest parse of the same
  bytes into dicts and lists, no validation, no model);
* ``json.loads`` of its bytes: the standard library's parse, a peer;
* ``yaml.load(..., Loader=yaml.CSafeLoader)``: libyaml's loader, the floor for YAML;
* ``yaml.safe_load`` of its bytes: PyYAML's pure-Python loader, what turnwire used before.

Every subject runs in alternation with its floor and peers, round by round
(``benchmarks/_rounds.py``). Target: a 1 MB JSON thread within 3x ``msgspec.json.decode``.

Run: ``uv run python benchmarks/load.py`` (``--quick`` for fewer rounds).
"""

from __future__ import annotations

import argparse
import functools
import json
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec
import yaml
from _rounds import alternate, ms, ratio, skipped, verdict

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


def _msgspec(path: Path) -> Any:
    return msgspec.json.decode(path.read_bytes())


def _json(path: Path) -> Any:
    return json.loads(path.read_bytes())


def _c_yaml(path: Path) -> Any:
    return yaml.load(path.read_bytes(), Loader=yaml.CSafeLoader)


def _pure_yaml(path: Path) -> Any:
    return yaml.safe_load(path.read_bytes())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer rounds")
    args = parser.parse_args()
    rounds_small, rounds_large, rounds_yaml = (5, 3, 1) if args.quick else (21, 7, 3)

    print(
        f"turnwire load benchmark (Python {sys.version.split()[0]}; subjects alternated round "
        "by round; ms median (min); ratios the median of each round's)"
    )
    with tempfile.TemporaryDirectory() as folder:
        for label, target, rounds in (
            ("JSON 1 MB", 1_000_000, rounds_small),
            ("JSON 10 MB", 10_000_000, rounds_large),
        ):
            data, messages = thread_of_size(target, dump_json)
            path = Path(folder) / f"thread-{target}.json"
            path.write_bytes(data)
            assert turnwire.load_thread(path) == turnwire.load_thread(json.loads(data))
            samples = alternate(
                {
                    "turnwire": functools.partial(turnwire.load_thread, path),
                    "msgspec": functools.partial(_msgspec, path),
                    "json": functools.partial(_json, path),
                },
                rounds,
            )
            over = ratio(samples, "turnwire", "msgspec")
            print(f"{label} ({len(data) / 1e6:.2f} MB, {messages} messages, {rounds} rounds):")
            print(
                f"  turnwire.load_thread(path)  {ms(samples['turnwire'])}  "
                f"{over:.2f}x the floor"
                + (f" ({verdict(over, 3)})" if target == 1_000_000 else "")
                + "  [read, decode, validate into the frozen Thread, rebase pointers]"
            )
            print(
                f"  msgspec.json.decode (floor) {ms(samples['msgspec'])}  "
                "[the same file's bytes read and decoded to dicts and lists, no validation]"
            )
            print(
                f"  json.loads (peer)           {ms(samples['json'])}  "
                f"{ratio(samples, 'json', 'msgspec'):.2f}x the floor  [the same, with the "
                "standard library]"
            )

        data, messages = thread_of_size(1_000_000, dump_yaml)
        path = Path(folder) / "thread.yaml"
        path.write_bytes(data)
        assert turnwire.load_thread(path) == turnwire.load_thread(yaml.safe_load(data))
        subjects = {"turnwire": functools.partial(turnwire.load_thread, path)}
        if hasattr(yaml, "CSafeLoader"):
            subjects["libyaml"] = functools.partial(_c_yaml, path)
        subjects["pure"] = functools.partial(_pure_yaml, path)
        samples = alternate(subjects, rounds_yaml)
        print(f"YAML 1 MB ({len(data) / 1e6:.2f} MB, {messages} messages, {rounds_yaml} rounds):")
        print(f"  turnwire.load_thread(path)  {ms(samples['turnwire'])}")
        if "libyaml" in samples:
            print(
                f"  yaml.load(CSafeLoader) (floor) {ms(samples['libyaml'])}  turnwire is "
                f"{ratio(samples, 'turnwire', 'libyaml'):.2f}x it  [libyaml's parse, no model]"
            )
        else:
            skipped("yaml.load(CSafeLoader)", "PyYAML has no libyaml here")
        print(
            f"  yaml.safe_load (pure, peer) {ms(samples['pure'])}  turnwire is "
            f"{ratio(samples, 'pure', 'turnwire'):.0f}x faster  [what turnwire used before]"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
