"""``turnwire emulate``: the Responses API, offline, for anyone's tests.

A local server that speaks ``POST /v1/responses`` (streamed and not),
``/v1/responses/compact`` and ``/v1/responses/input_tokens``; checks every request with the
client's own preflight rules and the rules only a server sees, and answers a violation with
the API's status and error body (:mod:`turnwire.emulate.rules`, each rule with its evidence);
answers from scripts (:mod:`turnwire.emulate.script`); mints sealed ``encrypted_content``
(:mod:`turnwire.emulate.state`) and drops replayed reasoning whose history changed; and
reports prompt caching (:mod:`turnwire.emulate.caching`). It also records what a real endpoint
answers and replays it (:mod:`turnwire.emulate.recording`). ``docs/emulate.md`` shows it at
work; :mod:`turnwire.testing` wraps it for tests.
"""

from __future__ import annotations

from turnwire.emulate.engine import DROPPED_HEADER, MAX_BODY_BYTES, Emulator, Reply
from turnwire.emulate.recording import Recorder, Replayer
from turnwire.emulate.rules import RULES, ApiError, Rule
from turnwire.emulate.script import Answer, Script, load_script, script_from
from turnwire.emulate.server import Answerer, EmulatorServer

__all__ = [
    "DROPPED_HEADER",
    "MAX_BODY_BYTES",
    "RULES",
    "Answer",
    "Answerer",
    "ApiError",
    "Emulator",
    "EmulatorServer",
    "Recorder",
    "Replayer",
    "Reply",
    "Rule",
    "Script",
    "load_script",
    "script_from",
]
