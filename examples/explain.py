"""The plan without running it: `zd.explain` shows the kernels, the device of each and why, the transfers
with their bytes, and the estimated time.

    python examples/explain.py
    zyx-dist explain examples/explain.py      # the CLI imports this file and explains what build() returns

`build()` only builds lazy tensors (nothing runs); the work of the script sits under `__main__`, so
`zyx-dist explain` can import the file without running it.
"""

import numpy as np

import zyx_dist as zd


def build():
    """Two heads on a shared hidden layer: the tensors to explain."""
    rng = np.random.default_rng(0)
    x = zd.tensor(rng.standard_normal((256, 128), dtype=np.float32))
    w = zd.tensor(rng.standard_normal((128, 64), dtype=np.float32))
    h = zd.relu(x @ w)  # used twice: stored once, not recomputed
    probs = zd.softmax(h, axis=-1)
    norm = zd.layer_norm(h, axis=-1)
    return [probs, norm]


def main() -> None:
    zd.init(ray=False)
    outs = build()
    plan = zd.explain(*outs)
    print(plan)
    print(f"{len(plan.kernels)} kernels on {sorted({k.device for k in plan.kernels})}, "
          f"{len(plan.transfers)} transfers, estimated {plan.estimated_seconds * 1e6:.1f} us")
    print("first kernel's source:\n" + plan.kernels[0].source)
    zd.realize(*outs)  # the same plan, now run
    assert zd.stats()["kernels_launched"] == len(plan.kernels)
    print("explain: ok")


if __name__ == "__main__":
    main()
