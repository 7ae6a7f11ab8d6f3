"""Test helpers: the offline Responses API (:mod:`turnwire.emulate`) for any client's tests.

```python
import openai
import turnwire.testing

with turnwire.testing.emulator(script=[{"text": "Hello!"}]) as api:
    client = openai.OpenAI(base_url=api.base_url, api_key="x")
    assert client.responses.create(model="gpt-5", input="Hi").output_text == "Hello!"
```

With pytest, the ``turnwire_emulator`` fixture gives the same object, a fresh emulator per
test (registered through the ``pytest11`` entry point; nothing runs unless a test asks for
it). ``api.script([...])`` replaces its answers mid-test.

``emulator(replay="tests/recordings")`` answers from recordings instead, and
``emulator(record="tests/recordings")`` records what the real API answers
(:mod:`turnwire.emulate.recording`).
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # imported when used: pytest loads this module in every session
    from turnwire.emulate import Answerer, EmulatorServer, Script

__all__ = ["EmulatorHandle", "emulator"]


class EmulatorHandle:
    """A running emulator: its :attr:`base_url` for the client, and its answers."""

    def __init__(self, server: EmulatorServer) -> None:
        self.server = server
        self.emulator: Answerer = server.emulator
        self.base_url = server.base_url

    def script(self, answers: Script | Sequence[Any] | dict[str, Any]) -> None:
        """Play ``answers`` from now on (a :class:`~turnwire.emulate.Script`, or its plain
        data: a list of answers or ``{answers: [...], default: {...}}``)."""
        from turnwire.emulate import Emulator, Script, script_from

        if not isinstance(self.emulator, Emulator):
            raise TypeError("this emulator records or replays; it plays no script")
        script = answers if isinstance(answers, Script) else script_from(answers)
        self.emulator.scripted.replace(script)


def _script(
    script: Script | Sequence[Any] | dict[str, Any] | str | os.PathLike[str] | None,
) -> Script | None:
    from turnwire.emulate import Script, load_script, script_from

    if script is None or isinstance(script, Script):
        return script
    if isinstance(script, str | os.PathLike):
        return load_script(script)
    return script_from(script)


@contextmanager
def emulator(
    *,
    script: Script | Sequence[Any] | dict[str, Any] | str | os.PathLike[str] | None = None,
    key: bytes | None = None,
    organization: str = "org-emulator",
    record: str | os.PathLike[str] | None = None,
    upstream: str | None = None,
    upstream_key: str | None = None,
    replay: str | os.PathLike[str] | None = None,
    **options: Any,
) -> Iterator[EmulatorHandle]:
    """An emulator served on a free port of 127.0.0.1 for the ``with`` block.

    :param script: the answers: a script file's path, a :class:`~turnwire.emulate.Script`, or
        its plain data.
    :param record: a directory: forward every request to ``upstream`` (the real API without)
        with ``upstream_key`` (``$OPENAI_API_KEY`` without) and record the answers there.
    :param replay: a directory of recordings to answer from.
    :param options: further :class:`~turnwire.emulate.Emulator` options (``state_ttl_s``,
        ``cache``, ``max_body_bytes``); with ``record`` or ``replay``, ``max_body_bytes`` only.
    """
    from turnwire.emulate import Emulator, EmulatorServer, Recorder, Replayer
    from turnwire.emulate.recording import DEFAULT_UPSTREAM

    if record is not None and replay is not None:
        raise TypeError("record= and replay= exclude each other")
    if (record is not None or replay is not None) and script is not None:
        raise TypeError("a recording or replaying emulator plays no script")
    engine: Answerer
    if record is not None:
        engine = Recorder(
            record,
            upstream=upstream or DEFAULT_UPSTREAM,
            api_key=upstream_key or os.environ.get("OPENAI_API_KEY"),
            **options,
        )
    elif replay is not None:
        engine = Replayer(replay, **options)
    else:
        engine = Emulator(script=_script(script), key=key, organization=organization, **options)
    try:
        with EmulatorServer(engine) as server:
            yield EmulatorHandle(server)
    finally:
        if isinstance(engine, Recorder):
            engine.close()


if importlib.util.find_spec("pytest") is not None:
    import pytest

    @pytest.fixture
    def turnwire_emulator() -> Iterator[EmulatorHandle]:
        """A fresh emulator for one test (:func:`emulator` with its defaults)."""
        with emulator() as api:
            yield api
