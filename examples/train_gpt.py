"""Train a small GPT (token and position embeddings, pre-norm causal self-attention and MLP blocks) on a
character corpus generated here, with zd.grad and zd.optim.Adam; the loss must fall. `--devices N` shards
each batch over N devices (data parallel). The step is a `zd.jit` function, replayed from its plan after
its first calls (`--no-jit`: build every step's graph). benchmarks/train_bench.py times this step.

    python examples/train_gpt.py [--devices 2]           # tiny sizes, one device (or 2 PoCL CPU workers, sharded)
    python examples/train_gpt.py --embed 256 --layers 4 --heads 8 --block 128 --batch 32 --steps 300
"""

import argparse
import os

import numpy as np

import zyx_dist as zd

ARTICLES, NOUNS, VERBS, PLACES = ["the", "a"], ["cat", "dog", "bird"], ["sat", "ran", "saw"], ["on", "under", "near"]


def corpus(n_chars, seed=0):
    """Sentences of a tiny grammar ("the cat sat on a dog. "): structure to learn, no download."""
    rng, text = np.random.default_rng(seed), ""
    while len(text) < n_chars:
        text += " ".join(w[rng.integers(len(w))] for w in (ARTICLES, NOUNS, VERBS, PLACES, ARTICLES, NOUNS)) + ". "
    vocab = sorted(set(text))
    return np.array([vocab.index(c) for c in text[:n_chars]]), len(vocab)


def init_params(vocab, cfg, seed=0):
    rng, c = np.random.default_rng(seed), cfg.embed
    shapes = [(vocab, c), (cfg.block, c)] + [(c, c)] * 4 * cfg.layers + [(c, 4 * c), (4 * c, c)] * cfg.layers + [(c, vocab)]
    return [(rng.standard_normal(s) * (0.02 if i < 2 else s[0] ** -0.5)).astype(np.float32) for i, s in enumerate(shapes)]


def loss_fn(params, x_hot, y_hot, mask, cfg):
    """Mean cross entropy of the next character; x_hot, y_hot: (B, T, V) one-hot; mask: (T, T) 0 / -1e9."""
    (b, t, v), c, h = x_hot.shape, cfg.embed, cfg.heads
    emb, pos, rest = params[0], params[1], params[2:]
    x = (x_hot.reshape(b * t, v) @ emb).reshape(b, t, c) + pos
    for i in range(cfg.layers):
        wq, wk, wv, wo = rest[4 * i:4 * i + 4]
        w1, w2 = rest[4 * cfg.layers + 2 * i:4 * cfg.layers + 2 * i + 2]
        a = zd.layer_norm(x).reshape(b * t, c)
        q, k, vv = ((a @ w).reshape(b, t, h, c // h).permute(0, 2, 1, 3) for w in (wq, wk, wv))
        att = zd.softmax(q @ k.mT * (c // h) ** -0.5 + mask)
        x = x + ((att @ vv).permute(0, 2, 1, 3).reshape(b * t, c) @ wo).reshape(b, t, c)
        x = x + (zd.relu(zd.layer_norm(x).reshape(b * t, c) @ w1) @ w2).reshape(b, t, c)
    logits = zd.layer_norm(x).reshape(b * t, c) @ rest[-1]
    return -(zd.log_softmax(logits) * y_hot.reshape(b * t, v)).sum() / (b * t)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    for name, default in [("steps", 60), ("batch", 8), ("block", 16), ("embed", 32), ("heads", 2), ("layers", 2),
                          ("devices", 1)]:
        ap.add_argument(f"--{name}", type=int, default=default)  # --devices N: the batch sharded over N
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--dtype", default="float32")
    ap.add_argument("--no-jit", action="store_true")  # build every step's graph, no zd.jit
    cfg = ap.parse_args()
    zd.init(ray=False, devices=None if os.environ.get("ZYX_DIST_DEVICES") or cfg.devices < 2 else {"opencl-cpu": cfg.devices})
    devs = [d.name for d in zd.devices()][: cfg.devices]
    text, vocab = corpus(20_000)
    dt, eye = zd.dtype(cfg.dtype), np.eye(vocab, dtype=np.float32)
    params = [zd.tensor(p).astype(dt) for p in init_params(vocab, cfg)]
    mask = zd.tensor(np.triu(np.full((cfg.block, cfg.block), -1e9, np.float32), 1)).astype(dt)
    opt, rng, losses = zd.optim.Adam(params, lr=cfg.lr), np.random.default_rng(1), []
    def train_step(params, opt, x_hot, y_hot):  # the optimizer is an argument: its state is the step's too
        loss = loss_fn(params, x_hot, y_hot, mask, cfg)
        return loss, opt.step(zd.grad(loss, params))
    run = train_step if cfg.no_jit else zd.jit(train_step)
    for step in range(cfg.steps):
        window = text[rng.integers(0, len(text) - cfg.block - 1, cfg.batch)[:, None] + np.arange(cfg.block + 1)]
        x_hot, y_hot = (zd.tensor(eye[window[:, s]]).astype(dt) for s in (slice(0, -1), slice(1, None)))
        x_hot, y_hot = (x_hot.shard(devs), y_hot.shard(devs)) if len(devs) > 1 else (x_hot, y_hot)
        loss, params = run(params, opt, x_hot, y_hot)
        losses.append(zd.realize(loss, *params)[0].item())  # (a jitted step's results are realized already)
        if step % 10 == 0 or step == cfg.steps - 1:
            print(f"step {step:4d}  loss {losses[-1]:.4f}")
    first, last = np.mean(losses[:3]), np.mean(losses[-3:])
    print(f"loss fell from {first:.3f} to {last:.3f} (vocabulary {vocab}, ln V = {np.log(vocab):.3f}) on {devs}"
          + ("" if cfg.no_jit else f"; zd.jit replayed {run.replays} of {cfg.steps} steps"))
    zd.shutdown()
    if not last < 0.6 * first:
        raise SystemExit("train_gpt: the loss did not fall enough")
    print("train_gpt: ok")


if __name__ == "__main__":
    main()
