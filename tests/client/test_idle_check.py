"""Whether a reused connection was closed by the daemon while idle (_connection.py): one
poll(0) of a poll object the socket is registered with once, or a select where there is
no poll; the same answer either way."""

from __future__ import annotations

import _socket
import socket

import pytest

from memoryd_client._connection import _idle_poll, _is_closed_by_peer


@pytest.mark.parametrize("polled", [True, False])
def test_an_idle_socket_is_open_until_its_peer_closes_it(polled: bool) -> None:
    ours, theirs = socket.socketpair(socket.AF_UNIX)
    sock = _socket.socket(fileno=ours.detach())
    poll = _idle_poll(sock) if polled else None
    assert (poll is not None) is polled
    try:
        assert not _is_closed_by_peer(sock, poll)
        theirs.sendall(b"late answer")  # bytes waiting are not an end
        assert not _is_closed_by_peer(sock, poll)
        assert sock.recv(64) == b"late answer"
        theirs.close()
        assert _is_closed_by_peer(sock, poll)
    finally:
        sock.close()
