"""Actor side: a worker's replay socket, the fast way in for replays, small reads and frees from a driver on the
same host. Takes the functions that run one replay and one read on the worker (the actor's, under its lock);
gives a Unix socket in Linux's abstract namespace (no file to leave behind: it goes with the process) and a
random token, which the driver learns through a Ray call (`WorkerActor.open_replay_socket`). A Ray Compiled
Graph's round trip costs 45-120 us on our hosts, where a socket's costs 10-20: Ray's channels poll, and pass
through its serializer and its execution loop on both sides. Ray still starts, places, restarts and reaches the
worker for everything else.

A connection must send the token first, or it is closed; then each request frame (protocol.py
`replay_request`) gets one reply frame, in order, echoing its sequence number. A frame that does not parse, or
any error while serving it (the worker's own errors come back as values), closes its connection: the driver
then finds out from Ray whether the worker is still the one it knew. A thread per connection blocks
in `recv` while idle, so a waiting socket costs no CPU (a compiled graph's readers spin), except for
`spin_seconds` after each reply, which the driver sets on hosts with cores to spare: a loop's next request
then finds the thread awake.
"""

from __future__ import annotations

import hmac
import os
import socket
import sys
import threading
from collections.abc import Callable

from ..protocol import (
    PING_TEMPLATE,
    READ_TEMPLATE,
    SOCKET_TOKEN_BYTES,
    Failed,
    await_readable,
    read_frame,
    read_replay_request,
    replay_reply,
)

# (template, bufs, frees, uploads) -> (None or Failed, CUDA graphs replayed (`BatchResult.graphs`), bytes in use,
# incarnation)
ReplayFn = Callable[[int, tuple, tuple, tuple], tuple[Failed | None, tuple, int, str]]
# ((buffer id, bytes) pairs, frees) -> (None or Failed, (), bytes in use, incarnation, the buffers' bytes)
ReadFn = Callable[[tuple, tuple], tuple[Failed | None, tuple, int, str, tuple]]


def available() -> bool:
    """Whether this platform has abstract Unix sockets (Linux)."""
    return sys.platform.startswith("linux") and hasattr(socket, "AF_UNIX")


class ReplaySocketServer:
    """The listening socket and its threads; `address` and `token` are what a driver connects with."""

    def __init__(self, replay: ReplayFn, read: ReadFn, incarnation: Callable[[], str], name: str,
                 spin_seconds: float = 0.0) -> None:
        self._replay, self._read, self._incarnation = replay, read, incarnation
        self.spin_seconds = spin_seconds  # how long a connection polls for its next request after a reply
        self.token = os.urandom(SOCKET_TOKEN_BYTES)
        self.address = f"\0zyx_dist/{name}/{os.getpid()}/{os.urandom(8).hex()}"
        self._listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._listener.bind(self.address)
        self._listener.listen(8)
        self._closed = False
        threading.Thread(target=self._accept, name="zyx_dist replay socket", daemon=True).start()

    def _accept(self) -> None:
        while not self._closed:
            try:
                conn, _ = self._listener.accept()
            except OSError:
                return  # closed
            threading.Thread(target=self._serve, args=(conn,), name="zyx_dist replay connection",
                             daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        with conn:
            try:
                conn.settimeout(10.0)  # (the token is due at once; then requests may be far apart)
                token = conn.recv(SOCKET_TOKEN_BYTES, socket.MSG_WAITALL)
                if not hmac.compare_digest(token, self.token):
                    return
                conn.sendall(b"ok")
                conn.settimeout(None)
            except OSError:
                return
            while True:
                try:
                    body = read_frame(conn)
                    if body is None:
                        return
                    seq, template, bufs, frees, uploads = read_replay_request(body)
                    if template == PING_TEMPLATE:
                        out = (None, (), 0, self._incarnation())
                    elif template == READ_TEMPLATE and len(bufs) % 2 == 0 and not uploads:
                        out = self._read(tuple(zip(bufs[::2], bufs[1::2])), frees)
                    elif template >= 0:
                        out = self._replay(template, bufs, frees, uploads)
                    else:
                        return
                    conn.sendall(replay_reply(seq, *out))
                except Exception:  # noqa: BLE001 -- a malformed frame, a closed peer, or a bug: the connection
                    return  # ends, and the driver asks Ray whether this worker is still the one it knew
                if self.spin_seconds:  # a loop's next step comes soon: catch it without a wake-up
                    await_readable(conn, self.spin_seconds)

    def close(self) -> None:
        self._closed = True
        try:
            self._listener.shutdown(socket.SHUT_RDWR)  # (close alone does not wake a thread blocked in accept)
        except OSError:
            pass
        try:
            self._listener.close()
        except OSError:
            pass
