"""API key check and request body size limit (pure ASGI, so streaming stays untouched)."""

from __future__ import annotations

import hmac
import ipaddress
import json
import os
from pathlib import Path

API_KEY_ENV = "MODRAG_API_KEY"


def is_loopback(host: str) -> bool:
    if host in ("localhost", ""):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def resolve_api_key(key_file: str | None) -> str | None:
    """The key from ``--api-key-file`` or ``$MODRAG_API_KEY`` (None when neither is set)."""
    if key_file:
        key = Path(key_file).read_text(encoding="utf-8").strip()
        if not key:
            raise ValueError(f"API key file {key_file} is empty")
        return key
    return os.environ.get(API_KEY_ENV) or None


async def _send_json(send, status: int, body: dict, headers: list | None = None) -> None:
    data = json.dumps(body).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"),
                            (b"content-length", str(len(data)).encode()), *(headers or [])]})
    await send({"type": "http.response.body", "body": data})


class GuardMiddleware:
    """Rejects requests without the API key (401) and bodies over ``max_body_bytes`` (413)."""

    def __init__(self, app, *, api_key: str | None, max_body_bytes: int) -> None:
        self.app = app
        self.api_key = api_key
        self.max_body_bytes = max_body_bytes

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        if self.api_key is not None and not self._authorised(headers):
            return await _send_json(send, 401, {"detail": "missing or wrong API key (send it as "
                                                "'X-API-Key' or 'Authorization: Bearer')"},
                                    [(b"www-authenticate", b"Bearer")])
        declared = headers.get("content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.max_body_bytes:
            return await _send_json(send, 413, {"detail": f"request body over "
                                                f"{self.max_body_bytes} bytes"})
        received = 0

        async def limited_receive():
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.max_body_bytes:
                    raise BodyTooLarge()
            return message

        try:
            await self.app(scope, limited_receive, send)
        except BodyTooLarge:
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
