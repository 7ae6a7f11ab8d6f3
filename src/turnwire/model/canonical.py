"""Canonical JSON, byte-compatible with the reference system's fingerprint serialisation.

The reference serialises with JavaScript semantics: object keys sorted by UTF-16 code units,
arrays in order, scalars as ``JSON.stringify`` prints them (JS number formatting, so ``1.0`` is
``1`` and ``1e-7`` is ``1e-7``), and ``undefined`` as the bare token ``undefined``. This module
reproduces that exactly (:func:`canonical_json`) and offers a fast path for wire items, whose
keys are ASCII and which hold no floats (:func:`canonical_item_bytes`).
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

import msgspec

__all__ = ["UNDEFINED", "canonical_item_bytes", "canonical_json", "js_number", "js_string"]


class _Undefined:
    """The JavaScript ``undefined`` value: serialised as the bare token ``undefined``."""

    _instance: _Undefined | None = None

    def __new__(cls) -> _Undefined:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "UNDEFINED"


UNDEFINED = _Undefined()

_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
_MAX_SAFE_INT = 2**53


def js_string(value: str) -> str:
    """``JSON.stringify`` of a string (ES2019 well-formed: lone surrogates escaped)."""
    text = json.dumps(value, ensure_ascii=False)
    if _LONE_SURROGATE.search(text):
        text = _LONE_SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)
    return text


def js_number(value: float) -> str:
    """``JSON.stringify`` of a number: ECMAScript Number::toString, non-finite as ``null``."""
    if isinstance(value, int) and abs(value) < _MAX_SAFE_INT:
        return str(value)
    number = float(value)
    if not math.isfinite(number):
        return "null"
    if number == 0:
        return "0"
    sign = "-" if number < 0 else ""
    mantissa, _, exp_text = repr(abs(number)).partition("e")
    whole, _, frac = mantissa.partition(".")
    digits = (whole + frac).lstrip("0")
    # Decimal exponent n such that value = 0.d1d2...dk * 10**n.
    point = len(whole) + (int(exp_text) if exp_text else 0)
    point -= len(whole + frac) - len((whole + frac).lstrip("0"))
    digits = digits.rstrip("0") or "0"
    k, n = len(digits), point
    if k <= n <= 21:
        return sign + digits + "0" * (n - k)
    if 0 < n <= 21:
        return sign + digits[:n] + "." + digits[n:]
    if -6 < n <= 0:
        return sign + "0." + "0" * (-n) + digits
    exponent = n - 1
    exp_sign = "+" if exponent >= 0 else "-"
    head = digits[0] + ("." + digits[1:] if k > 1 else "")
    return f"{sign}{head}e{exp_sign}{abs(exponent)}"


def _utf16_key(key: str) -> bytes:
    return key.encode("utf-16-be", "surrogatepass")


def _write(value: Any, out: list[str], sort_keys: bool) -> None:
    if value is UNDEFINED:
        out.append("undefined")
    elif value is None:
        out.append("null")
    elif value is True:
        out.append("true")
    elif value is False:
        out.append("false")
    elif isinstance(value, str):
        out.append(js_string(value))
    elif isinstance(value, int | float):
        out.append(js_number(value))
    elif isinstance(value, list | tuple):
        out.append("[")
        for index, element in enumerate(value):
            if index:
                out.append(",")
            _write(element, out, sort_keys)
        out.append("]")
    elif isinstance(value, dict):
        out.append("{")
        keys = sorted(value, key=_utf16_key) if sort_keys else list(value)
        for index, key in enumerate(keys):
            if index:
                out.append(",")
            out.append(js_string(str(key)))
            out.append(":")
            _write(value[key], out, sort_keys)
        out.append("}")
    elif isinstance(value, msgspec.Struct):
        _write(msgspec.to_builtins(value), out, sort_keys)
    else:
        raise TypeError(f"cannot serialise {type(value).__name__} canonically")


def canonical_json(value: Any, *, sort_keys: bool = True) -> str:
    """The reference's canonical serialisation of ``value`` (see the module docstring).

    With ``sort_keys=False`` object keys keep their insertion order: that is ``JSON.stringify``
    itself, which the reference uses for replayed ``function_call.arguments``.
    """
    out: list[str] = []
    _write(value, out, sort_keys)
    return "".join(out)


_SORTED_ENCODER = msgspec.json.Encoder(order="sorted")


def canonical_item_bytes(item: msgspec.Struct) -> bytes:
    """Canonical UTF-8 bytes of one wire item.

    Exact for wire items: their keys are ASCII (so code-point order equals UTF-16 order), they
    hold no floats, and msgspec escapes strings as ``JSON.stringify`` does. A property test
    pins the equality with :func:`canonical_json`.
    """
    return _SORTED_ENCODER.encode(item)
