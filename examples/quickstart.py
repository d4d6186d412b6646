"""Quickstart: a few lazy ops, fused into kernels on the default device (an OpenCL CPU device on a CPU-only machine).

    python examples/quickstart.py
"""

import numpy as np

import zyx_dist as zd

x = zd.randn(256, 128, seed=0)
w = zd.randn(128, 64, seed=1)
b = zd.zeros(64)
y = zd.softmax(zd.relu(x @ w + b), axis=-1)  # nothing has run yet
print(zd.explain(y))  # the kernels it will launch, where, and why

out = y.numpy()  # fused, compiled, run
xs, ws = np.asarray(x), np.asarray(w)
h = np.maximum(xs @ ws, 0)
ref = np.exp(h - h.max(-1, keepdims=True))
ref /= ref.sum(-1, keepdims=True)
print("max abs error vs NumPy:", float(np.abs(out - ref).max()))
print("devices:", [d.name for d in zd.devices()], "stats:", zd.stats())
assert np.allclose(out, ref, atol=1e-5)
