"""Driver side: the client of a worker's replay socket (runtime/replay_socket.py), which a Ray session uses for
replays, small reads and frees when the worker runs on the driver's own host. Takes the address and token that
the actor gave through Ray; gives `send` and `receive`, one request frame and one reply frame
(protocol.py), in 10-20 us where a Ray Compiled Graph's execution takes 45-120. Any failure of the socket itself
raises `SocketBroken`; the Ray backend then asks Ray whether the worker died or came back empty, as for a
compiled graph's failure.
"""

from __future__ import annotations

import socket
import struct
import time
from typing import NamedTuple

from ..protocol import PING_TEMPLATE, Failed, await_readable, read_frame, read_replay_reply, replay_request


class SocketBroken(Exception):
    """The replay socket failed (its worker died, or closed the connection): the replay's outcome is unknown."""


class Reply(NamedTuple):
    """A worker's answer to one request: None or the Failed, the CUDA graphs replayed (as `BatchResult.graphs` has
    them), the bytes in use, the worker's incarnation; for a read, the body and where its data begins (`aligned`
    of `data_at` is the first buffer's offset)."""

    failed: Failed | None
    graphs: tuple
    in_use: int
    incarnation: str
    body: bytearray
    data_at: int


class ReplaySocket:
    """A connection to one worker's replay socket. Each request carries a sequence number that its reply echoes,
    and a connection with a request whose reply was not read (`pending`: an exception came between) is out of
    step: it is never used again (the backend connects anew)."""

    def __init__(self, address: str, token: bytes, spin_seconds: float = 0.0, timeout: float = 30.0) -> None:
        self.spin_seconds = spin_seconds  # how long a replay polls for its reply before it blocks
        self.closed = self.pending = False
        self.seq = 0
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            self.sock.settimeout(timeout)  # for the handshake only: a replay may run as long as its kernels do
            self.sock.connect(address)
            self.sock.sendall(token)
            if self.sock.recv(2, socket.MSG_WAITALL) != b"ok":
                raise SocketBroken("the worker refused the connection")
            self.sock.settimeout(None)
        except OSError as e:
            self.sock.close()
            raise SocketBroken(f"could not connect to the worker's replay socket: {e}") from e
        except SocketBroken:
            self.sock.close()
            raise
        # the least round trip of a request that does nothing (what a replay waits beyond its kernels)
        self.round_trip_seconds = min(self._ping() for _ in range(5))

    @property
    def usable(self) -> bool:
        """Open and in step (no reply left unread)."""
        return not self.closed and not self.pending

    def send(self, template: int, bufs: tuple[int, ...], frees: list[int], uploads: tuple = ()) -> None:
        """A request (a replay, a read or a ping), whose reply `receive` reads; raises SocketBroken."""
        if not self.usable:
            raise SocketBroken("the replay socket is closed or out of step")
        self.seq += 1
        self.pending = True  # (until its reply is read whole)
        try:
            self.sock.sendall(replay_request(self.seq, template, bufs, frees, uploads))
        except OSError as e:
            self.close()
            raise SocketBroken(f"sending the replay failed: {e}") from e

    def receive(self) -> Reply:
        """The reply to the last `send`; raises SocketBroken (the connection then closed). Interrupted before
        the reply came (KeyboardInterrupt), the connection stays `pending` and is closed."""
        try:
            if self.spin_seconds:
                await_readable(self.sock, self.spin_seconds)
            body = read_frame(self.sock)
            if body is None:
                raise SocketBroken("the worker closed its replay socket")
            seq, *fields = read_replay_reply(body)
        except SocketBroken:
            self.close()
            raise
        except (OSError, ValueError, struct.error, UnicodeDecodeError) as e:
            self.close()
            raise SocketBroken(f"reading the reply failed: {e}") from e
        except BaseException:
            self.close()
            raise
        if seq != self.seq:  # (cannot happen while `pending` guards the connection: checked all the same)
            self.close()
            raise SocketBroken(f"a reply to request {seq} came for request {self.seq}")
        self.pending = False
        return Reply(*fields[:4], body, fields[4])

    def _ping(self) -> float:
        t = time.perf_counter()
        self.send(PING_TEMPLATE, (), ())  # (either closes the socket when it fails)
        self.receive()
        return time.perf_counter() - t

    def close(self) -> None:
        self.closed = True
        try:
            self.sock.close()
        except OSError:
            pass
