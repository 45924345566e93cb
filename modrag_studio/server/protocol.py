"""uvicorn's HTTP/1.1 protocol with a header and a body timeout: a connection that does not
finish sending a request's headers within ``HEADER_TIMEOUT_S`` (a slow-header client), or its
body within ``BODY_TIMEOUT_S`` of the headers (a slow-body client), is closed.
uvicorn's own keep-alive timeout covers idle connections between requests."""

from __future__ import annotations

import asyncio

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

from modrag_studio.engine.core.paths import env_limit

HEADER_TIMEOUT_S = env_limit("MODRAG_HEADER_TIMEOUT", 10.0, "seconds")
BODY_TIMEOUT_S = env_limit("MODRAG_BODY_TIMEOUT", 30.0, "seconds")


class HeaderTimeoutProtocol(H11Protocol):
    header_timeout_s = HEADER_TIMEOUT_S
    body_timeout_s = BODY_TIMEOUT_S

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._timer: asyncio.TimerHandle | None = None
        self._timed: object = None  # the h11 state the running clock is for
        self._arm(h11.IDLE)

    def _arm(self, state: object) -> None:
        """Start the clock of ``state`` (headers: IDLE, body: SEND_BODY) unless it runs."""
        if self._timed is state:
            return  # partial headers or a dribbled body do not reset the clock
        self._disarm()
        limit = self.header_timeout_s if state is h11.IDLE else self.body_timeout_s
        self._timer = self.loop.call_later(limit, self._expire, state)
        self._timed = state

    def _disarm(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
        self._timer, self._timed = None, None

    def _expire(self, state: object) -> None:
        self._timer, self._timed = None, None
        if self.conn.their_state is state and not self.transport.is_closing():
            self.transport.close()  # headers or body still incomplete after the timeout

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        if self.transport.is_closing():
            self._disarm()
        elif self.conn.their_state in (h11.IDLE, h11.SEND_BODY):
            self._arm(self.conn.their_state)  # headers or body still coming
        else:
            self._disarm()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)
