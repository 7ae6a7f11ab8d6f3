"""The envelope secret: from the environment, else a file turnwire creates once.

Order: the variable named by ``render.envelope_secret_env`` (``TURNWIRE_ENVELOPE_SECRET``) when
it is set and not empty; else the file named by ``render.envelope_secret_file``; else
``$XDG_CONFIG_HOME/turnwire/envelope-secret`` (``~/.config/turnwire/envelope-secret``), and
beside the thread store when that folder cannot be written. A missing file is created with
32 random bytes (written as hex, so the same text works in the variable), owner-only (``0600``,
in a ``0700`` folder when turnwire makes the folder), by linking a finished temporary file into
place: of two processes that race, one creates it and both read the same secret. The value
never reaches a log record, an error message or a ``repr``; only where it lives does.
"""

from __future__ import annotations

import contextlib
import logging
import os
import secrets
import stat
from collections.abc import Mapping
from pathlib import Path

from turnwire.errors import ConfigError

__all__ = ["SECRET_FILE_NAME", "default_secret_path", "envelope_secret"]

logger = logging.getLogger("turnwire")

SECRET_FILE_NAME = "envelope-secret"
_MAX_BYTES = 4096


def default_secret_path(env: Mapping[str, str] | None = None) -> Path:
    """``$XDG_CONFIG_HOME/turnwire/envelope-secret``, else ``~/.config/turnwire/...``."""
    env = os.environ if env is None else env
    base = env.get("XDG_CONFIG_HOME", "")
    # The XDG spec: a relative value is invalid and must be ignored.
    folder = Path(base) if base and os.path.isabs(base) else Path.home() / ".config"
    return folder / "turnwire" / SECRET_FILE_NAME


def envelope_secret(
    *,
    env_var: str | None,
    secret_file: str | None,
    store_path: str | None,
    env: Mapping[str, str] | None = None,
) -> bytes | None:
    """The envelope secret, or ``None`` (unkeyed nonces) when no file could be read or made.

    :param env_var: the variable to read first (``None``: none).
    :param secret_file: a configured file (created when missing); ``None``: the default places.
    :param store_path: the configured store file, whose folder is the fallback place.
    :raises ConfigError: the configured or found file exists but cannot be used as a secret.
    """
    env = os.environ if env is None else env
    if env_var and env.get(env_var):
        return env[env_var].encode()
    variable = env_var or "render.envelope_secret_env"
    if secret_file:
        path = Path(secret_file).expanduser()
        try:
            return _read_or_create(path, variable)
        except OSError as err:
            raise ConfigError(
                f"cannot read or create the envelope secret {path}: "
                f"{err.strerror or type(err).__name__}; fix render.envelope_secret_file or set "
                f"{variable}",
                path="$.render.envelope_secret_file",
            ) from err
    places = [default_secret_path(env), _store_folder(store_path, env) / SECRET_FILE_NAME]
    failures = []
    for place in places:
        try:
            return _read_or_create(place, variable)
        except OSError as err:
            failures.append(f"{place} ({err.strerror or type(err).__name__})")
    logger.warning(
        "no envelope secret: set %s or render.envelope_secret_file; could not create one at %s. "
        "Envelope nonces are stable but predictable",
        variable,
        " or ".join(failures),
        extra={"kind": "envelope-secret-missing"},
    )
    return None


def _store_folder(store_path: str | None, env: Mapping[str, str]) -> Path:
    if store_path:
        return Path(store_path).expanduser().parent
    explicit = env.get("TURNWIRE_STORE")
    if explicit:
        return Path(explicit).expanduser().parent
    base = env.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "turnwire"


def _read_or_create(path: Path, variable: str) -> bytes:
    """Read the secret at ``path``, creating it first when there is none."""
    try:
        return _read(path)
    except FileNotFoundError:
        pass
    if _create(path):
        logger.warning(
            "created a new envelope secret at %s (owner-only); keep it, or set %s to share "
            "one secret between hosts",
            path,
            variable,
            extra={"kind": "envelope-secret-created"},
        )
    return _read(path)


def _read(path: Path) -> bytes:
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)  # never blocks on a FIFO
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise ConfigError(
                f"the envelope secret {path} is not a regular file; point "
                "render.envelope_secret_file at a file, or delete it to have a new one made",
                path="$.render.envelope_secret_file",
            )
        data = os.read(fd, _MAX_BYTES + 1)
    finally:
        os.close(fd)
    secret = data.strip()
    if not secret or len(data) > _MAX_BYTES:
        raise ConfigError(
            f"the envelope secret {path} is empty or over {_MAX_BYTES} bytes; delete it to have "
            "a new one made",
            path="$.render.envelope_secret_file",
        )
    if info.st_mode & 0o077:
        logger.warning(
            "the envelope secret %s can be read by other users (mode %o); run chmod 600 on it",
            path,
            stat.S_IMODE(info.st_mode),
            extra={"kind": "envelope-secret-permissions"},
        )
    return secret


def _create(path: Path) -> bool:
    """Create the secret file; ``False`` when another process created it first."""
    folder = path.parent
    if not folder.is_dir():
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        with contextlib.suppress(OSError):  # the umask may have narrowed it; never widen it
            folder.chmod(0o700)
    text = (secrets.token_bytes(32).hex() + "\n").encode()
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    temporary = folder / f".{path.name}.{secrets.token_hex(8)}.tmp"
    _write_new(temporary, text, flags)
    try:
        os.link(temporary, path)  # fails when the name exists, like O_EXCL, but never half-written
    except FileExistsError:
        return False
    except OSError:  # a file system without hard links: create the name itself exclusively
        try:
            _write_new(path, text, flags)
        except FileExistsError:
            return False
    finally:
        with contextlib.suppress(OSError):
            temporary.unlink()
    return True


def _write_new(path: Path, text: bytes, flags: int) -> None:
    fd = os.open(path, flags, 0o600)
    try:
        os.write(fd, text)
        os.fsync(fd)
    finally:
        os.close(fd)
