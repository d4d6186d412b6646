"""Where a replayed step's time goes through Ray (a script, not a test): the small step
`y = relu(y @ w + b)` at 256^2 through `zd.jit` on one Ray worker (CUDA with --device cuda:0, else a CPU
OpenCL worker), split by timestamps on the driver around the compiled graph's execution and by the
worker's own clock around `Worker.run_replay` inside the actor (installed there with `__ray_call__`). It turns
the replay socket off (`ZYX_DIST_REPLAY_SOCKETS=0`), which would otherwise carry a one-worker replay on the
driver's host past the compiled graph; `realize_split.py --ray` splits the socket's path.

    python benchmarks/ray_step_split.py [--device cuda:0] [--steps 500] [--case step|tiny]

Prints medians in microseconds: the whole step; the driver before the graph's `execute`, inside it, while
it waits for the result, and after; the worker's replay (frees, launches, the final synchronize); and Ray's
share (the wait less the worker's replay: the channels both ways, their serialization, the actor's thread).
"""

from __future__ import annotations

import argparse
import gc
import os
import statistics
import time

import numpy as np
import ray

import zyx_dist as zd
from zyx_dist.engine import ray_compiled, session


def install_actor_clock(actor) -> None:
    """Wrap the actor's `worker.run_replay` so each call's duration is kept in the actor (`replay_times`)."""
    def patch(self):
        inner = self.worker.run_replay
        self.replay_times = []

        def timed(*args):
            t = time.perf_counter()
            try:
                return inner(*args)
            finally:
                self.replay_times.append(time.perf_counter() - t)

        self.worker.run_replay = timed
        return True

    ray.get(actor.__ray_call__.remote(patch))


def actor_times(actor) -> list[float]:
    return ray.get(actor.__ray_call__.remote(lambda self: list(self.replay_times)))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="opencl-cpu")
    ap.add_argument("--steps", type=int, default=500)
    ap.add_argument("--case", choices=("step", "tiny"), default="step",
                    help="step: the small step above; tiny: a plain realize of x * 2 + 1 on 1024 floats")
    args = ap.parse_args()
    os.environ["ZYX_DIST_REPLAY_SOCKETS"] = "0"  # (this script times the compiled graph's path)
    devices = [args.device] if args.device.startswith("cuda") else {"opencl-cpu": 1}
    s = zd.init(ray=True, devices=devices)
    try:
        n = 256
        rng = np.random.default_rng(0)
        w = zd.tensor((rng.standard_normal((n, n)) / np.sqrt(n)).astype(np.float32)).realize()
        b = zd.tensor((rng.standard_normal(n) * 0.1).astype(np.float32)).realize()
        y = zd.tensor(rng.standard_normal((n, n)).astype(np.float32)).realize()
        if args.case == "step":
            layer = zd.jit(lambda y, w, b: zd.relu(y @ w + b))
        else:
            x = zd.tensor(np.ones(1024, np.float32)).realize()

            def layer(y, w, b):
                return (x * 2 + 1).realize()
        for _ in range(20):
            y = layer(y, w, b)
        graph = s.backend.graph
        actor = s.backend.actors[s.device_names[0]]
        install_actor_clock(actor)
        marks: list[tuple[float, float, float, float]] = []
        run = ray_compiled.CompiledSteps.run

        def timed_run(self, steps, timed=True, meanwhile=None):
            t0 = time.perf_counter()
            execute = self.graph.execute
            stamps = []

            def execute_marked(arg):
                stamps.append(time.perf_counter())
                refs = execute(arg)
                stamps.append(time.perf_counter())
                return refs

            self.graph.execute = execute_marked
            try:
                return run(self, steps, timed, meanwhile)
            finally:
                del self.graph.execute
                marks.append((t0, stamps[0], stamps[1], time.perf_counter()))

        ray_compiled.CompiledSteps.run = timed_run
        walls, spans = [], []
        try:
            for _ in range(args.steps):
                gc.disable()
                t = time.perf_counter()
                y = layer(y, w, b)
                end = time.perf_counter()
                gc.enable()
                walls.append(end - t)
                _t0, e0, e1, r1 = marks[-1]
                spans.append((e0 - t, e1 - e0, r1 - e1, end - r1))
        finally:
            ray_compiled.CompiledSteps.run = run
        replays = actor_times(actor)[-args.steps:]
        assert graph is s.backend.graph and session.current() is s
        med = statistics.median
        us = 1e6
        wait = med([sp[2] for sp in spans])
        what = f"zd.jit steps of relu(y @ w + b) at {n}^2" if args.case == "step" else "realizes of x * 2 + 1 (1024)"
        print(f"ray step split, {args.device}, {args.steps} {what} (medians, us)")
        print(f"  step wall                      {med(walls) * us:8.1f}")
        print(f"  driver before execute          {med([sp[0] for sp in spans]) * us:8.1f}")
        print(f"  execute (send the input)       {med([sp[1] for sp in spans]) * us:8.1f}")
        print(f"  wait for the result, read it   {wait * us:8.1f}")
        print(f"  driver after the result        {med([sp[3] for sp in spans]) * us:8.1f}")
        print(f"  worker's run_replay (actor)    {med(replays) * us:8.1f}")
        print(f"  Ray's share of the wait        {(wait - med(replays)) * us:8.1f}  (the wait less the replay)")
    finally:
        zd.shutdown()


if __name__ == "__main__":
    main()
