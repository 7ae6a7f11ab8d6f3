"""``turnwire emulate``: serve the offline Responses API until interrupted."""

from __future__ import annotations

import argparse
import logging
import os
import sys
from typing import TYPE_CHECKING

from turnwire.cli.printer import echo
from turnwire.errors import ConfigError, MissingApiKeyError

if TYPE_CHECKING:
    from turnwire.emulate import Answerer

__all__ = ["add_record_arguments", "emulate_command"]

KEY_VARIABLE = "TURNWIRE_EMULATE_KEY"
UPSTREAM_KEY_VARIABLE = "OPENAI_API_KEY"


def add_record_arguments(parser: argparse.ArgumentParser) -> None:
    """``--record``, ``--replay``, ``--upstream``, ``--upstream-key-env`` and
    ``--allow-remote``."""
    modes = parser.add_mutually_exclusive_group()
    modes.add_argument(
        "--record",
        metavar="DIR",
        help="forward every request, unchecked, to --upstream and record each exchange in DIR "
        "(one file per request, named by its hash)",
    )
    modes.add_argument(
        "--replay",
        metavar="DIR",
        help="answer from the recordings in DIR; a request none answers is a 400 replay_miss "
        "naming the nearest recording and the first difference",
    )
    parser.add_argument(
        "--upstream",
        metavar="URL",
        default=None,
        help="with --record: the base URL requests go to (default https://api.openai.com/v1)",
    )
    parser.add_argument(
        "--upstream-key-env",
        metavar="NAME",
        default=UPSTREAM_KEY_VARIABLE,
        help="with --record: the environment variable holding the upstream's API key "
        "(default OPENAI_API_KEY); sent to the upstream only, never recorded or logged",
    )
    parser.add_argument(
        "--allow-remote",
        action="store_true",
        help="with --record: listen on a --host that is not a loopback address, and take "
        "requests whatever their Host header (anyone who reaches the port spends the key)",
    )


def _key() -> bytes | None:
    raw = os.environ.get(KEY_VARIABLE)
    if not raw:
        return None
    try:
        key = bytes.fromhex(raw)
    except ValueError:
        raise ConfigError(
            f"{KEY_VARIABLE} is not hexadecimal; give at least 16 bytes as hex digits",
            path=f"${KEY_VARIABLE}",
        ) from None
    if len(key) < 16:
        raise ConfigError(
            f"{KEY_VARIABLE} holds {len(key)} bytes; give at least 16", path=f"${KEY_VARIABLE}"
        )
    return key


def _answerer(args: argparse.Namespace) -> tuple[Answerer, str]:
    """What serves the requests, and what the start line says of it."""
    from turnwire.emulate import Emulator, Recorder, Replayer, load_script
    from turnwire.emulate.caching import PromptCache
    from turnwire.emulate.recording import DEFAULT_UPSTREAM

    record, replay, upstream = args.record, args.replay, args.upstream
    if (record or replay) and args.script:
        raise ConfigError(
            "--script gives local answers; --record and --replay take theirs from recordings",
            path="$.script",
        )
    if upstream is not None and not record:
        raise ConfigError(
            "--upstream is where --record forwards to; give --record DIR too", path="$.upstream"
        )
    if args.allow_remote and not record:
        raise ConfigError(
            "--allow-remote lets --record take requests from other machines; without --record "
            "any --host is served",
            path="$.allow_remote",
        )
    if record:
        variable = args.upstream_key_env
        key = os.environ.get(variable)
        if not key:
            raise MissingApiKeyError(
                f"--record forwards requests with the key in ${variable}, which is not set "
                "(--upstream-key-env names another variable)",
                variable=variable,
            )
        recorder = Recorder(
            record,
            upstream=upstream or DEFAULT_UPSTREAM,
            api_key=key,
            max_body_bytes=args.max_body_bytes,
        )
        return recorder, f"recording {recorder.upstream} into {recorder.directory}"
    if replay:
        replayer = Replayer(replay, max_body_bytes=args.max_body_bytes)
        return replayer, f"replaying {len(replayer)} recordings from {replayer.directory}"
    script = load_script(*args.script) if args.script else None
    emulator = Emulator(
        script=script,
        key=_key(),
        organization=args.organization,
        state_ttl_s=args.state_ttl,
        max_body_bytes=args.max_body_bytes,
        cache=PromptCache(min_tokens=args.cache_min_tokens, block_tokens=args.cache_block_tokens),
    )
    return emulator, "scripted"


def emulate_command(args: argparse.Namespace) -> int:
    from turnwire.emulate import EmulatorServer, Recorder

    if args.max_body_bytes < 1:
        raise ConfigError("--max-body-bytes must be at least 1", path="$.max_body_bytes")
    answerer, mode = _answerer(args)
    try:
        try:
            server = EmulatorServer(
                answerer, host=args.host, port=args.port, allow_remote=args.allow_remote
            )
        except OSError as err:
            raise ConfigError(
                f"cannot listen on {args.host}:{args.port} ({err.strerror}); choose another --port",
                path="$.port",
            ) from None
        if not args.quiet:
            logging.getLogger("turnwire.emulate").setLevel(logging.INFO)
        echo(
            f"turnwire emulate: serving {server.base_url} ({mode}; Ctrl-C stops)",
            file=sys.stderr,
            flush=True,
        )
        try:
            server.serve_forever()
        except KeyboardInterrupt:
            echo("turnwire emulate: stopped", file=sys.stderr)
    finally:
        if isinstance(answerer, Recorder):
            answerer.close()
    return 0
