"""Signed cache pickles: an entry is ``MAGIC + HMAC-SHA256(key, pickle) + pickle``.

The key is per user, kept 0600 outside the cache folder (``$MODRAG_CACHE_KEY_FILE`` or
``cache.key`` in ``trust.config_dir()``), so a pickle someone else planted in the cache
folder fails the check and is refused before it is unpickled.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import pickle
import secrets
import tempfile
import threading
from pathlib import Path
from typing import IO, Any

from modrag_studio.engine.core.paths import open_regular

MAGIC = b"MRSC1\n"
MAC_SIZE = 32
KEY_ENV = "MODRAG_CACHE_KEY_FILE"
_key: dict[str, bytes] = {}
_lock = threading.Lock()


class BadSignature(ValueError):
    """The entry is not signed with this user's key (planted, or from another user)."""


def key_path() -> Path:
    from modrag_studio.engine.trust.reach import config_dir

    env = os.environ.get(KEY_ENV)
    return Path(env) if env else config_dir() / "cache.key"


def signing_key() -> bytes:
    """This user's key, created (0600) on first use."""
    path = key_path()
    with _lock:
        if str(path) in _key:
            return _key[str(path)]
        try:
            key = _read_key(path)
        except FileNotFoundError:
            path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            key = _create_key(path)
        if len(key) < 16:
            raise BadSignature(f"cache key {path} is too short; delete it to make a new one")
        _key[str(path)] = key
        return key


def _create_key(path: Path) -> bytes:
    """A new key written to ``path``, or the key another process put there first. The key
    is written whole to a private temporary file and then linked into place, so a process
    never reads a key file another is still writing (one that did read an empty key)."""
    key = secrets.token_bytes(32)
    fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=".cache.key.")
    try:
        with os.fdopen(fd, "wb") as fh:  # mkstemp makes it 0600
            fh.write(key)
            fh.flush()
            os.fsync(fh.fileno())
        try:
            os.link(temporary, path)
        except FileExistsError:  # another process made it first
            return _read_key(path)
        return key
    finally:
        os.unlink(temporary)


def _read_key(path: Path) -> bytes:
    """The key file's bytes (a FIFO or a device there is refused, never waited on)."""
    with open_regular(path) as fh:
        return fh.read(4096)


class _SigningWriter:
    """A file-like object for ``pickle.dump`` that also feeds an HMAC."""

    def __init__(self, fh: IO[bytes], mac: hmac.HMAC) -> None:
        self.fh, self.mac = fh, mac

    def write(self, data: bytes) -> int:
        self.mac.update(data)
        return self.fh.write(data)


def dump_signed(value: Any, fh: IO[bytes]) -> None:
    """Pickle ``value`` into ``fh`` (opened for writing at position 0), signed."""
    mac = hmac.new(signing_key(), digestmod=hashlib.sha256)
    fh.write(MAGIC + b"\0" * MAC_SIZE)
    pickle.dump(value, _SigningWriter(fh, mac), protocol=5)
    fh.seek(len(MAGIC))
    fh.write(mac.digest())


def load_signed(path: Path, block: int = 1 << 20) -> Any:
    """Unpickle ``path`` after checking its signature; BadSignature when it does not match."""
    with open_regular(path) as fh:  # a FIFO planted at an entry's path is refused
        head = fh.read(len(MAGIC) + MAC_SIZE)
        if len(head) < len(MAGIC) + MAC_SIZE or not head.startswith(MAGIC):
            raise BadSignature("not a signed cache entry")
        mac = hmac.new(signing_key(), digestmod=hashlib.sha256)
        while data := fh.read(block):
            mac.update(data)
        if not hmac.compare_digest(mac.digest(), head[len(MAGIC):]):
            raise BadSignature("signature does not match this user's cache key")
        fh.seek(len(MAGIC) + MAC_SIZE)
        return pickle.load(fh)
