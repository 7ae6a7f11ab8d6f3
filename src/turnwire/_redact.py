"""Redaction: the one routine every text that can reach a user or a log goes through.

:func:`redact` replaces with ``[redacted]``:

* the value of every known secret: the ones passed to it, the ones given to
  :func:`remember_secret` by an object that holds them (the transport's API key, a
  configuration's or an MCP declaration's credentials) for as long as that object lives, when
  at least 4 characters long, and the values of environment variables whose names say they
  hold one (``OPENAI_API_KEY``, ``TURNWIRE_ENVELOPE_SECRET``, any ``*_KEY``, ``*_SECRET``,
  ``*_TOKEN``, ``*_PASSWORD``), when at least 8 characters long;
* whatever looks like a credential: ``sk-...`` and ``sess-...`` keys in any case, the token after
  ``Bearer`` or ``Basic``, a URL's ``user:password@``, and the value after ``api-key:``,
  ``api_key=``, ``"secret": "...`` and the like.

:class:`TurnwireError` runs its message through it, so every error turnwire raises is covered at
one depth; :class:`RedactingFilter` does the same for the records of the ``turnwire`` loggers.
"""

from __future__ import annotations

import logging
import os
import re
import threading
import urllib.parse
import weakref
from collections.abc import Iterable

__all__ = [
    "MARK",
    "RedactingFilter",
    "install_log_filter",
    "is_secret_header",
    "is_secret_parameter",
    "redact",
    "remember_query_secrets",
    "remember_secret",
    "remember_url_secrets",
    "url_userinfo",
    "without_query_secrets",
]

MARK = "[redacted]"
_MIN_SECRET = 8  # a value from the environment, whose name alone says it is a secret
_MIN_HELD = 4  # a value an object hands over as its credential (a short API key too)

# Values handed over by the objects that hold secrets, each with how many live holders it has:
# an error raised far from the transport must still hide its key, and a value is forgotten when
# the last object holding it is (so a long-lived process that renders threads with ever new MCP
# tokens does not keep them all).
_remembered: dict[str, int] = {}
_remembered_lock = threading.Lock()

_SECRET_NAME = re.compile(r"(?:^|_)(?:API_?KEY|KEY|SECRET|TOKEN|PASSWORD|PASSWD)$", re.IGNORECASE)
# Each pattern with the texts one of which any match contains: the pattern is run only on a
# text holding one. Case-insensitive patterns are looked for in the lowered text, and are
# always run on a text that is not ASCII (where case-insensitive matching has more
# equivalences than lowering shows: the Kelvin sign, the long s, ...).
_PATTERNS = (
    (
        re.compile(r"\b(?:sk|sess)-[A-Za-z0-9_\-]{8,}", re.IGNORECASE),
        MARK,
        ("sk-", "sess-"),
        True,
    ),
    (
        re.compile(r"\b(Bearer|Basic)\s+[A-Za-z0-9._~+/\-]{4,}=*", re.IGNORECASE),
        r"\1 " + MARK,
        ("bearer", "basic"),
        True,
    ),
    (re.compile(r"(://)[^/\s:@]+:[^/\s@]+@"), r"\1" + MARK + "@", ("://",), False),  # user:password
    (
        re.compile(
            r"""(\b(?:api[-_ ]?key|x-api-key|access[-_]?token|auth[-_]?token|secret|password)"""
            r"""["']?\s*[:=]\s*["']?)[^\s"',;{}\[\]]{8,}""",
            re.IGNORECASE,
        ),
        r"\1" + MARK,
        ("key", "token", "secret", "password"),
        True,
    ),
)


def remember_secret(value: str | None, *, holder: object) -> None:
    """Redact ``value`` everywhere while ``holder`` (the object that keeps it, which must take
    weak references) lives; ignored when shorter than 4 characters (shorter ones would blank
    out ordinary text)."""
    if not value or len(value) < _MIN_HELD:
        return
    with _remembered_lock:
        _remembered[value] = _remembered.get(value, 0) + 1
    weakref.finalize(holder, _forget, value)


def _forget(value: str) -> None:
    with _remembered_lock:
        left = _remembered.get(value, 0) - 1
        if left > 0:
            _remembered[value] = left
        else:
            _remembered.pop(value, None)


_SECRET_HEADER = re.compile(
    r"auth|key|token|secret|cookie|passw|signature|credential|session", re.IGNORECASE
)


def is_secret_header(name: str) -> bool:
    """Whether an HTTP header's name says its value is a credential (``Authorization``,
    ``X-Api-Key``, ``Ocp-Apim-Subscription-Key``, ``X-Custom-Auth``, ``Cookie``, ...)."""
    return _SECRET_HEADER.search(name) is not None


# A query parameter whose name says its value is a credential: the name, or its last part
# after ``-``, ``_`` or ``.``, is one of these (``subscription-key``, ``api_key``,
# ``access_token``, ``sig``; never ``author`` or ``keyword``).
_SECRET_PARAMETER = re.compile(
    r"(?:^|[-_.])(?:key|apikey|token|secret|password|passwd|pwd|sig|signature|credential|code"
    r"|auth|session)$",
    re.IGNORECASE,
)


def is_secret_parameter(name: str) -> bool:
    """Whether a URL query parameter's name says its value is a credential
    (``subscription-key``, ``api_key``, ``access_token``, ``sig``, ``X-Amz-Signature``, ...)."""
    return _SECRET_PARAMETER.search(name) is not None


def without_query_secrets(url: str) -> str:
    """``url`` (or a request path) with the value of each query parameter named as a
    credential (:func:`is_secret_parameter`) shown as ``[redacted]``; the rest as it is."""
    head, mark, rest = url.partition("?")
    if not mark:
        return url
    query, hash_mark, fragment = rest.partition("#")
    pieces = []
    for piece in query.split("&"):
        name, equals, _value = piece.partition("=")
        secret = equals and is_secret_parameter(urllib.parse.unquote_plus(name))
        pieces.append(f"{name}={MARK}" if secret else piece)
    return f"{head}?{'&'.join(pieces)}{hash_mark}{fragment}"


def _written_userinfo(url: str) -> str | None:
    """``url``'s ``user:password`` as written, or ``None`` when its authority (from ``://`` to
    the first ``/``, ``?`` or ``#``) holds no ``@``."""
    _, found, rest = url.partition("://")
    authority = re.split(r"[/?#]", rest, maxsplit=1)[0] if found else ""
    userinfo, at, _host = authority.rpartition("@")
    return userinfo if at else None


def url_userinfo(url: str) -> tuple[str, str] | None:
    """The user name and password of ``url``'s ``user:password@`` (percent-decoded), or
    ``None`` when its authority holds none (the authority ends at ``/``, ``?`` or ``#``)."""
    written = _written_userinfo(url)
    if written is None:
        return None
    user, _, password = written.partition(":")
    return urllib.parse.unquote(user), urllib.parse.unquote(password)


def remember_url_secrets(url: str, *, holder: object) -> None:
    """Remember the password (and a long user name) of ``url``'s ``user:password@``, as
    written and decoded, and the value of each query parameter whose name says it is a
    credential (:func:`is_secret_parameter`), while ``holder`` lives."""
    written = _written_userinfo(url)
    given = url_userinfo(url)
    if written is not None and given is not None:
        user, password = given
        written_user, _, written_password = written.partition(":")
        for value in {password, written_password}:
            remember_secret(value, holder=holder)
        for value in {user, written_user}:
            if len(value) >= _MIN_SECRET:  # a short name (admin, user) is no secret
                remember_secret(value, holder=holder)
    query = url.partition("?")[2].partition("#")[0]
    if query:
        remember_query_secrets(urllib.parse.parse_qsl(query, keep_blank_values=True), holder=holder)


def remember_query_secrets(params: Iterable[tuple[str, str]], *, holder: object) -> None:
    """Remember the value of each query parameter whose name says it is a credential
    (:func:`is_secret_parameter`; values of 8 characters or more: a shorter one would blank out
    ordinary words), as it is and as it goes in a URL (percent-encoded), while ``holder``
    lives."""
    for name, value in params:
        if is_secret_parameter(name) and len(value) >= _MIN_SECRET:
            for form in {value, urllib.parse.quote_plus(value)}:
                remember_secret(form, holder=holder)


# The secrets the environment held when it was last read, and what it held then (a copy of
# ``os.environ``'s underlying mapping): read again only when that changed. Every change made
# through ``os.environ`` (setting, deleting, ``monkeypatch``, ``mock.patch.dict``) changes it.
_from_environment: list[tuple[dict[bytes, bytes] | None, frozenset[str]]] = [(None, frozenset())]


def _environment_secrets() -> frozenset[str]:
    """The values of the environment variables whose names say they hold a secret."""
    raw = getattr(os.environ, "_data", None)  # CPython's os._Environ keeps the encoded pairs
    seen, secrets = _from_environment[0]
    if raw is not None and seen is not None and raw == seen:
        return secrets
    secrets = frozenset(
        value
        for name, value in os.environ.items()
        if len(value) >= _MIN_SECRET and _SECRET_NAME.search(name)
    )
    _from_environment[0] = (dict(raw) if type(raw) is dict else None, secrets)
    return secrets


def _known(extra: tuple[str | None, ...]) -> list[str]:
    values = {value for value in extra if value and len(value) >= _MIN_SECRET}
    with _remembered_lock:
        values.update(_remembered)
    values |= _environment_secrets()
    return sorted(values, key=len, reverse=True)  # a secret containing another goes first


def redact(text: str, *secrets: str | None) -> str:
    """``text`` with every known secret (``secrets`` included) and credential-like token
    replaced by ``[redacted]``."""
    if not text:
        return text
    for value in _known(secrets):
        if value in text:
            text = text.replace(value, MARK)
    lowered = text.lower() if text.isascii() else None
    for pattern, replacement, needles, folded in _PATTERNS:
        within = text if not folded else lowered
        if within is None or any(needle in within for needle in needles):
            text = pattern.sub(replacement, text)
            if folded and lowered is not None:
                lowered = text.lower()
    return text


class RedactingFilter(logging.Filter):
    """Redacts a record's message (arguments merged in) and its traceback text."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        clean = redact(message)
        if clean != message:
            record.msg, record.args = clean, None
        if record.exc_info and not record.exc_text:
            text = logging.Formatter().formatException(record.exc_info)
            clean = redact(text)
            if clean != text:  # otherwise the handler's own formatter renders it
                record.exc_text = clean
        return True


_filters_lock = threading.Lock()


def install_log_filter(*names: str) -> None:
    """Put one :class:`RedactingFilter` on each named logger (idempotent, from any thread). A
    logger's filters see its own records only, never its children's: name each logger."""
    with _filters_lock:
        for name in names:
            logger = logging.getLogger(name)
            if not any(isinstance(f, RedactingFilter) for f in logger.filters):
                logger.addFilter(RedactingFilter())


# On import: errors.py imports this module and every module that logs imports errors, so no
# record of turnwire's loggers is emitted before the filter is in place.
install_log_filter("turnwire", "turnwire.trace", "turnwire.emulate")
