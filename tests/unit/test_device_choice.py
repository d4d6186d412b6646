"""Which OpenCL device a worker opens (runtime/opencl_select.py) and how pip-installed OpenCL runtimes are
registered with the ICD loader (runtime/icd.py): pure rules, tested with made-up device descriptions and
folders, so they hold on machines with only one of the runtimes (or none)."""

from __future__ import annotations

from pathlib import Path

import pytest

from zyx_dist.config import ConfigError, load_config, parse_devices_string
from zyx_dist.engine.backends import resolve_devices
from zyx_dist.errors import DeviceError
from zyx_dist.runtime import icd
from zyx_dist.runtime.opencl_select import auto_devices, by_index, choose, diagnose, no_device_message

INTEL = "Intel(R) OpenCL"
POCL = "Portable Computing Language"
NVIDIA = "NVIDIA CUDA"
ZEN5_LOG = "error: unknown target CPU 'generic'\nnote: valid target CPU values are: nocona, core2, ..."


def dev(index, platform, type_="cpu", usable=True, problem=None, name="AMD EPYC"):
    return {"index": index, "platform": platform, "type": type_, "usable": usable, "problem": problem,
            "name": name}


def test_intel_is_preferred_over_pocl_whatever_the_loader_order():
    for devices in ([dev(0, POCL), dev(1, INTEL)], [dev(0, INTEL), dev(1, POCL)]):
        assert choose(devices, "cpu")[0]["platform"] == INTEL
        assert auto_devices(devices) == [d for d in devices if d["platform"] == INTEL]


def test_an_older_cpu_with_only_pocl_still_gets_pocl():
    devices = [dev(0, POCL, name="pthread-Intel Xeon")]
    assert choose(devices, "cpu") == devices and auto_devices(devices) == devices


def test_unknown_cpu_platforms_come_after_the_known_ones_in_index_order():
    devices = [dev(0, "Some Vendor CPU"), dev(1, "Other CPU"), dev(2, POCL)]
    assert [d["index"] for d in choose(devices, "cpu")] == [2, 0, 1]


def test_a_broken_platform_is_left_out_of_auto_selection():
    broken = diagnose(ZEN5_LOG, POCL, "AMD EPYC, CPU family 26")
    devices = [dev(0, POCL, usable=False, problem=broken), dev(1, INTEL)]
    assert auto_devices(devices) == [devices[1]]
    assert choose(devices, "cpu") == [devices[1]]


def test_gpus_come_first_in_auto_and_all_of_them_are_used():
    devices = [dev(0, INTEL), dev(1, NVIDIA, "gpu", name="H200"), dev(2, NVIDIA, "gpu", name="H200")]
    assert [d["index"] for d in auto_devices(devices)] == [1, 2]
    assert [d["index"] for d in choose(devices, "auto")] == [1, 2, 0]
    broken_gpus = [dev(0, INTEL), dev(1, NVIDIA, "gpu", usable=False, problem="x")]
    assert auto_devices(broken_gpus) == [broken_gpus[0]]


def test_platform_selector_by_alias_or_part_of_the_name():
    devices = [dev(0, INTEL), dev(1, POCL)]
    assert choose(devices, "cpu", "pocl")[0]["index"] == 1
    assert choose(devices, "cpu", "PoCL")[0]["index"] == 1
    assert choose(devices, "cpu", "intel")[0]["index"] == 0
    assert choose(devices, "cpu", "portable")[0]["index"] == 1
    with pytest.raises(DeviceError, match="platform 'amd'"):
        choose(devices, "cpu", "amd")


def test_no_working_device_names_each_cause_and_the_fix():
    broken = diagnose(ZEN5_LOG, POCL, "AMD EPYC, CPU family 26")
    assert "PoCL's LLVM does not know this CPU (AMD EPYC, CPU family 26)" in broken
    assert "pip install intel-opencl-rt intel-cmplr-lib-rt" in broken
    with pytest.raises(DeviceError) as e:
        choose([dev(0, POCL, usable=False, problem=broken)], "auto")
    msg = str(e.value)
    assert "no working OpenCL device" in msg and "opencl:0 AMD EPYC (Portable Computing Language)" in msg
    assert "PoCL's LLVM does not know this CPU" in msg and "fix:" in msg and "intel-opencl-rt" in msg
    assert isinstance(e.value, RuntimeError)  # API.md section 8: DeviceError is a RuntimeError


def test_other_build_failures_are_reported_as_they_are():
    assert diagnose("error: something else broke", INTEL) == "its self-test kernel failed: error: something else broke"
    assert "no OpenCL platform found" in no_device_message([], "auto", None)


def test_cpu_request_on_a_gpu_only_machine_says_what_is_there():
    with pytest.raises(DeviceError, match="works, but is a gpu device"):
        choose([dev(0, NVIDIA, "gpu", name="H200")], "cpu")


def test_explicit_index_must_exist_and_work():
    devices = [dev(0, POCL, usable=False, problem="its self-test kernel failed: x"), dev(1, INTEL)]
    assert by_index(devices, 1) is devices[1]
    with pytest.raises(DeviceError, match="opencl:0 .* does not work: its self-test kernel failed"):
        by_index(devices, 0)
    with pytest.raises(DeviceError, match="no device opencl:5; available OpenCL devices: opencl:0"):
        by_index(devices, 5)


def test_platform_selector_in_config_and_environment(monkeypatch):
    assert parse_devices_string("opencl-cpu:3") == {"opencl-cpu": 3}
    assert parse_devices_string("opencl-cpu:3@pocl") == {"opencl-cpu": 3, "platform": "pocl"}
    assert load_config({"devices": {"opencl-cpu": 2, "platform": "intel"}}).devices == {"opencl-cpu": 2,
                                                                                         "platform": "intel"}
    monkeypatch.setenv("ZYX_DIST_DEVICES", "opencl-cpu:2@intel")
    assert load_config(None).devices == {"opencl-cpu": 2, "platform": "intel"}
    with pytest.raises(ConfigError, match="devices.platform"):
        load_config({"devices": {"opencl-cpu": 2, "platform": ""}})
    with pytest.raises(ConfigError, match="asks for no worker"):
        load_config({"devices": {"platform": "pocl"}})
    # the workers resolve the spec on their own machine (in-process and on a Ray node alike)
    assert resolve_devices({"opencl-cpu": 2, "platform": "pocl"}, local=False) == [
        ("opencl:0", "opencl:cpu@pocl"), ("opencl:1", "opencl:cpu@pocl")]
    assert resolve_devices({"opencl-cpu": 1}, local=False) == [("opencl:0", "opencl:cpu")]


# ---- the ICD loader's list ------------------------------------------------------------------------------------

def test_icd_folder_keeps_every_vendor_and_adds_the_pip_runtime(tmp_path):
    vendors = tmp_path / "vendors"
    vendors.mkdir()
    (vendors / "nvidia.icd").write_text("libnvidia-opencl.so.1\n")
    (vendors / "readme.txt").write_text("not an icd")
    lib = tmp_path / "lib" / "libintelocl.so"
    lib.parent.mkdir()
    lib.write_text("")
    existing = icd.loader_icd_files({"OCL_ICD_VENDORS": str(vendors)})
    assert [f.name for f in existing] == ["nvidia.icd"]
    contents = icd.icd_folder_contents(existing, {"intel-opencl-rt": str(lib)})
    assert contents == {"nvidia.icd": "libnvidia-opencl.so.1\n", "zyx-dist-intel-opencl-rt.icd": f"{lib}\n"}


def test_icd_folder_does_not_list_a_system_intel_runtime_twice(tmp_path):
    lib = tmp_path / "libintelocl.so"
    lib.write_text("")
    system = tmp_path / "intel.icd"
    system.write_text(f"{lib}\n")
    assert icd.icd_folder_contents([system], {"intel-opencl-rt": "/venv/lib/libintelocl.so"}) == {
        "intel.icd": f"{lib}\n"}
    # the placeholder path of Intel's shipped ICD file names no library that exists: ours is added
    placeholder = tmp_path / "intel-cpu.icd"
    placeholder.write_text("/opt/anaconda1anaconda2anaconda3/lib/libintelocl.so\n")
    assert "zyx-dist-intel-opencl-rt.icd" in icd.icd_folder_contents([placeholder], {"intel-opencl-rt": str(lib)})


def test_loader_icd_files_follows_the_loader_rules(tmp_path):
    one = tmp_path / "only.icd"
    one.write_text("libfoo.so\n")
    assert icd.loader_icd_files({"OCL_ICD_VENDORS": str(one)}) == [one]
    folder = tmp_path / "vendor-path"
    folder.mkdir()
    (folder / "a.icd").write_text("liba.so\n")
    assert icd.loader_icd_files({"OPENCL_VENDOR_PATH": str(folder)}) == [folder / "a.icd"]
    assert icd.loader_icd_files({"OCL_ICD_VENDORS": str(tmp_path / "missing")}) == []


def test_icd_folder_is_written_once_and_shared(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    contents = {"a.icd": "liba.so\n", "b.icd": "libb.so\n"}
    first = icd._write_folder(contents)
    again = icd._write_folder(contents)
    assert first == again and first.is_relative_to(tmp_path / "zyx_dist" / "opencl-icd")
    assert {p.name: p.read_text() for p in Path(first).iterdir()} == contents
    assert icd._write_folder({"a.icd": "other.so\n"}) != first
