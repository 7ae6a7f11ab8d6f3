"""Scripts: the answers the emulator gives, in a YAML or JSON file.

```yaml
answers:
  - match: {last_user: "weather"}     # a regular expression (RE2) searched in the text of
    reasoning: {summary: ["Looking up the weather"]}   # the last user message
    tool_calls:
      - {name: get_weather, arguments: {city: Paris}}
  - match: {last_item: function_call_output}   # the type of the last input item
    text: "It is sunny in Paris."
  - text: "A plain answer, given once, in its turn."
  - error: {status: 429, message: "Rate limit reached", retry_after: 1}
  - match: {last_user: "orders"}      # programmatic tool calling: a program, and the
    program:                          # calls of the client's functions it makes
      code: "return `${await tools.count_rows({table: 'orders'})} rows`;"
      calls:
        - {name: count_rows, arguments: {table: orders}}
default:
  text: "The answer when nothing else is left."
```

An answer with ``match`` answers every request it matches; one without answers once, in the
order of the file. For each request the first answer that applies, in file order, is taken:
a matching one, or the next unused one without ``match``. When none is left, ``default``
answers (else the emulator's own default text). An answer holds any of ``program_output``,
``reasoning``, ``text``, ``refusal``, ``tool_search`` (a search the client runs: ``{paths:
[crm]}``, or ``{arguments: {...}}`` for a tool with ``parameters`` of its own), ``program``
(then the calls it makes) and ``tool_calls`` (in that order in the output), or ``error`` (an
HTTP error; ``retry_after``
sets the ``retry-after`` header), and may end its stream early: ``cut_after: N`` closes the
connection after N events, ``stall_after: N`` stops sending after N events and keeps the
connection open.

A ``program_output`` (``{result: "42 rows"}``, ``status`` ``completed`` by default) ends the
program whose ``call_id`` it names; without one, the program of the same answer when that
program makes no calls (it then comes right after it), else the last program of the request's
input that no ``program_output`` ended yet (the answer to the request that replays the
program's answered calls, say).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping, Sequence
from typing import Any, Literal

import msgspec
import re2

from turnwire.errors import ConfigError
from turnwire.files.loading import DocumentKind

__all__ = [
    "DEFAULT_TEXT",
    "Answer",
    "ErrorAnswer",
    "Match",
    "Program",
    "ProgramOutput",
    "Reasoning",
    "Script",
    "Scripted",
    "ToolCall",
    "ToolSearchCall",
    "load_script",
]

DEFAULT_TEXT = "This is turnwire emulate's default answer."


class Match(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """When an answer with ``match`` applies: every condition given holds."""

    last_user: str | None = None
    last_item: str | None = None


class Reasoning(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """A reasoning item: its summary parts (each becomes one ``summary_text``)."""

    summary: tuple[str, ...] = ()


class ToolCall(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """A function call: ``arguments`` as an object (encoded as JSON) or a JSON string;
    ``namespace``, the namespace of a function declared inside one."""

    name: str
    arguments: dict[str, Any] | str = msgspec.field(default_factory=dict)
    call_id: str | None = None
    namespace: str | None = None


class ToolSearchCall(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """A search the model asks the client to run (``tool_search`` with ``execution:
    client``): the API's own arguments, ``paths``, or ``arguments`` of the tool's own
    ``parameters``."""

    paths: tuple[str, ...] = ()
    arguments: dict[str, Any] | None = None
    call_id: str | None = None


class Program(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """A program the model writes (programmatic tool calling): its JavaScript ``code``, and
    the calls of the client's functions it makes (each carries the program as its caller)."""

    code: str
    calls: tuple[ToolCall, ...] = ()
    call_id: str | None = None


class ProgramOutput(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """What a program returned when it ended. ``call_id``: the program's (by default, see the
    module's description)."""

    result: str = ""
    status: Literal["completed", "incomplete"] = "completed"
    call_id: str | None = None


class ErrorAnswer(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """An HTTP error answer."""

    status: int
    message: str = "The server had an error while processing your request."
    type: str = "server_error"
    code: str | None = None
    param: str | None = None
    retry_after: float | None = None


class Answer(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """One scripted answer."""

    match: Match | None = None
    reasoning: Reasoning | None = None
    text: str | None = None
    refusal: str | None = None
    tool_calls: tuple[ToolCall, ...] = ()
    tool_search: ToolSearchCall | None = None
    program: Program | None = None
    program_output: ProgramOutput | None = None
    error: ErrorAnswer | None = None
    cut_after: int | None = None
    stall_after: int | None = None


class Script(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """A whole script: the answers, and the one given when none is left."""

    answers: tuple[Answer, ...] = ()
    default: Answer | None = None


SCRIPT_FILES = DocumentKind("emulator script", ConfigError)


def load_script(*paths: str | os.PathLike[str]) -> Script:
    """The scripts at ``paths``, their answers in order (the last ``default`` given wins)."""
    answers: list[Answer] = []
    default: Answer | None = None
    for path in paths:
        name = os.fspath(path)
        tree = SCRIPT_FILES.parse(SCRIPT_FILES.read(path), name=name)
        script = script_from(tree, name=name)
        answers.extend(script.answers)
        default = script.default or default
    return Script(answers=tuple(answers), default=default)


def script_from(tree: object, *, name: str = "<script>") -> Script:
    """A :class:`Script` from plain data: a mapping, or a bare list of answers."""
    if isinstance(tree, Sequence) and not isinstance(tree, str):
        tree = {"answers": list(tree)}
    try:
        script = msgspec.convert(tree, Script)
    except msgspec.ValidationError as err:
        raise ConfigError(f"emulator script {name}: {err}", path=_path(str(err))) from None
    placed = [(f"answers[{i}]", answer) for i, answer in enumerate(script.answers)]
    for where, answer in [*placed, ("default", script.default)]:
        search = answer.tool_search if answer is not None else None
        if search is not None and search.paths and search.arguments is not None:
            raise ConfigError(
                f"emulator script {name}: {where}.tool_search gives both paths and arguments; "
                "give paths (the API's own arguments) or arguments, not both",
                path=f"$.{where}.tool_search",
            )
    for index, answer in enumerate(script.answers):
        pattern = answer.match.last_user if answer.match else None
        if pattern is not None:
            try:
                re2.compile(pattern)
            except re2.error as err:
                raise ConfigError(
                    f"emulator script {name}: answers[{index}].match.last_user is not a "
                    f"regular expression RE2 reads ({err})",
                    path=f"$.answers[{index}].match.last_user",
                ) from None
    return script


def _path(message: str) -> str:
    at = message.rfind("at `")
    return message[at + 4 : message.index("`", at + 4)] if at >= 0 else "$"


def _last_user_text(items: Sequence[Any]) -> str:
    for item in reversed(items):
        if isinstance(item, Mapping) and item.get("type", "message") == "message":
            if item.get("role") != "user":
                continue
            content = item.get("content")
            if isinstance(content, str):
                return content
            if isinstance(content, Sequence):
                return " ".join(
                    part["text"]
                    for part in content
                    if isinstance(part, Mapping) and isinstance(part.get("text"), str)
                )
    return ""


class Scripted:
    """A script being played: which answers without ``match`` were given. Thread-safe."""

    def __init__(self, script: Script | None = None) -> None:
        self._lock = threading.Lock()
        self.replace(script or Script())

    def replace(self, script: Script) -> None:
        """Play ``script`` from its start."""
        patterns = [
            re2.compile(a.match.last_user) if a.match and a.match.last_user is not None else None
            for a in script.answers
        ]
        with self._lock:
            self._script = script
            self._patterns = patterns
            self._used = [False] * len(script.answers)

    def next_answer(self, body: Mapping[str, Any]) -> Answer:
        """The answer to the request ``body``."""
        raw = body.get("input")
        items: Sequence[Any] = [{"role": "user", "content": raw}] if isinstance(raw, str) else []
        if isinstance(raw, list):
            items = raw
        last = items[-1] if items else None
        last_type = last.get("type", "message") if isinstance(last, Mapping) else None
        with self._lock:
            for index, answer in enumerate(self._script.answers):
                if answer.match is None:
                    if not self._used[index]:
                        self._used[index] = True
                        return answer
                    continue
                if answer.match.last_item is not None and answer.match.last_item != last_type:
                    continue
                pattern = self._patterns[index]
                if pattern is not None and pattern.search(_last_user_text(items)) is None:
                    continue
                return answer
            return self._script.default or Answer(text=DEFAULT_TEXT)
