"""A transformer attention block (multi-head self-attention, residual, layer norm) against NumPy.

    python examples/attention.py

Heads are a reshape + permute (index arithmetic, no kernel); softmax is at most 3 kernels; the whole block
is one `zd.realize`.
"""

import numpy as np

import zyx_dist as zd

SEQ, D_MODEL, HEADS = 128, 64, 4
D_HEAD = D_MODEL // HEADS


def attention(x, wq, wk, wv, wo):
    def heads(t):  # (SEQ, D_MODEL) -> (HEADS, SEQ, D_HEAD)
        return t.reshape(SEQ, HEADS, D_HEAD).permute(1, 0, 2)

    q, k, v = heads(x @ wq), heads(x @ wk), heads(x @ wv)
    p = zd.softmax((q @ k.mT) * (1.0 / np.sqrt(D_HEAD)), axis=-1)
    o = (p @ v).permute(1, 0, 2).reshape(SEQ, D_MODEL) @ wo
    return zd.layer_norm(x + o, axis=-1), p


def attention_numpy(x, wq, wk, wv, wo):
    def heads(t):
        return t.reshape(SEQ, HEADS, D_HEAD).transpose(1, 0, 2)

    q, k, v = heads(x @ wq), heads(x @ wk), heads(x @ wv)
    s = q @ k.transpose(0, 2, 1) / np.sqrt(D_HEAD)
    p = np.exp(s - s.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    y = x + (p @ v).transpose(1, 0, 2).reshape(SEQ, D_MODEL) @ wo
    mu, var = y.mean(-1, keepdims=True), y.var(-1, keepdims=True)
    return (y - mu) / np.sqrt(var + 1e-5), p


def main() -> None:
    zd.init(ray=False)  # workers in this process (the default, zd.init(), starts or joins Ray)
    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal((SEQ, D_MODEL), dtype=np.float32)]
    arrays += [rng.standard_normal((D_MODEL, D_MODEL), dtype=np.float32) / np.sqrt(D_MODEL) for _ in range(4)]
    y, p = attention(*[zd.tensor(a) for a in arrays])
    zd.reset_stats()
    zd.realize(y, p)
    kernels = zd.stats()["kernels_launched"]
    y_ref, p_ref = attention_numpy(*arrays)
    err_y = float(np.abs(y.numpy() - y_ref).max())
    err_p = float(np.abs(p.numpy() - p_ref).max())
    print(f"attention block: seq {SEQ}, d_model {D_MODEL}, {HEADS} heads -> {y.shape} in {kernels} kernels")
    print(f"max abs error vs NumPy: output {err_y:.2e}, attention weights {err_p:.2e}")
    print(f"row sums of the attention weights: {p.sum(axis=-1).numpy().min():.5f}..{p.sum(axis=-1).numpy().max():.5f}")
    assert err_y < 1e-3 and err_p < 1e-4, (err_y, err_p)
    print("attention: ok")


if __name__ == "__main__":
    main()
