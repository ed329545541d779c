"""uvicorn's HTTP/1.1 protocol with two bounds it lacks: a connection must send its request's
headers within ``header_timeout`` seconds (uvicorn times out idle keep-alive connections
only, never one that opened and went quiet), and past ``max_connections`` the connection
waiting longest for headers is closed to make room (else half-open connections use up the
process's file descriptors: new clients are locked out and every failed accept logs a
traceback). Imported only by ``memctl mcp --http`` (uvicorn is the ``mcp`` extra's).
"""

from __future__ import annotations

import asyncio
from typing import Any

__all__ = ["guarded_protocol"]


def guarded_protocol(header_timeout: float, max_connections: int) -> type[asyncio.Protocol]:
    from uvicorn.protocols.http.h11_impl import H11Protocol

    class Guarded(H11Protocol):
        _since = 0.0
        _header_timer: asyncio.TimerHandle | None = None

        def connection_made(self, transport: Any) -> None:
            super().connection_made(transport)
            self._since = self.loop.time()
            self._expect_headers()
            live = [c for c in self.connections if not c.transport.is_closing()]
            if len(live) > max_connections:
                _make_room(self, live)

        def connection_lost(self, exc: Exception | None) -> None:
            if self._header_timer is not None:
                self._header_timer.cancel()
                self._header_timer = None
            super().connection_lost(exc)

        def on_response_complete(self) -> None:
            super().on_response_complete()
            self._since = self.loop.time()
            self._expect_headers()  # the next request's headers are due in time too

        def waiting_for_headers(self) -> bool:
            return self.cycle is None or self.cycle.response_complete

        def _expect_headers(self) -> None:
            if self._header_timer is not None:
                self._header_timer.cancel()
            self._header_timer = self.loop.call_later(header_timeout, self._headers_due)

        def _headers_due(self) -> None:
            self._header_timer = None
            if self.waiting_for_headers() and not self.transport.is_closing():
                self.transport.close()

    def _make_room(new: Guarded, live: list[Any]) -> None:
        """Close the connection waiting longest for its headers (one already closing, whose
        descriptor goes at the next turn of the loop, no longer counts)."""
        idle = [
            c for c in live if isinstance(c, Guarded) and c is not new and c.waiting_for_headers()
        ]
        victim = min(idle, key=lambda c: c._since) if idle else new
        if not victim.transport.is_closing():
            victim.transport.close()

    return Guarded
