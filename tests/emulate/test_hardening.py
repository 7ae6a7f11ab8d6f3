"""What the emulator refuses to be used for: a web page spending the recorder's key (or driving
any emulator), a recording whose name or kind of file is not the recorder's, a recording
others can read, a 401 kept, and memory growing with the requests. Every server here listens
on 127.0.0.1."""

from __future__ import annotations

import json
import os
import stat
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest

import turnwire.testing
from turnwire.emulate import Emulator, EmulatorServer, Recorder, Replayer
from turnwire.emulate.engine import Exchange, Reply
from turnwire.emulate.recording import recording_name, request_hash
from turnwire.errors import ConfigError

from .conftest import refused_command

KEY = "sk-owner-key-0123456789"
BODY = {"model": "gpt-5", "input": "spend"}
JSON_ANSWER = b'{"id":"resp_1","object":"response"}'

Answer = Callable[[dict[str, Any]], tuple[int, str, bytes]]


class _Upstream:
    """A stand-in for the API on 127.0.0.1: what it was sent, and what it answers."""

    def __init__(self) -> None:
        self.seen: list[dict[str, str]] = []
        self.answer: Answer = lambda body: (200, "application/json", JSON_ANSWER)
        upstream = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["content-length"]))
                upstream.seen.append({name.lower(): value for name, value in self.headers.items()})
                status, kind, content = upstream.answer(json.loads(body))
                self.send_response(status)
                self.send_header("content-type", kind)
                self.send_header("content-length", str(len(content)))
                self.end_headers()
                self.wfile.write(content)

            def log_message(self, format: str, *args: Any) -> None:
                return

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def upstream() -> Iterator[_Upstream]:
    served = _Upstream()
    yield served
    served.close()


@pytest.fixture
def recorder(upstream: _Upstream, tmp_path: Path) -> Iterator[turnwire.testing.EmulatorHandle]:
    with turnwire.testing.emulator(record=tmp_path, upstream=upstream.url, upstream_key=KEY) as api:
        yield api


def _port(api: turnwire.testing.EmulatorHandle) -> int:
    return int(api.base_url.split(":")[2].split("/")[0])


# ----------------------------------------------------------------------------- 1. web pages


@pytest.mark.parametrize(
    "headers",
    [
        # What a page's fetch(..., {mode: "no-cors", body: JSON.stringify(...)}) sends.
        {"content-type": "text/plain;charset=UTF-8", "origin": "https://evil.example"},
        {"content-type": "application/json", "origin": "https://evil.example"},
        {"content-type": "application/json", "origin": "null"},
        {"content-type": "text/plain"},
        {"content-type": "application/x-www-form-urlencoded"},
        {"content-type": "multipart/form-data; boundary=x"},
        {},  # a Blob without a type: no Content-Type at all
        {"content-type": "application/json", "host": "evil.example:{port}"},  # DNS rebinding
        {"content-type": "application/json", "host": "evil.example"},
        {"content-type": "application/json", "host": "127.0.0.1:1"},
        {"content-type": "application/json", "host": "localhost"},
    ],
)
def test_record_serves_no_web_page_and_no_foreign_host(
    recorder, upstream: _Upstream, tmp_path: Path, headers: dict[str, str]
):
    headers = {name: value.format(port=_port(recorder)) for name, value in headers.items()}
    answer = httpx.post(
        f"{recorder.base_url}/responses", content=json.dumps(BODY).encode(), headers=headers
    )
    assert answer.status_code == 403
    error = answer.json()["error"]
    assert error["code"] == "forbidden_request"
    assert error["type"] == "invalid_request_error"
    assert set(error) == {"message", "type", "param", "code"}
    assert upstream.seen == []  # the key was not spent
    assert list(tmp_path.iterdir()) == []
    assert KEY not in answer.text


@pytest.mark.parametrize("host", ["127.0.0.1:{port}", "localhost:{port}", "LOCALHOST:{port}"])
def test_record_serves_a_local_client(recorder, upstream: _Upstream, host: str):
    answer = httpx.post(
        f"{recorder.base_url}/responses",
        json=BODY,
        headers={"host": host.format(port=_port(recorder))},
    )
    assert answer.status_code == 200
    assert upstream.seen[0]["authorization"] == f"Bearer {KEY}"
    with openai.OpenAI(base_url=recorder.base_url, api_key="x", max_retries=0) as sdk:
        assert sdk.responses.with_raw_response.create(**BODY).status_code == 200


def test_every_mode_refuses_a_web_page_but_not_a_client(api, sdk):
    url = f"{api.base_url}/responses"
    data = json.dumps({**BODY, "store": False}).encode()
    for headers in (
        {"content-type": "application/json", "origin": "http://127.0.0.1:8000"},
        {"origin": "https://evil.example"},
        {"content-type": "text/plain;charset=UTF-8"},
        {"content-type": "application/x-www-form-urlencoded"},
    ):
        answer = httpx.post(url, content=data, headers=headers)
        assert answer.status_code == 403, headers
        assert answer.json()["error"]["code"] == "forbidden_request"
    assert httpx.get(url, headers={"origin": "https://evil.example"}).status_code == 403
    # A client's request passes, with any Host (a container may reach it by name).
    json_type = {"content-type": "application/json; charset=utf-8"}
    assert httpx.post(url, content=data, headers=json_type).status_code == 200
    assert httpx.post(url, json=BODY, headers={"host": "emulator:8787"}).status_code == 200
    assert sdk.responses.create(model="gpt-5", input="Hi").output_text
    # The refused requests never reached the emulator.
    assert [exchange.status for exchange in api.emulator.exchanges] == [200, 200, 200]


def test_a_non_loopback_host_is_refused_for_record_only(tmp_path: Path):
    from turnwire.emulate.server import is_loopback

    assert [is_loopback(host) for host in ("127.0.0.1", "127.1.2.3", "localhost", "::1")] == [
        True
    ] * 4
    assert not any(is_loopback(host) for host in ("0.0.0.0", "", "::", "10.0.0.1", "example"))
    recorder = Recorder(tmp_path, upstream="http://127.0.0.1:9/v1", api_key=KEY)
    for host in ("0.0.0.0", "", "192.0.2.1"):
        with pytest.raises(ConfigError, match="not a loopback address") as caught:
            EmulatorServer(recorder, host=host)
        assert "--allow-remote" in str(caught.value)
    with EmulatorServer(recorder, host="localhost") as server:
        assert server.base_url.startswith("http://127.0.0.1:")
    recorder.close()


def test_the_command_line_refuses_a_remote_recorder(tmp_path: Path):
    env = {**os.environ, "OPENAI_API_KEY": KEY}
    for arguments, said in (
        (["--record", str(tmp_path), "--host", "0.0.0.0"], "--host 0.0.0.0 is not a loopback"),
        (["--allow-remote"], "--allow-remote lets --record"),
    ):
        said_instead = refused_command(["--port", "0", *arguments], env)
        assert said in said_instead
        assert KEY not in said_instead


def test_allow_remote_lifts_the_host_check_only(upstream: _Upstream, tmp_path: Path):
    recorder = Recorder(tmp_path, upstream=upstream.url, api_key=KEY)
    with EmulatorServer(recorder, host="127.0.0.1", allow_remote=True) as server:
        url = f"{server.base_url}/responses"
        assert httpx.post(url, json=BODY, headers={"host": "box.lan:8787"}).status_code == 200
        refused = httpx.post(url, json=BODY, headers={"origin": "https://evil.example"})
        assert refused.status_code == 403
    recorder.close()
    assert len(upstream.seen) == 1


# ----------------------------------------------------------------------------- 2, 3. replay


def _recording(**changes: Any) -> dict[str, Any]:
    return {
        "turnwire_recording": 1,
        "endpoint": "responses",
        "request": BODY,
        "answers": [{"status": 200, "headers": {"content-type": "application/json"}, "json": {}}],
        **changes,
    }


def test_replay_reads_only_the_names_the_recorder_gives(tmp_path: Path):
    evil = "x\r\nSet-Cookie: session=attacker\r\nX-Injected: 1.json"
    (tmp_path / evil).write_text(json.dumps(_recording()))
    with pytest.raises(ConfigError, match="not a name the recorder gives") as caught:
        Replayer(tmp_path)
    said = str(caught.value)
    assert "\r" not in said and "\n" not in said
    assert "x\\r\\nSet-Cookie: session=attacker\\r\\nX-Injected: 1.json" in said
    (tmp_path / evil).unlink()
    for name in (
        "notes.json",
        "responses-" + "A" * 32 + ".json",
        "responses-" + "a" * 31 + ".json",
        "responses-models-" + "a" * 32 + ".json",
        "responses-" + "a" * 32 + ".json\n.json",
    ):
        (tmp_path / name).write_text(json.dumps(_recording()))
        with pytest.raises(ConfigError, match="not a name the recorder gives"):
            Replayer(tmp_path)
        (tmp_path / name).unlink()
    name = recording_name("responses", request_hash("responses", BODY))
    (tmp_path / name).write_text(json.dumps(_recording()))
    with turnwire.testing.emulator(replay=tmp_path) as player:
        answer = httpx.post(f"{player.base_url}/responses", json=BODY)
    assert answer.headers["x-turnwire-emulate-recording"] == name
    from turnwire.emulate.recording import RECORDING_NAME

    for endpoint in ("responses", "responses/compact", "responses/input_tokens"):
        assert RECORDING_NAME.fullmatch(recording_name(endpoint, request_hash(endpoint, BODY)))


def _replayer_in_time(directory: Path, fifo: Path | None = None) -> BaseException | None:
    """What loading ``directory`` raised, within 10 s (a FIFO it waits on is then opened, so
    the load ends and the test fails instead of hanging)."""
    raised: list[BaseException | None] = []

    def load() -> None:
        try:
            Replayer(directory)
        except BaseException as err:
            raised.append(err)
        else:
            raised.append(None)

    loading = threading.Thread(target=load, daemon=True)
    loading.start()
    loading.join(10)
    if loading.is_alive() and fifo is not None:
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        loading.join(10)
        raise AssertionError("the replayer waited on a FIFO")
    return raised[0]


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="FIFOs are POSIX")
def test_replay_reads_regular_files_only(tmp_path: Path):
    name = tmp_path / recording_name("responses", request_hash("responses", BODY))
    os.mkfifo(name)
    raised = _replayer_in_time(tmp_path, fifo=name)
    assert isinstance(raised, ConfigError)
    assert f"recording {name}: not a regular file" in str(raised)
    name.unlink()
    elsewhere = tmp_path.parent / f"{tmp_path.name}-target.json"
    elsewhere.write_text(json.dumps(_recording()))
    name.symlink_to(elsewhere)
    with pytest.raises(ConfigError, match="a symbolic link") as caught:
        Replayer(tmp_path)
    assert str(name) in str(caught.value)
    name.unlink()
    name.mkdir()
    with pytest.raises(ConfigError, match="not a regular file"):
        Replayer(tmp_path)
    name.rmdir()
    name.write_text(json.dumps(_recording()))
    assert len(Replayer(tmp_path)) == 1


# ----------------------------------------------------------------------------- 4, 5. record


def test_recordings_are_readable_by_their_owner_only(recorder, tmp_path: Path):
    assert httpx.post(f"{recorder.base_url}/responses", json=BODY).status_code == 200
    (path,) = tmp_path.iterdir()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


STREAMED_401 = (
    b"event: error\n"
    b'data: {"type":"error","error":{"type":"invalid_request_error","code":"invalid_api_key"}}\n\n'
)


@pytest.mark.parametrize(
    ("kind", "content"),
    [("text/event-stream", STREAMED_401), ("application/json", b'{"error":{"code":"x"}}')],
)
def test_a_401_is_not_recorded_streamed_or_not(
    recorder, upstream: _Upstream, tmp_path: Path, kind: str, content: bytes
):
    upstream.answer = lambda body: (401, kind, content)
    answer = httpx.post(f"{recorder.base_url}/responses", json={**BODY, "stream": True})
    assert (answer.status_code, answer.content) == (401, content)
    assert list(tmp_path.iterdir()) == []
    upstream.answer = lambda body: (200, kind, content)  # the same answer, with a 200, is kept
    assert httpx.post(f"{recorder.base_url}/responses", json=BODY).status_code == 200
    assert len(list(tmp_path.iterdir())) == 1


# ----------------------------------------------------------------------------- 6. memory


def test_the_exchanges_kept_are_bounded_in_count_and_bytes(tmp_path: Path):
    from turnwire.emulate.engine import MAX_EXCHANGE_BYTES, MAX_EXCHANGES, ExchangeLog

    (tmp_path / recording_name("responses", request_hash("responses", BODY))).write_text(
        json.dumps(_recording())
    )
    megabyte = b"x" * (1 << 20)  # the largest body an exchange keeps (one object, shared)
    reply = Reply(200)
    answerers = [
        Emulator(),
        Recorder(tmp_path / "recorded", upstream="http://127.0.0.1:9/v1", api_key=KEY),
        Replayer(tmp_path),
    ]
    for answerer in answerers:
        kept = answerer.exchanges
        assert isinstance(kept, ExchangeLog)
        assert (kept.max_count, kept.max_bytes) == (MAX_EXCHANGES, MAX_EXCHANGE_BYTES)
        for _ in range(200):
            kept.append(Exchange.of("POST", "/v1/responses", megabyte, reply))
        assert kept.bytes <= MAX_EXCHANGE_BYTES
        assert 0 < len(kept) <= MAX_EXCHANGE_BYTES // len(megabyte)
        for _ in range(MAX_EXCHANGES + 5):
            kept.append(Exchange.of("GET", "/", b"", reply))
        assert len(kept) == MAX_EXCHANGES
        assert all(exchange.method == "GET" for exchange in kept)
    answerers[1].close()


def test_the_log_drops_the_oldest_and_keeps_the_newest():
    from turnwire.emulate.engine import ExchangeLog

    emulator = Emulator()
    emulator.exchanges = ExchangeLog(max_count=100, max_bytes=3000)
    bodies = [
        json.dumps({"model": "gpt-5", "input": f"{number:04d}" + "y" * 900}).encode()
        for number in range(10)
    ]
    for body in bodies:
        assert emulator.handle("POST", "/v1/responses", {}, body).status == 200
    kept = list(emulator.exchanges)
    assert [exchange.body for exchange in kept] == bodies[-len(kept) :]
    assert 1 < len(kept) < 4
    assert emulator.exchanges.bytes == sum(exchange.size() for exchange in kept) <= 3000
    lone = ExchangeLog(max_bytes=10)
    lone.append(Exchange.of("POST", "/v1/responses", b"z" * 100, Reply(200)))
    assert len(lone) == 1  # the newest stays, whatever it weighs
    assert lone != ExchangeLog()
    lone.clear()
    assert lone == ExchangeLog() and lone.bytes == 0
