"""The keys behind the proxy's signatures (thinking blocks, carriers, continuation suffixes).

Signatures must verify in every worker and after a restart (Claude Code sessions outlive
the proxy process), so a key lives in a file: ``signing_key_file`` (HYDRA_SIGNING_KEY_FILE),
else ~/.hydra-proxy/signing-key. The first file is created on first use with 32 random
bytes, mode 0600, atomically (written aside, then linked into place: two workers starting
at once agree on one key, and no reader ever sees a half-written file). A file holding
fewer than `MIN_KEY_BYTES` bytes is refused: a short key would make signatures forgeable.

Several files may be named: the first signs, every one verifies. A rotation therefore
breaks no session in flight: put the new file first, keep the old one after it until the
sessions that carry its signatures are done, then drop it. Replicas behind one load
balancer share the same files (a mounted secret), so any replica verifies what another
signed.

Where client keys are set, each client's signatures are made with a key derived from the
signing key and the client key (`for_client`): what one key's client was given does not
verify for another.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import os
import stat
from collections.abc import Sequence
from pathlib import Path

MIN_KEY_BYTES = 32
_CLIENT_DOMAIN = b"hydra-client-key\x00"


class SigningKeyError(ValueError):
    """A signing key file that cannot be used (the message says which and what to do)."""


class SigningKey(bytes):
    """The key that signs (these bytes), carrying every key that verifies: itself first,
    then the previous ones. Passed wherever plain key bytes go (the native core signs with
    them); `verifying_keys` reads the whole list."""

    verifying: tuple[bytes, ...]

    def __new__(cls, keys: Sequence[bytes]) -> SigningKey:
        if not keys:
            raise ValueError("a signing key needs at least one key")
        value = super().__new__(cls, keys[0])
        value.verifying = tuple(bytes(k) for k in keys)
        return value

    def __repr__(self) -> str:  # never the secret
        return f"SigningKey({len(self.verifying)} key(s))"


def verifying_keys(key: bytes) -> tuple[bytes, ...]:
    """Every key a signature made by `key` (or before a rotation) may verify with."""
    return key.verifying if isinstance(key, SigningKey) else (key,)


def for_client(key: bytes, client_key: bytes) -> SigningKey:
    """The keys (signing and verifying) of one client key: each derived from one of `key`'s
    by HMAC, so a carrier made for one client does not verify for another."""
    return SigningKey(
        [
            hmac.new(k, _CLIENT_DOMAIN + client_key, hashlib.sha256).digest()
            for k in verifying_keys(key)
        ]
    )


def default_path() -> Path:
    return Path.home() / ".hydra-proxy" / "signing-key"


def key_paths(paths: str | Sequence[str] | None) -> list[Path]:
    """The configured files in order (a string may list several, separated by os.pathsep)."""
    if paths is None:
        return [default_path()]
    if isinstance(paths, str):
        paths = [p for p in paths.split(os.pathsep) if p.strip()]
    return [Path(p).expanduser() for p in paths] or [default_path()]


def load_signing_key(paths: str | Sequence[str] | None = None) -> SigningKey:
    """The signing key: the first file (created when missing) signs, every file verifies.

    Raises SigningKeyError for a file that is too short, unreadable, or (past the first)
    missing."""
    files = key_paths(paths)
    keys = [_read_or_create(files[0])]
    for path in files[1:]:
        keys.append(_read(path, create_hint=False))
    return SigningKey(keys)


def _read(path: Path, *, create_hint: bool) -> bytes:
    try:
        key = path.read_bytes()
    except FileNotFoundError:
        raise SigningKeyError(
            f"signing key file {path} does not exist (a verifying key is never created: "
            "it must hold the key a rotation replaced)"
        ) from None
    except OSError as exc:
        raise SigningKeyError(
            f"cannot read signing key file {path}: {exc.strerror or exc}"
        ) from None
    if len(key) < MIN_KEY_BYTES:
        fix = (
            "delete it to have a new key made (signatures made with the old one stop "
            "verifying), or "
            if create_hint
            else ""
        )
        raise SigningKeyError(
            f"signing key file {path} holds {len(key)} bytes; a signing key needs at least "
            f"{MIN_KEY_BYTES} random bytes: {fix}write {MIN_KEY_BYTES} random bytes to it "
            f"(head -c {MIN_KEY_BYTES} /dev/urandom > {path})"
        )
    return key


def _read_or_create(path: Path) -> bytes:
    if path.exists():
        return _read(path, create_hint=True)
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        _create(path)
    except OSError as exc:
        raise SigningKeyError(
            f"cannot create signing key file {path}: {exc.strerror or exc}"
        ) from None
    return _read(path, create_hint=True)


def _create(path: Path) -> None:
    """Write 32 random bytes to `path` unless it exists: written to a file of its own
    (mode 0600 from the start), synced, then hard-linked into place, which fails rather
    than replace a key another process linked first."""
    aside = path.with_name(f".{path.name}.{os.getpid()}.{os.urandom(4).hex()}")
    fd = os.open(aside, os.O_WRONLY | os.O_CREAT | os.O_EXCL, stat.S_IRUSR | stat.S_IWUSR)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(os.urandom(MIN_KEY_BYTES))
            f.flush()
            os.fsync(f.fileno())
        try:
            os.link(aside, path)
        except FileExistsError:
            pass  # another worker's key is in place: that one is used
        except OSError:  # a file system without hard links: create it in place instead
            _create_in_place(path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(aside)


def _create_in_place(path: Path) -> None:
    with contextlib.suppress(FileExistsError):
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, stat.S_IRUSR | stat.S_IWUSR)
        with os.fdopen(fd, "wb") as f:
            f.write(os.urandom(MIN_KEY_BYTES))
            f.flush()
            os.fsync(f.fileno())
