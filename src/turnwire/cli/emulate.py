"""``turnwire emulate``: serve the offline Responses API until interrupted."""

from __future__ import annotations

import argparse
import logging
import os
import sys

from turnwire.cli.printer import echo
from turnwire.errors import ConfigError

__all__ = ["emulate_command"]

KEY_VARIABLE = "TURNWIRE_EMULATE_KEY"


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


def emulate_command(args: argparse.Namespace) -> int:
    from turnwire.emulate import Emulator, EmulatorServer, load_script
    from turnwire.emulate.caching import PromptCache

    if args.max_body_bytes < 1:
        raise ConfigError("--max-body-bytes must be at least 1", path="$.max_body_bytes")
    script = load_script(*args.script) if args.script else None
    emulator = Emulator(
        script=script,
        key=_key(),
        organization=args.organization,
        state_ttl_s=args.state_ttl,
        max_body_bytes=args.max_body_bytes,
        cache=PromptCache(min_tokens=args.cache_min_tokens, block_tokens=args.cache_block_tokens),
    )
    try:
        server = EmulatorServer(emulator, host=args.host, port=args.port)
    except OSError as err:
        raise ConfigError(
            f"cannot listen on {args.host}:{args.port} ({err.strerror}); choose another --port",
            path="$.port",
        ) from None
    if not args.quiet:
        logging.getLogger("turnwire.emulate").setLevel(logging.INFO)
    echo(f"turnwire emulate: serving {server.base_url} (Ctrl-C stops)", file=sys.stderr, flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        echo("turnwire emulate: stopped", file=sys.stderr)
    return 0
