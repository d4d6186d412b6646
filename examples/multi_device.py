"""Independent MLP branches placed on different devices, computed in one scheduling pass.

    python examples/multi_device.py                               # 2 OpenCL CPU workers in this process
    ZYX_DIST_DEVICES=cuda:0,cuda:1 python examples/multi_device.py  # two GPUs

Each branch's weights are pinned to a device (`device=`); the shared input moves to every device that needs
it (`x.to(d)`), and `zd.realize` runs all branches at once, so branches on different devices overlap.
"""

import os

import numpy as np

import zyx_dist as zd

BRANCHES, BATCH, D_IN, D_HID, D_OUT = 4, 256, 128, 256, 64


def mlp(x, w1, b1, w2):
    return zd.relu(x @ w1 + b1) @ w2


def main() -> None:
    # ZYX_DIST_DEVICES (read by zd.init) wins; else two PoCL CPU workers stand in for two GPUs.
    zd.init(ray=False, devices=None if os.environ.get("ZYX_DIST_DEVICES") else {"opencl-cpu": 2})
    names = [d.name for d in zd.devices()]
    rng = np.random.default_rng(0)
    xs = rng.standard_normal((BATCH, D_IN), dtype=np.float32)
    params = [(rng.standard_normal((D_IN, D_HID), dtype=np.float32) / np.sqrt(D_IN),
               rng.standard_normal(D_HID, dtype=np.float32),
               rng.standard_normal((D_HID, D_OUT), dtype=np.float32) / np.sqrt(D_HID)) for _ in range(BRANCHES)]

    x = zd.tensor(xs, device=names[0]).realize()
    outs = []
    for i, (w1, b1, w2) in enumerate(params):
        dev = names[i % len(names)]
        outs.append(mlp(x.to(dev), zd.tensor(w1, device=dev), zd.tensor(b1, device=dev),
                        zd.tensor(w2, device=dev)))
    print(zd.explain(*outs))
    zd.realize(*outs)  # every branch, one pass

    worst = 0.0
    for i, (out, (w1, b1, w2)) in enumerate(zip(outs, params)):
        ref = np.maximum(xs @ w1 + b1, 0) @ w2
        err = float(np.abs(out.numpy() - ref).max())
        worst = max(worst, err)
        print(f"branch {i} on {out.device}: shape {out.shape}, max abs error {err:.2e}")
    stats = zd.stats()
    print(f"devices {names}; transfers {stats['transfers']} ({stats['bytes_transferred']} bytes); "
          f"kernels {stats['kernels_launched']}")
    assert worst < 1e-3, worst
    assert len({o.device for o in outs}) == min(len(names), BRANCHES)
    print("multi_device: ok")
    zd.shutdown()


if __name__ == "__main__":
    main()
