"""Train a small MLP classifier with zd.grad and zd.optim.Adam on synthetic data made here (no download),
on one device or data parallel: each step's batch is sharded over N devices (`x.shard`), every shard's
forward and backward runs on its own device, and the weight gradients are summed in a fixed device order.

    python examples/train_mlp.py                         # one device, in this process
    python examples/train_mlp.py --devices 3             # 3 PoCL CPU workers, the batch sharded over them
    python examples/train_mlp.py --ray --devices 2       # the workers as Ray actors
    ZYX_DIST_DEVICES=cuda:0,cuda:1 python examples/train_mlp.py --devices 2 --hidden 1024 --batch 8192
"""

import argparse
import os

import numpy as np

import zyx_dist as zd


def make_data(n, dim, classes, seed=0):
    """Gaussian clusters around random centres, then bent by a fixed random tanh layer (not linearly separable)."""
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((classes, dim)) * 1.5
    labels = rng.integers(0, classes, n)
    x = centres[labels] + rng.standard_normal((n, dim))
    bend = rng.standard_normal((dim, dim)) / np.sqrt(dim)
    return (np.tanh(x @ bend) * 2 + 0.1 * x).astype(np.float32), labels


def forward(params, x):
    w1, b1, w2, b2 = params
    return zd.relu(x @ w1 + b1) @ w2 + b2


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--devices", type=int, default=1, help="devices to shard each batch over")
    ap.add_argument("--steps", type=int, default=120)
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--hidden", type=int, default=64)
    ap.add_argument("--dim", type=int, default=16)
    ap.add_argument("--classes", type=int, default=4)
    ap.add_argument("--lr", type=float, default=0.01)
    ap.add_argument("--target", type=float, default=0.9, help="test accuracy the run must reach")
    ap.add_argument("--ray", action="store_true", help="run the workers as Ray actors")
    args = ap.parse_args()
    # ZYX_DIST_DEVICES (read by zd.init) wins; else N PoCL CPU workers stand in for N GPUs
    cpu = None if os.environ.get("ZYX_DIST_DEVICES") or args.devices == 1 else {"opencl-cpu": args.devices}
    zd.init(ray=args.ray, devices=cpu)
    devs = [d.name for d in zd.devices()][: args.devices]
    if len(devs) < args.devices:
        raise SystemExit(f"asked for {args.devices} devices, the session has {len(devs)}")

    x_all, y_all = make_data(10240, args.dim, args.classes)
    (x_train, x_test), (y_train, y_test) = np.split(x_all, [8192]), np.split(y_all, [8192])  # held out: 2048
    rng = np.random.default_rng(2)
    shapes = [(args.dim, args.hidden), (args.hidden,), (args.hidden, args.classes), (args.classes,)]
    params = [zd.tensor((rng.standard_normal(s) * np.sqrt(2 / s[0]) if len(s) > 1 else np.zeros(s)).astype(np.float32))
              for s in shapes]
    opt = zd.optim.Adam(params, lr=args.lr)
    eye = np.eye(args.classes, dtype=np.float32)
    for step in range(args.steps):
        pick = rng.integers(0, len(x_train), args.batch)
        x, onehot = zd.tensor(x_train[pick]), zd.tensor(eye[y_train[pick]])
        if len(devs) > 1:  # data parallel: one slab of the batch per device
            x, onehot = x.shard(devs), onehot.shard(devs)
        loss = -(zd.log_softmax(forward(params, x)) * onehot).sum() / args.batch
        params = opt.step(zd.grad(loss, params))
        zd.realize(loss, *params)  # forward, backward and update in one pass
        if step % 20 == 0 or step == args.steps - 1:
            print(f"step {step:4d}  loss {loss.item():.4f}")
    accuracy = float((forward(params, zd.tensor(x_test)).argmax(axis=1).numpy() == y_test).mean())
    print(f"test accuracy {accuracy:.3f} (target {args.target}) on {len(devs)} device(s): {', '.join(devs)}")
    zd.shutdown()
    if accuracy < args.target:
        raise SystemExit("train_mlp: accuracy below target")
    print("train_mlp: ok")


if __name__ == "__main__":
    main()
