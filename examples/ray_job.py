"""A zyx_dist program to submit to a Ray cluster as a job (see cluster/README.md):

    ray job submit --address http://127.0.0.1:8265 --working-dir . \
        --runtime-env-json '{"env_vars": {"ZYX_DIST_DEVICES": "opencl-cpu:2"}}' -- python examples/ray_job.py

Inside a job Ray sets RAY_ADDRESS, so `zd.init(address="auto")` joins that cluster and the device workers
become actors on its nodes (one logical GPU each). Run by hand without RAY_ADDRESS it starts a local Ray
instance instead. Prints the devices and their nodes, the result's error against NumPy, and a checksum.
"""

import os

import numpy as np

import zyx_dist as zd


def main() -> None:
    address = "auto" if os.environ.get("RAY_ADDRESS") else None
    with zd.init(address=address):  # devices: the config / ZYX_DIST_DEVICES, else every GPU (or one OpenCL device)
        names = [d.name for d in zd.devices()]
        for d in zd.devices():
            print(f"device {d.name} ({d.backend}, {d.device_name}) on node {d.node[:12]}")

        rng = np.random.default_rng(0)
        xs = rng.standard_normal((512, 256), dtype=np.float32)
        ws = rng.standard_normal((256, 128), dtype=np.float32) / 16
        x = zd.tensor(xs, device=names[0])
        h = zd.relu(x @ zd.tensor(ws, device=names[0])).realize()  # computed on the first worker
        y = zd.softmax(h.to(names[-1]) * 2.0, axis=-1)  # h moves to the last worker when there are several
        out = y.numpy()

        hr = np.maximum(xs @ ws, 0) * 2.0
        ref = np.exp(hr - hr.max(-1, keepdims=True))
        ref /= ref.sum(-1, keepdims=True)
        err = float(np.abs(out - ref).max())
        checksum = float((out * np.arange(out.shape[1], dtype=np.float32)).sum())
        stats = zd.stats()
        print(f"result {out.shape} on {y.device}; max abs error vs NumPy {err:.2e}")
        print(f"transfers {stats['transfers']} ({stats['bytes_transferred']} bytes), kernels {stats['kernels_launched']}")
        print(f"checksum {checksum:.4f}")
        assert err < 1e-4, err
    print("ray_job: ok")


if __name__ == "__main__":
    main()
