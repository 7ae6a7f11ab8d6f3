"""One output item of a response while it streams: a text, reasoning, call or hosted slot.

Each slot takes the deltas of its item and gives the finished output
(:class:`~turnwire.wire.response.Output`) at the item's ``done`` event; the accumulator
(:mod:`turnwire.wire.accumulator`) keeps one per output index.
"""

from __future__ import annotations

from typing import Any

from turnwire.wire.response import (
    HostedOutput,
    MessageOutput,
    ReasoningOutput,
    ToolCallOutput,
    _CallItem,
    _convert,
    _HostedItem,
    _MessageItem,
    _OutputTextPart,
    _ReasoningItem,
    _RefusalPart,
    shape_error,
)

# ---------------------------------------------------------------------- slots


class _Text:
    __slots__ = (
        "annotations",
        "done",
        "finalised",
        "item_id",
        "logprobs",
        "parts",
        "phase",
        "refusal",
        "status",
    )

    def __init__(self, item: _MessageItem) -> None:
        self.item_id = item.id
        self.parts: list[str] = []
        self.refusal: list[str] = []
        self.phase = item.phase
        self.status: str | None = item.status
        self.done: str | None = None
        self.annotations: tuple[dict[str, Any], ...] = ()
        self.logprobs: tuple[dict[str, Any], ...] = ()
        self.finalised = False

    @staticmethod
    def shape(item: Any, event: str, where: str) -> _MessageItem:
        message = _convert(item, _MessageItem, event, where)
        for index, part in enumerate(message.content or ()):
            kind = part.get("type")
            if kind == "output_text":
                _convert(part, _OutputTextPart, event, f"{where}.content[{index}]")
            elif kind == "refusal":
                _convert(part, _RefusalPart, event, f"{where}.content[{index}]")
        return message

    def finalise(self, item: _MessageItem) -> None:
        texts: list[str] = []
        refusals: list[str] = []
        annotations: list[dict[str, Any]] = []
        logprobs: list[dict[str, Any]] = []
        offset = 0
        for part in item.content or ():
            kind = part.get("type")
            if kind == "output_text":
                text = part.get("text", "")
                # The parts are joined into one text: a citation's indexes count into it.
                annotations += (_shifted(a, offset) for a in part.get("annotations") or ())
                logprobs += part.get("logprobs") or ()
                texts.append(text)
                offset += len(text)
            elif kind == "refusal":
                refusals.append(part.get("refusal", ""))
        if texts or not self.parts:
            self.done = "".join(texts)
        if annotations:
            self.annotations = tuple(annotations)
        if logprobs:
            self.logprobs = tuple(logprobs)
        if refusals:
            self.refusal = [refusals[-1]]
        self.item_id = item.id if item.id is not None else self.item_id
        self.phase = item.phase if item.phase is not None else self.phase
        self.status = item.status if item.status is not None else self.status
        self.finalised = True

    def output(self, index: int, strict: bool) -> MessageOutput:
        text = self.done if self.done is not None else "".join(self.parts)
        return MessageOutput(
            output_index=index,
            item_id=self.item_id,
            text=text,
            refusal="".join(self.refusal),
            phase=self.phase,
            status=self.status,
            annotations=self.annotations,
            logprobs=self.logprobs,
        )


_INDEX_KEYS = ("start_index", "end_index", "index")


def _shifted(annotation: dict[str, Any], offset: int) -> dict[str, Any]:
    """``annotation`` with its character indexes moved by ``offset``."""
    if not offset or not any(type(annotation.get(key)) is int for key in _INDEX_KEYS):
        return annotation
    return {
        key: value + offset if key in _INDEX_KEYS and type(value) is int else value
        for key, value in annotation.items()
    }


class _Thinking:
    __slots__ = (
        "content",
        "done_content",
        "done_summary",
        "encrypted",
        "finalised",
        "item_id",
        "summary",
    )

    def __init__(self, item: _ReasoningItem) -> None:
        self.item_id = item.id
        self.summary: dict[int, list[str]] = {}
        self.content: dict[int, list[str]] = {}
        self.done_summary: tuple[str, ...] | None = None
        self.done_content: tuple[str, ...] | None = None
        self.encrypted: str | None = None
        self.finalised = False

    @staticmethod
    def shape(item: Any, event: str, where: str) -> _ReasoningItem:
        return _convert(item, _ReasoningItem, event, where)

    def finalise(self, item: _ReasoningItem) -> None:
        self.item_id = item.id if item.id is not None else self.item_id
        if item.summary is not None:
            self.done_summary = tuple(part.text for part in item.summary)
        if item.content is not None:
            self.done_content = tuple(part.text for part in item.content)
        if item.encrypted_content:
            self.encrypted = item.encrypted_content
        self.finalised = True

    def output(self, index: int, strict: bool) -> ReasoningOutput:
        summary = self.done_summary
        if summary is None:
            summary = tuple("".join(self.summary[k]) for k in sorted(self.summary))
        content = self.done_content
        if content is None:
            content = tuple("".join(self.content[k]) for k in sorted(self.content))
        return ReasoningOutput(
            output_index=index,
            item_id=self.item_id,
            summary=summary,
            content=content,
            encrypted_content=self.encrypted,
        )


class _Call:
    __slots__ = (
        "arguments",
        "call_id",
        "caller",
        "finalised",
        "item_id",
        "name",
        "namespace",
        "parts",
        "source",
        "status",
    )

    def __init__(self, item: _CallItem, source: str) -> None:
        self.item_id = item.id
        self.call_id = item.call_id or None
        self.name = item.name or ""
        self.parts: list[str] = [item.arguments] if item.arguments else []
        self.arguments: str | None = None
        self.status: str | None = item.status
        self.caller = item.program
        self.namespace = item.namespace or None
        self.source = source
        self.finalised = False

    @staticmethod
    def shape(item: Any, event: str, where: str) -> _CallItem:
        return _convert(item, _CallItem, event, where)

    def finalise(self, item: _CallItem, source: str) -> None:
        if item.arguments:
            self.arguments = item.arguments
        self.item_id = item.id if item.id is not None else self.item_id
        self.call_id = item.call_id or self.call_id
        self.name = item.name or self.name
        self.status = item.status if item.status is not None else self.status
        self.caller = item.program if item.caller is not None else self.caller
        self.namespace = item.namespace or self.namespace
        self.source = source
        self.finalised = True

    def output(self, index: int, strict: bool) -> ToolCallOutput:
        if self.call_id is None and strict:
            raise shape_error(
                self.source,
                f"output[{index}].call_id",
                "a function call needs a call_id to be answered, and none arrived",
            )
        arguments = self.arguments if self.arguments is not None else "".join(self.parts)
        return ToolCallOutput(
            output_index=index,
            item_id=self.item_id,
            call_id=self.call_id or "",
            name=self.name,
            arguments=arguments,
            status=self.status,
            caller=self.caller,
            namespace=self.namespace,
        )


class _Hosted:
    """Any other item: kept whole, as the last event that carried it gave it."""

    __slots__ = ("finalised", "item", "item_id", "kind")

    def __init__(self, kind: str, item: dict[str, Any], shaped: _HostedItem) -> None:
        self.kind = kind
        self.item = item
        self.item_id = shaped.id
        self.finalised = False

    def finalise(self, item: dict[str, Any], shaped: _HostedItem) -> None:
        self.item = item
        self.item_id = shaped.id if shaped.id is not None else self.item_id
        self.finalised = True

    def output(self, index: int, strict: bool) -> HostedOutput:
        return HostedOutput(
            output_index=index, item_id=self.item_id, type=self.kind, item=self.item
        )


_Slot = _Text | _Thinking | _Call | _Hosted
