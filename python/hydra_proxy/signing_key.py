"""The key behind the proxy's thinking signatures.

Signatures must verify in every worker and after a restart (Claude Code sessions outlive
the proxy process), so the key lives in a file: HYDRA_SIGNING_KEY_FILE, else
~/.hydra-proxy/signing-key, created with 32 random bytes and mode 0600 on first use.
"""

from __future__ import annotations

import os
from pathlib import Path


def default_path() -> Path:
    return Path.home() / ".hydra-proxy" / "signing-key"


def load_signing_key(path: str | None = None) -> bytes:
    key_path = Path(path) if path else default_path()
    try:
        key = key_path.read_bytes()
        if len(key) >= 16:
            return key
    except FileNotFoundError:
        pass
    key_path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    key = os.urandom(32)
    # O_EXCL: two workers starting at once agree on the first key written.
    try:
        fd = os.open(key_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return key_path.read_bytes()
    with os.fdopen(fd, "wb") as f:
        f.write(key)
    return key
