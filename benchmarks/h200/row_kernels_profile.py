"""GPU machine: the row kernels of model_bench's sub-op table (layer norm, RMS norm, softmax over rows of 1024,
fp32, (8,1024,1024)) realized a few times each, for Nsight Compute to time their kernels on the device (the
wall of one `realize()` also holds the driver's ~40-90 us), with the bytes each must move printed to turn
durations into bandwidth:

    ncu -k regex:kc_ --section SpeedOfLight python3 benchmarks/h200/row_kernels_profile.py
"""

from __future__ import annotations

import numpy as np

import zyx_dist as zd


def main() -> None:
    rng = np.random.default_rng(0)
    zd.init(ray=False, devices=["cuda:0"])
    try:
        x = zd.tensor(rng.standard_normal((8, 1024, 1024)).astype(np.float32)).realize()
        w, b = (zd.tensor(rng.standard_normal(1024).astype(np.float32)).realize() for _ in range(2))
        forms = {
            "layer_norm": lambda: zd.layer_norm(x, axis=-1, eps=1e-5) * w + b,
            "rms_norm": lambda: x * zd.rsqrt(zd.mean(x * x, axis=-1, keepdims=True) + 1e-6) * w,
            "softmax": lambda: zd.softmax(x, axis=-1),
        }
        for name, build in forms.items():
            for _ in range(2):
                build().realize()
            print(f"{name}: reads and writes {2 * x.size * 4 / 1e6:.1f} MB")
    finally:
        zd.shutdown()


if __name__ == "__main__":
    main()
