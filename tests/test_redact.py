"""Redaction: the API key never reaches an error, a log record or a tool result, whatever text
echoes it (an answer's body, a stream's error event, a configuration value, a handler's error)."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

import turnwire
from turnwire._redact import _PATTERNS, MARK, redact, remember_secret
from turnwire.errors import ConfigError, HttpError, StreamError, TurnwireError

from .client.server import Reply, ScriptedServer, recorded
from .client.streams import payloads
from .conftest import CONFORMANCE, make_container

# No sk- prefix, no "Bearer" before it: only knowing the value can hide it.
KEY = "tw-test-0123456789abcdef"
FAILING = (
    CONFORMANCE / "streams" / "jsonl" / "error_then_failed_insufficient_quota_gpt-5-nano.jsonl"
)
THREAD = """\
version: 1
model: gpt-4o
tools:
  - {name: get_capital, parameters: {type: object, properties: {country: {type: string}}}}
messages:
  - {id: u1, role: user, content: "What's the capital?", created_at: "2026-01-01T10:00:00Z"}
"""


@pytest.fixture
def thread_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    path = tmp_path / "thread.yaml"
    path.write_text(THREAD)
    return path


def sse(events: list[dict]) -> bytes:
    return b"".join(b"data: " + json.dumps(e).encode() + b"\n\n" for e in events)


def run(server: ScriptedServer, path: Path, **options: object) -> object:
    return turnwire.api.run(
        path,
        container=make_container({"client": {"retry": {"max_retries": 0}}}),
        base_url=server.base_url,
        save=True,
        jitter=lambda: 0.0,
        **options,
    )


# ---------------------------------------------------------------- the routine


@pytest.mark.parametrize(
    ("text", "kept"),
    [
        (
            "Incorrect API key provided: sk-proj-AbC123xyz_987654321.",
            "Incorrect API key provided: ",
        ),
        ("auth failed for Bearer abc.DEF-123_x", "auth failed for Bearer "),
        ("session sess-0123456789ABCDEF expired", "session "),
        ('{"api_key": "0123456789abcdef", "model": "gpt-5"}', '"model": "gpt-5"'),
        ("x-api-key: 0123456789abcdef", "x-api-key: "),
        ("password=hunter2hunter2", "password="),
        ("ConnectError: https://user:pa55word@proxy.example/v1", "https://"),
    ],
)
def test_credential_patterns_are_redacted(text, kept, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    clean = redact(text)
    assert MARK in clean and kept in clean
    assert clean.count(MARK) == 1


def test_known_values_are_redacted_from_the_arguments_the_environment_and_memory(monkeypatch):
    assert redact(f"echo {KEY}!", KEY) == f"echo {MARK}!"
    monkeypatch.setenv("SOME_SERVICE_TOKEN", "env-value-0000")
    assert redact("token env-value-0000 leaked") == f"token {MARK} leaked"

    class Holder:
        pass

    holder = Holder()
    remember_secret("remembered-value-1111", holder=holder)
    assert redact("remembered-value-1111") == MARK


def test_a_remembered_secret_is_forgotten_with_the_last_object_holding_it():
    import gc

    class Holder:
        pass

    first, second = Holder(), Holder()
    remember_secret("held-twice-2222", holder=first)
    remember_secret("held-twice-2222", holder=second)
    del first
    gc.collect()
    assert redact("held-twice-2222") == MARK  # the second holder still keeps it
    del second
    gc.collect()
    assert redact("held-twice-2222") == "held-twice-2222"


def test_plain_text_is_left_alone():
    text = "HTTP 400: Invalid value for 'temperature': must be >= 0 (resp_0123456789abcdef)"
    assert redact(text) == text
    assert redact("short", "short") == "short"  # under 8 characters: never treated as a secret


def test_every_turnwire_error_message_is_redacted(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    error = TurnwireError(f"something quoted {KEY}")
    assert KEY not in str(error) and KEY not in repr(error) and KEY not in error.args[0]
    assert MARK in error.message


def test_a_secret_across_the_excerpt_cut_is_hidden_whole(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    body = "x" * 1990 + KEY + "y" * 100
    error = HttpError(status=500, body=body)
    assert KEY[:10] not in str(error) and KEY[:10] not in error.body
    assert str(error).endswith(f"... (truncated, {len(body)} bytes read)")


# ---------------------------------------------------------------- every path


def test_the_key_echoed_in_an_error_event(thread_file, caplog):
    events = [e for e in payloads(FAILING) if e["type"] != "response.failed"]
    events[-1]["error"]["message"] = f"Incorrect API key provided: {KEY}."
    with ScriptedServer([Reply.sse(sse(events))]) as server:
        with caplog.at_level(logging.DEBUG, logger="turnwire"):
            with pytest.raises(StreamError) as caught:
                run(server, thread_file)
    assert str(caught.value) == f"stream error: Incorrect API key provided: {MARK}."
    assert KEY not in repr(caught.value) and KEY not in caplog.text


def test_the_key_echoed_in_a_response_failed(thread_file, caplog):
    events = [e for e in payloads(FAILING) if e["type"] != "error"]
    events[-1]["response"]["error"]["message"] = f"bad key Bearer {KEY}"
    with ScriptedServer([Reply.sse(sse(events))]) as server:
        with caplog.at_level(logging.DEBUG, logger="turnwire"):
            with pytest.raises(StreamError) as caught:
                run(server, thread_file)
    assert str(caught.value) == f"stream error: bad key Bearer {MARK}"
    assert caught.value.error_code == "insufficient_quota"
    assert KEY not in caplog.text


def test_the_key_echoed_in_an_http_error_body(thread_file, caplog):
    echo = {"error": {"message": f"Incorrect API key provided: {KEY}"}}
    with ScriptedServer([Reply.json(401, echo)]) as server:
        with caplog.at_level(logging.DEBUG, logger="turnwire"):
            with pytest.raises(HttpError) as caught:
                run(server, thread_file)
    assert server.requests[0].headers["authorization"] == f"Bearer {KEY}"
    assert KEY not in str(caught.value) and KEY not in caught.value.body
    assert MARK in caught.value.body
    assert KEY not in caplog.text


@pytest.mark.parametrize("key", [KEY, "sk-proj-0123456789abcdefABCDEF"])
def test_the_key_placed_in_an_enum_setting(key, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", key)
    with pytest.raises(ConfigError) as caught:
        turnwire.load_settings(overrides={"request": {"truncation": "${OPENAI_API_KEY}"}})
    assert caught.value.path == "$.request.truncation"
    assert key not in str(caught.value) and MARK in str(caught.value)


def test_the_key_in_a_handler_error_never_reaches_the_model_or_the_thread(thread_file):
    def get_capital(country: str = "?") -> str:
        raise ValueError(f"upstream refused key {KEY}")

    script = [
        Reply.sse(recorded("function_call_legacy_noseq_gpt-4o.sse")),
        Reply.sse(recorded("text_after_tool_legacy_noseq_gpt-4o.sse")),
    ]
    with ScriptedServer(script) as server:
        result = run(server, thread_file, handlers={"get_capital": get_capital})
    (call,) = result.records.tool_calls
    assert (
        call.is_error
        and call.result.text == f"Tool get_capital failed: ValueError: upstream refused key {MARK}"
    )
    assert KEY.encode() not in server.requests[1].body
    assert KEY not in thread_file.read_text()


def test_a_log_record_and_its_traceback(monkeypatch, caplog):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    logger = logging.getLogger("turnwire")
    with caplog.at_level(logging.DEBUG, logger="turnwire"):
        logger.warning("the server said %s", f"no such key {KEY}")
        try:
            raise RuntimeError(f"wrapped {KEY}")
        except RuntimeError:
            logger.exception("failed")
    assert caplog.records[0].getMessage() == f"the server said no such key {MARK}"
    assert KEY not in caplog.text and f"RuntimeError: wrapped {MARK}" in caplog.text


def test_every_error_message_is_one_line():
    from turnwire.errors import ThreadFileError, TurnwireError

    for text in ("a\nb", "a\r\nb", "id=\x1e", "x\u2028y", "p\x85q", "v\x0bw"):
        error = TurnwireError(f"value {text} is bad")
        assert len(str(error).splitlines()) == 1, repr(str(error))
    assert str(ThreadFileError("$.a: bad\nvalue", path="$.a")) == "$.a: bad\\x0avalue"


_FRAGMENTS = st.sampled_from(
    [
        "api_key",
        "API-KEY",
        "x-api-key",
        "access_token",
        "AUTH-token",
        "secret",
        "Password",
        "sk-",
        "sess-",
        "Bearer",
        "basic",
        "://",
        "user:pw@",
        "=",
        ": ",
        '"',
        "'",
        " ",
        ",",
        "abcdefgh1234",
        "0123456789",
        "{",
        "}",
        "\n",
        "ſecret",
        "\u212aey",
        "apİ_key",
        "ı",
        "TOKEN",
        "kEy",
        "plain words",
        "é",
    ]
)


def _every_pattern(text: str) -> str:
    """The credential patterns applied to ``text`` with no prefilter (how redaction ran before
    each pattern was given the texts a match must contain)."""
    for pattern, replacement, _, _ in _PATTERNS:
        text = pattern.sub(replacement, text)
    return text


@settings(max_examples=400, deadline=None, database=None)
@given(st.lists(_FRAGMENTS, max_size=14).map("".join))
# case-insensitive matches that lowering does not show: the long s, the Kelvin sign
@example("ſecret: abcdefgh1234")
@example("api_\u212aey=abcdefgh1234")
@example("PASSWORD=abcdefgh1234")
def test_a_pattern_left_out_by_its_prefilter_would_have_matched_nothing(text):
    """Each credential pattern runs only on a text holding one of the strings every match
    contains (case-insensitively on ASCII text, always on other text): the result is what
    running every pattern gives."""
    assert redact(text) == _every_pattern(text)
    if text in ("ſecret: abcdefgh1234", "api_\u212aey=abcdefgh1234"):
        assert MARK in redact(text)  # what the examples are for


def test_a_secret_put_in_the_environment_later_is_redacted_and_a_removed_one_is_not():
    """The environment's secrets are read again whenever the environment changed since the
    last reading (set, changed, deleted), and only then."""
    import os

    name = "TURNWIRE_TEST_LATE_TOKEN"
    assert redact("early value-0000") == "early value-0000"
    os.environ[name] = "late-value-0000"
    try:
        assert redact("x late-value-0000 y") == f"x {MARK} y"
        os.environ[name] = "later-value-0000"
        assert redact("late-value-0000 later-value-0000") == f"late-value-0000 {MARK}"
    finally:
        del os.environ[name]
    assert redact("later-value-0000") == "later-value-0000"


def test_the_configurations_own_credentials_stay_out_of_reprs_logs_and_the_printed_settings(
    tmp_path, caplog
):
    """A password in ``client.base_url`` and credential headers of ``client.headers``."""
    import yaml

    from turnwire.cli.inspection import _printable
    from turnwire.client.dispatch import Client
    from turnwire.client.transport import Transport

    password, header, subscription = "pw-secret-1234", "hdrsecretVALUE999", "subkey-0a1b2c3d"
    tree = {
        "plugins": {"load_entrypoints": False},
        "client": {
            "base_url": f"https://user:{password}@gateway.example/v1",
            "headers": {
                "X-Custom-Auth": header,
                "Ocp-Apim-Subscription-Key": subscription,
                "OpenAI-Beta": "responses=v1",
            },
        },
    }
    settings = turnwire.load_settings(overrides=tree)
    transport = Transport(base_url=settings.client.base_url)
    client = Client(make_container(tree))
    printed = yaml.safe_dump(_printable(settings))
    with caplog.at_level(logging.DEBUG, logger="turnwire"):
        logging.getLogger("turnwire").warning("sent %s to %s", header, settings.client.base_url)
    seen = "\n".join(
        [repr(settings), str(settings.client), repr(transport), repr(client), printed]
        + [record.getMessage() for record in caplog.records]
    )
    for secret in (password, header, subscription):
        assert secret not in seen, secret
    assert "responses=v1" in printed  # a header that is no credential is still shown there
    assert str(HttpError(status=401, body=f"bad key {subscription}", attempts=1)).count(MARK)


@pytest.mark.parametrize(
    ("headers", "problem"),
    [
        ({"X-Auth": "secret-value-1\nX-Evil: 1"}, "holds a character HTTP cannot carry"),
        ({"X-Auth": "secret-value-1\x00"}, "holds a character HTTP cannot carry"),
        ({"X-Auth": "Bearer caf\u00e9-secret"}, "holds a character HTTP cannot carry"),
        ({"X Auth": "v"}, "is not an HTTP header name"),
    ],
)
def test_a_header_http_cannot_carry_is_refused_at_load_without_its_value(headers, problem):
    with pytest.raises(ConfigError) as caught:
        turnwire.load_settings(overrides={"client": {"headers": headers}})
    assert caught.value.path == "$.client.headers" and problem in str(caught.value)
    assert "secret-value" not in str(caught.value)


def test_an_upper_case_key_prefix_and_a_short_held_key_are_redacted():
    assert redact("key SK-ABCDEFGH12345678 leaked") == f"key {MARK} leaked"
    assert redact("key Sess-abcdefgh12345 leaked") == f"key {MARK} leaked"

    class Holder:
        pass

    holder = Holder()
    remember_secret("k3y!", holder=holder)
    assert redact("sent k3y! to the server") == f"sent {MARK} to the server"
    remember_secret("abc", holder=holder)  # under 4: would blank out ordinary words
    assert redact("abc") == "abc"


def test_query_credentials_a_store_password_and_plugin_settings_stay_out_of_reprs_and_logs(
    caplog,
):
    """What an audit found printed raw: ``client.query`` credentials (and those in the base
    URL's query), a PostgreSQL store URL's password, a plugin's settings, the endpoint in the
    render options."""
    query_key, url_key, db_password = "qk-0a1b2c3d4e", "urlqk-3n4o5p6q", "dbpass-5f6g7h8i"
    plugin_token = "plugtok-9j0k1l2m"
    client = {
        "base_url": f"https://user:{db_password}x@gateway.example/v1?subscription-key={url_key}",
        "query": {"api_key": query_key, "api-version": "2025-04-01"},
    }
    tree = {
        "plugins": {"load_entrypoints": False, "settings": {"audit": {"token": plugin_token}}},
        "client": client,
        "store": {"location": f"postgresql://app:{db_password}@db.example/turnwire"},
    }
    settings = turnwire.load_settings(overrides=tree)
    options = make_container({"plugins": {"load_entrypoints": False}, "client": client})
    endpoint = options.render_options().endpoint
    with caplog.at_level(logging.DEBUG, logger="turnwire"):
        logging.getLogger("turnwire").warning("asked %s, %s", query_key, url_key)
        logging.getLogger("turnwire.emulate").warning("stored in %s", settings.store.location)
    seen = "\n".join(
        [repr(settings), str(settings.store), str(settings.plugins), repr(endpoint)]
        + [record.getMessage() for record in caplog.records]
    )
    for secret in (query_key, url_key, db_password, plugin_token):
        assert secret not in seen, secret
    # remembered, not only matched by the user:password@ pattern: hidden on its own too
    assert redact(f"the password {db_password}") == f"the password {MARK}"
    assert "2025-04-01" in repr(settings)  # a parameter that is no credential is still shown
    assert "'audit': {'token': '[redacted]'}" in repr(settings.plugins)
    assert "gateway.example" in repr(endpoint) and "db.example" in repr(settings.store)


@pytest.mark.parametrize(
    ("name", "secret"),
    [
        ("subscription-key", True),
        ("api_key", True),
        ("apikey", True),
        ("access_token", True),
        ("sig", True),
        ("X-Amz-Signature", True),
        ("code", True),
        ("password", True),
        ("author", False),
        ("keyword", False),
        ("include_auth_details", False),
        ("api-version", False),
        ("monkey", False),
    ],
)
def test_which_query_parameters_are_credentials(name, secret):
    from turnwire._redact import is_secret_parameter

    assert is_secret_parameter(name) is secret


def test_ordinary_query_values_are_never_redacted_and_short_ones_not_at_all():
    """A parameter whose name only contains a credential word (author, keyword) is no
    credential, and a value shorter than 8 characters is not remembered: it would blank out
    ordinary words in every log line while the settings live."""
    settings = turnwire.load_settings(
        overrides={
            "client": {
                "query": {
                    "author": "alice-the-author",
                    "keyword": "hello-world-x",
                    "code": "true",
                    "api_key": "q-0a1b2c3d4e",
                }
            }
        }
    )
    assert redact("alice-the-author said hello-world-x, true") == (
        "alice-the-author said hello-world-x, true"
    )
    assert redact("the key q-0a1b2c3d4e") == f"the key {MARK}"
    assert "alice-the-author" in repr(settings) and "q-0a1b2c3d4e" not in repr(settings)


@pytest.mark.parametrize(
    ("url", "userinfo"),
    [
        ("https://gw.local:8443?user=alice@example.com", None),
        ("https://gw.local/v1/a@b", None),
        ("https://h#x@y", None),
        ("https://[::1]:8/v1", None),
        ("https://u@[::1]/v1", ("u", "")),
        ("https://svc-account:p%40ss-w0rd-9@gw.example/v1", ("svc-account", "p@ss-w0rd-9")),
        ("https://svc-account:p@ss-w0rd-9@gw.example/v1", ("svc-account", "p@ss-w0rd-9")),
        ("gw.example/v1", None),
    ],
)
def test_the_credentials_of_a_url_are_read_from_its_authority_alone(url, userinfo):
    from turnwire._redact import url_userinfo

    assert url_userinfo(url) == userinfo


def test_a_url_password_is_hidden_written_and_decoded_and_no_host_is_taken_for_a_user():
    from turnwire._redact import remember_url_secrets

    class Holder:
        pass

    holder = Holder()
    remember_url_secrets("https://svc-account:p%40ss-w0rd-9@gw.example/v1", holder=holder)
    remember_url_secrets("https://gw.internal:8443?user=alice@example.com", holder=holder)
    assert redact("p@ss-w0rd-9 p%40ss-w0rd-9") == f"{MARK} {MARK}"
    assert redact("as svc-account") == f"as {MARK}"
    assert redact("connect to gw.internal failed") == "connect to gw.internal failed"
    del holder
    assert redact("p@ss-w0rd-9") == "p@ss-w0rd-9"  # forgotten with its holder


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("/v1/responses", "/v1/responses"),
        ("/v1/responses?api-version=2025", "/v1/responses?api-version=2025"),
        (
            "/v1/r?subscription-key=abc&api-version=1",
            f"/v1/r?subscription-key={MARK}&api-version=1",
        ),
        (
            "https://h/a.pdf?X-Amz-Signature=0a1b#frag",
            f"https://h/a.pdf?X-Amz-Signature={MARK}#frag",
        ),
        ("https://h/?author=alice&flag", "https://h/?author=alice&flag"),
        ("https://h/?api%5Fkey=x", f"https://h/?api%5Fkey={MARK}"),
    ],
)
def test_a_url_is_shown_without_its_query_credentials(url, shown):
    from turnwire._redact import without_query_secrets

    assert without_query_secrets(url) == shown
