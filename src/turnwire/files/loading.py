"""Reading and parsing YAML and JSON documents (thread and configuration files) within limits.

Every document turnwire reads from a user comes through here, so that no input can crash the
process, hang it or exhaust its memory, and every failure is one typed error naming the file
and the place (``line L, column C`` or a ``$.path``):

* files are opened without blocking and read only when they are regular files, at most
  ``max_bytes`` of them (a FIFO, a device such as ``/dev/zero`` or a directory is refused);
* the text must be UTF-8 without NUL bytes;
* JSON goes through msgspec's decoder (surrogate pairs become their character, a lone
  surrogate is refused); YAML through libyaml's C loader when PyYAML has it;
* nesting is limited to ``max_depth`` levels, integers to 64 bits, and YAML aliases to
  ``max_alias_nodes`` nodes of expansion (an alias bomb fails in milliseconds), with no
  recursive aliases.

A :class:`DocumentKind` says what is being read (its noun in messages, its error class, its
limits); ``thread_file`` and ``settings`` each have one.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import IO, TYPE_CHECKING, Any, Literal, Protocol

import msgspec
import yaml

from turnwire.errors import InputError

__all__ = [
    "INT_MAX",
    "INT_MIN",
    "MAX_ALIAS_NODES",
    "MAX_BYTES",
    "MAX_DEPTH",
    "DocumentKind",
    "ErrorFactory",
    "Format",
    "Limits",
    "format_for",
    "looks_like_json",
    "read_regular_file",
    "read_stream",
]

MAX_BYTES = 64 * 1024 * 1024
"""The largest document read (64 MiB)."""
MAX_DEPTH = 64
"""The deepest nesting of mappings and sequences, the top level counting as 1."""
MAX_ALIAS_NODES = 100_000
"""How many nodes YAML aliases may add to a document when expanded."""
INT_MIN = -(2**63)
INT_MAX = 2**64 - 1
"""Integers outside ``[INT_MIN, INT_MAX]`` (what msgspec decodes natively) are refused."""

Format = Literal["json", "yaml"]


class ErrorFactory(Protocol):
    """What raises: :class:`~turnwire.errors.ThreadFileError` or
    :class:`~turnwire.errors.ConfigError` (a message and the ``$.path`` at fault)."""

    def __call__(self, message: str, *, path: str = ...) -> InputError: ...


@dataclass(frozen=True, slots=True)
class Limits:
    """The bounds a document must stay within (the module constants by default)."""

    max_bytes: int = MAX_BYTES
    max_depth: int = MAX_DEPTH
    max_alias_nodes: int = MAX_ALIAS_NODES


_KINDS = {
    stat.S_IFDIR: "a directory",
    stat.S_IFIFO: "a FIFO (named pipe)",
    stat.S_IFCHR: "a character device",
    stat.S_IFBLK: "a block device",
    stat.S_IFSOCK: "a socket",
}
_OPEN_FLAGS = (
    os.O_RDONLY
    | getattr(os, "O_NONBLOCK", 0)
    | getattr(os, "O_NOCTTY", 0)
    | getattr(os, "O_CLOEXEC", 0)
    | getattr(os, "O_BINARY", 0)
)


def _size(limit: int) -> str:
    if limit % (1024 * 1024) == 0:
        return f"{limit // (1024 * 1024)} MiB"
    return f"{limit} bytes"


def read_regular_file(
    path: str | os.PathLike[str], limit: int, error: ErrorFactory, *, noun: str = "file"
) -> bytes:
    """The bytes of the regular file ``path``, at most ``limit`` of them.

    The file is opened non-blocking and checked with ``fstat`` before anything is read, so a
    FIFO without a writer, a device (``/dev/zero``, a terminal) or a directory fails at once
    instead of hanging or reading forever; a file over ``limit`` fails before it is read, and
    one that grows while it is read fails after ``limit + 1`` bytes.

    :raises InputError: built by ``error``, naming ``noun`` and ``path``.
    """
    try:
        fd = os.open(path, _OPEN_FLAGS)
    except OSError as err:
        raise error(f"cannot read {noun} {os.fspath(path)}: {err.strerror}") from err
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            kind = _KINDS.get(stat.S_IFMT(info.st_mode), "not a regular file")
            raise error(f"cannot read {noun} {os.fspath(path)}: it is {kind}; give a regular file")
        if info.st_size > limit:
            raise error(_too_big(noun, os.fspath(path), limit))
        chunks: list[bytes] = []
        total = 0
        want = info.st_size + 1  # one more, to see the end (or that the file grew)
        while total <= limit:
            try:
                chunk = os.read(fd, min(max(want - total, 64 * 1024), limit + 1 - total))
            except OSError as err:
                raise error(f"cannot read {noun} {os.fspath(path)}: {err.strerror}") from err
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
    finally:
        os.close(fd)
    if total > limit:
        raise error(_too_big(noun, os.fspath(path), limit))
    return chunks[0] if len(chunks) == 1 else b"".join(chunks)


def read_stream(
    stream: IO[bytes], limit: int, error: ErrorFactory, *, noun: str, name: str
) -> bytes:
    """Everything ``stream`` holds (standard input), at most ``limit`` bytes."""
    try:
        data = stream.read(limit + 1)
    except OSError as err:
        raise error(f"cannot read {noun} {name}: {err.strerror}") from err
    if len(data) > limit:
        raise error(_too_big(noun, name, limit))
    return data


def _too_big(noun: str, name: str, limit: int) -> str:
    return f"{noun} {name} is larger than {_size(limit)}, the most turnwire reads; split it"


def format_for(path: str | os.PathLike[str]) -> Format | None:
    """``json`` or ``yaml`` by the file's suffix, ``None`` when the suffix says neither."""
    suffix = os.path.splitext(os.fspath(path))[1].lower()
    if suffix == ".json":
        return "json"
    if suffix in (".yaml", ".yml"):
        return "yaml"
    return None


def looks_like_json(data: bytes) -> bool:
    """Whether the first non-blank byte is ``{``."""
    return data.lstrip(b" \t\r\n")[:1] == b"{"


# --- positions ------------------------------------------------------------------------------

_MSGSPEC_BYTE = re.compile(r"\s*\(byte (\d+)\)$")
# A \uD800-\uDBFF escape not followed by a \uDC00-\uDFFF one, or a low one on its own, each
# after an even number of backslashes (so the backslash itself is not escaped).
_LONE_SURROGATE_ESCAPE = re.compile(
    rb"(?<!\\)(?:\\\\)*(\\u[dD][89abAB][0-9a-fA-F]{2}(?!\\u[dD][c-fC-F][0-9a-fA-F]{2})"
    rb"|(?<!\\u[dD][89abAB][0-9a-fA-F]{2})\\u[dD][c-fC-F][0-9a-fA-F]{2})"
)
_SURROGATE = re.compile("[\ud800-\udfff]")
_JSON_TOKEN = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}]')


def _where(data: bytes, offset: int) -> str:
    """``line L, column C`` (1-based, columns in characters) of byte ``offset``."""
    offset = max(0, min(offset, len(data)))
    line_start = data.rfind(b"\n", 0, offset) + 1
    line = data.count(b"\n", 0, offset) + 1
    column = len(data[line_start:offset].decode("utf-8", "replace")) + 1
    return f"line {line}, column {column}"


def _mark_where(mark: Any) -> str:
    return f"line {mark.line + 1}, column {mark.column + 1}"


def _json_too_deep_at(data: bytes, limit: int) -> int:
    """The byte offset where JSON nesting first exceeds ``limit`` (0 if it never does)."""
    depth = 0
    for token in _JSON_TOKEN.finditer(data):
        char = data[token.start()]
        if char in b"[{":
            depth += 1
            if depth > limit:
                return token.start()
        elif char in b"]}":
            depth -= 1
    return 0


def _out_of_range_int(value: int) -> str:
    # Its size, not its digits: there may be thousands of them.
    return f"an integer of {value.bit_length()} bits is outside the 64-bit range"


class _Refused(Exception):
    """A limit broken while the YAML constructor runs, at ``mark``."""

    def __init__(self, mark: Any, problem: str) -> None:
        super().__init__(problem)
        self.mark = mark
        self.problem = problem


@dataclass(frozen=True, slots=True)
class DocumentKind:
    """One kind of document: its noun in messages, the error it raises, its limits.

    :ivar yaml_syntax: what a YAML syntax error says the document is (thread files, which
        may be either, say "neither valid YAML nor JSON").
    :ivar pure_yaml: use PyYAML's pure-Python loader even when libyaml is there (tests).
    """

    noun: str
    error: ErrorFactory
    limits: Limits = field(default_factory=Limits)
    yaml_syntax: str = "not valid YAML"
    pure_yaml: bool = False

    # --- reading ----------------------------------------------------------------------------

    def read(self, path: str | os.PathLike[str]) -> bytes:
        """The bytes of the regular file ``path`` (see :func:`read_regular_file`)."""
        return read_regular_file(path, self.limits.max_bytes, self.error, noun=self.noun)

    def read_stream(self, stream: IO[bytes], *, name: str = "<stdin>") -> bytes:
        """Everything ``stream`` holds, within the size limit."""
        return read_stream(stream, self.limits.max_bytes, self.error, noun=self.noun, name=name)

    # --- parsing ----------------------------------------------------------------------------

    def fail(self, name: str, where: str, problem: str, *, path: str = "$") -> InputError:
        """The error for ``problem`` at ``where`` (a position or a ``$.path``) in ``name``."""
        return self.error(f"{self.noun} {name}, {where}: {problem}", path=path)

    def text(self, data: bytes, *, name: str) -> bytes:
        """``data`` checked to be UTF-8 without NUL bytes, a leading byte-order mark removed."""
        if len(data) > self.limits.max_bytes:
            raise self.error(_too_big(self.noun, name, self.limits.max_bytes))
        if data.startswith(b"\xef\xbb\xbf"):
            data = data[3:]
        nul = data.find(b"\0")
        if nul >= 0:
            raise self.fail(name, _where(data, nul), "a NUL byte; the file must be UTF-8 text")
        try:
            data.decode("utf-8")
        except UnicodeDecodeError as err:
            raise self.fail(
                name,
                _where(data, err.start),
                f"byte 0x{data[err.start]:02x} is not UTF-8; save the file as UTF-8",
            ) from None
        return data

    def parse(self, data: bytes, *, name: str, format: Format | None = None) -> Any:
        """``data`` as plain Python data (dicts, lists, scalars), every limit checked.

        :param format: ``json``, ``yaml`` or ``None`` (JSON when the first non-blank byte is
            ``{``, else YAML; a document that looks like JSON but is not is tried as YAML).
        """
        data = self.text(data, name=name)
        if format == "yaml" or (format is None and not looks_like_json(data)):
            return self.parse_yaml(data, name=name)
        if format == "json":
            return self.decode_json(data, name=name, type=Any)
        try:
            return self.decode_json(data, name=name, type=Any)
        except InputError as json_error:
            try:
                return self.parse_yaml(data, name=name)
            except InputError:
                raise json_error from None

    # --- JSON -------------------------------------------------------------------------------

    def decode_json(self, data: bytes, *, name: str, type: Any = Any) -> Any:
        """``data`` (already through :meth:`text`) decoded by msgspec as ``type``.

        For ``type=Any`` the whole tree is checked; for a Struct only msgspec's own checks run
        and the caller checks the ``Any`` parts (:meth:`check_tree`). A
        ``msgspec.ValidationError`` of a Struct type propagates, for the caller to report.
        """
        try:
            value = msgspec.json.decode(data, type=type)
        except msgspec.ValidationError as err:  # a subclass of DecodeError
            message = str(err)
            if message.startswith(("Integer value out of range", "Number out of range")):
                raise self._out_of_range(name, message) from None
            if type is Any:  # pragma: no cover - nothing else fails a decode into Any
                raise self.fail(name, "line 1, column 1", f"not valid JSON: {message}") from None
            raise
        except msgspec.DecodeError as err:
            raise self._json_syntax(data, name, str(err)) from None
        except RecursionError:
            raise self._too_deep_json(data, name) from None
        if type is Any:
            self.check_tree(value, name=name, data=data)
        return value

    def _json_syntax(self, data: bytes, name: str, message: str) -> InputError:
        if "surrogate" in message or message == "Input data was truncated":
            lone = _LONE_SURROGATE_ESCAPE.search(data)
            if lone is not None:
                escape = lone.group(1).decode()
                return self.fail(
                    name,
                    _where(data, lone.start(1)),
                    f"not valid JSON: {escape} is a lone surrogate; write the character "
                    "itself or a whole surrogate pair",
                )
        found = _MSGSPEC_BYTE.search(message)
        if found is None:
            offset = len(data)
            problem = "the JSON text ends too early (an unclosed string, array or object)"
            if not data.strip():
                problem = "the file is empty"
        else:
            offset = int(found.group(1))
            problem = message[: found.start()].removeprefix("JSON is malformed: ")
        return self.fail(name, _where(data, offset), f"not valid JSON: {problem}")

    def _too_deep_json(self, data: bytes, name: str) -> InputError:
        offset = _json_too_deep_at(data, self.limits.max_depth)
        return self.fail(name, _where(data, offset), self._depth_problem())

    def _depth_problem(self) -> str:
        return f"nested deeper than {self.limits.max_depth} levels, the most turnwire reads"

    def _out_of_range(self, name: str, message: str) -> InputError:
        detail, _, at = message.partition(" - at `")
        path = at.rstrip("`") or "$"
        problem = (
            "an integer outside the 64-bit range"
            if detail.startswith("Integer")
            else "a number beyond the range of a float"
        )
        return self.fail(name, path, problem, path=path)

    def check_tree(
        self, value: Any, *, name: str, data: bytes, path: str = "$", depth: int = 1
    ) -> None:
        """Check decoded JSON under ``path`` (at nesting ``depth``): depth and integer range.

        :param data: the document's bytes, to locate a too-deep nesting by line and column.
        """
        if not isinstance(value, dict | list):
            if value.__class__ is int:
                self.check_int(value, name=name, path=path)
            return
        limit = self.limits.max_depth
        # Each entry: a container, its depth and its path as a linked (parent, key) trail.
        stack: list[tuple[Any, int, Any]] = [(value, depth, (None, path))]
        while stack:
            node, level, trail = stack.pop()
            if level > limit:
                raise self._too_deep_json(data, name)
            items = node.items() if isinstance(node, dict) else enumerate(node)
            for key, child in items:
                kind = child.__class__
                if kind is dict or kind is list:
                    stack.append((child, level + 1, (trail, key)))
                elif kind is int and not INT_MIN <= child <= INT_MAX:
                    where = _trail_path((trail, key))
                    raise self.fail(name, where, _out_of_range_int(child), path=where)

    def check_int(self, value: int, *, name: str, path: str) -> None:
        """Refuse an integer outside the 64-bit range."""
        if not INT_MIN <= value <= INT_MAX:
            raise self.fail(name, path, _out_of_range_int(value), path=path)

    # --- YAML -------------------------------------------------------------------------------

    def parse_yaml(self, data: bytes, *, name: str) -> Any:
        """``data`` (already through :meth:`text`) as plain data, every limit checked."""
        loader: yaml.SafeLoader | None = None
        try:
            # PyYAML's reader checks the first characters as the loader is made.
            loader = (_PureLoader if self.pure_yaml else _FastLoader)(data)
            root = loader.get_single_node()
            if root is None:
                return None
            self._check_nodes(root, name, data)
            return loader.construct_document(root)
        except _Refused as err:
            raise self.fail(name, _mark_where(err.mark), err.problem) from None
        except yaml.MarkedYAMLError as err:
            raise self._yaml_syntax(name, err) from None
        except yaml.reader.ReaderError as err:
            # libyaml counts bytes, PyYAML's reader characters.
            offset = err.position
            if self.pure_yaml or not _HAS_LIBYAML:
                offset = len(data.decode()[:offset].encode())
            raise self.fail(
                name,
                _where(data, offset),
                f"{self.yaml_syntax}: character #x{err.character:04x} is not allowed",
            ) from None
        except yaml.YAMLError as err:
            raise self.fail(name, "line 1, column 1", f"{self.yaml_syntax}: {err}") from None
        except RecursionError:
            # The pure-Python composer recurses per level (libyaml stops at 1,000 itself).
            raise self.fail(name, self._yaml_too_deep_at(data), self._depth_problem()) from None
        finally:
            if loader is not None:
                loader.dispose()

    def _yaml_too_deep_at(self, data: bytes) -> str:
        """Where YAML nesting first exceeds the limit, found from parser events (which keep
        their own stack instead of recursing)."""
        depth = 0
        for event in yaml.parse(data, Loader=yaml.SafeLoader):
            if isinstance(event, yaml.CollectionStartEvent):
                depth += 1
                if depth > self.limits.max_depth:
                    return _mark_where(event.start_mark)
            elif isinstance(event, yaml.CollectionEndEvent):
                depth -= 1
        return "line 1, column 1"

    def _yaml_syntax(self, name: str, err: yaml.MarkedYAMLError) -> InputError:
        mark = err.problem_mark or err.context_mark
        where = _mark_where(mark) if mark is not None else "line 1, column 1"
        problem = err.problem or err.context or "invalid"
        if err.context and err.problem:
            context = err.context
            if err.context_mark is not None and _mark_where(err.context_mark) != where:
                context += f" at {_mark_where(err.context_mark)}"
            problem += f" ({context})"
        return self.fail(name, where, f"{self.yaml_syntax}: {problem}")

    def _check_nodes(self, root: yaml.Node, name: str, data: bytes) -> None:
        """Depth, alias expansion, recursive aliases and lone surrogates, on the node graph.

        An alias is the same node object reached a second time; its expansion is counted
        with memoised subtree sizes, so an alias bomb is measured without being expanded.
        Without an ``&`` in the text there is no anchor, so no alias: libyaml's documents
        then only need their depth checked (libyaml refuses surrogates itself).
        """
        if not self.pure_yaml and _HAS_LIBYAML and b"&" not in data:
            self._check_depth(root, name)
            return
        limits = self.limits
        # Heights count collections only (a scalar adds no nesting), sizes every node.
        height: dict[int, int] = {}
        size: dict[int, int] = {}
        open_nodes: set[int] = set()
        expanded = 0
        stack: list[tuple[yaml.Node, int, bool]] = [(root, 1, False)]
        while stack:
            node, level, closing = stack.pop()
            key = id(node)
            if closing:
                open_nodes.discard(key)
                children = list(_children(node))
                height[key] = 1 + max((height[id(c)] for c in children), default=0)
                size[key] = 1 + sum(size[id(c)] for c in children)
                continue
            if key in open_nodes:
                raise self.fail(
                    name,
                    _mark_where(node.start_mark),
                    "a YAML alias refers to a node that contains it; write the value out",
                )
            if key in height:
                expanded += size[key]
                if expanded > limits.max_alias_nodes:
                    raise self.fail(
                        name,
                        _mark_where(node.start_mark),
                        f"YAML aliases expand to more than {limits.max_alias_nodes} nodes "
                        "(an alias bomb?); write the values out instead",
                    )
                if level + height[key] - 1 > limits.max_depth:
                    raise self.fail(name, _mark_where(node.start_mark), self._depth_problem())
                continue
            if isinstance(node, yaml.ScalarNode):
                text = node.value
                if not text.isascii() and _SURROGATE.search(text):
                    raise self.fail(
                        name,
                        _mark_where(node.start_mark),
                        f"{self.yaml_syntax}: a lone surrogate in a string; escape a "
                        "character beyond U+FFFF as \\U0001F600, not as a surrogate pair",
                    )
                height[key], size[key] = 0, 1
                continue
            if level > limits.max_depth:
                raise self.fail(name, _mark_where(node.start_mark), self._depth_problem())
            open_nodes.add(key)
            stack.append((node, level, True))
            stack.extend((child, level + 1, False) for child in _children(node))

    def _check_depth(self, root: yaml.Node, name: str) -> None:
        """The nesting of a node tree without aliases (every node reached once)."""
        limit = self.limits.max_depth
        scalar = yaml.ScalarNode
        mapping = yaml.MappingNode
        stack: list[tuple[yaml.Node, int]] = [(root, 1)]
        while stack:
            node, level = stack.pop()
            if node.__class__ is scalar:
                continue
            if level > limit:
                raise self.fail(name, _mark_where(node.start_mark), self._depth_problem())
            level += 1
            if node.__class__ is mapping:
                for key, value in node.value:
                    if key.__class__ is not scalar:
                        stack.append((key, level))
                    if value.__class__ is not scalar:
                        stack.append((value, level))
            else:
                stack.extend(
                    (child, level) for child in node.value if child.__class__ is not scalar
                )


def _children(node: yaml.Node) -> Iterator[yaml.Node]:
    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            yield key
            yield value
    elif isinstance(node, yaml.SequenceNode):
        yield from node.value


def _trail_path(trail: Any) -> str:
    parts: list[str] = []
    while trail[0] is not None:
        trail, key = trail
        parts.append(f"[{key}]" if isinstance(key, int) else f".{key}")
    return str(trail[1]) + "".join(reversed(parts))


def _bounded_int(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> int:
    # Checked before conversion too: int() of a long decimal string takes quadratic time.
    digits = node.value.replace("_", "")
    value = loader.construct_yaml_int(node) if len(digits) <= 70 else None
    if value is None or not INT_MIN <= value <= INT_MAX:
        size = f"of {len(digits)} characters" if value is None else f"of {value.bit_length()} bits"
        raise _Refused(node.start_mark, f"an integer {size} is outside the 64-bit range")
    return value


_HAS_LIBYAML = hasattr(yaml, "CSafeLoader")
if TYPE_CHECKING:
    _LibYamlLoader = yaml.SafeLoader
else:
    _LibYamlLoader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _PureLoader(yaml.SafeLoader):
    """PyYAML's pure-Python safe loader, integers bounded."""


class _FastLoader(_LibYamlLoader):
    """libyaml's safe loader where PyYAML was built with it, integers bounded."""


_PureLoader.add_constructor("tag:yaml.org,2002:int", _bounded_int)
_FastLoader.add_constructor("tag:yaml.org,2002:int", _bounded_int)
