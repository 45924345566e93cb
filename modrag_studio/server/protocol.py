"""uvicorn's HTTP/1.1 protocol with a header timeout: a connection that does not finish
sending a request's headers within ``HEADER_TIMEOUT_S`` (a slow-header client) is closed.
uvicorn's own keep-alive timeout covers idle connections between requests."""

from __future__ import annotations

import asyncio

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

from modrag_studio.engine.core.paths import env_limit

HEADER_TIMEOUT_S = env_limit("MODRAG_HEADER_TIMEOUT", 10.0, "seconds")


class HeaderTimeoutProtocol(H11Protocol):
    header_timeout_s = HEADER_TIMEOUT_S

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._header_timer: asyncio.TimerHandle | None = None
        self._arm()

    def _arm(self) -> None:
        if self._header_timer is None:
            self._header_timer = self.loop.call_later(self.header_timeout_s, self._expire)

    def _disarm(self) -> None:
        if self._header_timer is not None:
            self._header_timer.cancel()
            self._header_timer = None

    def _expire(self) -> None:
        self._header_timer = None
        if self.conn.their_state in (h11.IDLE,) and not self.transport.is_closing():
            self.transport.close()  # headers still incomplete after the timeout

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        if self.conn.their_state is h11.IDLE and not self.transport.is_closing():
            self._arm()  # part of a request line or headers: keep the clock running
        else:
            self._disarm()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)
