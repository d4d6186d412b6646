"""The OpenCL devices of this machine as a new user meets them: each is self-tested when listed, a platform whose
compiler is broken is left out of `auto` with its reason, and when nothing works `zd.init()` raises DeviceError
(never a CompileError on the first kernel). A broken platform is made for real: PoCL rejects a bad build option
given through POCL_EXTRA_BUILD_FLAGS, the way its LLVM rejects a CPU it does not know. Each case runs in a fresh
process, since the ICD loader and the self-tests are set up once per process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from zyx_dist.runtime.discover import opencl_devices

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PLATFORMS = {d["platform"] for d in opencl_devices()}
HAS_POCL = "Portable Computing Language" in PLATFORMS
HAS_INTEL = "Intel(R) OpenCL" in PLATFORMS
BROKEN_POCL = {"POCL_EXTRA_BUILD_FLAGS": "-mcpu=zyx-dist-broken", "POCL_KERNEL_CACHE": "0"}


def run(code: str, **env: str) -> subprocess.CompletedProcess:
    full = {**os.environ, **env}
    full.pop("ZYX_DIST_DEVICES", None)
    if "opencl-icd" in full.get("OCL_ICD_VENDORS", ""):  # the folder this process registered: start afresh
        del full["OCL_ICD_VENDORS"]
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=full, cwd=ROOT, capture_output=True,
                          text=True, timeout=240, check=False)


def test_every_device_here_passes_its_self_test():
    devices = opencl_devices()
    assert devices, "no OpenCL device on this machine"
    assert [d["index"] for d in devices] == list(range(len(devices)))
    for d in devices:
        assert d["usable"], f"opencl:{d['index']} {d['platform']}: {d['problem']}"


@pytest.mark.skipif(not (HAS_POCL and HAS_INTEL), reason="needs both PoCL and Intel's CPU runtime")
def test_broken_pocl_is_left_out_and_the_session_runs_on_intel():
    r = run("""
        import json, numpy as np, zyx_dist as zd
        from zyx_dist.runtime.discover import opencl_devices
        zd.init(ray=False)
        x = np.arange(12, dtype=np.float32)
        ok = bool(np.allclose((zd.tensor(x) * 2 + 1).numpy(), x * 2 + 1))
        print(json.dumps({"devices": [d.device_name for d in zd.devices()], "ok": ok,
                          "listed": [[d["platform"], d["usable"], d["problem"]] for d in opencl_devices()]}))
        """, ZYX_DIST_DEBUG="1", **BROKEN_POCL)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert out["ok"] and len(out["devices"]) == 1 and not out["devices"][0].startswith("pthread-")
    pocl = [d for d in out["listed"] if d[0] == "Portable Computing Language"]
    assert pocl and not pocl[0][1] and "self-test kernel failed" in pocl[0][2] and "zyx-dist-broken" in pocl[0][2]
    assert "zyx_dist: left out opencl:" in r.stderr  # ZYX_DIST_DEBUG=1 names the device and the reason (stderr,
    # where debug output goes when the program configured no logging)


@pytest.mark.skipif(not HAS_POCL, reason="needs PoCL")
def test_no_working_device_raises_device_error_at_init_naming_the_cause():
    # only PoCL visible (the pip runtimes not registered), and PoCL broken
    r = run("""
        import zyx_dist as zd
        for devices in (None, ["opencl:0"], {"opencl-cpu": 2}):
            try:
                zd.init(ray=False, devices=devices)
            except zd.DeviceError as e:
                print("DeviceError:", " ".join(str(e).split()))
            else:
                print("no error")
                zd.shutdown()
        """, ZYX_DIST_REGISTER_ICD="0", **BROKEN_POCL)
    assert r.returncode == 0, r.stderr
    lines = [ln for ln in r.stdout.splitlines() if ln.startswith(("DeviceError", "no error"))]
    assert len(lines) == 3 and all(ln.startswith("DeviceError") for ln in lines), r.stdout
    assert "no working OpenCL device" in lines[0] and "Portable Computing Language" in lines[0]
    assert "fix: install Intel's OpenCL CPU runtime" in lines[0] and "pip install intel-opencl-rt" in lines[0]
    assert "opencl:0" in lines[1] and "does not work" in lines[1] and "zyx-dist-broken" in lines[1]
    assert "no working OpenCL CPU device" in lines[2]
    assert "CompileError" not in r.stdout + r.stderr


@pytest.mark.skipif(not (HAS_POCL and HAS_INTEL), reason="needs both PoCL and Intel's CPU runtime")
def test_platform_selector_picks_the_runtime():
    r = run("""
        import json, zyx_dist as zd
        out = {}
        for platform in ("pocl", "intel"):
            zd.init(ray=False, devices={"opencl-cpu": 1, "platform": platform})
            out[platform] = zd.devices()[0].device_name
            zd.shutdown()
        zd.init(ray=False)
        out["default"] = zd.devices()[0].device_name
        print(json.dumps(out))
        """)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert out["pocl"].startswith("pthread-") and not out["intel"].startswith("pthread-")
    assert out["default"] == out["intel"]  # the documented default: Intel's runtime where both work


@pytest.mark.skipif(not HAS_POCL, reason="needs PoCL")
def test_zyx_dist_info_shows_why_a_device_was_left_out():
    r = run("from zyx_dist.tools.cli import main; raise SystemExit(main(['info']))",
            ZYX_DIST_REGISTER_ICD="0", **BROKEN_POCL)
    assert r.returncode == 2
    assert "Portable Computing Language" in r.stdout and "left out: its self-test kernel failed" in r.stdout
    assert r.stderr.startswith("zyx-dist: error: no working OpenCL device") and r.stderr.count("\n") == 1
