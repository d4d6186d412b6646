"""Actor side, called by the driver's in-process backend and by `zyx-dist info`: what devices this machine has.
Takes nothing; gives the CUDA GPUs CuPy sees and every OpenCL device with its self-test outcome, and the
physical specs `devices: auto` starts in one process (every CUDA GPU, else every working OpenCL GPU, else the
preferred working CPU device; `opencl_select` says which). The device modules are imported here, when asked,
so importing the engine never loads a driver. This is the driver's one door for listing devices (beside
`worker` and `actor`, through which it runs them; tests/unit/test_layout.py keeps it so): the driver never
touches a device library itself, and a new backend adds its listing here. The reference device is never
listed: it exists only where it is named.
"""

from __future__ import annotations


def cuda_devices() -> list[dict]:
    """The CUDA GPUs this process sees ([] without CuPy, a driver or a GPU)."""
    try:
        from .cuda import list_cuda_devices

        return list_cuda_devices()
    except Exception:  # noqa: BLE001 -- no cupy, no driver, no device: not a CUDA machine
        return []


def opencl_devices() -> list[dict]:
    """Every OpenCL device with `usable`/`problem` from its self-test ([] without pyopencl)."""
    from .opencl import cl, list_opencl_devices

    return list_opencl_devices() if cl is not None else []


def auto_specs() -> list[str]:
    """The physical specs of `devices: auto` on this machine; DeviceError naming each device's problem when
    nothing works."""
    cuda = cuda_devices()
    if cuda:
        return [f"cuda:{i}" for i in range(len(cuda))]
    from .opencl import _require_cl
    from .opencl_select import auto_devices

    _require_cl()
    return [f"opencl:{d['index']}" for d in auto_devices(opencl_devices())]
