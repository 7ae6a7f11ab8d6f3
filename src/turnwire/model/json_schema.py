"""JSON Schema checks, one way everywhere: tool arguments and structured outputs use this.

A value is checked by ``jsonschema``'s Draft 2020-12 validator. A schema is thread data, and
so is a value the model wrote: either may be hostile, or only wrong. These changes keep a
check off the network and its cost in proportion to the schema's size times the value's (no
regular expression backtracks, no array is compared pair by pair, references are counted):

- ``pattern``, ``patternProperties`` and the property filters of ``additionalProperties`` and
  ``unevaluatedProperties`` match with RE2, whose time is linear in the text. A pattern RE2
  cannot read (lookaround, backreferences) checks nothing: a property it would name counts as
  matched.
- ``uniqueItems`` hashes a canonical form of each item, so it is linear in the array, under
  JSON Schema's equality: ``1`` equals ``1.0``, ``true`` is not ``1``, and an object's key
  order does not count.
- ``multipleOf`` divides the numbers as the decimals they print as, so ``19.99`` is a
  multiple of ``0.01``.
- ``unevaluatedProperties`` and ``unevaluatedItems`` keep what they found in sets and count
  each subschema they look into against the budget below (``jsonschema``'s own took time
  exponential in the nesting of ``allOf`` around them).
- ``format`` is an annotation, as Draft 2020-12 has it: not checked, in the value or in the
  schema (a ``pattern`` is not compiled by Python's ``re`` to see whether it is a regex).
- A ``$ref`` names a place in the same document or one of Draft 2020-12's meta-schemas.
  Nothing is fetched.
- Everything is read as Draft 2020-12: a ``$schema`` naming another version is dropped
  wherever a subschema can stand (in ``jsonschema`` it would switch to that version's
  validator, without the changes above).
- One check follows at most ``max_refs`` references (:data:`MAX_REFS` unless the caller says
  otherwise; each subschema ``unevaluated*`` looks into counts as one), and at most
  :data:`MAX_REF_HOPS` in a row without stepping into the value.

A schema that cannot check gives a :class:`Verdict` whose ``unusable`` says why: not a valid
Draft 2020-12 schema, a ``$ref`` naming nothing it holds, a ``$ref`` chain that never reaches
the value, over the reference budget, or nested deeper than Python's recursion limit. Each
caller decides what that means: a tool call then runs unchecked
(:mod:`turnwire.client._arguments`), and an answer fails (:mod:`turnwire.model.structured`).
"""

from __future__ import annotations

import contextvars
import copy
import functools
import itertools
from collections.abc import Hashable, Iterator, Mapping
from fractions import Fraction
from typing import Any

import re2
from jsonschema import Draft202012Validator, exceptions, validators
from jsonschema_specifications import REGISTRY as _SPECIFICATIONS  # type: ignore[import-untyped]
from referencing import Registry
from referencing.exceptions import Unresolvable
from referencing.jsonschema import DRAFT202012

__all__ = ["MAX_ERRORS", "MAX_REFS", "MAX_REF_HOPS", "JsonSchema", "Verdict", "Violation"]

MAX_REFS = 10_000
"""References one check follows, unless its caller gives another budget."""

MAX_REF_HOPS = 64
"""References followed in a row on one value, without stepping into it."""

MAX_ERRORS = 20
"""Errors one check collects before it picks the most telling."""

_SHOWN = 120
_REGEX_MEMORY = 8 * 2**20

_SUBSCHEMA = frozenset(
    {
        "additionalItems",
        "additionalProperties",
        "contains",
        "else",
        "if",
        "items",
        "not",
        "propertyNames",
        "then",
        "unevaluatedItems",
        "unevaluatedProperties",
    }
)
_SUBSCHEMA_MAPS = frozenset(
    {"$defs", "definitions", "dependentSchemas", "patternProperties", "properties"}
)
_SUBSCHEMA_LISTS = frozenset({"allOf", "anyOf", "oneOf", "prefixItems"})


class _Unusable(Exception):
    """The schema cannot check: ``why``, written to follow "the schema cannot check it: "."""

    def __init__(self, why: str) -> None:
        super().__init__(why)
        self.why = why


# ------------------------------------------------------------------------------ one check


class _Check:
    """What one check has spent: references left, ``$ref`` frames open per value, patterns."""

    __slots__ = ("budget", "hops", "left", "patterns")

    def __init__(self, budget: int | None) -> None:
        self.budget = budget
        self.left = budget
        self.hops: dict[int, int] = {}
        self.patterns: dict[str, Any] = {}

    def spend(self) -> None:
        if self.left is not None:
            self.left -= 1
            if self.left < 0:
                raise _Unusable(f"checking it follows over {self.budget} references")


_CHECK: contextvars.ContextVar[_Check | None] = contextvars.ContextVar(
    "turnwire_json_schema_check", default=None
)


def _spend() -> None:
    check = _CHECK.get()
    if check is not None:
        check.spend()


def _regex(pattern: str) -> Any:
    """``pattern`` compiled by RE2 (once per check), or ``None`` when RE2 cannot read it."""
    check = _CHECK.get()
    cache = check.patterns if check is not None else {}
    if pattern not in cache:
        options = re2.Options()
        options.log_errors = False
        options.max_mem = _REGEX_MEMORY
        try:
            cache[pattern] = re2.compile(pattern, options=options)
        except re2.error:
            cache[pattern] = None
    return cache[pattern]


def _matches_a_pattern(key: str, patterns: Any) -> bool:
    """Whether one of ``patterns`` (a ``patternProperties``) names ``key``; a pattern RE2
    cannot read names every key."""
    if not isinstance(patterns, Mapping):
        return False
    for pattern in patterns:
        compiled = _regex(pattern)
        if compiled is None or compiled.search(key):
            return True
    return False


def _valid(errors: Iterator[Any]) -> bool:
    return next(errors, None) is None


# ------------------------------------------------------------------------------ keywords


def _pattern(validator: Any, pattern: Any, instance: Any, schema: Any) -> Iterator[Any]:
    if not validator.is_type(instance, "string") or not isinstance(pattern, str):
        return
    compiled = _regex(pattern)
    if compiled is not None and not compiled.search(instance):
        shown = f"{instance[:_SHOWN]!r} does not match {pattern[:_SHOWN]!r}"
        yield exceptions.ValidationError(shown)


def _pattern_properties(validator: Any, patterns: Any, instance: Any, schema: Any) -> Iterator[Any]:
    if not validator.is_type(instance, "object") or not isinstance(patterns, Mapping):
        return
    for pattern, subschema in patterns.items():
        compiled = _regex(pattern)
        if compiled is None:
            continue
        for key, value in instance.items():
            if compiled.search(key):
                yield from validator.descend(value, subschema, path=key, schema_path=pattern)


def _unlisted(instance: Mapping[str, Any], schema: Mapping[str, Any]) -> list[str]:
    """The keys of ``instance`` neither ``properties`` nor ``patternProperties`` name."""
    properties = schema.get("properties")
    listed = properties if isinstance(properties, Mapping) else {}
    patterns = schema.get("patternProperties")
    return [key for key in instance if key not in listed and not _matches_a_pattern(key, patterns)]


def _unexpected(names: list[Any]) -> Any:
    """The error of properties (names) or items (indexes) a schema does not allow."""
    shown = ", ".join(repr(name) for name in names[:8]) + (", ..." if len(names) > 8 else "")
    if isinstance(names[0], int):
        what = "items at indexes" if len(names) > 1 else "item at index"
    else:
        what = "properties" if len(names) > 1 else "property"
    error = exceptions.ValidationError(f"unexpected {what} {shown}")
    error.turnwire_names = tuple(names)
    return error


def _additional_properties(
    validator: Any, additional: Any, instance: Any, schema: Any
) -> Iterator[Any]:
    if not validator.is_type(instance, "object"):
        return
    extras = _unlisted(instance, schema)
    if validator.is_type(additional, "object"):
        for extra in extras:
            yield from validator.descend(instance[extra], additional, path=extra)
    elif additional is False and extras:
        yield _unexpected(extras)


def _unique_items(validator: Any, unique: Any, instance: Any, schema: Any) -> Iterator[Any]:
    if unique is not True or not validator.is_type(instance, "array"):
        return
    first: dict[Hashable, int] = {}
    for index, item in enumerate(instance):
        seen = first.setdefault(_canonical(item), index)
        if seen != index:
            yield exceptions.ValidationError(f"items {seen} and {index} are equal")
            return


def _canonical(value: Any) -> Hashable:
    """A hashable stand-in for a JSON value, equal to another's exactly when the two values
    are equal in JSON Schema's sense (``1`` and ``1.0`` equal, ``true`` and ``1`` not, key
    order irrelevant).

    Numbers become hexadecimal text, whose hash (like every string's) is salted per process:
    a Python ``int`` hashes to itself modulo ``2**61 - 1``, so the model could otherwise send
    thousands of distinct numbers with one hash and make the set quadratic again.
    """
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return ("bool", value)
    if isinstance(value, int):
        return ("number", format(value, "x"))
    if isinstance(value, float):
        if value.is_integer():
            return ("number", format(int(value), "x"))
        return ("number", value.hex())
    if value is None:
        return ("null",)
    if isinstance(value, list | tuple):
        return ("array", tuple(_canonical(item) for item in value))
    if isinstance(value, Mapping):
        return ("object", frozenset((key, _canonical(item)) for key, item in value.items()))
    return ("other", id(value))


def _decimal(number: Any) -> Fraction:
    return Fraction(repr(number)) if isinstance(number, float) else Fraction(number)


def _multiple_of(validator: Any, step: Any, instance: Any, schema: Any) -> Iterator[Any]:
    if not validator.is_type(instance, "number") or not validator.is_type(step, "number"):
        return
    try:
        whole = (_decimal(instance) / _decimal(step)).denominator == 1
    except (ValueError, OverflowError, ZeroDivisionError):  # inf and nan are not JSON
        whole = False
    if not whole:
        yield exceptions.ValidationError(f"{instance!r} is not a multiple of {step!r}")


def _lookup(validator: Any, ref: str) -> Any:
    """What ``ref`` names, counted against the check's budget."""
    _spend()
    try:
        resolved = validator._resolver.lookup(ref)
    except Unresolvable as err:
        raise _Unusable(
            f"it cannot be evaluated: its $ref {ref[:_SHOWN]!r} names nothing it holds"
        ) from err
    contents = resolved.contents
    if not isinstance(contents, Mapping | bool):
        raise _Unusable(f"its $ref {ref[:_SHOWN]!r} names something that is not a schema")
    if isinstance(contents, Mapping) and validators.validator_for(
        contents, default=type(validator)
    ) is not type(validator):
        raise _Unusable(f"its $ref {ref[:_SHOWN]!r} names a schema of another JSON Schema version")
    return resolved


def _endless() -> _Unusable:
    return _Unusable("its $ref chain recurses without end")


def _follow(validator: Any, ref: Any, instance: Any, schema: Any) -> Iterator[Any]:
    """``$ref`` and ``$dynamicRef``: counted, and stopped when they go round in a circle."""
    if not isinstance(ref, str):
        return
    check = _CHECK.get()
    key = id(instance)
    if check is not None:
        # Open `$ref` frames on this very value: every one of them is an ancestor of this
        # one in the check's call chain, since a JSON value never contains itself.
        if check.hops.get(key, 0) >= MAX_REF_HOPS:
            raise _endless()
        check.hops[key] = check.hops.get(key, 0) + 1
    try:
        resolved = _lookup(validator, ref)
        yield from validator.descend(instance, resolved.contents, resolver=resolved.resolver)
    finally:
        if check is not None:
            check.hops[key] -= 1
            if not check.hops[key]:
                del check.hops[key]


def _evaluated_keys(validator: Any, instance: Any, schema: Any, hops: int = 0) -> set[str]:
    """The keys of ``instance`` that ``schema`` evaluates (for ``unevaluatedProperties``)."""
    if not isinstance(schema, Mapping):
        return set()
    _spend()
    keys: set[str] = set()
    for keyword in ("$ref", "$dynamicRef"):
        ref = schema.get(keyword)
        if isinstance(ref, str):
            if hops >= MAX_REF_HOPS:
                raise _endless()
            resolved = _lookup(validator, ref)
            inner = validator.evolve(schema=resolved.contents, _resolver=resolved.resolver)
            keys |= _evaluated_keys(inner, instance, resolved.contents, hops + 1)
    properties = schema.get("properties")
    if isinstance(properties, Mapping):
        keys.update(key for key in properties if key in instance)
    for keyword in ("additionalProperties", "unevaluatedProperties"):
        subschema = schema.get(keyword)
        if subschema is not None:
            keys.update(
                key
                for key, value in instance.items()
                if key not in keys and _valid(validator.descend(value, subschema))
            )
    patterns = schema.get("patternProperties")
    if isinstance(patterns, Mapping):
        keys.update(key for key in instance if _matches_a_pattern(key, patterns))
    dependent = schema.get("dependentSchemas")
    if isinstance(dependent, Mapping):
        for name, subschema in dependent.items():
            if name in instance:
                keys |= _evaluated_keys(validator, instance, subschema, hops)
    for keyword in ("allOf", "oneOf", "anyOf"):
        for subschema in schema.get(keyword) or ():
            if _valid(validator.descend(instance, subschema)):
                keys |= _evaluated_keys(validator, instance, subschema, hops)
    if "if" in schema:
        if validator.evolve(schema=schema["if"]).is_valid(instance):
            keys |= _evaluated_keys(validator, instance, schema["if"], hops)
            keys |= _evaluated_keys(validator, instance, schema.get("then"), hops)
        else:
            keys |= _evaluated_keys(validator, instance, schema.get("else"), hops)
    return keys


def _evaluated_indexes(validator: Any, instance: Any, schema: Any, hops: int = 0) -> set[int]:
    """The indexes of ``instance`` that ``schema`` evaluates (for ``unevaluatedItems``)."""
    if not isinstance(schema, Mapping):
        return set()
    _spend()
    if "items" in schema:
        return set(range(len(instance)))
    indexes: set[int] = set()
    for keyword in ("$ref", "$dynamicRef"):
        ref = schema.get(keyword)
        if isinstance(ref, str):
            if hops >= MAX_REF_HOPS:
                raise _endless()
            resolved = _lookup(validator, ref)
            inner = validator.evolve(schema=resolved.contents, _resolver=resolved.resolver)
            indexes |= _evaluated_indexes(inner, instance, resolved.contents, hops + 1)
    prefix = schema.get("prefixItems")
    if isinstance(prefix, list):
        indexes.update(range(min(len(prefix), len(instance))))
    for keyword in ("contains", "unevaluatedItems"):
        subschema = schema.get(keyword)
        if subschema is not None:
            indexes.update(
                index
                for index, item in enumerate(instance)
                if index not in indexes and _valid(validator.descend(item, subschema))
            )
    for keyword in ("allOf", "oneOf", "anyOf"):
        for subschema in schema.get(keyword) or ():
            if _valid(validator.descend(instance, subschema)):
                indexes |= _evaluated_indexes(validator, instance, subschema, hops)
    if "if" in schema:
        if validator.evolve(schema=schema["if"]).is_valid(instance):
            indexes |= _evaluated_indexes(validator, instance, schema["if"], hops)
            indexes |= _evaluated_indexes(validator, instance, schema.get("then"), hops)
        else:
            indexes |= _evaluated_indexes(validator, instance, schema.get("else"), hops)
    return indexes


def _unevaluated_properties(
    validator: Any, unevaluated: Any, instance: Any, schema: Any
) -> Iterator[Any]:
    if not validator.is_type(instance, "object"):
        return
    evaluated = _evaluated_keys(validator, instance, schema)
    left = [key for key in instance if key not in evaluated]
    if unevaluated is False:
        if left:
            yield _unexpected(left)
        return
    for key in left:  # each one fails the subschema, or `evaluated` would hold it
        yield from validator.descend(instance[key], unevaluated, path=key)


def _unevaluated_items(
    validator: Any, unevaluated: Any, instance: Any, schema: Any
) -> Iterator[Any]:
    if not validator.is_type(instance, "array"):
        return
    evaluated = _evaluated_indexes(validator, instance, schema)
    left = [index for index in range(len(instance)) if index not in evaluated]
    if unevaluated is False:
        if left:
            yield _unexpected(left)
        return
    for index in left:
        yield from validator.descend(instance[index], unevaluated, path=index)


_Validator = validators.extend(
    Draft202012Validator,
    validators={
        "$dynamicRef": _follow,
        "$ref": _follow,
        "additionalProperties": _additional_properties,
        "multipleOf": _multiple_of,
        "pattern": _pattern,
        "patternProperties": _pattern_properties,
        "unevaluatedItems": _unevaluated_items,
        "unevaluatedProperties": _unevaluated_properties,
        "uniqueItems": _unique_items,
    },
)


# ------------------------------------------------------------------------------ the schema


def _drop_other_dialects(schema: Any) -> None:
    """Remove, in place, each ``$schema`` that would switch ``jsonschema`` to another
    version's validator, wherever a subschema can stand (a ``const`` keeps its value)."""
    stack = [schema]
    while stack:
        node = stack.pop()
        if not isinstance(node, dict):
            continue
        if isinstance(node.get("$schema"), str) and (
            validators.validator_for(node, default=_Validator) is not _Validator
        ):
            del node["$schema"]
        for key, value in node.items():
            if key in _SUBSCHEMA:
                stack.append(value)
            elif key in _SUBSCHEMA_MAPS and isinstance(value, dict):
                stack.extend(value.values())
            elif key in _SUBSCHEMA_LISTS and isinstance(value, list):
                stack.extend(value)


_META_SCHEMAS = "https://json-schema.org/draft/2020-12/"


@functools.cache
def _meta_schemas() -> Registry[Any]:
    """Draft 2020-12's meta-schemas, read by our validator (their ``$schema`` dropped, which
    would switch to ``jsonschema``'s own)."""
    resources = []
    for uri in _SPECIFICATIONS:
        if uri.startswith(_META_SCHEMAS):
            contents = copy.deepcopy(_SPECIFICATIONS.contents(uri))
            _drop_other_dialects(contents)
            resources.append((uri, DRAFT202012.create_resource(contents)))
    return Registry().with_resources(resources).crawl()


@functools.cache
def _meta_validator() -> Any:
    """A validator of Draft 2020-12 schemas, with the changes of the module docstring.

    ``jsonschema``'s own ``check_schema`` runs the original validator, whose ``uniqueItems``
    took a minute over a 64 KiB schema (``"type": [{"a": 0}, {"a": 1}, ...]``).
    """
    registry = _meta_schemas()
    return _Validator(registry.contents(Draft202012Validator.META_SCHEMA["$id"]), registry=registry)


def _json_path(parts: Any) -> str:
    path = "$"
    for part in parts:
        path += f"[{part}]" if isinstance(part, int) else f".{part}"
    return path


class Violation:
    """One place where a value breaks a schema: ``jsonschema``'s error, read."""

    __slots__ = ("_error",)

    def __init__(self, error: Any) -> None:
        self._error = error

    def __repr__(self) -> str:
        return f"Violation({self.keyword!r} at {_json_path(self.path)})"

    @property
    def path(self) -> tuple[str | int, ...]:
        """Where in the value: property names and array indexes from the root."""
        return tuple(self._error.absolute_path)

    @property
    def keyword(self) -> str | None:
        """The keyword that failed (``type``, ``required``...); ``None`` for a ``false``
        schema."""
        keyword = self._error.validator
        return keyword if isinstance(keyword, str) else None

    @property
    def expected(self) -> Any:
        """The keyword's value in the schema (``["C", "F"]`` for an ``enum``)."""
        return self._error.validator_value

    @property
    def value(self) -> Any:
        """The value at :attr:`path`."""
        return self._error.instance

    @property
    def names(self) -> tuple[Any, ...]:
        """The properties or items at fault: missing ones for ``required``, unexpected ones
        for ``additionalProperties``, ``unevaluatedProperties`` and ``unevaluatedItems``."""
        named = getattr(self._error, "turnwire_names", None)
        if named is not None:
            return tuple(named)
        if self.keyword == "required" and isinstance(self.value, Mapping):
            return tuple(name for name in self.expected if name not in self.value)
        return ()

    @property
    def alternatives(self) -> tuple[Violation, ...]:
        """For an ``anyOf`` or ``oneOf`` that nothing matched: how each alternative failed."""
        return tuple(Violation(error) for error in self._error.context)

    @property
    def message(self) -> str:
        """``jsonschema``'s words for it, without the value they start with."""
        message = str(self._error.message)
        try:
            shown = repr(self.value)
        except RecursionError:
            return message
        if message.startswith(shown):
            message = message[len(shown) :].strip()
        return message


class Verdict:
    """What one check found: where the value breaks the schema, or why the schema could not
    tell.

    :ivar violations: the first :data:`MAX_ERRORS` places where the value breaks the schema,
        the most telling first (``jsonschema``'s ``best_match``: the shallowest, and within an
        ``anyOf`` the alternative that got furthest); empty when it matches.
    :ivar unusable: why the schema could not check the value (``it is not a valid schema
        (...)``), written to follow "the schema cannot check it: "; ``None`` when it could.
    """

    __slots__ = ("unusable", "violations")

    def __init__(self, violations: tuple[Violation, ...] = (), unusable: str | None = None) -> None:
        self.violations = violations
        self.unusable = unusable

    def __repr__(self) -> str:
        return f"Verdict({self.violations!r}, unusable={self.unusable!r})"


class JsonSchema:
    """One JSON Schema, ready to check values (see the module docstring). Building it checks
    the schema itself; one that cannot check gives every value a verdict that says why."""

    __slots__ = ("_unusable", "_validator")

    def __init__(self, schema: Mapping[str, Any] | bool) -> None:
        self._validator: Any = None
        self._unusable: str | None = None
        check = _CHECK.set(_Check(None))
        try:
            copied = copy.deepcopy(dict(schema) if isinstance(schema, Mapping) else schema)
            _drop_other_dialects(copied)
            error = next(_meta_validator().iter_errors(copied), None)
        except RecursionError:
            self._unusable = "it nests too deeply"
            return
        except _Unusable as err:
            self._unusable = f"it is not a valid schema ({err.why})"
            return
        finally:
            _CHECK.reset(check)
        if error is not None:
            where = _json_path(error.absolute_path)
            self._unusable = f"it is not a valid schema (at {where}: {error.message[:200]})"
            return
        self._validator = _Validator(copied, registry=_meta_schemas())

    def check(self, value: Any, *, max_refs: int = MAX_REFS) -> Verdict:
        """What ``value`` breaks in the schema.

        :param max_refs: references the check may follow.
        """
        if self._validator is None:
            return Verdict(unusable=self._unusable)
        check = _CHECK.set(_Check(max_refs))
        try:
            errors = list(itertools.islice(self._validator.iter_errors(value), MAX_ERRORS))
            best = exceptions.best_match(errors)
        except _Unusable as err:
            return Verdict(unusable=err.why)
        except Unresolvable as err:
            return Verdict(unusable=f"it cannot be evaluated ({type(err).__name__})")
        except exceptions.SchemaError as err:
            return Verdict(unusable=f"it cannot be evaluated ({err.message[:200]})")
        except RecursionError:
            return Verdict(unusable="it nests too deeply to check")
        finally:
            _CHECK.reset(check)
        if best is None:
            return Verdict()
        rest = (Violation(error) for error in errors if error is not best)
        return Verdict((Violation(best), *rest))
