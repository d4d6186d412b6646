"""Driver side: the client of a worker's replay socket (runtime/replay_socket.py), which a Ray session uses
for one-worker replays when the worker runs on the driver's own host. Takes the address and token that the
actor gave through Ray; gives `replay`, one request frame and one reply frame (protocol.py), in 10-20 us
where a Ray Compiled Graph's execution takes 45-120. Any failure of the socket itself raises `SocketBroken`;
the Ray backend then asks Ray whether the worker died or came back empty, as for a compiled graph's failure.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Callable

from ..protocol import PING_TEMPLATE, Failed, await_readable, read_frame, read_replay_reply, replay_request


class SocketBroken(Exception):
    """The replay socket failed (its worker died, or closed the connection): the replay's outcome is unknown."""


class ReplaySocket:
    """A connection to one worker's replay socket."""

    def __init__(self, address: str, token: bytes, spin_seconds: float = 0.0, timeout: float = 30.0) -> None:
        self.spin_seconds = spin_seconds  # how long a replay polls for its reply before it blocks
        self.closed = False
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

    def replay(self, template: int, bufs: tuple[int, ...], frees: list[int], uploads: tuple = (),
               meanwhile: Callable[[], None] | None = None) -> tuple[Failed | None, tuple, int, str, memoryview]:
        """Frees, uploads and the replay of `template` with `bufs` bound, on the worker (as `Worker.run_replay`):
        (None or the Failed, the CUDA graphs replayed as `BatchResult.graphs` has them, bytes in use, the worker's
        incarnation, and the bytes a read carries: none here). `meanwhile` runs
        here while the worker works. Raises SocketBroken."""
        self.send(template, bufs, frees, uploads)
        try:
            if meanwhile is not None:
                meanwhile()
        finally:  # the reply is read whatever `meanwhile` did, or the next one would find it
            reply = self.receive()
        return reply

    def send(self, template: int, bufs: tuple[int, ...], frees: list[int], uploads: tuple = ()) -> None:
        """The request of `replay`, whose reply `receive` reads (each send takes exactly one receive)."""
        try:
            self.sock.sendall(replay_request(template, bufs, frees, uploads))
        except OSError as e:
            raise SocketBroken(f"sending the replay failed: {e}") from e

    def receive(self) -> tuple[Failed | None, tuple, int, str, memoryview]:
        """The reply to the last `send`, as `replay` gives it; raises SocketBroken. Interrupted before the
        reply came (KeyboardInterrupt), the connection is out of step and is closed (`closed`: the backend
        connects anew for the next replay)."""
        try:
            if self.spin_seconds:
                await_readable(self.sock, self.spin_seconds)
            body = read_frame(self.sock)
        except (OSError, ValueError) as e:
            raise SocketBroken(f"reading the reply failed: {e}") from e
        except BaseException:
            self.close()
            raise
        if body is None:
            raise SocketBroken("the worker closed its replay socket")
        return read_replay_reply(body)

    def _ping(self) -> float:
        t = time.perf_counter()
        try:
            self.send(PING_TEMPLATE, (), ())
            self.receive()
        except SocketBroken:
            self.sock.close()
            raise
        return time.perf_counter() - t

    def close(self) -> None:
        self.closed = True
        try:
            self.sock.close()
        except OSError:
            pass
