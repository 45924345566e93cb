"""What an error may say once it leaves the process: no keys, no absolute server paths.

``scrub(text)`` is the one function every exit uses (a failed node's message and traceback in
the trace, ``/health``, the server's error bodies and logs, MCP tool errors). It removes

- the secret values the process knows: every key a backend read (``remember_secret``, called
  by the code that reads an API key from an environment variable or a file) and the values of
  environment variables named like a secret (``*KEY*``, ``*TOKEN*``, ``*SECRET*``,
  ``*PASSWORD*``; not ``*_FILE``, ``*_PATH``, ``*_DIR``, nor values that are paths or numbers);
- what looks like a credential whoever sent it: ``Bearer <token>``, ``sk-...`` keys,
  ``api_key=...`` / ``"api_key": "..."`` pairs.

``hide_paths(text, roots)`` writes paths under one of ``roots`` (the graph's folder, the data
root) relative to it and shortens any other absolute path to ``.../<file name>``.
"""

from __future__ import annotations

import logging
import os
import re
import threading
from collections.abc import Iterable
from pathlib import Path

MASK = "***"
MIN_SECRET_LENGTH = 6  # shorter values would mask ordinary words
_SECRET_ENV = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL", re.IGNORECASE)
_NOT_A_SECRET = re.compile(r"(FILE|PATH|DIR|_ENV)$", re.IGNORECASE)
_PATTERNS = (
    (re.compile(r"(?i)\b(bearer)(\s+)[A-Za-z0-9._~+/=-]{6,}"), rf"\1\2{MASK}"),
    (re.compile(r"\bsk-[A-Za-z0-9_-]{6,}"), f"sk-{MASK}"),
    (re.compile(r"(?i)([?&](?:key|token|access_token|api_key)=)[^&\s\"']+"), rf"\1{MASK}"),
    (re.compile(r"(?i)\b((?:api[_-]?key|access[_-]?token|secret|password)[\"']?\s*[:=]\s*"
                r"[\"']?)[^\s\"',;}]{4,}"), rf"\1{MASK}"),
)
_known: set[str] = set()
_lock = threading.Lock()


def remember_secret(value: str | None) -> str | None:
    """Note ``value`` as a secret that ``scrub`` removes from now on; returns it unchanged."""
    if value and len(value.strip()) >= MIN_SECRET_LENGTH:
        with _lock:
            _known.add(value.strip())
    return value


def _secrets() -> list[str]:
    with _lock:
        values = set(_known)
    for name, value in os.environ.items():
        value = value.strip()
        if (_SECRET_ENV.search(name) and not _NOT_A_SECRET.search(name)
                and len(value) >= MIN_SECRET_LENGTH and not value.isdigit()
                and not value.startswith(("/", "~", "."))):  # a key file's path is no key
            values.add(value)
    return sorted(values, key=len, reverse=True)  # a key containing another goes first


def scrub(text: str) -> str:
    """``text`` without the known secrets and without credential-like strings."""
    if not text:
        return text
    for secret in _secrets():
        if secret in text:
            text = text.replace(secret, MASK)
    for pattern, replacement in _PATTERNS:
        text = pattern.sub(replacement, text)
    return text


# an absolute path: a "/" not inside a word, a URL ("host:port/x", "http://") or a relative path
_ABSOLUTE = re.compile(r"(?<![\w.:/~-])(/(?:[^\s'\"()\[\]{},;:/]+/)*([^\s'\"()\[\]{},;:/]*))")


def hide_paths(text: str, roots: Iterable[Path | str | None] = ()) -> str:
    """``text`` with paths under ``roots`` relative to them and other absolute paths shortened
    to ``.../name`` (a remote client learns no folder of the server)."""
    if not text:
        return text
    spelled: list[str] = []
    for root in roots:
        if root is None:
            continue
        for form in {str(Path(root)), os.path.realpath(root)}:
            if form not in ("", "/", "."):
                spelled.append(form.rstrip("/"))
    for root in sorted(set(spelled), key=len, reverse=True):
        text = re.sub(r"(?<![\w./-])" + re.escape(root) + "/", "", text)
        text = re.sub(r"(?<![\w./-])" + re.escape(root) + r"(?=[\s'\"),;:\]}]|$)", ".", text)
    return _ABSOLUTE.sub(lambda m: f".../{m.group(2)}" if m.group(2) else "...", text)


def for_client(text: str, roots: Iterable[Path | str | None] = ()) -> str:
    """What a remote client may read of ``text``: scrubbed of secrets, paths hidden."""
    return hide_paths(scrub(text), roots)


_factory_installed = False


def scrub_log_records() -> None:
    """From now on every log record of this process (uvicorn's, libraries' and ours) carries
    its message scrubbed (``logging.setLogRecordFactory``; made only for records a logger
    emits, so the cost is per line logged). Idempotent."""
    global _factory_installed
    with _lock:
        if _factory_installed:
            return
        _factory_installed = True
    previous = logging.getLogRecordFactory()

    def factory(*args, **kwargs) -> logging.LogRecord:
        record = previous(*args, **kwargs)
        try:
            message = record.getMessage()
        except Exception:  # a broken format string: leave it to the handler to report
            return record
        cleaned = scrub(message)
        if cleaned != message:
            record.msg, record.args = cleaned, None
        return record

    logging.setLogRecordFactory(factory)
