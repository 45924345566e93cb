"""API key check and request body size limit (pure ASGI, so streaming stays untouched)."""

from __future__ import annotations

import contextlib
import hmac
import json
import os
from pathlib import Path

from modrag_studio.engine.trust.reach import host_of, is_loopback_host

API_KEY_ENV = "MODRAG_API_KEY"


def is_loopback(host: str) -> bool:
    return is_loopback_host(host)


def resolve_api_key(key_file: str | None) -> str | None:
    """The key from ``--api-key-file`` or ``$MODRAG_API_KEY`` (None when neither is set)."""
    if key_file:
        key = Path(key_file).read_text(encoding="utf-8").strip()
        if not key:
            raise ValueError(f"API key file {key_file} is empty")
        return check_api_key_text(key)
    key = os.environ.get(API_KEY_ENV) or None
    return check_api_key_text(key) if key is not None else None


WILDCARD_HOSTS = ("0.0.0.0", "::")


def bound_host_names(host: str) -> set[str]:
    """The names a ``Host`` header may carry for a server bound to ``host``: the address
    itself, plus ``localhost`` for a loopback bind, plus this machine's names for a wildcard
    bind."""
    import socket

    names = {host.strip("[]").lower()}
    if is_loopback(host):
        names |= {"localhost", "127.0.0.1", "::1"}
    if host in WILDCARD_HOSTS:
        names |= {"localhost", "127.0.0.1", "::1"}
        for name in {socket.gethostname(), socket.getfqdn()}:
            names.add(name.lower())
            with contextlib.suppress(OSError):
                names |= {info[4][0].lower() for info in socket.getaddrinfo(name, None)}
    return names


def check_api_key_text(key: str) -> str:
    """The key, or ValueError when it cannot travel in an HTTP header (non-ASCII, spaces)."""
    if not key.isascii() or not key.isprintable() or any(c.isspace() for c in key):
        raise ValueError("the API key must be printable ASCII without spaces (HTTP headers "
                         "cannot carry other characters reliably)")
    return key


async def _send_json(send, status: int, body: dict, headers: list | None = None) -> None:
    data = json.dumps(body).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"),
                            (b"content-length", str(len(data)).encode()), *(headers or [])]})
    await send({"type": "http.response.body", "body": data})


class GuardMiddleware:
    """Rejects a ``Host`` the server is not bound to (400/421; DNS rebinding), requests
    without the API key (401) and bodies over ``max_body_bytes`` (413)."""

    def __init__(self, app, *, api_key: str | None, max_body_bytes: int,
                 allowed_hosts: set[str] | None = None) -> None:
        self.app = app
        self.api_key = api_key
        self.max_body_bytes = max_body_bytes
        self.allowed_hosts = {h.lower() for h in allowed_hosts} if allowed_hosts else None

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        if self.allowed_hosts is not None:
            given = headers.get("host", "")
            if not given:
                return await _send_json(send, 400, {"detail": "missing Host header"})
            if host_of(given) not in self.allowed_hosts and "*" not in self.allowed_hosts:
                return await _send_json(send, 421, {
                    "detail": f"this server does not answer for host '{host_of(given)}' "
                              "(start it with --allowed-host to add a name)"})
        if self.api_key is not None and not self._authorised(headers):
            return await _send_json(send, 401, {"detail": "missing or wrong API key (send it as "
                                                "'X-API-Key' or 'Authorization: Bearer')"},
                                    [(b"www-authenticate", b"Bearer")])
        declared = headers.get("content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.max_body_bytes:
            return await _send_json(send, 413, {"detail": f"request body over "
                                                f"{self.max_body_bytes} bytes"})
        received, too_large, started = 0, False, False

        async def limited_receive():
            nonlocal received, too_large
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.max_body_bytes:
                    too_large = True
                    raise BodyTooLarge()
            return message

        async def guarded_send(message):
            nonlocal started
            if too_large and not started:
                return  # the app's answer to a body cut short (FastAPI: 400) becomes the 413
            started = started or message["type"] == "http.response.start"
            await send(message)

        with contextlib.suppress(BodyTooLarge):
            await self.app(scope, limited_receive, guarded_send)
        if too_large and not started:  # a chunked body has no Content-Length to refuse early
            await _send_json(send, 413, {"detail": f"request body over {self.max_body_bytes} "
                                         "bytes"})

    def _authorised(self, headers: dict[str, str]) -> bool:
        assert self.api_key is not None
        given = headers.get("x-api-key", "")
        auth = headers.get("authorization", "")
        if auth.lower().startswith("bearer "):
            given = given or auth[7:].strip()
        return bool(given) and hmac.compare_digest(given.encode(), self.api_key.encode())


class BodyTooLarge(Exception):
    pass
