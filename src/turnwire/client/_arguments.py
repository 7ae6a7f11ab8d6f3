"""Tool arguments checked against the tool's declared JSON Schema, before its handler runs.

The check is :mod:`turnwire.model.json_schema`'s, the one structured outputs use too
(Draft 2020-12 with ``format`` unchecked, every regular expression on RE2, ``uniqueItems`` in
linear time, nothing fetched). A failure is the text of an error result the model reads:
``$.city: expected string``.

A schema is thread data, so it may be hostile or simply wrong. One that is not a valid
schema, is larger than :data:`MAX_SCHEMA_BYTES`, refers to a document it does not contain,
recurses without end, or makes one check follow more than :data:`MAX_REFS` references cannot
check anything: the call then runs unchecked (the handler got unchecked arguments before this
check existed, and a tool must not become uncallable because of a keyword we cannot
evaluate), with one warning of kind ``tool-schema-unchecked`` per tool and schema. The cost of
one check is bounded by the schema's size, the reference budget, RE2, and the first
:data:`MAX_ERRORS` errors.
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
from collections.abc import Mapping
from typing import Any

from turnwire.errors import InvalidToolCallArgs
from turnwire.model.json_schema import MAX_ERRORS, MAX_REFS, JsonSchema, Violation

__all__ = [
    "MAX_ERRORS",
    "MAX_KEPT_SCHEMAS",
    "MAX_REFS",
    "MAX_SCHEMA_BYTES",
    "MAX_WARNED",
    "ArgumentChecker",
]

logger = logging.getLogger("turnwire")

MAX_SCHEMA_BYTES = 64 * 1024
_SHOWN = 120


def _path(parts: tuple[str | int, ...]) -> str:
    path = "$"
    for part in parts:
        path += f"[{part}]" if isinstance(part, int) else f".{part}"
    return path


def _shown(value: Any) -> str:
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError, RecursionError):
        text = repr(value)
    return text if len(text) <= _SHOWN else text[:_SHOWN] + "..."


_RELATIONS = {
    "minimum": "at least",
    "maximum": "at most",
    "exclusiveMinimum": "more than",
    "exclusiveMaximum": "less than",
}


def describe(found: Violation) -> str:
    """One violation as ``$.path: what was expected``."""
    keyword, expected, path = found.keyword, found.expected, _path(found.path)
    if keyword == "type":
        kinds = expected if isinstance(expected, list) else [expected]
        return f"{path}: expected {' or '.join(str(k) for k in kinds)}"
    if keyword == "required":
        field = found.names[0] if found.names else "?"
        return f"{path}.{field}: required, but missing"
    if keyword in ("additionalProperties", "unevaluatedProperties") and found.names:
        extra = sorted(str(name) for name in found.names)
        return f"{path}: unexpected field {', '.join(extra)[:_SHOWN]}"
    if keyword == "enum":
        return f"{path}: expected one of {_shown(expected)}"
    if keyword == "pattern":
        return f"{path}: does not match the pattern {_shown(expected)}"
    if keyword == "const":
        return f"{path}: expected {_shown(expected)}"
    if keyword in _RELATIONS:
        return f"{path}: expected a number {_RELATIONS[keyword]} {expected}"
    return f"{path}: {keyword}: {found.message[: _SHOWN * 2]}"


MAX_KEPT_SCHEMAS = 128
"""Compiled schemas a checker keeps (the most recently used): a long-lived client whose threads
bring ever new schemas (thread data) keeps this many, never all."""
MAX_WARNED = 1024
"""(tool, schema) pairs a checker remembers having warned about; past it the oldest go, and a
schema of theirs is warned about once more when it comes back."""


def _schema_key(text: str) -> bytes:
    """What a schema is kept under: a digest of its canonical text, never the text (up to
    :data:`MAX_SCHEMA_BYTES` each)."""
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()


class ArgumentChecker:
    """Checks a call's arguments against its tool's schema; one validator per schema, for the
    :data:`MAX_KEPT_SCHEMAS` schemas used last. Shared by the runs of a client, from any
    thread."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._schemas: dict[bytes, JsonSchema] = {}  # oldest first
        self._warned: dict[tuple[str, bytes], None] = {}  # oldest first

    def _compiled(self, key: bytes, schema: Mapping[str, Any]) -> JsonSchema:
        with self._lock:
            checker = self._schemas.pop(key, None)
            if checker is not None:
                self._schemas[key] = checker  # the most recent again
                return checker
        checker = JsonSchema(schema)  # outside the lock: compiling may take a while
        with self._lock:
            self._schemas[key] = checker
            while len(self._schemas) > MAX_KEPT_SCHEMAS:
                del self._schemas[next(iter(self._schemas))]
        return checker

    def check(self, tool: str, schema: Mapping[str, Any] | None, args: Any) -> str | None:
        """The error text for arguments that do not match ``schema`` (``None`` when they
        match, or when the schema cannot check anything; see the module docstring)."""
        if not schema:
            return None
        try:
            key = json.dumps(schema, sort_keys=True, separators=(",", ":"))
        except (TypeError, ValueError, RecursionError):
            self._unchecked(tool, b"", "it cannot be serialised")
            return None
        digest = _schema_key(key)
        if len(key) > MAX_SCHEMA_BYTES:
            self._unchecked(tool, digest, f"it is over {MAX_SCHEMA_BYTES} bytes")
            return None
        verdict = self._compiled(digest, schema).check(args, max_refs=MAX_REFS)
        if verdict.unusable is not None:
            self._unchecked(tool, digest, verdict.unusable)
            return None
        if not verdict.violations:
            return None
        shown = "; ".join(list(dict.fromkeys(describe(v) for v in verdict.violations))[:3])
        error = InvalidToolCallArgs(
            f"Tool arguments do not match the parameters of {tool}: {shown[:2000]}. "
            "Call it again with arguments that follow its schema."
        )
        return error.message

    def _unchecked(self, tool: str, key: bytes, why: str) -> None:
        """Warn, once per tool and schema (of the last :data:`MAX_WARNED`), that its calls run
        unchecked."""
        with self._lock:
            fresh = (tool, key) not in self._warned
            if fresh:
                self._warned[(tool, key)] = None
                while len(self._warned) > MAX_WARNED:
                    del self._warned[next(iter(self._warned))]
        if fresh:
            logger.warning(
                "the parameters schema of tool %s cannot check arguments: %s; its calls run "
                "unchecked",
                tool,
                why,
                extra={"kind": "tool-schema-unchecked"},
            )
