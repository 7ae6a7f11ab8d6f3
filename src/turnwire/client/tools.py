"""The tool loop's executor: runs registered tool handlers and the built-in artifact tools.

A thread names tools, never the code that runs them. A tool's handler is, in this order: the
function of a function tool (``tools=``: the declaration and the handler are one object, see
:mod:`turnwire.model.functions`), the callable given through the Python API (``handlers=``),
the ``module:function`` of
``tools.handlers`` in configuration, the entry point of that name in the ``turnwire.tools``
group, and last the thread's own ``handler:``, only when it matches a glob pattern of
``tools.allow_thread_handlers`` (and then only a public function defined in the module it
names). :meth:`ToolExecutor.check` refuses a thread whose ``handler:`` is not allowed, before
any request is sent (:class:`~turnwire.errors.HandlerNotAllowedError`).

Before a handler runs, the call's arguments are checked against the tool's ``parameters``
(JSON Schema, Draft 2020-12; see :mod:`turnwire.client._arguments`): a mismatch is an error
result naming the field (``$.city: expected string``) and the handler does not run. So are
arguments the handler's signature cannot take (``got an unexpected keyword argument 'zip'``)
and, for a function tool, a value its conversion to the parameter's type refuses. Each such
mismatch is logged as a WARNING on the ``turnwire`` logger (kind ``tool-arguments``), and a
handler that raises as a WARNING with its traceback (kind ``tool-error``).

At run time nothing here raises (``KeyboardInterrupt`` aside): bad arguments, unknown tools, a
tool with no registered handler (the model may call a name the thread never declared),
exceptions, ``SystemExit`` included, a handler that runs past ``tools.timeout_s`` and a result
that cannot be serialised all become error results the model reads on the next iteration.
A handler returns text, any JSON-serialisable value, a :class:`~turnwire.model.records.Media` (or a
non-empty list of them: stored as a media result, rendered as ``input_image`` /
``input_file``) or an :class:`~turnwire.model.records.Artifact` (stored as it is, shown inline or
as a
handle by the renderer's rule). Text results up to ``render.tool_result_inline_max_bytes`` are
stored as text, larger ones as
artifacts (shown as handles, read with the ``artifact_*`` tools); no answer, the artifact
tools' included, may pass ``tools.max_result_bytes``.

Limits: a sync handler that times out keeps running in its (daemon) thread, abandoned; an
async handler that blocks the event loop (``time.sleep`` inside ``async def``) or ignores
cancellation cannot be bounded; ``os._exit`` ends the process. Handlers are trusted code.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import copy
import fnmatch
import importlib
import inspect
import json
import logging
import math
import queue
import re
import threading
import traceback
from collections.abc import Awaitable, Callable, Iterable, Mapping
from datetime import UTC, datetime
from importlib import metadata
from typing import TYPE_CHECKING, Any

import msgspec
import re2

from turnwire._redact import redact
from turnwire.client._arguments import ArgumentChecker
from turnwire.errors import (
    ConfigError,
    FileNotAllowedError,
    HandlerNotAllowedError,
    InputError,
    InvalidToolCallArgs,
    RenderError,
    ThreadFileError,
    ToolHandlerMissingError,
)
from turnwire.files.pointers import ContextAssembler, located_pointers
from turnwire.files.thread_file import THREAD_FILES
from turnwire.model.client_calls import (
    ComputerAction,
    ComputerResult,
    PatchResult,
    ShellCommandOutput,
)
from turnwire.model.functions import (
    ClientToolFunction,
    ToolFunction,
    called_tool,
    client_tool_search,
    handler_keys,
)
from turnwire.model.records import Artifact, Media, Thread, Tool, ToolCall, ToolCaller, ToolResult
from turnwire.model.tool_search import ToolSearch, load_paths, paths_of
from turnwire.rendering.artifact_tools import artifact_tools
from turnwire.stages.artifacts import ARTIFACT_TOOLS
from turnwire.wire.tools import (
    CLIENT_TOOL_TYPES,
    ClientTool,
    CustomTool,
    HostedTool,
    NamespaceTool,
    WireTool,
    client_search,
    client_tool_key,
)

if TYPE_CHECKING:
    from turnwire.config.settings import Settings

__all__ = ["ENTRY_POINT_GROUP", "SEARCH_KEY", "ToolExecutor", "artifact_tools", "parse_arguments"]

logger = logging.getLogger("turnwire")

ENTRY_POINT_GROUP = "turnwire.tools"
MAX_LINES = 10_000
MAX_PATTERN = 1_000
_IDENTIFIER = re.compile(r"[A-Za-z][A-Za-z0-9_]*")


class _NotJson(ValueError):
    """A value Python's ``json`` reads and JSON has not: ``NaN``, ``Infinity``, ``1e999``."""


def _no_constant(name: str) -> Any:
    raise _NotJson(f"{name} is not a JSON number")


def _finite_float(text: str) -> float:
    number = float(text)
    if not math.isfinite(number):
        raise _NotJson(f"{text} is beyond the range of a float")
    return number


def parse_arguments(raw: str) -> tuple[dict[str, Any], str | None]:
    """``(arguments, None)`` or ``({}, error text)`` for arguments the model got wrong, or
    that the thread file could not hold (an integer outside the 64-bit range, a number
    beyond a float's, nesting past the thread file's limit): those are never recorded."""
    if not raw.strip():
        return {}, None
    try:
        value = json.loads(raw, parse_constant=_no_constant, parse_float=_finite_float)
    except (ValueError, RecursionError) as err:  # JSONDecodeError, a 5,000-digit integer
        reason = (
            "not valid JSON"
            if isinstance(err, json.JSONDecodeError)
            else f"out of bounds ({err})"
            if isinstance(err, _NotJson)
            else "out of bounds"
        )
        error = InvalidToolCallArgs(f"Tool arguments are {reason}. Raw value: {raw[:2000]}")
        return {}, error.message
    if isinstance(value, dict):
        try:  # a lone surrogate (`"\\ud800"`): Python's json reads it, no UTF-8 holds it
            msgspec.json.encode(value)
        except UnicodeEncodeError:
            error = InvalidToolCallArgs(
                "Tool arguments are out of bounds (a string holds a lone surrogate, which no "
                f"UTF-8 text can). Raw value: {raw[:2000]}"
            )
            return {}, error.message
        try:  # where a thread file keeps them: $.tool_calls[i].args
            THREAD_FILES.check_tree(value, name="arguments", data=b"", path="$", depth=4)
        except ThreadFileError as err:
            problem = str(err).partition(": ")[2] or str(err)
            error = InvalidToolCallArgs(
                f"Tool arguments are out of bounds ({problem}). Raw value: {raw[:2000]}"
            )
            return {}, error.message
    if not isinstance(value, dict):
        kind = {list: "array", str: "string", bool: "boolean", type(None): "null"}.get(
            type(value), "number"
        )
        error = InvalidToolCallArgs(
            f"Tool arguments must be a JSON object; received {kind}. Raw value: {raw[:2000]}"
        )
        return {}, error.message
    return value, None


class _Unserialisable(Exception):
    pass


def _refused_caller(name: str, caller: ToolCaller, allowed: tuple[ToolCaller, ...]) -> str:
    """The error result of a call from a ``caller`` that tool ``name`` does not allow."""
    by = "a program" if caller == "programmatic" else "the model directly"
    return (
        f"Tool {name} cannot be called by {by}: its allowed_callers are "
        f"{', '.join(allowed)}. It did not run."
    )


def _as_text(value: Any) -> str:
    """A handler's result as text; :class:`_Unserialisable` when it has no JSON form."""
    try:
        if value is None:
            return ""
        if isinstance(value, str):
            return str.__str__(value)
        if isinstance(value, bytes | bytearray):
            return bytes(value).decode("utf-8", "replace")
        if isinstance(value, msgspec.Struct):
            return msgspec.json.encode(value).decode()
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    except Exception as err:  # TypeError, ValueError (NaN, cycles), RecursionError, a hook's own
        raise _Unserialisable(f"{type(value).__name__} ({type(err).__name__})") from err


def _shown(value: str, limit: int = 200) -> str:
    """A thread's value in a message: quoted, escaped onto one line, cut at ``limit``."""
    return repr(value[:limit]) + ("..." if len(value) > limit else "")


def _describe(err: BaseException) -> str:
    try:
        text = str(err)
    except Exception:
        text = "(its message cannot be shown)"
    return f"{type(err).__name__}: {text}"[:2000]


class _TimedOut(Exception):
    pass


def _client_subject(kind: str, key: str) -> str:
    """What a missing handler would answer: ``custom tool 'x' calls``, ``shell calls``."""
    return f"custom tool {_shown(key)} calls" if kind == "custom" else f"{kind} calls"


def _how_to_register(key: str) -> str:
    return (
        f"register one under {_shown(key)}: handlers={{{key!r}: ...}} or tools=[...] in "
        f"Python, tools.handlers.{key} in configuration, or a turnwire.tools entry point "
        f"named {key}"
    )


def _wrong_type(name: str, value: Any, wanted: str) -> str:
    return f"Tool {name} failed: its handler returned a {type(value).__name__}, not {wanted}"


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


class _Settled:
    """What a handler ended with: a value or an exception (``SystemExit`` too)."""

    __slots__ = ("error", "value")

    def __init__(self, value: Any = None, error: BaseException | None = None) -> None:
        self.value = value
        self.error = error

    def unwrap(self) -> Any:
        if self.error is not None:
            raise self.error
        return self.value


def waiting_call_error(index: int, call: ToolCall) -> ToolHandlerMissingError:
    """The error of a client-executed call (``$.tool_calls[index]``) that waits for an answer
    no registered handler can give."""
    where = f"$.tool_calls[{index}]"
    return ToolHandlerMissingError(
        f"{where}: the model's {call.kind} call {_shown(call.call_id)} waits for its answer, "
        f"and no handler is registered for {_client_subject(call.kind, call.tool)}; "
        f"{_how_to_register(call.tool)} (the call stays in the thread: a run with the handler "
        "answers it)",
        path=where,
        tool=call.tool,
        kind=call.kind,
        call_id=call.call_id,
    )


class _Workers:
    """Daemon threads that run sync handlers, kept for the next call: a thread started per
    call cost a scheduling round trip each (1 ms and more on a busy machine, per tool call).

    A worker that finished its call waits up to ``idle_s`` for another, then ends; at most
    ``max_idle`` wait at once (the others end at once), so the threads kept are bounded and go
    away when the calls stop. A worker whose call never returns is never handed another: it is
    abandoned, as a thread per call was. Each call runs in its own copied context; what a
    handler keeps in thread-local storage may be seen by a later call on the same worker.
    """

    def __init__(self, *, max_idle: int = 8, idle_s: float = 30.0) -> None:
        self.max_idle = max_idle
        self.idle_s = idle_s
        self._lock = threading.Lock()
        self._idle: list[queue.SimpleQueue[Callable[[], Callable[[], None]]]] = []

    @property
    def idle(self) -> int:
        """How many workers wait for a call now."""
        with self._lock:
            return len(self._idle)

    def submit(self, job: Callable[[], Callable[[], None]]) -> None:
        """Run ``job`` (which must not raise) on an idle worker, or on a new one; what it
        returns is called once the worker waits for the next call again (so the caller, told
        then, finds it idle for its next call)."""
        with self._lock:
            inbox = self._idle.pop() if self._idle else None
        if inbox is not None:
            inbox.put(job)
            return
        inbox = queue.SimpleQueue()
        inbox.put(job)
        threading.Thread(
            target=self._serve, args=(inbox,), name="turnwire-tool", daemon=True
        ).start()

    def _serve(self, inbox: queue.SimpleQueue[Callable[[], Callable[[], None]]]) -> None:
        job = inbox.get()
        while True:
            then = job()
            with self._lock:
                kept = len(self._idle) < self.max_idle
                if kept:
                    self._idle.append(inbox)
            then()
            if not kept:
                return
            try:
                job = inbox.get(timeout=self.idle_s)
            except queue.Empty:
                with self._lock:
                    if inbox in self._idle:  # nobody took it: end
                        self._idle.remove(inbox)
                        return
                job = inbox.get()  # taken as the wait ended: its call is on the way


_WORKERS = _Workers()


async def _in_daemon_thread(function: Callable[[], Any], timeout_s: float) -> Any:
    """``function()`` on a daemon worker (:class:`_Workers`), waited for at most ``timeout_s``.

    Not ``asyncio.to_thread``: the default executor's threads are joined when the loop and the
    interpreter shut down, so a handler that never returns would keep the process alive after
    its call timed out. A daemon worker is abandoned instead.
    """
    loop = asyncio.get_running_loop()
    settled: asyncio.Future[_Settled] = loop.create_future()
    context = contextvars.copy_context()

    def settle(outcome: _Settled) -> None:
        if not settled.done():
            settled.set_result(outcome)

    def work() -> Callable[[], None]:
        try:
            outcome = _Settled(value=context.run(function))
        except BaseException as err:  # SystemExit and all: reported, never raised here
            outcome = _Settled(error=err)

        def report() -> None:
            # RuntimeError: the loop closed while the handler ran, and nobody waits any more.
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(settle, outcome)

        return report

    _WORKERS.submit(work)
    try:
        outcome = await asyncio.wait_for(settled, timeout_s)
    except TimeoutError as err:
        raise _TimedOut from err
    return outcome.unwrap()  # outside the `try`: a handler's own TimeoutError is its failure


async def _bounded(awaitable: Awaitable[Any], timeout_s: float) -> Any:
    """Await ``awaitable`` for at most ``timeout_s``; cancel it and walk away after that.

    The awaitable runs in a task of its own that settles every exception into a value: a
    ``SystemExit`` raised in a task would otherwise escape through the event loop.
    """

    async def guarded() -> _Settled:
        try:
            return _Settled(value=await awaitable)
        except (KeyboardInterrupt, asyncio.CancelledError):
            raise
        except BaseException as err:
            return _Settled(error=err)

    task = asyncio.ensure_future(guarded())
    try:
        done, _ = await asyncio.wait({task}, timeout=timeout_s)
    except asyncio.CancelledError:
        task.cancel()  # the run is cancelled: so is its handler
        raise
    if not done:
        task.cancel()  # not awaited: a handler that ignores cancellation must not hang the run
        raise _TimedOut
    return task.result().unwrap()


def _whole(args: Mapping[str, Any], key: str, default: int, low: int, high: int) -> int:
    """A whole-number argument, clamped to ``[low, high]``; ``ValueError`` for anything else."""
    value = args.get(key, default)
    if isinstance(value, float) and math.isinf(value):
        return high if value > 0 else low
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        shown = json.dumps(value)[:40] if isinstance(value, str | bool | float) else "a value"
        raise ValueError(f"{key} must be a whole number, not {shown}")
    return min(max(value, low), high)


def _grep_pattern(value: object) -> Any:
    if not isinstance(value, str):
        raise ValueError("pattern must be a string")
    if len(value) > MAX_PATTERN:
        raise ValueError(f"pattern is longer than {MAX_PATTERN} characters")
    options = re2.Options()
    options.log_errors = False
    options.max_mem = 8 * 2**20
    try:
        return re2.compile(value, options=options)
    except re2.error as err:
        detail = err.args[0].decode() if err.args and isinstance(err.args[0], bytes) else err
        raise ValueError(
            f"pattern is not a valid RE2 expression ({detail}); backreferences and lookaround "
            "are not supported"
        ) from err


SEARCH_KEY = "tool_search"
"""What the handler of a client-executed tool search is registered under."""


def _search_paths(value: Any, search: ToolSearch) -> list[str]:
    """The paths that load what a ``tool_search`` handler's ``value`` names: ``None``
    (nothing), or a list of paths, declarations as the API takes them (mappings) and
    turnwire's declaration objects, each a deferred tool the request declares; anything else
    is a ``ValueError`` (or ``TypeError``) naming its place."""
    if value is None:
        return []
    if isinstance(value, str | bytes | Mapping) or not isinstance(value, Iterable):
        raise TypeError(
            f"expected a list of paths or tool declarations, got {type(value).__name__}"
        )
    paths: list[str] = []
    for index, entry in enumerate(value):
        if isinstance(entry, str):
            paths.append(entry)
            continue
        try:
            tool = msgspec.convert(entry, WireTool) if isinstance(entry, Mapping) else entry
            if not isinstance(tool, WireTool):
                raise TypeError(f"a {type(entry).__name__}")
            plain = msgspec.json.decode(msgspec.json.encode(tool))
            paths.extend(paths_of(plain, search.declared))
        except (msgspec.ValidationError, TypeError, ValueError) as err:
            raise ValueError(f"[{index}]: {err}") from None
    return paths


class ToolExecutor:
    """Runs one tool call at a time against a thread's tools.

    :param inline_max_bytes: results up to this size are stored as text.
    :param functions: tool name → function tool (``tools=``, see
        :mod:`turnwire.model.functions`); its own handler, before any other.
    :param handlers: tool name → callable (the Python API); wins over the rest.
    :param registered: tool name → ``module:function`` (``tools.handlers``).
    :param allow_thread_handlers: glob patterns a thread's own ``handler:`` must match.
    :param load_entrypoints: look up the ``turnwire.tools`` entry points.
    :param timeout_s: how long one handler call may run.
    :param max_result_bytes: the largest result kept; a larger one is an error result.
    :param configured: the tools the configuration declares by type (``tools.hosted``): a
        client-executed one needs a handler (:meth:`check`).
    """

    def __init__(
        self,
        *,
        inline_max_bytes: int,
        functions: Mapping[str, ToolFunction[..., Any] | ClientToolFunction[Any]] | None = None,
        handlers: Mapping[str, Callable[..., Any]] | None = None,
        registered: Mapping[str, str] | None = None,
        allow_thread_handlers: Iterable[str] = (),
        load_entrypoints: bool = False,
        timeout_s: float = 30.0,
        max_result_bytes: int = 8 * 2**20,
        configured: Iterable[HostedTool] = (),
    ) -> None:
        self.inline_max_bytes = inline_max_bytes
        self.configured = tuple(configured)
        self.functions: dict[str, ToolFunction[..., Any] | ClientToolFunction[Any]] = {}
        self.handlers = dict(handlers or {})
        self.registered = dict(registered or {})
        self.allow_thread_handlers = tuple(allow_thread_handlers)
        self.load_entrypoints = load_entrypoints
        self.timeout_s = timeout_s
        self.max_result_bytes = max_result_bytes
        self._imported: dict[str, Callable[..., Any]] = {}
        self._arguments = ArgumentChecker()
        self._entry_points: dict[str, metadata.EntryPoint] | None = None
        self._signatures: dict[int, tuple[Callable[..., Any], inspect.Signature | None]] = {}
        self._add_functions(functions or {})

    @classmethod
    def from_settings(
        cls,
        settings: Settings,
        *,
        handlers: Mapping[str, Callable[..., Any]] | None = None,
        functions: Mapping[str, ToolFunction[..., Any] | ClientToolFunction[Any]] | None = None,
    ) -> ToolExecutor:
        """An executor with the ``tools:`` settings and the Python API's ``handlers`` and
        function tools."""
        tools = settings.tools
        return cls(
            inline_max_bytes=settings.render.tool_result_inline_max_bytes,
            functions=functions,
            handlers=handlers,
            registered=tools.handlers,
            allow_thread_handlers=tools.allow_thread_handlers,
            load_entrypoints=tools.load_entrypoints,
            timeout_s=tools.timeout_s,
            max_result_bytes=tools.max_result_bytes,
            configured=tools.hosted,
        )

    def with_functions(
        self, functions: Mapping[str, ToolFunction[..., Any] | ClientToolFunction[Any]]
    ) -> ToolExecutor:
        """This executor with ``functions`` (one run's ``tools=``) added to its own.

        :raises turnwire.errors.InputError: a name it runs a function or a handler of already.
        """
        if not functions:
            return self
        extended = copy.copy(self)  # shares the imports, entry points and schema checks
        extended.functions = dict(self.functions)
        extended._add_functions(functions)
        return extended

    def _add_functions(
        self, functions: Mapping[str, ToolFunction[..., Any] | ClientToolFunction[Any]]
    ) -> None:
        built_in = dict(ARTIFACT_TOOLS)
        for name, function in functions.items():
            held = self.functions.get(name)
            if held is function:
                continue
            clash = (
                "a built-in artifact tool has that name"
                if name in built_in
                else "handlers= gives a handler of that name"
                if name in self.handlers
                else "another function of that name is given already"
                if held is not None
                else None
            )
            if clash is not None:
                raise InputError(
                    f"tools=: the function tool {name!r} clashes: {clash}; rename it "
                    "(@turnwire.tool(name=...))"
                )
            self.functions[name] = function

    # ------------------------------------------------------------------ resolution

    def check(self, thread: Thread) -> None:
        """Refuse a thread that names a handler configuration does not allow.

        A tool with a registered handler is fine whatever its ``handler:`` says (the
        registration runs); a tool with neither is fine too (a call gets an error result).

        Refuse too a client-executed call the thread holds without its answer, or a
        client-executed tool the thread or the configuration declares, when no handler is
        registered for it: such a call could never be answered (and the API refuses a request
        that holds a call without its output).

        :raises HandlerNotAllowedError: naming the first such ``$.tools[i].handler``.
        :raises ToolHandlerMissingError: naming the first such call or declaration.
        """
        self._check_client_tools(thread)
        for index, tool in enumerate(thread.tools):
            if tool.handler is None or self._registered(tool.name):
                continue
            problem = self._thread_handler_problem(tool.handler)
            if problem is not None:
                where = f"$.tools[{index}].handler"
                raise HandlerNotAllowedError(
                    f"{where}: the thread names {_shown(tool.handler)} as the code of tool "
                    f"{_shown(tool.name)}, which {problem}; a thread names tools, not code: "
                    "register the handler (handlers=, tools.handlers or the turnwire.tools "
                    "entry points) or allow it in tools.allow_thread_handlers",
                    path=where,
                    tool=tool.name,
                    handler=tool.handler,
                )

    def _check_client_tools(self, thread: Thread) -> None:
        for index, call in enumerate(thread.tool_calls):
            if call.payload is None or call.result is not None:
                continue
            if not self._registered(self._key(call.tool, call.namespace)):
                raise waiting_call_error(index, call)
        self._check_search_name(thread)
        searched = client_tool_search(thread, self.configured)
        # (a function of tools= named tool_search is a function, not the search's handler)
        if searched is not None and not self._registered(SEARCH_KEY, functions=False):
            raise ToolHandlerMissingError(
                f"{searched}: a client-executed tool search (execution: client) with "
                "parameters of its own is declared, and no handler is registered to answer "
                "it; register one under 'tool_search': handlers={'tool_search': ...} in "
                "Python, tools.handlers.tool_search in configuration, or a turnwire.tools "
                "entry point named tool_search; or leave out `parameters` (the built-in "
                "search then loads the deferred tools the model names by path)",
                path=searched,
                tool=SEARCH_KEY,
                kind=SEARCH_KEY,
            )
        declared = [(f"$.tools.hosted[{i}]", t) for i, t in enumerate(self.configured)]
        declared += [(f"$.hosted_tools[{i}]", t) for i, t in enumerate(thread.hosted_tools)]
        for where, tool in declared:
            if isinstance(tool, NamespaceTool):
                self._check_namespace(where, tool)
                continue
            if not isinstance(tool, tuple(CLIENT_TOOL_TYPES.values())):
                continue
            client: ClientTool = tool  # type: ignore[assignment]
            key = client_tool_key(client)
            if self._registered(key):
                continue
            kind = "computer" if key == "computer" else str(client.__struct_config__.tag)
            raise ToolHandlerMissingError(
                f"{where}: {_client_subject(kind, key)} is declared, and no handler is "
                f"registered to answer its calls; {_how_to_register(key)}, or leave the tool "
                "out",
                path=where,
                tool=key,
                kind=kind,
            )

    def _check_search_name(self, thread: Thread) -> None:
        """Refuse a tool named ``tool_search`` (a function, a custom tool, a namespace's tool
        whose handler falls back to its name alone) beside a client-executed tool search: a
        handler registered under that name would answer both. A function of ``tools=`` is
        its own handler and shares nothing."""
        hosted = [(f"$.tools.hosted[{i}]", t) for i, t in enumerate(self.configured)]
        hosted += [(f"$.hosted_tools[{i}]", t) for i, t in enumerate(thread.hosted_tools)]
        if not any(client_search(tool) for _, tool in hosted):
            return
        named: list[tuple[str, str, str | None]] = [
            (f"$.tools[{i}].name", t.name, None) for i, t in enumerate(thread.tools)
        ]
        for where, tool in hosted:
            if isinstance(tool, CustomTool):
                named.append((f"{where}.name", tool.name, None))
            elif isinstance(tool, NamespaceTool):
                named += [
                    (f"{where}.tools[{j}].name", member.name, tool.name)
                    for j, member in enumerate(tool.tools)
                ]
        for where, name, namespace in named:
            key = self._key(name, namespace)
            if name != SEARCH_KEY or key != SEARCH_KEY or key in self.functions:
                continue
            message = (
                f"{where}: a tool named tool_search is declared beside a client-executed tool "
                "search, and a handler registered under tool_search would answer both; rename "
                "the tool"
            )
            if where.startswith("$.tools.hosted"):
                raise ConfigError(message, path=where)
            raise ThreadFileError(message, path=where)

    def _check_namespace(self, where: str, namespace: NamespaceTool) -> None:
        """Refuse a custom tool of ``namespace`` that no handler answers."""
        for place, member in enumerate(namespace.tools):
            if not isinstance(member, CustomTool):
                continue
            key = self._key(member.name, namespace.name)
            if self._registered(key):
                continue
            qualified = f"{namespace.name}.{member.name}"
            raise ToolHandlerMissingError(
                f"{where}.tools[{place}]: custom tool {_shown(qualified)} is declared, and no "
                f"handler is registered to answer its calls; {_how_to_register(qualified)} "
                f"(or under {_shown(member.name)}), or leave the tool out",
                path=f"{where}.tools[{place}]",
                tool=qualified,
                kind="custom",
            )

    def _registered(self, name: str, *, functions: bool = True) -> bool:
        """Whether a handler is registered under ``name`` (without ``functions``, the function
        tools of ``tools=`` are not looked at, as in :meth:`_client_handler`)."""
        return (
            (functions and name in self.functions)
            or name in self.handlers
            or name in self.registered
            or name in self._entries()
        )

    def _entries(self) -> dict[str, metadata.EntryPoint]:
        if self._entry_points is None:
            found: dict[str, metadata.EntryPoint] = {}
            if self.load_entrypoints:
                for entry_point in metadata.entry_points(group=ENTRY_POINT_GROUP):
                    found.setdefault(entry_point.name, entry_point)
            self._entry_points = found
        return self._entry_points

    def _thread_handler_problem(self, handler: str) -> str | None:
        """Why a thread's ``handler:`` may not run, or ``None`` when it may."""
        if not any(fnmatch.fnmatchcase(handler, p) for p in self.allow_thread_handlers):
            return "tools.allow_thread_handlers does not allow"
        module_name, _, attribute = handler.partition(":")
        parts = [*module_name.split("."), *attribute.split(".")]
        if not attribute or not all(_IDENTIFIER.fullmatch(part) for part in parts):
            return "is not `module:function` with public names only"
        return None

    def _key(self, name: str, namespace: str | None) -> str:
        """What the handler of a call of ``name`` in ``namespace`` is registered under: the
        first registered of :func:`~turnwire.model.functions.handler_keys` (``crm.lookup``,
        then ``lookup``), else ``name``."""
        return next((key for key in handler_keys(name, namespace) if self._registered(key)), name)

    def _handler(self, tool: Tool, key: str | None = None) -> Callable[..., Any]:
        """The callable of ``tool``, registered under ``key`` (default: its name);
        ``LookupError`` (a message for the model) when none."""
        key = key or tool.name
        if key in self.functions:
            return self.functions[key]
        if key in self.handlers:
            return self.handlers[key]
        if key in self.registered:
            return self._import(self.registered[key], own_module=False)
        entry_point = self._entries().get(key)
        if entry_point is not None:
            cached = self._imported.get(f"entry-point:{key}")
            if cached is None:
                target = entry_point.load()
                if not callable(target):
                    raise LookupError(f"entry point {entry_point.value!r} is not callable")
                cached = self._imported[f"entry-point:{key}"] = target
            assert callable(cached)
            return cached
        if tool.handler is None:
            raise LookupError(
                "it has no handler (register one: handlers=, tools.handlers or the "
                "turnwire.tools entry points)"
            )
        problem = self._thread_handler_problem(tool.handler)
        if problem is not None:
            raise LookupError(f"its handler {_shown(tool.handler)} {problem}")
        return self._import(tool.handler, own_module=True)

    def _import(self, handler: str, *, own_module: bool) -> Callable[..., Any]:
        cached = self._imported.get(handler)
        if cached is not None:
            return cached
        module_name, _, attribute = handler.partition(":")
        if not attribute:
            raise LookupError(f"handler {_shown(handler)} is not `module:function`")
        target: Any = importlib.import_module(module_name)
        for part in attribute.split("."):
            target = getattr(target, part)
        if not callable(target):
            raise LookupError(f"handler {_shown(handler)} is not callable")
        if own_module and getattr(target, "__module__", None) != module_name:
            # An allowed module's imports (`os.system` in `mypkg.tools`) are not its handlers.
            raise LookupError(f"handler {_shown(handler)} is not defined in {module_name}")
        function: Callable[..., Any] = target
        self._imported[handler] = function
        return function

    # ------------------------------------------------------------------ execution

    async def execute(
        self, call: ToolCall, thread: Thread, *, files: ContextAssembler | None = None
    ) -> ToolCall:
        """``call`` with its result (an error result when anything went wrong).

        :param files: reads artifact pointers (default: one that allows no pointer).
        """
        if call.payload is not None:
            return await self._execute_client(call, files or ContextAssembler())
        name = call.tool
        caller: ToolCaller = "direct" if call.caller is None else "programmatic"
        if call.raw_args is not None:  # the text the model sent, which `args` could not hold
            args, error = parse_arguments(call.raw_args)
            if error is not None:
                return self._done(call, error, True)
            call = msgspec.structs.replace(call, args=args)  # replayed as raw_args still
        if name in dict(ARTIFACT_TOOLS):
            if caller != "direct":
                return self._done(call, _refused_caller(name, caller, ("direct",)), True)
            reader = files or ContextAssembler()
            try:  # a grep over a huge artifact is held to the handlers' time limit too
                text, failed = await _in_daemon_thread(
                    lambda: self._artifact(name, call.args, thread, reader), self.timeout_s
                )
            except _TimedOut:
                return self._done(
                    call,
                    f"{name} failed: it did not finish within {self.timeout_s:g} s "
                    "(tools.timeout_s); ask for fewer lines",
                    True,
                )
            if len(text.encode("utf-8", "surrogatepass")) > self.max_result_bytes:
                text, failed = (
                    f"{name}: the answer is over {self.max_result_bytes} bytes "
                    "(tools.max_result_bytes); ask for fewer lines",
                    True,
                )
            return self._done(call, text, failed, inline=True)
        tool = called_tool(thread, name, call.namespace, self.configured)
        if tool is None:
            names = sorted(t.name for t in thread.tools)
            shown = name if call.namespace in (None, name) else f"{call.namespace}.{name}"
            text = (
                f"Tool not found: {shown}. Available tools: {', '.join(names)}."
                if names
                else f"Tool not found: {shown}. No tools are available this turn."
            )
            return self._done(call, text, True)
        if not tool.allows(caller):
            return self._done(call, _refused_caller(name, caller, tool.callers), True)
        try:
            handler = self._handler(tool, self._key(name, call.namespace))
        except (ImportError, AttributeError, LookupError) as err:
            return self._done(call, f"Tool {name} cannot run: {err}", True)
        except Exception as err:  # an entry point or module that fails while it loads
            return self._done(call, f"Tool {name} cannot run: {_describe(err)}", True)
        invalid = self._arguments.check(name, tool.parameters, call.args)
        positional: tuple[Any, ...] = ()
        keywords: dict[str, Any] = call.args
        if invalid is None and isinstance(handler, ToolFunction):
            try:
                positional, keywords = handler.arguments(call.args)
            except InvalidToolCallArgs as err:
                invalid = err.message
            handler = handler.function
        elif invalid is None:
            invalid = self._unbound(name, handler, call.args)
        if invalid is not None:
            logger.warning(
                "tool %s cannot take the model's arguments; the call is an error result: %s",
                name,
                _LONE_SURROGATE.sub("\ufffd", invalid),
                extra={"kind": "tool-arguments"},
            )
            return self._done(call, invalid, True)
        ran = await self._guarded(call, name, handler, keywords, positional)
        if isinstance(ran, ToolCall):
            return ran
        return self._answer(call, name, ran.value, files or ContextAssembler())

    async def _guarded(
        self,
        call: ToolCall,
        name: str,
        handler: Callable[..., Any],
        keywords: dict[str, Any],
        positional: tuple[Any, ...],
        *,
        failed: str = "the call is an error result the model reads",
    ) -> _Settled | ToolCall:
        """``handler`` called within ``tools.timeout_s``: what it returned, or ``call``
        answered with the error result (its failure logged, with its traceback, and with
        ``failed``: what becomes of the call)."""
        try:
            return _Settled(value=await self._invoke(handler, keywords, positional))
        except _TimedOut:
            logger.warning(
                "tool %s ran past tools.timeout_s (%g s); %s",
                name,
                self.timeout_s,
                failed,
                extra={"kind": "tool-timeout"},
            )
            return self._done(
                call, f"Tool {name} failed: it did not finish within {self.timeout_s:g} s", True
            )
        except KeyboardInterrupt:
            raise
        except asyncio.CancelledError:
            current = asyncio.current_task()
            if current is not None and current.cancelling():
                raise  # the run itself is being cancelled
            return self._done(call, f"Tool {name} failed: it was cancelled", True)
        except BaseException as err:  # SystemExit too: a handler never ends the process
            # The traceback in the message, redacted and with no lone surrogate a log stream
            # could not encode (exc_info would format the exception's own text as it is).
            trace = _LONE_SURROGATE.sub("\ufffd", redact("".join(traceback.format_exception(err))))
            logger.warning(
                "tool %s raised %s; %s\n%s",
                name,
                type(err).__name__,
                failed,
                trace.rstrip(),
                extra={"kind": "tool-error"},
            )
            return self._done(call, redact(f"Tool {name} failed: {_describe(err)}"), True)

    def _answer(self, call: ToolCall, name: str, value: Any, files: ContextAssembler) -> ToolCall:
        """``call`` answered with a handler's ``value``: media, an artifact, text or JSON."""
        special = self._structured(call, name, value, files)
        if special is not None:
            return special
        try:
            text = _as_text(value)
        except _Unserialisable as err:
            return self._done(
                call, f"Tool {name} failed: its result, a {err}, cannot be serialised", True
            )
        if len(text.encode("utf-8", "surrogatepass")) > self.max_result_bytes:
            return self._done(
                call,
                f"Tool {name} failed: its result is over {self.max_result_bytes} bytes "
                "(tools.max_result_bytes)",
                True,
            )
        return self._done(call, text, False)

    # ------------------------------------------------------------------ client-executed calls

    def answers(self, call: ToolCall) -> bool:
        """Whether a handler is registered for ``call`` (a client-executed call: under its
        custom tool's name or its kind; a function call: always, its result says why not)."""
        return call.payload is None or self._registered(self._key(call.tool, call.namespace))

    def _client_handler(self, key: str, *, functions: bool = True) -> Callable[..., Any] | None:
        """The handler registered under ``key`` (a custom tool's name or a kind), ``None``
        when none is. A thread never names the code of a client-executed tool. Without
        ``functions``, the function tools of ``tools=`` are not looked at (a function named
        ``tool_search`` is a function, never the search's handler)."""
        function = self.functions.get(key) if functions else None
        if function is not None:
            return function.function
        if key in self.handlers:
            return self.handlers[key]
        if key in self.registered:
            return self._import(self.registered[key], own_module=False)
        entry_point = self._entries().get(key)
        if entry_point is None:
            return None
        cached = self._imported.get(f"entry-point:{key}")
        if cached is None:
            target = entry_point.load()
            if not callable(target):
                raise LookupError(f"entry point {entry_point.value!r} is not callable")
            cached = self._imported[f"entry-point:{key}"] = target
        return cached

    async def _execute_client(self, call: ToolCall, files: ContextAssembler) -> ToolCall:
        """A client-executed call answered by its handler, with the call's typed input (the
        payload) as its one argument, under the bounds a function's handler runs under."""
        name, kind, payload = call.tool, call.kind, call.payload
        try:
            handler = self._client_handler(self._key(name, call.namespace))
        except (ImportError, AttributeError, LookupError) as err:
            return self._done(call, f"Tool {name} cannot run: {err}", True)
        except Exception as err:  # an entry point or module that fails while it loads
            return self._done(call, f"Tool {name} cannot run: {_describe(err)}", True)
        if handler is None:
            # Only a call no declaration announced gets here (check() refuses the rest before
            # any request): it is answered, never dropped, and the log says why.
            logger.warning(
                "the model made a %s call %s and no handler is registered for %s; it is "
                "answered with an error result",
                kind,
                _shown(call.call_id),
                _client_subject(kind, name),
                extra={"kind": "tool-handler-missing"},
            )
            return self._done(
                call,
                f"Tool {name} cannot run: no handler is registered for "
                f"{_client_subject(kind, name)}. It did not run.",
                True,
            )
        ran = await self._guarded(call, name, handler, {}, (payload,))
        if isinstance(ran, ToolCall):
            return ran
        value = ran.value
        if kind == "custom":
            return self._answer(call, name, value, files)
        if kind == "shell":
            return self._shell_answer(call, value)
        if kind == "apply_patch":
            if isinstance(value, PatchResult):
                return self._bounded_text(call, name, value.output, value.status == "failed")
            if value is None or isinstance(value, str):
                return self._bounded_text(call, name, value or "", False)
            return self._done(call, _wrong_type(name, value, "a PatchResult or a text"), True)
        if kind == "computer":
            return self._computer_answer(call, name, value, files)
        if not isinstance(value, str):  # local_shell
            return self._done(call, _wrong_type(name, value, "a text"), True)
        return self._bounded_text(call, name, value, False)

    # ------------------------------------------------------------------ client tool search

    async def search(self, search: ToolSearch) -> list[dict[str, Any]]:
        """The declarations that answer the client-executed tool search ``search``: what the
        handler registered under ``tool_search`` returns, else what the built-in search loads
        for its paths (:func:`turnwire.model.tool_search.load_paths`).

        Nothing here raises (``KeyboardInterrupt`` aside): a handler that raises, runs past
        ``tools.timeout_s`` or returns something that is no list of tools, arguments that hold
        no paths, and an answer over ``tools.max_result_bytes``, are each an answer that
        loads nothing, logged as a WARNING (kind ``tool-search``, or the kind a function
        handler's failure has). A path that names nothing deferred is logged and loads nothing.
        """
        try:
            handler = self._client_handler(SEARCH_KEY, functions=False)
        except Exception as err:  # an entry point or module that fails while it loads
            logger.warning(
                "the tool_search handler cannot run (%s); the search %s loads nothing",
                _describe(err),
                _shown(str(search.call_id)),
                extra={"kind": "tool-search"},
            )
            return []
        if handler is None:
            if search.paths is None:
                logger.warning(
                    "the model's tool search %s has no paths (arguments %s); it loads nothing "
                    "(a tool_search tool with its own parameters needs a handler registered "
                    "under tool_search)",
                    _shown(str(search.call_id)),
                    _shown(_as_text(search.arguments)),
                    extra={"kind": "tool-search"},
                )
                return []
            return self._loaded(search, search.paths)
        placeholder = ToolCall(
            id=search.call_id or SEARCH_KEY, tool=SEARCH_KEY, created_at=datetime.now(UTC)
        )
        ran = await self._guarded(
            placeholder, SEARCH_KEY, handler, {}, (search,), failed="the search loads nothing"
        )
        if isinstance(ran, ToolCall):  # it raised or timed out: logged, with its traceback
            return []
        try:
            paths = _search_paths(ran.value, search)
        except (TypeError, ValueError) as err:
            logger.warning(
                "the tool_search handler's answer to %s is no list of tools the request "
                "declares (%s); it loads nothing",
                _shown(str(search.call_id)),
                _shown(str(err)),
                extra={"kind": "tool-search"},
            )
            return []
        return self._loaded(search, paths)

    def _loaded(self, search: ToolSearch, paths: Iterable[str]) -> list[dict[str, Any]]:
        """What ``paths`` load for ``search``; what they could not load, logged."""
        loaded = load_paths(paths, search.declared)
        if loaded.unknown:
            logger.warning(
                "the tool search %s named %s, which no deferred tool of the request is; "
                "loaded the rest",
                _shown(str(search.call_id)),
                _shown(", ".join(loaded.unknown)),
                extra={"kind": "tool-search"},
            )
        if loaded.withheld:
            logger.warning(
                "the tool search %s named the MCP server %s, declared with credentials "
                "(headers or authorization), which a client search never loads: its answer is "
                "stored in the thread; declare the server without defer_loading, or let the API "
                "run the search",
                _shown(str(search.call_id)),
                _shown(", ".join(loaded.withheld)),
                extra={"kind": "tool-search"},
            )
        return self._bounded_search(search, loaded.tools)

    def _bounded_search(
        self, search: ToolSearch, tools: list[dict[str, Any]]
    ) -> list[dict[str, Any]]:
        size = len(msgspec.json.encode(tools))
        if size <= self.max_result_bytes:
            return tools
        logger.warning(
            "the answer to tool search %s is %d bytes, over tools.max_result_bytes (%d); it "
            "loads nothing",
            _shown(str(search.call_id)),
            size,
            self.max_result_bytes,
            extra={"kind": "tool-search"},
        )
        return []

    def _bounded_text(self, call: ToolCall, name: str, text: str, failed: bool) -> ToolCall:
        if len(text.encode("utf-8", "surrogatepass")) > self.max_result_bytes:
            return self._done(
                call,
                f"Tool {name} failed: its result is over {self.max_result_bytes} bytes "
                "(tools.max_result_bytes)",
                True,
            )
        return self._done(call, text, failed, inline=True)

    def _shell_answer(self, call: ToolCall, value: Any) -> ToolCall:
        outputs: tuple[Any, ...]
        if isinstance(value, str):
            outputs = (ShellCommandOutput(stdout=value),)
        elif isinstance(value, ShellCommandOutput):
            outputs = (value,)
        elif isinstance(value, list | tuple) and value:
            outputs = tuple(value)
        else:
            outputs = ()
        if not outputs or not all(isinstance(o, ShellCommandOutput) for o in outputs):
            return self._done(
                call,
                _wrong_type("shell", value, "a ShellCommandOutput, a list of them or a text"),
                True,
            )
        size = sum(
            len(o.stdout.encode("utf-8", "surrogatepass"))
            + len(o.stderr.encode("utf-8", "surrogatepass"))
            for o in outputs
        )
        if size > self.max_result_bytes:
            return self._done(
                call,
                f"Tool shell failed: its output is over {self.max_result_bytes} bytes "
                "(tools.max_result_bytes)",
                True,
            )
        clean = tuple(
            msgspec.structs.replace(
                o,
                stdout=_LONE_SURROGATE.sub("\ufffd", o.stdout),
                stderr=_LONE_SURROGATE.sub("\ufffd", o.stderr),
            )
            for o in outputs
        )
        return msgspec.structs.replace(call, result=ToolResult(shell=clean), is_error=False)

    def _computer_answer(
        self, call: ToolCall, name: str, value: Any, files: ContextAssembler
    ) -> ToolCall:
        acknowledged: tuple[str, ...] = ()
        screenshot = value
        if isinstance(value, ComputerResult):
            screenshot, acknowledged = value.screenshot, tuple(value.acknowledged_safety_checks)
        if not isinstance(screenshot, Media) or screenshot.kind != "image":
            return self._done(
                call, _wrong_type(name, screenshot, "a screenshot (an image Media)"), True
            )
        payload = call.payload
        assert isinstance(payload, ComputerAction)
        pending = {check.id for check in payload.pending_safety_checks}
        unknown = [check for check in acknowledged if check not in pending]
        if unknown:
            return self._done(
                call,
                f"Tool {name} failed: it acknowledged the safety check {_shown(unknown[0])}, "
                "which is not pending on this call",
                True,
            )
        answered = self._structured(call, name, screenshot, files)
        assert answered is not None  # an image Media is always structured
        if answered.result is None or answered.result.media is None:
            return answered  # an error result (outside the roots, too large)
        result = msgspec.structs.replace(
            answered.result, acknowledged_safety_checks=tuple(dict.fromkeys(acknowledged))
        )
        return msgspec.structs.replace(answered, result=result)

    def _structured(
        self, call: ToolCall, name: str, value: Any, files: ContextAssembler
    ) -> ToolCall | None:
        """``call`` answered with a handler's :class:`Media` (one, or a non-empty list or
        tuple of them) or :class:`Artifact`; ``None`` for any other value (text or JSON).

        A file pointer in the result must lead inside the run's roots, as the thread's own
        do: otherwise the call is an error result, rather than a failure of the next render.
        """
        pointers = [
            (f"result.media[{i}].path" if isinstance(v, Media) else "result.artifact.path", v.path)
            for i, v in enumerate(value if isinstance(value, list | tuple) else [value])
            if isinstance(v, Media | Artifact) and v.path is not None
        ]
        for where, path in pointers:
            try:
                files.resolve(path, where=where)
            except (FileNotAllowedError, RenderError) as err:  # outside the roots, unreadable
                return self._done(call, f"Tool {name} failed: {err}", True)
        media: tuple[Media, ...] | None = None
        if isinstance(value, Media):
            media = (value,)
        elif isinstance(value, list | tuple) and value and all(isinstance(v, Media) for v in value):
            media = tuple(value)
        if media is not None:
            size = sum(len(m.data or b"") for m in media)
            if size > self.max_result_bytes:
                return self._done(
                    call,
                    f"Tool {name} failed: its media are over {self.max_result_bytes} bytes "
                    "(tools.max_result_bytes)",
                    True,
                )
            return msgspec.structs.replace(call, result=ToolResult(media=media), is_error=False)
        if isinstance(value, Artifact):
            size = len((value.text or "").encode("utf-8", "surrogatepass"))
            if size > self.max_result_bytes:
                return self._done(
                    call,
                    f"Tool {name} failed: its artifact is over {self.max_result_bytes} bytes "
                    "(tools.max_result_bytes)",
                    True,
                )
            return msgspec.structs.replace(call, result=ToolResult(artifact=value), is_error=False)
        return None

    def _unbound(self, name: str, handler: Callable[..., Any], args: dict[str, Any]) -> str | None:
        """Why ``handler``'s signature cannot take ``args`` (``None`` when it can, or when
        it has no signature to tell)."""
        held = self._signatures.get(id(handler))
        if held is None or held[0] is not handler:
            try:
                signature: inspect.Signature | None = inspect.signature(handler)
            except (TypeError, ValueError):  # a builtin without one
                signature = None
            held = self._signatures[id(handler)] = (handler, signature)
        if held[1] is None:
            return None
        try:
            held[1].bind(**args)
        except TypeError as err:
            return InvalidToolCallArgs(
                f"Tool {name} cannot take these arguments: {err}. Call it again with arguments "
                "that follow its schema."
            ).message
        return None

    async def _invoke(
        self, handler: Callable[..., Any], args: dict[str, Any], positional: tuple[Any, ...] = ()
    ) -> Any:
        """Call ``handler``: a coroutine function on the loop, anything else in a thread,
        both within ``timeout_s`` in all."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.timeout_s
        if inspect.iscoroutinefunction(handler) or inspect.iscoroutinefunction(
            getattr(handler, "__call__", None)  # noqa: B004 - an async __call__ counts too
        ):
            return await _bounded(handler(*positional, **args), self.timeout_s)
        value = await _in_daemon_thread(lambda: handler(*positional, **args), self.timeout_s)
        if inspect.isawaitable(value):
            value = await _bounded(value, max(deadline - loop.time(), 0.0))
        return value

    def _done(self, call: ToolCall, text: str, is_error: bool, *, inline: bool = False) -> ToolCall:
        # A lone surrogate (from a handler's text or its error's message) is no text a request
        # can carry: each becomes U+FFFD here, where the result enters the thread.
        text = _LONE_SURROGATE.sub("\ufffd", text)
        if not (is_error or inline) and len(text.encode()) > self.inline_max_bytes:
            result = ToolResult(artifact=Artifact(text=text))
        else:
            result = ToolResult(text=text)
        return msgspec.structs.replace(call, result=result, is_error=is_error)

    # ------------------------------------------------------------------ artifact tools

    @staticmethod
    def _artifact(
        name: str, args: dict[str, Any], thread: Thread, files: ContextAssembler
    ) -> tuple[str, bool]:
        call_id = args.get("callId")
        if not isinstance(call_id, str):
            return f"Bad arguments for {name}: callId must be a string", True
        located: list[tuple[str, Artifact]] = []

        def collect(where: str, artifact: Artifact) -> Artifact:
            located.append((where, artifact))
            return artifact

        located_pointers(thread, lambda where, media: media, collect)
        index = next((i for i, c in enumerate(thread.tool_calls) if c.id == call_id), None)
        prefix = f"$.tool_calls[{index}].result.artifact"
        bodies = [(w, a) for w, a in located if index is not None and w.startswith(prefix)]
        if not bodies:
            record = next((i for i, r in enumerate(thread.retrievables) if r.id == call_id), None)
            where = f"$.retrievables[{record}].artifact"
            bodies = [(w, a) for w, a in located if record is not None and w == where]
        if not bodies:
            return f"No artifact has callId {call_id!r}.", True
        try:
            text = "\n\n".join(
                body.text
                if body.text is not None
                else files.read(str(body.path), where=f"{at}.path", owner=call_id).decode(
                    "utf-8", "replace"
                )
                for at, body in bodies
            )
        except (FileNotAllowedError, RenderError) as err:  # outside the roots, unreadable, big
            return f"The artifact {call_id!r} cannot be read: {err}", True
        artifact = Artifact(text=text)
        lines = artifact.body.splitlines()
        try:
            if name == "artifact_head":
                return artifact.head(_whole(args, "n", 20, 0, MAX_LINES)), False
            if name == "artifact_tail":
                return artifact.tail(_whole(args, "n", 20, 0, MAX_LINES)), False
            if name == "artifact_grep":
                if "pattern" not in args:
                    raise ValueError("pattern is required")
                pattern = _grep_pattern(args["pattern"])
                limit = _whole(args, "max_lines", 50, 0, MAX_LINES)
                hits: list[str] = []
                for number, line in enumerate(lines, 1):
                    if len(hits) >= limit:
                        break
                    if pattern.search(line):
                        hits.append(f"{number}: {line}")
                return "\n".join(hits) or "(no line matches)", False
            if name == "artifact_cat":
                start = _whole(args, "start", 1, 1, max(len(lines), 1))
                end = _whole(args, "end", len(lines), 0, len(lines))
                return "\n".join(lines[start - 1 : end]), False
            if name == "artifact_byte_length":
                return str(artifact.byte_length), False
            if name == "artifact_line_count":
                return str(artifact.line_count), False
            import toktok

            return str(toktok.batch_count([artifact.body], "o200k_base", threads=1)[0]), False
        except ValueError as err:
            return f"Bad arguments for {name}: {err}", True
