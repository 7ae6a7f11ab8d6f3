"""``turnwire.render``: a thread in, the exact request body out."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from typing import Any

import msgspec

from turnwire.container import Container, build_container
from turnwire.errors import ConfigError
from turnwire.model import Thread
from turnwire.pipeline import RenderedInput
from turnwire.request import build_body, encode_body, preflight
from turnwire.thread_file import load_thread
from turnwire.turns import ContextAssembler
from turnwire.wire import RequestBody

__all__ = ["RenderedRequest", "render", "resolve_model"]


class RenderedRequest(msgspec.Struct, frozen=True, kw_only=True):
    """A request ready to POST.

    :ivar body: the exact bytes.
    :ivar request: the body as wire Structs.
    :ivar rendered: what ``build_input`` returned (input, tools, fingerprintable length...).
    """

    body: bytes
    request: RequestBody
    rendered: RenderedInput

    @property
    def json(self) -> dict[str, Any]:
        """The body as a dict (decoded from :attr:`body`)."""
        value = msgspec.json.decode(self.body)
        assert isinstance(value, dict)
        return value

    @property
    def fingerprintable_length(self) -> int:
        return self.rendered.fingerprintable_length


def resolve_model(thread: Thread, container: Container, model: str | None) -> str:
    """The model: the argument, else the thread's, else ``request.model``."""
    resolved = model or thread.model or container.model()
    if not resolved:
        raise ConfigError(
            "no model to render for: pass --model, set the thread's `model`, or set "
            "request.model in the configuration",
            path="$.request.model",
        )
    return str(resolved)


def render(
    thread: Thread | Mapping[str, Any] | str | os.PathLike[str],
    *,
    config_files: Iterable[str | os.PathLike[str]] = (),
    model: str | None = None,
    container: Container | None = None,
) -> RenderedRequest:
    """Render ``thread`` into the request body turnwire would POST, after the preflight check.

    :param thread: a :class:`~turnwire.model.Thread`, a parsed thread mapping, or a file path.
    :param config_files: configuration profiles merged over the packaged default.
    :param model: overrides the thread's model and ``request.model``.
    :param container: a container to use instead of building one from ``config_files``.
    :raises turnwire.errors.InputError: bad thread, configuration or rendered body.
    """
    if container is None:
        container = build_container(config_files)
    if not isinstance(thread, Thread):
        thread = load_thread(thread)
    settings = container.settings()
    resolved = resolve_model(thread, container, model)
    loaded = ContextAssembler().inline(thread)
    build_input = container.build_input()
    rendered = build_input(loaded, options=container.render_options(model=resolved))
    body = build_body(
        rendered,
        model=resolved,
        request=settings.request,
        stream=settings.client.stream,
        reasoning_replay=settings.render.reasoning_replay,
    )
    preflight(body)
    return RenderedRequest(body=encode_body(body), request=body, rendered=rendered)
