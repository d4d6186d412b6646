"""ZYX_DIST_DEBUG through `logging` (zyx_dist/logs.py): one parser of the bitmask for the config, the Ray
actors and the workers (so `0x2` means 2 everywhere), one logger per debug area switched on by its bit, the
old text on stderr when the application configured no logging, and the application's own handlers, format
and levels winning when it did. The in-process checks run real sessions on PoCL; the subprocess checks show
what a user sees on the terminal."""

from __future__ import annotations

import contextlib
import logging
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import zyx_dist as zd
from zyx_dist import logs
from zyx_dist.config import load_config
from zyx_dist.engine import session as zsession
from zyx_dist.errors import ConfigError
from zyx_dist.runtime.worker import Worker

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def clean_levels(monkeypatch):
    """Every test starts and ends with the area loggers off (as a session with debug 0 leaves them)."""
    monkeypatch.delenv("ZYX_DIST_DEBUG", raising=False)
    logs.apply_debug(0)
    yield
    logs.apply_debug(0)


@contextlib.contextmanager
def no_root_handlers():
    """An application that configured no logging: pytest's own capture handlers, which it puts on the root
    logger for each test phase, taken off for the block."""
    root = logging.getLogger()
    saved = root.handlers[:]
    root.handlers.clear()
    try:
        yield
    finally:
        root.handlers[:] = saved


@pytest.mark.parametrize("text, value", [("0", 0), ("2", 2), ("0x2", 2), ("0x7f", 127), (" 34 ", 34),
                                         ("0b100000", 32), ("0o20", 16), ("010", 10), ("", 0)])
def test_parse_debug_forms(text, value):
    assert logs.parse_debug(text) == value


@pytest.mark.parametrize("text", ["loud", "-1", "2.0", "0xg", "1024", "0xff"])  # (bits past 64 name no area)
def test_parse_debug_errors_name_the_variable(text):
    with pytest.raises(ConfigError, match="^ZYX_DIST_DEBUG: "):
        logs.parse_debug(text)


@pytest.mark.parametrize("text", ["0x2", "2"])
def test_hex_debug_reaches_the_worker_as_the_config_reads_it(monkeypatch, text):
    """The bug this replaces: the worker parsed ZYX_DIST_DEBUG with int(), so 0x2 turned its timers off."""
    # a reference device: the unit tier runs without OpenCL (ZYX_DIST_NO_OPENCL=1)
    monkeypatch.setenv("ZYX_DIST_DEBUG", text)
    cfg = load_config(None)
    assert cfg.debug == 2 and logs.debug_from_env() == 2
    logs.apply_debug(cfg.debug)
    with Worker("reference:0") as w:
        assert w.profile is True  # bit 2: device-side kernel times
    logs.apply_debug(0)
    with Worker("reference:0") as w:
        assert w.profile is False


def test_one_logger_per_area_switched_by_its_bit():
    assert logs.AREAS == {"devices": 1, "timings": 2, "kernels": 4, "ir": 8, "source": 16, "autotune": 32,
                          "scheduler": 64}
    logs.apply_debug(32 | 4)
    on = {a for a in logs.AREAS if logs.enabled(a)}
    assert on == {"autotune", "kernels"}
    assert logging.getLogger("zyx_dist.autotune").level == logging.DEBUG
    logs.apply_debug(64)
    assert {a for a in logs.AREAS if logs.enabled(a)} == {"scheduler"}
    assert logging.getLogger("zyx_dist.autotune").level == logging.NOTSET  # handed back to the app's config
    with pytest.raises(KeyError, match="areas: devices"):
        logs.logger("everything")


def test_a_level_the_user_set_is_left_alone():
    lg = logging.getLogger("zyx_dist.source")
    lg.setLevel(logging.DEBUG)  # the application asks for sources without any bit
    try:
        logs.apply_debug(0)
        assert logs.enabled("source")
        lg.setLevel(logging.WARNING)  # ... or silences them although the bit is on
        logs.apply_debug(16)
        assert lg.level == logging.WARNING and not logs.enabled("source")
    finally:
        lg.setLevel(logging.NOTSET)


def test_an_application_at_debug_is_not_flooded():
    """Only the bits or a level on zyx_dist's own loggers turn the output on, not the root logger's level."""
    root = logging.getLogger()
    old = root.level
    root.setLevel(logging.DEBUG)
    try:
        assert not any(logs.enabled(a) for a in logs.AREAS)
        logging.getLogger("zyx_dist").setLevel(logging.DEBUG)
        assert all(logs.enabled(a) for a in logs.AREAS)
    finally:
        root.setLevel(old)
        logging.getLogger("zyx_dist").setLevel(logging.NOTSET)


def test_plain_text_on_stderr_without_a_logging_config(capsys):
    logs.apply_debug(32)
    with no_root_handlers():
        logs.emit("autotune", "zyx_dist: autotune winner v4 (1.0 us) of 3 candidates")
        logs.emit("source", "zyx_dist: source of k (bit off: nothing)")
    out, err = capsys.readouterr()
    assert err == "zyx_dist: autotune winner v4 (1.0 us) of 3 candidates\n" and out == ""


@pytest.mark.parametrize("where", ["", "zyx_dist", "zyx_dist.autotune"])
def test_the_applications_handlers_win(capsys, where):
    seen: list[str] = []

    class Collect(logging.Handler):
        def emit(self, record):
            seen.append(f"{record.name} {record.levelname} {record.getMessage()}")

    handler = Collect()
    logs.apply_debug(32)
    with no_root_handlers():
        logging.getLogger(where).addHandler(handler)
        try:
            logs.emit("autotune", "zyx_dist: autotune winner v1")
        finally:
            logging.getLogger(where).removeHandler(handler)
    assert seen == ["zyx_dist.autotune DEBUG zyx_dist: autotune winner v1"]
    assert capsys.readouterr().err == ""  # not twice


def test_session_debug_config_reaches_the_loggers(caplog):
    """A session's `debug` (config or ZYX_DIST_DEBUG) switches the areas on; with pytest's handlers on the root
    logger the records go there (caplog), not to our stderr fallback."""
    with zsession.set_aside():  # the unit tier's session (reference devices) comes back afterwards
        zd.init({"debug": 4 | 64 | 2}, ray=False, devices=["reference:0"])
        (zd.tensor(np.arange(8, dtype=np.float32)) * 2 + 1).numpy()
        names = {r.name for r in caplog.records}
        assert {"zyx_dist.kernels", "zyx_dist.scheduler", "zyx_dist.timings"} <= names
        assert "zyx_dist.source" not in names
        text = caplog.text
        assert "zyx_dist: kernel k_" in text and "zyx_dist: place k_" in text and "zyx_dist: realize 1 kernels" in text
        assert "kernelize and render" in text and "schedule" in text and "run" in text  # API.md 7: the three parts
    assert not logs.enabled("kernels")  # the default session has debug 0


_SCRIPT = """
import logging, sys
import numpy as np, zyx_dist as zd
if sys.argv[1] == "app":
    logging.basicConfig(stream=sys.stdout, level=logging.WARNING, format="APP %(name)s %(message)s")
zd.init(ray=False, devices=["reference:0"])
print("result", (zd.tensor(np.ones(3, np.float32)) * 5).numpy().tolist(), flush=True)
"""


@pytest.mark.parametrize("mode", ["plain", "app"])
def test_what_a_terminal_shows(mode):
    env = dict(os.environ, ZYX_DIST_DEBUG="0x10", PYTHONPATH=str(ROOT))
    res = subprocess.run([sys.executable, "-c", _SCRIPT, mode], capture_output=True, text=True, env=env,
                         timeout=300, check=True)
    assert "result [5.0, 5.0, 5.0]" in res.stdout
    if mode == "plain":  # the old text, on stderr
        assert "\nzyx_dist: source of k_" in "\n" + res.stderr and "zyx_dist: source" not in res.stdout
    else:  # the application's format and stream
        assert "APP zyx_dist.source zyx_dist: source of k_" in res.stdout and "zyx_dist: source" not in res.stderr


def test_a_level_set_on_an_area_logger_prints_without_zyx_dist_debug(capsys):
    """README: `logging.getLogger("zyx_dist.autotune").setLevel(logging.DEBUG)` switches that area on, and with no
    logging configured its lines go to stderr (they went to logging's last resort, which drops DEBUG)."""
    lg = logging.getLogger("zyx_dist.autotune")
    lg.setLevel(logging.DEBUG)
    try:
        with no_root_handlers():
            assert logs.enabled("autotune")
            logs.emit("autotune", "zyx_dist: autotune line")
        assert capsys.readouterr().err == "zyx_dist: autotune line\n"
    finally:
        lg.setLevel(logging.NOTSET)


def test_the_devices_line_names_each_worker_as_the_session_does(capsys):
    """Several CPU workers open one OpenCL device: each line names its worker (both read opencl:0 before)."""
    logs.apply_debug(1)
    with no_root_handlers():
        w = Worker("reference:0", name="reference:7")
        w.close()
    err = capsys.readouterr().err
    assert "worker reference:7 opened" in err and w.device == "reference:7"
