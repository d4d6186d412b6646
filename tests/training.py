"""A small MLP classifier, its loss and gradient written out in NumPy, NumPy reimplementations of torch's SGD and
Adam, and the same training loop on zyx_dist tensors (zd.grad + zd.optim, the batch optionally sharded over
devices): shared by tests/runtime/test_training.py and tests/cluster/test_training_ray.py.
"""

from __future__ import annotations

import numpy as np

import zyx_dist as zd


def make_data(n=48, d=5, classes=3, seed=0):
    rng = np.random.default_rng(seed)
    centers = rng.standard_normal((classes, d)) * 2
    labels = rng.integers(0, classes, n)
    x = centers[labels] + rng.standard_normal((n, d))
    return x, labels, np.eye(classes)[labels]


def init_params(d=5, hidden=8, classes=3, seed=1):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal((d, hidden)) * 0.5, np.zeros(hidden), rng.standard_normal((hidden, classes)) * 0.5,
            np.zeros(classes)]


def np_loss_and_grads(params, x, onehot):
    w1, b1, w2, b2 = params
    h = np.tanh(x @ w1 + b1)
    logits = h @ w2 + b2
    m = logits.max(axis=1, keepdims=True)
    logp = logits - m - np.log(np.exp(logits - m).sum(axis=1, keepdims=True))
    n = x.shape[0]
    loss = -(logp * onehot).sum() / n
    dlogits = (np.exp(logp) - onehot) / n
    dw2, db2 = h.T @ dlogits, dlogits.sum(axis=0)
    dpre = (dlogits @ w2.T) * (1 - h * h)
    return loss, [x.T @ dpre, dpre.sum(axis=0), dw2, db2]


class NpSGD:
    def __init__(self, params, lr, momentum=0.0):
        self.p, self.lr, self.mu, self.v = [p.copy() for p in params], lr, momentum, None

    def step(self, grads):
        if self.mu:
            self.v = [g.copy() for g in grads] if self.v is None else [self.mu * v + g for v, g in zip(self.v, grads)]
            grads = self.v
        self.p = [p - self.lr * g for p, g in zip(self.p, grads)]
        return self.p


class NpAdam:
    def __init__(self, params, lr, betas=(0.9, 0.999), eps=1e-8):
        self.p, self.lr, self.b, self.eps, self.t = [p.copy() for p in params], lr, betas, eps, 0
        self.m = [np.zeros_like(p) for p in params]
        self.v = [np.zeros_like(p) for p in params]

    def step(self, grads):
        self.t += 1
        b1, b2 = self.b
        self.m = [b1 * m + (1 - b1) * g for m, g in zip(self.m, grads)]
        self.v = [b2 * v + (1 - b2) * g * g for v, g in zip(self.v, grads)]
        step = self.lr / (1 - b1 ** self.t)
        root = np.sqrt(1 - b2 ** self.t)
        self.p = [p - step * m / (np.sqrt(v) / root + self.eps) for p, m, v in zip(self.p, self.m, self.v)]
        return self.p


def zd_loss(params, x, onehot):
    w1, b1, w2, b2 = params
    logits = (x @ w1 + b1).tanh() @ w2 + b2
    return -(zd.log_softmax(logits, axis=1) * onehot).sum() / x.shape[0]


def train_zd(opt_factory, steps, shard_devices=None, dtype=np.float64, jit=False):
    """`jit`: each step through one zd.jit function of (params, optimizer, x, onehot); the jitted function
    is the last of the returned values then, else the optimizer is."""
    x, _, onehot = make_data()
    params = [zd.tensor(p.astype(dtype)) for p in init_params()]
    opt = opt_factory(params)
    xt, ot = zd.tensor(x.astype(dtype)), zd.tensor(onehot.astype(dtype))
    if shard_devices:
        xt, ot = xt.shard(shard_devices), ot.shard(shard_devices)

    def step(params, opt, xt, ot):
        loss = zd_loss(params, xt, ot)
        return loss, opt.step(zd.grad(loss, params))

    jitted = zd.jit(step) if jit else None
    losses = []
    for _ in range(steps):
        if jitted is not None:
            loss, params = jitted(params, opt, xt, ot)
        else:
            loss, params = step(params, opt, xt, ot)
            zd.realize(loss, *params)
        losses.append(float(loss.item()))
    return [p.numpy() for p in params], losses, (jitted if jit else opt)


def train_np(opt, steps):
    x, _, onehot = make_data()
    params = init_params()
    losses = []
    for _ in range(steps):
        loss, grads = np_loss_and_grads(params, x, onehot)
        params = opt.step(grads)
        losses.append(loss)
    return params, losses
