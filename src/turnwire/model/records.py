"""Domain records: what an agent stores about a conversation.

Every record is a frozen msgspec Struct that rejects unknown fields, so the same classes decode
thread files (schema version 1, see :mod:`turnwire.files.thread_file`) and are built in code. The
cross-field rules of the reference system are checked in ``__post_init__``; a violation raised
while decoding surfaces with the ``$.path`` of the record.

Ordering: timeline records (messages, thoughts, tool calls) sort by ``(created_at, seq)``.
Records persisted from one response get strictly increasing ``seq`` so that a reasoning item
always sorts before the output item it belongs to.
"""

from __future__ import annotations

import hashlib
import os
import re
import uuid
from collections.abc import Callable, Iterable
from datetime import UTC, datetime, timedelta
from typing import Annotated, Any, Literal, TypeVar

import msgspec

from turnwire.errors import ThreadFileError, validation_location
from turnwire.model.canonical import canonical_json
from turnwire.model.client_calls import (
    Click,
    ClientPayload,
    ComputerAction,
    CustomToolInput,
    DoubleClick,
    Drag,
    DragPoint,
    Keypress,
    LocalShellAction,
    Move,
    PatchOperation,
    PendingSafetyCheck,
    Screenshot,
    Scroll,
    ShellAction,
    ShellCommandOutput,
    ToolKind,
    TypeText,
    Wait,
)
from turnwire.model.structured import OutputSchema
from turnwire.wire.content import ImageDetail
from turnwire.wire.items import ReasoningItem
from turnwire.wire.tools import (
    ApplyPatchTool,
    CodeInterpreterContainer,
    CodeInterpreterTool,
    ComputerTool,
    ComputerUsePreviewTool,
    CustomTool,
    CustomToolGrammar,
    CustomToolText,
    FileSearchHybridSearch,
    FileSearchRanking,
    FileSearchTool,
    HostedTool,
    ImageGenerationTool,
    LocalShellTool,
    McpApprovalFilter,
    McpTool,
    McpToolFilter,
    NamespaceFunction,
    NamespaceTool,
    ProgrammaticToolCallingTool,
    ShellLocalEnvironment,
    ShellTool,
    ToolName,
    ToolSearchTool,
    WebSearchFilters,
    WebSearchLocation,
    WebSearchTool,
    check_hosted_tools,
)

__all__ = [
    "REPLAY_TAG",
    "ApplyPatchTool",
    "Artifact",
    "Click",
    "CodeInterpreterContainer",
    "CodeInterpreterTool",
    "ComputerAction",
    "ComputerTool",
    "ComputerUsePreviewTool",
    "CustomTool",
    "CustomToolGrammar",
    "CustomToolInput",
    "CustomToolText",
    "DoubleClick",
    "Drag",
    "DragPoint",
    "FileSearchHybridSearch",
    "FileSearchRanking",
    "FileSearchTool",
    "HostedItem",
    "HostedTool",
    "Identity",
    "ImageGenerationTool",
    "Keypress",
    "LocalShellAction",
    "LocalShellTool",
    "McpApprovalFilter",
    "McpTool",
    "McpToolFilter",
    "Media",
    "MediaKind",
    "Memory",
    "Message",
    "ModalityHazard",
    "Move",
    "NamespaceFunction",
    "NamespaceTool",
    "PatchOperation",
    "PendingSafetyCheck",
    "ProgrammaticToolCallingTool",
    "ReasoningPayload",
    "Retrievable",
    "Screenshot",
    "Scroll",
    "ShellAction",
    "ShellCommandOutput",
    "ShellLocalEnvironment",
    "ShellTool",
    "StashEntry",
    "Thought",
    "Thread",
    "Tool",
    "ToolCall",
    "ToolCaller",
    "ToolKind",
    "ToolResult",
    "ToolSearchTool",
    "TrustTier",
    "TypeText",
    "Wait",
    "WebSearchFilters",
    "WebSearchLocation",
    "WebSearchTool",
    "map_pointers",
    "tool_call_checksum",
]

REPLAY_TAG = "openai-responses-reasoning-v1"
"""The replay_compatibility tag of thoughts that carry a Responses reasoning item."""

TrustTier = Literal["first-party", "third-party-public", "third-party-private"]
MediaKind = Literal["image", "audio", "video", "document"]
ModalityHazard = Literal["inert", "extractable-instructions", "opaque-perceptual"]
Role = Literal["user", "assistant"]
AwareDatetime = Annotated[datetime, msgspec.Meta(tz=True)]
NonEmpty = Annotated[str, msgspec.Meta(min_length=1)]
Unit = Annotated[float, msgspec.Meta(ge=0.0, le=1.0)]
ItemType = Annotated[str, msgspec.Meta(pattern=r"^[a-z][a-z0-9_]{0,63}(?!\n)$")]
ToolCaller = Literal["direct", "programmatic"]
FileId = Annotated[str, msgspec.Meta(min_length=1, pattern=r"^\S+(?!\n)$")]


def _now() -> datetime:
    """Now in UTC, to the millisecond: what the records a run adds are dated with."""
    moment = datetime.now(UTC)
    return moment.replace(microsecond=moment.microsecond // 1000 * 1000)


def _fresh_id(prefix: str, digits: int = 32) -> str:
    return f"{prefix}_{uuid.uuid4().hex[:digits]}"


_KINDS: dict[str, MediaKind] = {"image": "image", "audio": "audio", "video": "video"}
_R = TypeVar("_R", bound=msgspec.Struct)


def _built(kind: type[_R], fields: dict[str, Any]) -> _R:
    """A ``kind`` built from ``fields`` and checked as decoding checks it (a date is a
    ``datetime``, never its text); the records among ``fields`` are taken as they are (the
    whole thread is checked where it enters rendering: :mod:`turnwire.model.checks`).

    :raises ThreadFileError: naming the ``$.path`` (rooted at the new record) at fault.
    """
    try:
        return msgspec.convert(fields, kind, builtin_types=(datetime, bytes))
    except msgspec.ValidationError as err:
        path, detail = validation_location(err)
        raise ThreadFileError(f"{path}: {detail}", path=path) from None


# What a media URL may not hold: white space and control characters (a URL is sent as one
# token; percent-encode them).
_URL_UNSAFE = re.compile(r"[\s\x00-\x1f\x7f-\x9f]")


def _url_problem(url: str) -> str | None:
    """What is wrong with an attachment's ``url`` (``None``: nothing). Only ``http`` and
    ``https`` URLs with a host: a local file is a ``path`` (read within the roots), inline
    bytes are ``data_base64`` (held to the file limits), and turnwire fetches nothing."""
    from urllib.parse import urlsplit

    if _URL_UNSAFE.search(url):
        return "holds white space or a control character: percent-encode it"
    scheme = url.partition(":")[0].lower() if ":" in url else ""
    if scheme == "data":
        return (
            "is a data: URL: put the bytes in `data_base64` and the type in `mime_type`, where "
            "the file limits apply"
        )
    if scheme not in ("http", "https"):
        named = f"`{scheme[:16]}:`" if scheme else "a relative reference"
        return f"must be an http or https URL, not {named}: a local file goes in `path`"
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - a port out of range raises here
    except ValueError as err:
        return f"is not a valid URL ({err})"
    if not parts.hostname:
        return "names no host"
    return None


def _sources(media: Media) -> str:
    """The sources ``media`` sets, as a thread file names them."""
    named = (
        ("path", media.path),
        ("data_base64", media.data),
        ("file_id", media.file_id),
        ("url", media.url),
    )
    return ", ".join(f"`{name}`" for name, value in named if value is not None)


def _guessed(name: str, mime_type: str | None) -> tuple[str, MediaKind]:
    """The MIME type (``mime_type``, else guessed from the file ``name``, else
    ``application/octet-stream``) and the kind it implies (``document`` unless image, audio or
    video)."""
    import mimetypes

    mime = mime_type or (mimetypes.guess_type(name)[0] if name else None)
    mime = mime or "application/octet-stream"
    return mime, _KINDS.get(mime.split("/", 1)[0], "document")


def _media(
    files: Iterable[str | os.PathLike[str] | Media] | str | os.PathLike[str],
) -> tuple[Media, ...]:
    """``files`` as attachments: a path (or one alone) a pointer, a :class:`Media` as it is."""
    if isinstance(files, str | os.PathLike | Media):
        files = (files,)
    return tuple(file if isinstance(file, Media) else Media.from_path(file) for file in files)


class _Record(
    msgspec.Struct,
    frozen=True,
    kw_only=True,
    forbid_unknown_fields=True,
    omit_defaults=True,
    gc=False,
):
    """Base of every domain record."""


class Identity(_Record, frozen=True, kw_only=True):
    """Who produced a record.

    ``identifier`` is the system key compared with ``self_identity``; ``representation`` is what
    the model is shown (it falls back to the identifier).
    """

    identifier: NonEmpty
    representation: str | None = None

    @property
    def display(self) -> str:
        return self.representation or self.identifier


class StashEntry(_Record, frozen=True, kw_only=True):
    """A text derived from a media item (a transcript, a caption), with its own trust tier."""

    key: NonEmpty
    value: str
    trust_tier: TrustTier


class Media(_Record, frozen=True, kw_only=True):
    """An attachment: an image, a document, audio or video.

    Exactly one source is set: ``path`` (a file pointer, read within the roots when a request
    is assembled), ``data`` (inline bytes; ``data_base64`` in a thread file), or a reference
    the API resolves itself: ``file_id`` (a file uploaded to the API's Files endpoint) or
    ``url`` (``http`` or ``https``). A reference is sent as it is, never read or fetched by
    turnwire. ``mime_type`` and ``filename`` are attacker-influenced and sanitised wherever
    they are interpolated.

    :ivar file_id: A file uploaded to the API (`file-...`), sent as it is; exactly one of
        `path`, `data_base64`, `file_id` and `url` is set.
    :ivar url: An `http` or `https` URL the API fetches (turnwire never does), sent as it is;
        inline bytes go in `data_base64` instead.
    :ivar detail: The detail level the model sees the image or document at (`low`, `high`,
        `auto`; `original` for images only; audio and video take none); null:
        `render.image_detail` for an image (itself `auto` when unset), none sent for a
        document (the API's `auto`).
    """

    id: NonEmpty
    kind: MediaKind
    mime_type: NonEmpty
    filename: str = ""
    trust_tier: TrustTier = "third-party-private"
    modality_hazard: ModalityHazard | None = None
    source: str | None = None
    path: str | None = None
    data: bytes | None = msgspec.field(default=None, name="data_base64")
    file_id: FileId | None = None
    url: NonEmpty | None = None
    detail: ImageDetail | None = None
    stash: tuple[StashEntry, ...] = ()

    def __post_init__(self) -> None:
        sources = (
            (self.path is not None)
            + (self.data is not None)
            + (self.file_id is not None)
            + (self.url is not None)
        )
        if sources != 1:
            raise ValueError(
                f"media {self.id} needs exactly one of `path`, `data_base64`, `file_id` or "
                f"`url` (given: {_sources(self) or 'none'})"
            )
        if self.url is not None:
            problem = _url_problem(self.url)
            if problem is not None:
                raise ValueError(f"media {self.id}: `url` {problem}")
        if self.detail is not None:
            if self.kind not in ("image", "document"):
                raise ValueError(
                    f"media {self.id}: `detail` applies to images and documents, not {self.kind}"
                )
            if self.kind == "document" and self.detail == "original":
                raise ValueError(
                    f"media {self.id}: `detail: original` is for images; a document takes "
                    "`low`, `high` or `auto`"
                )

    @property
    def reference(self) -> bool:
        """Whether the API resolves the attachment itself (``file_id`` or ``url``): nothing of
        it is read, copied or charged against the file limits here."""
        return self.file_id is not None or self.url is not None

    @classmethod
    def _new(
        cls,
        source: dict[str, str],
        id: str | None,
        kind: MediaKind,
        mime_type: str,
        filename: str,
        *,
        trust_tier: TrustTier,
        detail: ImageDetail | None,
    ) -> Media:
        """A new attachment from its one source (``path``, ``url`` or ``file_id``), checked as
        a thread file's is; its id fresh (``file_`` and 12 hex digits) unless given."""
        fields = {
            "id": id or _fresh_id("file", 12),
            "kind": kind,
            "mime_type": mime_type,
            "filename": filename,
            "trust_tier": trust_tier,
            "detail": detail,
        }
        return _built(cls, {**fields, **source})

    @classmethod
    def from_path(
        cls,
        path: str | os.PathLike[str],
        *,
        id: str | None = None,
        mime_type: str | None = None,
        trust_tier: TrustTier = "third-party-private",
        detail: ImageDetail | None = None,
    ) -> Media:
        """A pointer to the file at ``path`` (made absolute against the working directory),
        its MIME type and kind guessed from its name (``application/octet-stream``, a
        ``document``, when the name says nothing), its id fresh (``file_`` and 12 hex digits).

        Nothing is read here: the file is read when a request is assembled, within the roots
        the render or run allows (``roots=``, ``files.roots``).
        """
        location = os.path.abspath(os.fspath(path))
        name = os.path.basename(location)
        mime, kind = _guessed(name, mime_type)
        return cls._new(
            {"path": location}, id, kind, mime, name, trust_tier=trust_tier, detail=detail
        )

    @classmethod
    def from_url(
        cls,
        url: str,
        *,
        id: str | None = None,
        mime_type: str | None = None,
        filename: str | None = None,
        trust_tier: TrustTier = "third-party-private",
        detail: ImageDetail | None = None,
    ) -> Media:
        """A reference to ``url`` (``http`` or ``https``), which the API fetches: turnwire
        never does. Its file name (unless given) is the URL path's last segment, its MIME type
        and kind guessed from that name as :meth:`from_path` guesses them, its id fresh.

        :raises turnwire.errors.ThreadFileError: another scheme, no host, white space or a
            ``detail`` the kind does not take; the error's ``$.path`` is rooted at the media.
        """
        from urllib.parse import unquote, urlsplit

        name = filename
        if name is None:
            try:
                name = unquote(urlsplit(url).path.rsplit("/", 1)[-1])
            except ValueError:  # refused below, where the URL is checked
                name = ""
        mime, kind = _guessed(name, mime_type)
        return cls._new({"url": url}, id, kind, mime, name, trust_tier=trust_tier, detail=detail)

    @classmethod
    def from_file_id(
        cls,
        file_id: str,
        *,
        kind: MediaKind,
        mime_type: str | None = None,
        filename: str = "",
        id: str | None = None,
        trust_tier: TrustTier = "third-party-private",
        detail: ImageDetail | None = None,
    ) -> Media:
        """A reference to a file uploaded to the API (``file-...``), sent as it is. An id
        says nothing of what the file holds, so ``kind`` is given (``image`` or
        ``document`` are the kinds the API takes); the MIME type is guessed from ``filename``
        unless given (``application/octet-stream`` when neither says).

        :raises turnwire.errors.ThreadFileError: an empty id or one with white space, or a
            ``detail`` the kind does not take; the error's ``$.path`` is rooted at the media.
        """
        mime, _ = _guessed(filename, mime_type)
        return cls._new(
            {"file_id": file_id}, id, kind, mime, filename, trust_tier=trust_tier, detail=detail
        )

    @property
    def hazard(self) -> ModalityHazard:
        """The modality hazard, defaulting by kind as the reference does."""
        if self.modality_hazard is not None:
            return self.modality_hazard
        return "extractable-instructions" if self.kind == "document" else "opaque-perceptual"

    @property
    def byte_length(self) -> int | None:
        return None if self.data is None else len(self.data)


class Artifact(_Record, frozen=True, kw_only=True):
    """A tool result body with a line-oriented view.

    ``inline`` decides whether the model sees the body or a handle: ``True`` inlines it,
    ``False`` shows a handle, ``None`` (the default) inlines it when it is at most
    ``render.tool_result_inline_max_bytes`` long.
    """

    text: str | None = None
    path: str | None = None
    inline: bool | None = None
    kind: str = "SpooledArtifact"

    def __post_init__(self) -> None:
        if (self.path is None) == (self.text is None):
            raise ValueError("an artifact needs exactly one of `text` or `path`")

    @property
    def body(self) -> str:
        if self.text is None:
            raise ValueError(f"artifact {self.path} was not loaded before rendering")
        return self.text

    @property
    def byte_length(self) -> int:
        return len(self.body.encode())

    @property
    def line_count(self) -> int:
        body = self.body
        if not body:
            return 0
        return body.count("\n") + (0 if body.endswith("\n") else 1)

    def head(self, n: int) -> str:
        return "\n".join(self.body.splitlines()[:n])

    def tail(self, n: int) -> str:
        lines = self.body.splitlines()
        return "\n".join(lines[-n:] if n > 0 else [])


class ToolResult(_Record, frozen=True, kw_only=True):
    """The result of a tool call: exactly one of the silos.

    ``text`` (a plain answer or an error text), ``artifact`` / ``artifacts`` (bodies),
    ``media`` (one or more attachments), or ``shell`` (what each command of a shell call
    printed, and how it ended). A computer call's result is its screenshot (``media``, one
    image) with the ids of the pending safety checks its handler acknowledged
    (``acknowledged_safety_checks``).

    :ivar shell: A shell call's result: what each command printed, and how it ended.
    :ivar acknowledged_safety_checks: A computer call's result: the ids of the pending safety
        checks the deployer's handler acknowledged (only checks the call raised).
    """

    text: str | None = None
    artifact: Artifact | None = None
    artifacts: tuple[Artifact, ...] | None = None
    media: tuple[Media, ...] | None = None
    shell: tuple[ShellCommandOutput, ...] | None = None
    acknowledged_safety_checks: tuple[NonEmpty, ...] = ()

    def __post_init__(self) -> None:
        set_fields = [
            name
            for name in ("text", "artifact", "artifacts", "media", "shell")
            if getattr(self, name) is not None
        ]
        if len(set_fields) != 1:
            raise ValueError(
                "a tool result needs exactly one of `text`, `artifact`, `artifacts`, `media` "
                "or `shell`"
            )
        if self.artifacts is not None and not self.artifacts:
            raise ValueError("`artifacts` must not be empty")
        if self.media is not None and not self.media:
            raise ValueError("`media` must not be empty")
        if self.shell is not None and not self.shell:
            raise ValueError("`shell` must not be empty")


class ReasoningPayload(
    _Record, frozen=True, kw_only=True, tag="responses-reasoning", tag_field="variant"
):
    """What a thought needs to be replayed as a native reasoning item.

    :ivar item: the reasoning item as it will be replayed.
    :ivar paired_item_id: the id of the output item that followed it in the response.
    :ivar prefix_fingerprint: the fingerprint of the request prefix it was produced after.
    """

    item: ReasoningItem
    paired_item_id: str | None = None
    prefix_fingerprint: str | None = None


class Message(_Record, frozen=True, kw_only=True):
    """A message of the conversation, from the user or from an assistant.

    The identity defaults to the role: an assistant message without identity is the agent's own
    output (with the default ``self_identity``). ``phase`` is the API's label of an assistant
    message (``commentary`` before tool calls, ``final_answer``), replayed as it came.

    An assistant message may carry what the API attached to its text: ``annotations`` (url and
    file citations, their indexes into ``content``) and ``logprobs``, kept as the API sent them;
    and a ``refusal`` instead of (or beside) text, replayed as a refusal part.
    """

    id: NonEmpty
    role: Role
    content: str | None = None
    identity: Identity | None = None
    attachments: tuple[Media, ...] = ()
    phase: str | None = None
    refusal: str | None = None
    annotations: tuple[dict[str, Any], ...] = ()
    logprobs: tuple[dict[str, Any], ...] = ()
    created_at: AwareDatetime
    seq: int = 0

    def __post_init__(self) -> None:
        if not self.content and not self.attachments and not self.refusal:
            needs = "`content` or `attachments`"
            if self.role == "assistant":
                needs = "`content`, `attachments` or `refusal`"
            raise ValueError(f"message {self.id} needs {needs}")
        if self.role == "user" and (self.refusal or self.annotations or self.logprobs):
            raise ValueError(
                f"message {self.id}: `refusal`, `annotations` and `logprobs` belong to "
                "assistant messages"
            )

    @classmethod
    def user(
        cls,
        text: str = "",
        *,
        files: Iterable[str | os.PathLike[str] | Media] = (),
        identity: Identity | None = None,
        id: str | None = None,
        created_at: datetime | None = None,
    ) -> Message:
        """A user message: ``text`` with ``files`` attached, a fresh id (``msg_`` and 32 hex
        digits) and the time now (UTC, to the millisecond), unless given.

        :param files: paths (each a pointer, :meth:`Media.from_path`) or :class:`Media`.
        :raises turnwire.errors.ThreadFileError: a value a thread file's message could not
            hold, or neither text nor files; the error's ``$.path`` is rooted at the message.
        """
        fields = {
            "id": id or _fresh_id("msg"),
            "role": "user",
            "content": text or None,
            "identity": identity,
            "attachments": _media(files),
            "created_at": created_at or _now(),
        }
        return _built(cls, fields)

    @property
    def who(self) -> Identity:
        return self.identity or Identity(identifier=self.role)


class Thought(_Record, frozen=True, kw_only=True):
    """A reasoning record: plain text, a replayable reasoning item, or both.

    Rules (from the reference): a payload requires ``replay_compatibility``; without a payload,
    ``content`` must be non-empty.
    """

    id: NonEmpty
    content: str = ""
    identity: Identity | None = None
    replay_compatibility: str | None = None
    payload: ReasoningPayload | None = None
    created_at: AwareDatetime
    seq: int = 0

    def __post_init__(self) -> None:
        if self.payload is not None and not self.replay_compatibility:
            raise ValueError(f"thought {self.id} has a payload but no `replay_compatibility`")
        if self.payload is None and not self.content:
            raise ValueError(f"thought {self.id} needs `content` or a `payload`")

    @property
    def who(self) -> Identity:
        return self.identity or Identity(identifier="assistant")


def tool_call_checksum(tool: str, args: Any) -> str:
    """SHA-256 (hex) of the canonical JSON of ``{tool, args}``, as the reference computes it."""
    return hashlib.sha256(canonical_json({"args": args, "tool": tool}).encode()).hexdigest()


class ToolCall(_Record, frozen=True, kw_only=True):
    """A call the model made and, once run, its result.

    ``id`` is ``call_id`` alone or the composite ``call_id|item_id`` when the response gave the
    call an item id (``fc_...``). ``tool`` follows the API's rule for function names, like
    :class:`Tool`'s ``name``: a call with any other name could never be replayed, so a server
    that answers with one gets a stream error rather than a thread that no request can send.
    ``caller`` is the ``call_id`` of the ``program`` item that made the call (programmatic
    tool calling); a call the model made directly has none. ``namespace`` is the namespace
    the API put the function in (a function a tool search loaded), sent back with the call.
    ``raw_args`` is the arguments text exactly as the model sent it, kept when it is not a JSON
    object ``args`` can hold (not JSON, an array, nested too deeply ...): the call is replayed
    with that very text, ``args`` stays empty, and the call is answered with an error result
    instead of running.

    ``payload`` makes it a call of a client-executed tool (:mod:`turnwire.model.client_calls`):
    a custom tool's input, a shell or local shell action, a patch operation or computer
    actions, tagged by its ``kind``; ``tool`` is then the custom tool's name, or the kind
    (``shell``, ``apply_patch`` ...), and ``args`` stays empty. Without one it is a function
    call (``kind`` ``function``).

    :ivar payload: What a call of a client-executed tool asked (a custom tool's input, a shell
        action, a patch operation, computer actions), tagged by its `kind`; the handler
        registered under `tool` gets it. Absent for a function call.
    """

    id: NonEmpty
    tool: ToolName
    args: dict[str, Any] = msgspec.field(default_factory=dict)
    raw_args: str | None = None
    is_error: bool = False
    inline: bool | None = None
    result: ToolResult | None = None
    checksum: str | None = None
    caller: NonEmpty | None = None
    namespace: NonEmpty | None = None
    payload: ClientPayload | None = None
    created_at: AwareDatetime
    seq: int = 0

    def __post_init__(self) -> None:
        payload = self.payload
        if payload is None:
            if self.result is not None and (
                self.result.shell is not None or self.result.acknowledged_safety_checks
            ):
                raise ValueError(
                    f"tool call {self.id}: `result.shell` and `result.acknowledged_safety_checks`"
                    " answer client-executed calls only"
                )
            return
        kind = payload.__struct_config__.tag
        if self.args or self.raw_args is not None:
            raise ValueError(f"tool call {self.id}: a {kind} call has a `payload`, not `args`")
        if kind not in ("custom", self.tool):
            raise ValueError(f"tool call {self.id}: a {kind} call's `tool` is {kind!r}")
        result = self.result
        if result is None:
            return
        if result.shell is not None and kind != "shell":
            raise ValueError(f"tool call {self.id}: `result.shell` answers shell calls only")
        acknowledged = result.acknowledged_safety_checks
        if acknowledged:
            pending = (
                {check.id for check in payload.pending_safety_checks}
                if isinstance(payload, ComputerAction)
                else set()
            )
            unknown = [check for check in acknowledged if check not in pending]
            if unknown:
                raise ValueError(
                    f"tool call {self.id}: `result.acknowledged_safety_checks` names "
                    f"{unknown[0]!r}, which is not one of the call's pending safety checks"
                )

    @property
    def kind(self) -> ToolKind:
        """The kind of tool called: ``function``, or the payload's kind."""
        if self.payload is None:
            return "function"
        kind: ToolKind = self.payload.__struct_config__.tag  # type: ignore[assignment]
        return kind

    def split_id(self) -> tuple[str, str | None]:
        """``(call_id, item_id)``: split on the first ``|``; with nothing before it, the whole
        id is the call id."""
        head, sep, tail = self.id.partition("|")
        if sep and head:
            return head, tail or None
        return self.id, None

    @property
    def call_id(self) -> str:
        return self.split_id()[0]

    @property
    def item_id(self) -> str | None:
        return self.split_id()[1]

    @property
    def digest(self) -> str:
        return self.checksum or tool_call_checksum(self.tool, self.args)


class HostedItem(_Record, frozen=True, kw_only=True):
    """An output item the API produced that is not a message, a reasoning item or a function
    call: a hosted tool's call (``web_search_call``, ``file_search_call``,
    ``code_interpreter_call``, ``image_generation_call``, ``mcp_call``, ``tool_search_call``
    ...), an MCP tool listing or approval request, a ``compaction``, or a type the API adds later.

    ``item`` is the item exactly as the API emitted it at ``response.output_item.done`` (its
    ``type`` and ``id`` included), so nothing is lost and it can be replayed as it came;
    :attr:`view` reads it as a typed value for the known types. It sorts in the timeline by
    ``(created_at, seq)`` like every record; a reasoning item recorded right before it pairs
    with it (its ``paired_item_id`` is this ``id``).

    ``seal`` marks an item this deployment recorded itself (an HMAC of ``item`` under the
    envelope secret, see :func:`turnwire.model.hosted.seal`): only a sealed item is replayed as an
    item (``render.hosted_replay``), since an item can grant the API tools or approvals.
    """

    id: NonEmpty
    type: ItemType
    item: dict[str, Any]
    seal: str | None = None
    created_at: AwareDatetime
    seq: int = 0

    def __post_init__(self) -> None:
        kind = self.item.get("type")
        if kind != self.type:
            raise ValueError(
                f"hosted item {self.id}: `item.type` is {kind!r}, not its `type` {self.type!r}"
            )
        item_id = self.item.get("id")
        if item_id is not None and item_id != self.id:
            raise ValueError(f"hosted item {self.id}: `item.id` is {item_id!r}, not its `id`")

    @property
    def view(self) -> Any:
        """The item as a typed value (:mod:`turnwire.model.hosted`) for a known type, else the raw
        ``item`` mapping."""
        from turnwire.model.hosted import view

        return view(self)


class Memory(_Record, frozen=True, kw_only=True):
    """Something the agent remembers about the user or the task."""

    id: NonEmpty
    content: NonEmpty
    confidence: Unit = 1.0
    importance: Unit = 0.5
    created_at: AwareDatetime | None = None


class Retrievable(_Record, frozen=True, kw_only=True):
    """A retrieved document, with the trust tier of the channel it came from.

    ``content`` is the body; ``artifact`` replaces it for large bodies, shown as a handle unless
    ``inline`` is true.
    """

    id: NonEmpty
    content: str | None = None
    artifact: Artifact | None = None
    trust_tier: TrustTier
    source: str | None = None
    kind: str | None = None
    score: Unit | None = None
    inline: bool = False
    created_at: AwareDatetime | None = None

    def __post_init__(self) -> None:
        if (self.content is None) == (self.artifact is None):
            raise ValueError(f"retrievable {self.id} needs exactly one of `content` or `artifact`")


class Tool(_Record, frozen=True, kw_only=True):
    """A function tool the model may call.

    ``name`` follows the API's rule for function names: 1 to 64 letters, digits, ``_`` or
    ``-``. ``parameters`` is a JSON Schema object. ``trusted`` selects the trusted envelope for
    its results; ``hidden`` tools are callable but not declared to the model. ``handler`` names
    the Python callable (``module:function``) that runs it. ``allowed_callers`` says who may
    call it (programmatic tool calling): the model itself (``direct``), a program the model
    wrote (``programmatic``), or both; unset, the model itself only, and the declaration
    leaves the field out. ``defer_loading`` declares it deferred: loaded only through a tool
    search (the ``tool_search`` hosted tool).
    """

    name: ToolName
    description: str = ""
    parameters: dict[str, Any] | None = None
    trusted: bool = False
    hidden: bool = False
    strict: bool | None = None
    handler: str | None = None
    allowed_callers: Annotated[tuple[ToolCaller, ...], msgspec.Meta(min_length=1)] | None = None
    defer_loading: bool = False

    def __post_init__(self) -> None:
        callers = self.allowed_callers
        if callers is not None and len(set(callers)) != len(callers):
            raise ValueError(f"tool {self.name}: `allowed_callers` names a caller twice")

    @property
    def callers(self) -> tuple[ToolCaller, ...]:
        """Who may call it: ``allowed_callers``, the model alone when unset."""
        return self.allowed_callers or ("direct",)

    def allows(self, caller: ToolCaller) -> bool:
        """Whether a call from ``caller`` may run this tool."""
        return caller in self.callers


class Thread(_Record, frozen=True, kw_only=True):
    """A whole stored conversation: schema version 1 of the thread file."""

    version: Literal[1] = 1
    model: str | None = None
    output_schema: OutputSchema | None = None
    system_prompt: str = ""
    standing_instructions: tuple[str, ...] = ()
    tools: tuple[Tool, ...] = ()
    memories: tuple[Memory, ...] = ()
    retrievables: tuple[Retrievable, ...] = ()
    messages: tuple[Message, ...] = ()
    thoughts: tuple[Thought, ...] = ()
    tool_calls: tuple[ToolCall, ...] = ()
    hosted_items: tuple[HostedItem, ...] = ()
    hosted_tools: tuple[HostedTool, ...] = ()

    def __post_init__(self) -> None:
        seen: set[str] = set()
        for index, tool in enumerate(self.tools):
            if tool.name in seen:
                raise ValueError(f"tools[{index}].name: tool name {tool.name!r} is declared twice")
            seen.add(tool.name)
        if self.hosted_tools:
            check_hosted_tools(self.hosted_tools)

    @classmethod
    def create(
        cls,
        system_prompt: str = "",
        *,
        model: str | None = None,
        tools: Iterable[Tool] = (),
        messages: Iterable[Message] = (),
        prompt: str = "",
        files: Iterable[str | os.PathLike[str] | Media] = (),
    ) -> Thread:
        """A new thread: a system prompt, a model, tools, any messages, and (``prompt``,
        ``files``) a first question after them (:meth:`Message.user`). Lists do for tuples.

        The values given are checked as a thread file's are; the records given are checked, with
        the rest, where the thread enters rendering, a run or a store
        (:func:`turnwire.model.checks.check_thread` checks them at once).

        :raises turnwire.errors.ThreadFileError: a value breaks a rule (its ``$.path`` named).
        """
        held = tuple(messages)
        if prompt or files:
            held += (Message.user(prompt, files=files),)
        fields = {
            "model": model,
            "system_prompt": system_prompt,
            "tools": tuple(tools),
            "messages": held,
        }
        return _built(cls, fields)

    def with_user_message(
        self,
        text: str = "",
        *,
        files: Iterable[str | os.PathLike[str] | Media] = (),
        identity: Identity | None = None,
    ) -> Thread:
        """This thread with a user message added (:meth:`Message.user`), dated now, and
        always after every record the thread holds (one may be dated a little ahead of this
        machine's clock), so the timeline puts it last.

        :raises turnwire.errors.ThreadFileError: a value a thread file could not hold.
        """
        message = Message.user(
            text, files=files, identity=identity, created_at=not_before(_now, latest(self))()
        )
        return msgspec.structs.replace(self, messages=(*self.messages, message))

    def tool(self, name: str) -> Tool | None:
        for tool in self.tools:
            if tool.name == name:
                return tool
        return None

    def header_only(self) -> Thread:
        """The thread without its records (messages, thoughts, tool calls, hosted items):
        what a store keeps as a thread's header, the records living in its turns."""
        return msgspec.structs.replace(
            self, messages=(), thoughts=(), tool_calls=(), hosted_items=()
        )


def latest(thread: Thread) -> datetime | None:
    """When the thread's latest record is dated (``None``: it holds none)."""
    return max(
        (
            record.created_at
            for records in (
                thread.messages,
                thread.thoughts,
                thread.tool_calls,
                thread.hosted_items,
            )
            for record in records
        ),
        default=None,
    )


def after_every_record(thread: Thread, now: datetime) -> datetime:
    """When a record the client makes itself (an approval decision) is dated:
    ``now``, or just after the thread's latest record when that is not before ``now``. A
    timestamp of its own: the pipeline reads a shared ``created_at`` as "from the same
    response", and such a record is no part of the response it answers."""
    last = latest(thread)
    return now if last is None or now > last else last + timedelta(microseconds=1)


def not_before(clock: Callable[[], datetime], floor: datetime | None) -> Callable[[], datetime]:
    """``clock``, but never at or before ``floor``: what records added to a thread are dated
    with. A thread may hold a record dated a little ahead of this machine's clock (another
    machine's, within the drift a thread file may have); a record added after it must still
    sort after it, or the timeline would put the new question before an older compaction,
    which would cut it out of the request."""
    if floor is None:
        return clock
    after = floor + timedelta(milliseconds=1)

    def dated() -> datetime:
        now = clock()
        return now if now > floor else after

    return dated


def map_pointers(
    thread: Thread,
    media: Callable[[Media], Media],
    artifact: Callable[[Artifact], Artifact],
) -> Thread:
    """``thread`` with ``media`` applied to every attachment and media result, and
    ``artifact`` to every artifact (tool results and retrieved documents).

    Records without media or artifacts are kept as they are (the same objects).
    """
    replace = msgspec.structs.replace
    messages = tuple(
        replace(m, attachments=tuple(media(a) for a in m.attachments)) if m.attachments else m
        for m in thread.messages
    )
    calls = []
    for call in thread.tool_calls:
        result = call.result
        if result is None or not (result.media or result.artifact or result.artifacts):
            calls.append(call)
            continue
        result = replace(
            result,
            media=None if result.media is None else tuple(media(m) for m in result.media),
            artifact=None if result.artifact is None else artifact(result.artifact),
            artifacts=None
            if result.artifacts is None
            else tuple(artifact(a) for a in result.artifacts),
        )
        calls.append(replace(call, result=result))
    retrievables = tuple(
        replace(r, artifact=artifact(r.artifact)) if r.artifact is not None else r
        for r in thread.retrievables
    )
    return replace(thread, messages=messages, tool_calls=tuple(calls), retrievables=retrievables)
