"""The replay socket's frames (protocol.py): requests and replies read back as written, uploads byte for byte,
and anything that is not one well-formed frame refused with ValueError (the worker then closes the
connection), never run."""

from __future__ import annotations

import socket
import threading

import ml_dtypes
import numpy as np
import pytest

from zyx_dist import protocol
from zyx_dist.protocol import Failed


def body(frame: bytes) -> bytes:
    (n,) = protocol.FRAME.unpack_from(frame)
    assert len(frame) == protocol.FRAME.size + n
    return frame[protocol.FRAME.size:]


def test_a_request_reads_back_as_written():
    up = [(40, 6, np.array([1.5, -2.0, 3.25], dtype=ml_dtypes.bfloat16)), (41, 4, np.float32(7.5)),
          (42, 0, np.zeros(0, np.int32))]
    frame = protocol.replay_request(77, 9, (10, 11, 40, 41, 42), [3, 5], up)
    seq, template, bufs, frees, uploads = protocol.read_replay_request(body(frame))
    assert (seq, template, bufs, frees) == (77, 9, (10, 11, 40, 41, 42), (3, 5))
    assert [(b, n) for b, n, _ in uploads] == [(40, 6), (41, 4), (42, 0)]
    for (_b, _n, raw), (_b2, _n2, want) in zip(uploads, up):
        assert raw.dtype == np.uint8 and raw.tobytes() == np.asarray(want).tobytes()


def test_a_reply_reads_back_as_written():
    f = Failed(2, "OutOfMemoryError", "opencl:0: out of memory", "Traceback ...", {"device": "opencl:0",
                                                                                  "requested": 1 << 40, "free": 7})
    graphs = ((0, 3, 0.0), (5, 2, 0.0))
    seq, *head, _at = protocol.read_replay_reply(body(protocol.replay_reply(5, f, graphs, 4096, "abc123")))
    assert seq == 5 and head == [f, graphs, 4096, "abc123"]
    # a Failed whose data JSON cannot hold (keys that are not strings) still travels, its data as text
    odd = Failed(0, "ZyxError", "m", "", {(1, 2): 3})
    _seq, back, *_rest = protocol.read_replay_reply(body(protocol.replay_reply(6, odd, (), 0, "x")))
    assert back.error == "ZyxError" and back.data == {"data": repr({(1, 2): 3})}


def test_a_read_reply_puts_every_buffer_at_an_aligned_offset():
    bufs = [np.array([True, False, True]), np.arange(5, dtype=np.float64), np.zeros(0, np.float32),
            np.array([1.5, -2.0], dtype=ml_dtypes.bfloat16), np.arange(3, dtype=np.int64)]
    raw = tuple(b.reshape(-1).view(np.uint8) for b in bufs)
    whole = bytearray(body(protocol.replay_reply(1, None, (), 0, "inc", raw)))
    _seq, failed, _g, _u, _i, at = protocol.read_replay_reply(whole)
    assert failed is None
    for b in bufs:
        at = protocol.aligned(at)
        assert at % protocol.DATA_ALIGN == 0
        got = np.frombuffer(whole, b.dtype, b.size, at)
        assert got.tobytes() == b.tobytes()
        at += b.nbytes


@pytest.mark.parametrize("cut", ["short header", "short ids", "upload past the end", "bytes left over"])
def test_a_malformed_request_is_refused(cut):
    good = body(protocol.replay_request(0, 1, (2, 3), [4], [(5, 8, np.arange(2, dtype=np.float32))]))
    bad = {"short header": good[:10], "short ids": good[:36], "upload past the end": good[:-1],
           "bytes left over": good + b"\0"}[cut]
    with pytest.raises(ValueError, match="malformed replay request"):
        protocol.read_replay_request(bad)


def test_frames_are_read_whole_from_a_socket():
    a, b = socket.socketpair()
    with a, b:
        frame = protocol.replay_request(0, 1, tuple(range(20000)), [])  # 160 KB: several reads
        t = threading.Thread(target=lambda: [a.sendall(frame[i:i + 3000]) for i in range(0, len(frame), 3000)])
        t.start()
        got = protocol.read_frame(b)
        t.join()
        assert got == body(frame)
        a.sendall(frame[:2])  # a header cut short, then the peer goes
        a.shutdown(socket.SHUT_WR)
        assert protocol.read_frame(b) is None


def test_two_frames_at_once_or_a_huge_one_are_refused():
    a, b = socket.socketpair()
    with a, b:
        one = protocol.replay_request(0, 1, (2,), [])
        a.sendall(one + one)
        with pytest.raises(ValueError, match="malformed frame"):
            protocol.read_frame(b)
    a, b = socket.socketpair()
    with a, b:
        a.sendall(protocol.FRAME.pack(protocol.MAX_FRAME + 1))
        with pytest.raises(ValueError, match="malformed frame"):
            protocol.read_frame(b)


def test_polling_for_a_frame_reads_nothing_and_gives_up_in_time():
    import time

    a, b = socket.socketpair()
    with a, b:
        t = time.perf_counter()
        protocol.await_readable(b, 0.002)  # nothing comes: back after about the time given
        assert 0.002 <= time.perf_counter() - t < 1.0
        frame = protocol.replay_request(0, 4, (5,), [])
        threading.Timer(0.01, lambda: a.sendall(frame)).start()
        protocol.await_readable(b, 5.0)  # back when the frame arrives, well before the 5 s
        assert time.perf_counter() - t < 4.0
        assert protocol.read_frame(b) == body(frame)  # the poll consumed none of it
