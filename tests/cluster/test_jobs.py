"""Ray deployment as a user does it: a real `ray start --head` on 127.0.0.1 with token authentication and a
`ray job submit` of examples/ray_job.py; and a two-node cluster on this machine (`ray.cluster_utils.Cluster`)
with a tensor moving between workers on different nodes.

Both tests start their own Ray, so they are marked `own_session` (tests/cluster/conftest.py then leaves the
session alone): each first shuts down whatever zyx_dist session and Ray connection is running (the shared
cluster-tier session, or the root conftest's in-process one), and leaves none running; the conftest starts
the shared session again for the next cluster test. The head is stopped by terminating the `ray start --block`
process this test started (it takes down the processes of its own node), not with `ray stop`, which would stop
every Ray instance of this user on the machine.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

import numpy as np
import pytest
import ray

import zyx_dist as zd

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
# what the working-dir upload leaves out (Ray also honours .gitignore, which covers most of these)
EXCLUDES = [".git", ".venv", ".ci-venv", "*.egg-info", "__pycache__", ".pytest_cache", ".hypothesis", ".ruff_cache",
            "bench-results", "build", "dist"]

pytestmark = [pytest.mark.own_session, pytest.mark.timeout(240)]


def free_ports(n: int) -> list[int]:
    socks = []
    try:
        for _ in range(n):
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


@pytest.fixture
def no_session():
    """No zyx_dist session and no Ray connection in this process, before and after the test."""
    zd.shutdown()
    if ray.is_initialized():
        ray.shutdown()
    yield
    zd.shutdown()
    if ray.is_initialized():
        ray.shutdown()


def _ray_cli() -> str:
    path = BIN / "ray"
    return str(path) if path.exists() else (shutil.which("ray") or pytest.skip("the `ray` command is not installed"))


def _wait_http(url: str, proc: subprocess.Popen, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"ray start exited with {proc.returncode}")
        try:
            with urllib.request.urlopen(url, timeout=2):
                return
        except urllib.error.HTTPError:
            return  # it answers (401 without the token: auth is on)
        except OSError:
            time.sleep(0.5)
    raise AssertionError(f"the dashboard at {url} did not come up in {timeout:.0f} s")


def _stop(proc: subprocess.Popen, temp_dir: str) -> None:
    """Stop the head this test started: SIGTERM to `ray start --block` (it stops its node's processes)."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)  # the process group of this test's `ray start` only
            proc.wait(timeout=10)
    for _ in range(40):  # the node's processes (raylet, gcs, dashboard, workers) carry its temp dir
        left = subprocess.run(["pgrep", "-f", temp_dir], check=False, capture_output=True, text=True).stdout.split()
        if not left:
            break
        time.sleep(0.5)
    shutil.rmtree(temp_dir, ignore_errors=True)


@pytest.mark.skipif(importlib.util.find_spec("aiohttp") is None or importlib.util.find_spec("grpc") is None,
                    reason="job submission needs ray[default] (pip install -e '.[cluster]')")
def test_ray_job_submit_to_a_local_head_with_token_auth(no_session, tmp_path):
    ray_cli = _ray_cli()
    gcs, dash, client, agent, agent_grpc, renv, metrics = free_ports(7)
    token = tmp_path / "auth_token"
    token.write_text(secrets.token_hex(32))
    temp_dir = tempfile.mkdtemp(prefix="zdjob")  # short: Ray's socket paths live under it
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RAY_", "ZYX_DIST_"))}
    env.update(PATH=f"{BIN}{os.pathsep}{env.get('PATH', '')}", RAY_AUTH_MODE="token", RAY_AUTH_TOKEN_PATH=str(token),
               RAY_USAGE_STATS_ENABLED="0")
    head = subprocess.Popen(
        [ray_cli, "start", "--head", "--block", "--node-ip-address=127.0.0.1", f"--port={gcs}", "--num-cpus=2",
         "--include-dashboard=true", "--dashboard-host=127.0.0.1", f"--dashboard-port={dash}",
         f"--ray-client-server-port={client}", f"--dashboard-agent-listen-port={agent}",
         f"--dashboard-agent-grpc-port={agent_grpc}", f"--runtime-env-agent-port={renv}",
         f"--metrics-export-port={metrics}", f"--temp-dir={temp_dir}", "--disable-usage-stats"],
        env=env, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    address = f"http://127.0.0.1:{dash}"
    try:
        _wait_http(f"{address}/api/version", head, 90)

        # token auth is on: a client without this cluster's token is turned away
        no_token = {k: v for k, v in env.items() if k != "RAY_AUTH_TOKEN_PATH"}
        no_token["HOME"] = str(tmp_path)  # and no ~/.ray/auth_token to fall back on
        denied = subprocess.run([ray_cli, "job", "list", "--address", address], env=no_token, cwd=ROOT,
                                check=False, capture_output=True, text=True, timeout=60)
        assert denied.returncode != 0, denied.stdout + denied.stderr
        assert re.search(r"auth|token|401|403", denied.stdout + denied.stderr, re.IGNORECASE)

        runtime_env = {"excludes": EXCLUDES, "env_vars": {"ZYX_DIST_DEVICES": "opencl-cpu:2"}}
        sub_id = f"zyx-dist-test-{secrets.token_hex(4)}"
        submit = subprocess.run(
            [ray_cli, "job", "submit", "--address", address, "--submission-id", sub_id, "--working-dir", ".",
             "--runtime-env-json", json.dumps(runtime_env), "--", "python", "examples/ray_job.py"],
            env=env, cwd=ROOT, check=False, capture_output=True, text=True, timeout=180)
        status = subprocess.run([ray_cli, "job", "status", "--log-style", "record", "--address", address, sub_id], env=env, cwd=ROOT,
                                check=False, capture_output=True, text=True, timeout=60)
        logs = subprocess.run([ray_cli, "job", "logs", "--address", address, sub_id], env=env, cwd=ROOT,
                              check=False, capture_output=True, text=True, timeout=60).stdout
        detail = f"submit:\n{submit.stdout[-3000:]}\n{submit.stderr[-3000:]}\nlogs:\n{logs[-3000:]}"
        assert submit.returncode == 0, detail
        assert f"Job '{sub_id}' succeeded" in status.stdout + status.stderr, detail  # as `ray job status` says
        assert "ray_job: ok" in logs, detail
        # the job ran on this cluster's two workers and moved the hidden layer between them
        assert "device opencl:0" in logs and "device opencl:1" in logs, detail
        assert re.search(r"transfers [1-9]", logs), detail
        checksum = float(re.search(r"checksum (-?[0-9.]+)", logs).group(1))
        rng = np.random.default_rng(0)
        xs = rng.standard_normal((512, 256), dtype=np.float32)
        ws = rng.standard_normal((256, 128), dtype=np.float32) / 16
        h = np.maximum(xs @ ws, 0) * 2.0
        p = np.exp(h - h.max(-1, keepdims=True))
        p /= p.sum(-1, keepdims=True)
        assert checksum == pytest.approx(float((p * np.arange(128)).sum()), rel=1e-4)
    finally:
        _stop(head, temp_dir)
    assert head.poll() is not None
    assert not ray.is_initialized() and zd.stats()["kernels_launched"] == 0  # nothing left running here


def test_tensor_moves_between_workers_on_two_nodes(no_session):
    from ray.cluster_utils import Cluster

    head_port, head_agent, node_agent = free_ports(3)
    cluster = Cluster(initialize_head=True, head_node_args={
        "num_cpus": 1, "gcs_server_port": head_port, "include_dashboard": False,
        "dashboard_agent_listen_port": head_agent})
    try:
        cluster.add_node(num_cpus=1, dashboard_agent_listen_port=node_agent)
        cluster.wait_for_nodes()
        # one CPU per node, one CPU per OpenCL worker actor: opencl:0 and opencl:1 land on different nodes
        zd.init(address=cluster.address, devices={"opencl-cpu": 2})
        devs = {d.name: d for d in zd.devices()}
        assert sorted(devs) == ["opencl:0", "opencl:1"]
        assert devs["opencl:0"].node != devs["opencl:1"].node
        alive = {n["NodeID"] for n in ray.nodes() if n["Alive"]}
        assert {devs["opencl:0"].node, devs["opencl:1"].node} <= alive and len(alive) == 2

        a = np.arange(4096, dtype=np.float32).reshape(64, 64) / 7
        x = (zd.tensor(a, device="opencl:0") * 3 + 1).realize()
        assert x.device == "opencl:0"
        before = zd.stats()
        y = x.to("opencl:1")
        z = (y.sum(axis=0) - 2).realize()
        after = zd.stats()
        assert z.device == "opencl:1"
        assert after["transfers"] > before["transfers"]
        assert after["bytes_transferred"] - before["bytes_transferred"] >= a.nbytes
        np.testing.assert_allclose(y.numpy(), a * 3 + 1, rtol=1e-6)
        np.testing.assert_allclose(z.numpy(), (a * 3 + 1).sum(axis=0) - 2, rtol=1e-5)
        # and back: a result of the second node used on the first
        w = (z.to("opencl:0") * x[0]).realize()
        assert w.device == "opencl:0"
        np.testing.assert_allclose(w.numpy(), ((a * 3 + 1).sum(axis=0) - 2) * (a[0] * 3 + 1), rtol=1e-5)
    finally:
        zd.shutdown()
        if ray.is_initialized():
            ray.shutdown()
        cluster.shutdown()
    assert not ray.is_initialized()
