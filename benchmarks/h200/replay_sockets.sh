#!/usr/bin/env bash
# One call on a GPU machine (`device` tool, carry [".devbundle"]): one-worker replays through Ray with the
# worker's replay socket (the default) against the compiled graph (ZYX_DIST_REPLAY_SOCKETS=0), alternating in
# one call: a correctness check of a jitted step through Ray on cuda:0 with each, then the dispatch benchmark's
# overhead per cached realize (a) and small-step loop (b), then (a) again, each way.
source .devbundle/setup.sh
export PYTHONUNBUFFERED=1 PYTHONFAULTHANDLER=1
t0=$(date +%s)
check() {
  timeout -s ABRT 120 python3 - <<'PY'
import numpy as np, zyx_dist as zd
from zyx_dist.engine import session
zd.init(devices=["cuda:0"])
rng = np.random.default_rng(0)
w0, b0, y0 = (rng.standard_normal((256, 256)) / 16).astype(np.float32), rng.standard_normal(256).astype(np.float32), rng.standard_normal((256, 256)).astype(np.float32)
w, b, y = zd.tensor(w0).realize(), zd.tensor(b0).realize(), zd.tensor(y0).realize()
step = zd.jit(lambda y, w, b: zd.relu(y @ w + b) * 0.5)
want = y0.astype(np.float64)
for _ in range(50):
    y = step(y, w, b); want = np.maximum(want @ w0 + b0, 0) * 0.5
np.testing.assert_allclose(y.numpy(), want, rtol=1e-4, atol=1e-4)
bk = session.current().backend
print("check passed: socket replays", bk.socket_replays, "compiled graph executions", bk.graph.executions if bk.graph else 0,
      "round trip us", round(bk.round_trip_seconds * 1e6, 1), "graph replays", zd.stats().get("graph_replays"))
zd.shutdown()
PY
}
for round in 1 2; do
  parts=ab; [ $round = 2 ] && parts=a
  for mode in 1 0; do
    export ZYX_DIST_REPLAY_SOCKETS=$mode
    echo "== round $round, replay sockets $mode"
    check 2>&1 | grep -v "WARN\|INFO" | tail -3
    timeout -s ABRT 125 python3 benchmarks/dispatch_bench.py --device cuda:0 --only $parts --repeats 150 --out $OUT \
      --name dispatch-sockets$mode-round$round.json > $OUT/dispatch-sockets$mode-round$round.log 2>&1
    echo "rc=$? at $(( $(date +%s) - t0 )) s"; grep -v "^zyx_dist: autotune\|WARN\|INFO" $OUT/dispatch-sockets$mode-round$round.log | grep "us\|x " | tail -14
  done
done
