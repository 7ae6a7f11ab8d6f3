"""Tool arguments checked against the tool's declared JSON Schema, before its handler runs.

The validator is ``jsonschema``'s Draft 2020-12 one, with format checking off (``format`` is an
annotation in 2020-12) and ``pattern`` / ``patternProperties`` matched with RE2, so a thread's
schema cannot make a check take exponential time. A failure is the text of an error result the
model reads: ``$.city: expected string``.

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

import contextvars
import itertools
import json
import logging
from collections.abc import Iterator, Mapping
from typing import Any

import re2
from jsonschema import Draft202012Validator, exceptions, validators
from referencing.exceptions import Unresolvable

from turnwire.errors import InvalidToolCallArgs

__all__ = ["MAX_ERRORS", "MAX_REFS", "MAX_SCHEMA_BYTES", "ArgumentChecker"]

logger = logging.getLogger("turnwire")

MAX_SCHEMA_BYTES = 64 * 1024
MAX_ERRORS = 20
MAX_REFS = 10_000
_SHOWN = 120


def _re2(pattern: str) -> Any:
    options = re2.Options()
    options.log_errors = False
    options.max_mem = 8 * 2**20
    try:
        return re2.compile(pattern, options=options)
    except re2.error:
        return None


def _pattern(validator: Any, pattern: Any, instance: Any, schema: Any) -> Iterator[Any]:
    if not validator.is_type(instance, "string") or not isinstance(pattern, str):
        return
    compiled = _re2(pattern)
    if compiled is None:  # not an RE2 expression (lookaround, backreferences): not checked
        return
    if not compiled.search(instance):
        shown = f"{instance[:_SHOWN]!r} does not match {pattern[:_SHOWN]!r}"
        yield exceptions.ValidationError(shown)


def _pattern_properties(validator: Any, patterns: Any, instance: Any, schema: Any) -> Iterator[Any]:
    if not validator.is_type(instance, "object") or not isinstance(patterns, Mapping):
        return
    for pattern, subschema in patterns.items():
        compiled = _re2(pattern)
        if compiled is None:
            continue
        for key, value in instance.items():
            if compiled.search(key):
                yield from validator.descend(value, subschema, path=key, schema_path=pattern)


class _OverBudget(Exception):
    pass


# References followed by the check under way: a schema whose `$ref`s fan out (each definition
# referring twice to the next) would otherwise take time exponential in its size.
_REFS: contextvars.ContextVar[list[int]] = contextvars.ContextVar("turnwire_schema_refs")


def _counted(keyword: Any) -> Any:
    def follow(validator: Any, ref: Any, instance: Any, schema: Any) -> Iterator[Any]:
        left = _REFS.get(None)
        if left is not None:
            left[0] -= 1
            if left[0] < 0:
                raise _OverBudget
        yield from keyword(validator, ref, instance, schema)

    return follow


_Validator = validators.extend(
    Draft202012Validator,
    validators={
        "pattern": _pattern,
        "patternProperties": _pattern_properties,
        "$ref": _counted(Draft202012Validator.VALIDATORS["$ref"]),
        "$dynamicRef": _counted(Draft202012Validator.VALIDATORS["$dynamicRef"]),
    },
)


def _path(error: Any) -> str:
    path = "$"
    for part in error.absolute_path:
        path += f"[{part}]" if isinstance(part, int) else f".{part}"
    return path


def _shown(value: Any) -> str:
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= _SHOWN else text[:_SHOWN] + "..."


def describe(error: Any) -> str:
    """One validation error as ``$.path: what was expected``."""
    keyword, expected, path = error.validator, error.validator_value, _path(error)
    if keyword == "type":
        kinds = expected if isinstance(expected, list) else [expected]
        return f"{path}: expected {' or '.join(str(k) for k in kinds)}"
    if keyword == "required":
        missing = [name for name in expected if name not in error.instance]
        field = missing[0] if missing else "?"
        return f"{path}.{field}: required, but missing"
    if keyword == "additionalProperties":
        allowed = set(error.schema.get("properties", {}))
        extra = sorted(str(k) for k in error.instance if k not in allowed)
        return f"{path}: unexpected field {', '.join(extra)[:_SHOWN] or '?'}"
    if keyword == "enum":
        return f"{path}: expected one of {_shown(expected)}"
    if keyword == "pattern":
        return f"{path}: does not match the pattern {_shown(expected)}"
    if keyword == "const":
        return f"{path}: expected {_shown(expected)}"
    if keyword in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
        relation = {
            "minimum": "at least",
            "maximum": "at most",
            "exclusiveMinimum": "more than",
            "exclusiveMaximum": "less than",
        }[keyword]
        return f"{path}: expected a number {relation} {expected}"
    message = str(error.message)
    if message.startswith(repr(error.instance)):  # jsonschema repeats the value first
        message = message[len(repr(error.instance)) :].strip()
    return f"{path}: {keyword}: {message[: _SHOWN * 2]}"


class ArgumentChecker:
    """Checks a call's arguments against its tool's schema; one validator per schema."""

    def __init__(self) -> None:
        self._validators: dict[str, Any] = {}
        self._warned: set[tuple[str, str]] = set()

    def check(self, tool: str, schema: Mapping[str, Any] | None, args: Any) -> str | None:
        """The error text for arguments that do not match ``schema`` (``None`` when they
        match, or when the schema cannot check anything; see the module docstring)."""
        if not schema:
            return None
        try:
            key = json.dumps(schema, sort_keys=True, separators=(",", ":"))
        except (TypeError, ValueError, RecursionError):
            self._unchecked(tool, "?", "it cannot be serialised")
            return None
        if len(key) > MAX_SCHEMA_BYTES:
            self._unchecked(tool, key, f"it is over {MAX_SCHEMA_BYTES} bytes")
            return None
        validator = self._validators.get(key)
        if validator is None:
            try:
                _Validator.check_schema(dict(schema))
            except exceptions.SchemaError as err:
                self._unchecked(tool, key, f"it is not a valid schema ({err.message[:200]})")
                return None
            except RecursionError:
                self._unchecked(tool, key, "it nests too deeply")
                return None
            validator = self._validators[key] = _Validator(dict(schema))
        budget = _REFS.set([MAX_REFS])
        try:
            errors = list(itertools.islice(validator.iter_errors(args), MAX_ERRORS))
        except _OverBudget:
            self._unchecked(tool, key, f"checking it follows over {MAX_REFS} references")
            return None
        except (Unresolvable, exceptions.SchemaError) as err:
            self._unchecked(tool, key, f"it cannot be evaluated ({type(err).__name__})")
            return None
        except RecursionError:
            self._unchecked(tool, key, "it recurses without end")
            return None
        finally:
            _REFS.reset(budget)
        if not errors:
            return None
        best = exceptions.best_match(errors)
        shown = "; ".join(list(dict.fromkeys(describe(e) for e in [best, *errors]))[:3])
        error = InvalidToolCallArgs(
            f"Tool arguments do not match the parameters of {tool}: {shown[:2000]}. "
            "Call it again with arguments that follow its schema."
        )
        return error.message

    def _unchecked(self, tool: str, key: str, why: str) -> None:
        """Warn, once per tool and schema, that its calls run unchecked."""
        if (tool, key) not in self._warned:
            self._warned.add((tool, key))
            logger.warning(
                "the parameters schema of tool %s cannot check arguments: %s; its calls run "
                "unchecked",
                tool,
                why,
                extra={"kind": "tool-schema-unchecked"},
            )
