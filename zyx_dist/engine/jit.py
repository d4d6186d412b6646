"""Driver side: `zd.jit(fn)`, a step function captured once and then replayed without running its Python.
Takes a function of tensors (in tuples, lists and dicts, beside hashable constants and zd.optim
optimizers, whose state is then part of the call); gives a callable that returns what `fn` returns,
realized.

A lazy graph makes every step of a training loop cost the driver its whole Python: the front end builds
thousands of nodes, zd.grad as many again, and the plan cache walks and hashes them all to find the plan
it made last time. The first calls of each argument signature (container shapes, constants, tensor shapes
and dtypes, optimizer settings) run `fn` as usual and record, at the realize of its results, the plan
cache's entry and where each input leaf of the plan came from: an argument, a tensor `fn` read from
outside (captured by value), or host data it made. Once two calls in a row agree on all of that, later
calls skip `fn`: the arguments' buffers are bound to the plan's template (engine/templates.py), which is
replayed as a repeated realize would be, without building, hashing or walking a graph. A call whose
template no longer applies (its inputs live elsewhere, the cache dropped it, a recovery retired it) runs
`fn` again. What cannot be replayed safely runs `fn` on every call (correct, only slower), after one
warning saying why: a captured tensor or host data that changed between calls (Python-side state that is
not an argument), a tensor read from outside that is also an argument, or values read back inside `fn` (which
may steer its Python). A tensor `fn` reads by name (a closure cell, a global) that is reassigned after the
capture drops it, so `fn` runs and captures again; one reached otherwise (an attribute of a constant argument)
is not seen. A tensor given in two places is part of the signature. As with any tracing JIT,
the Python side effects of `fn` happen only on the calls that run it. The results of a replayed call
carry no lineage: if their worker is lost they are reported lost, as a long training loop's results are
once their history outgrows lineage's bound.
"""

from __future__ import annotations

import functools
import time
import warnings
import weakref
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

import numpy as np

from .._util import gc_paused
from ..frontend.optim import Optimizer
from ..frontend.tensor import Tensor
from ..graph import guards, shard
from ..graph.ir import Node, Op
from ..sched.template import leaf_positions
from . import session as session_mod
from . import templates
from .buffer_ref import BufferRef

__all__ = ["Jit", "jit"]

MAX_SIGNATURES = 64  # argument signatures kept per jitted function (least recently called dropped)
MAX_RUNS = 3  # runs of one signature in a row that may disagree before it is run on every call
_ARG, _CONST, _HOST = 0, 1, 2  # where an input leaf of the plan comes from


def _where(path: Any) -> str:
    """The text of a path kept as nested (parent, key) pairs (built only for an error message)."""
    keys = []
    while isinstance(path, tuple):
        path, key = path
        keys.append(".state" if key is _STATE else f"[{key!r}]")
    keys.reverse()
    if path == _CALL and keys:  # the call's (args, kwargs) pair: its first key says which of the two
        path, keys[0] = ("args", "") if keys[0] == "[0]" else ("kwargs", "")
    return path + "".join(keys)


_STATE = object()  # the path key of an optimizer's state
_CALL = "call"  # the path root of a call's (args, kwargs) pair
_TENSORS = object()  # the signature tag of a call whose arguments are tensors alone


def _opened(x: Any, cls: type, where: Any, marks: list, push: Callable) -> bool:
    """For a tuple, list or dict: its mark ((kind, length) or (dict, keys)) appended to `marks` and its items
    pushed with their paths, the first on top; False for anything else."""
    if cls is tuple or cls is list:
        marks.append((cls, len(x)))
        for i in range(len(x) - 1, -1, -1):
            push((x[i], (where, i)))
        return True
    if cls is dict:
        keys = tuple(x)
        marks.append((dict, keys))
        for k in reversed(keys):
            push((x[k], (where, k)))
        return True
    return False


def _flatten(tree: Any) -> tuple[list[Tensor], list[Optimizer], tuple]:
    """(tensors, optimizers, signature) of a call's arguments (`tree` is its (args, kwargs) pair), walked with an
    explicit stack. The signature is everything but the tensors' data: container kinds and sizes, dict keys,
    constants, each tensor's shape and dtype, each optimizer's identity and settings (a new learning rate traces
    again). It runs on every call, so paths for error messages are kept as pairs and written out only on an error."""
    tensors: list[Tensor] = []
    opts: list[Optimizer] = []
    sig: list = []
    stack: list[tuple[Any, Any]] = [(tree, _CALL)]
    pop, push = stack.pop, stack.append
    sharded = shard.active()
    while stack:
        x, where = pop()
        cls = x.__class__
        if cls is Tensor:
            tensors.append(x)
            node = x.node
            sig.append((node.shape, node.dtype.name))  # the name: a str hashes in C, a DType in Python
            pieces = shard.sharded(node) if sharded else None
            if pieces is not None:  # the graph reads a sharded value's pieces: they are arguments too
                sig.append(pieces.layout())
                for p in reversed(pieces.pieces):
                    push((Tensor(p), where))
        elif isinstance(x, Optimizer):
            opts.append(x)
            sig.append(("optimizer", id(x), x.jit_static()))
            for t in reversed(x.jit_inputs()):
                push((t, (where, _STATE)))
        elif not _opened(x, cls, where, sig, push):  # a constant
            try:
                hash(x)
            except TypeError:
                raise TypeError(f"zd.jit: {_where(where)} is a {cls.__name__}, neither a tensor (alone or in a "
                                "tuple, list or dict) nor a hashable constant; make it a zd.tensor or close over "
                                "it") from None
            # a float by its bits: 0.0 == -0.0 (and 1 / x tells them apart), and NaN equals no NaN
            sig.append(("const", cls, float(x).hex() if isinstance(x, (float, np.floating)) else x))
    return tensors, opts, (*sig, *_aliases(tensors))


def _aliases(tensors: list[Tensor]) -> tuple:
    """The signature's note of tensors given more than once (the same node in two places: a capture binds one
    leaf for both, which two different tensors must not replay), else nothing."""
    ids = [id(t.node) for t in tensors]
    if len(set(ids)) == len(ids):
        return ()
    first: dict[int, int] = {}
    return (("same", tuple(first.setdefault(i, k) for k, i in enumerate(ids))),)


def _outside(fn: Callable) -> list[tuple[Any, Any, Tensor]]:
    """The tensors `fn` reads from outside by name (its closure's cells and the globals its code names), as
    (holder, name, tensor): a capture holds their values, so a replay checks they are still the ones `fn`
    would read (a tensor reached another way, such as an attribute of a constant argument, is not seen)."""
    code = getattr(fn, "__code__", None)
    if code is None:
        return []
    found: list[tuple[Any, Any, Tensor]] = []
    for cell in getattr(fn, "__closure__", None) or ():
        try:
            value = cell.cell_contents
        except ValueError:  # (an empty cell)
            continue
        if value.__class__ is Tensor:
            found.append((cell, None, value))
    g = getattr(fn, "__globals__", {})
    for name in code.co_names:
        value = g.get(name)
        if value.__class__ is Tensor:
            found.append((g, name, value))
    return found


def _still(outside: list[tuple[Any, Any, Tensor]]) -> bool:
    """Whether every tensor `_outside` found is still where it was."""
    for holder, name, value in outside:
        try:
            now = holder.cell_contents if name is None else holder.get(name)
        except ValueError:
            return False
        if now is not value:
            return False
    return True


def _results(tree: Any) -> tuple[list[Tensor], tuple]:
    """The tensors `fn` returned, in order, and the spec of the containers around them (for `_rebuild`);
    paths for the error message kept as pairs, as in `_flatten`."""
    flat: list[Tensor] = []
    spec: list = []  # pre-order: "t" | None | (tuple or list, n) | (dict, keys)
    stack: list[tuple[Any, Any]] = [(tree, "result")]
    pop, push = stack.pop, stack.append
    while stack:
        x, where = pop()
        cls = x.__class__
        if cls is Tensor:
            flat.append(x)
            spec.append("t")
        elif x is None:
            spec.append(None)
        elif not _opened(x, cls, where, spec, push):
            raise TypeError(f"zd.jit: the function returned a {cls.__name__} at {_where(where)}; a jitted "
                            "function returns tensors (alone or in tuples, lists and dicts) or None")
    return flat, tuple(spec)


def _rebuild(spec: tuple, tensors: list[Tensor]) -> Any:
    """The value `_results` took apart, with `tensors` in its tensors' places (a post-order stack build)."""
    done: list = []
    left = list(tensors)
    for item in reversed(spec):
        if item == "t":
            done.append(left.pop())
        elif item is None:
            done.append(None)
        else:
            kind, what = item
            vals = [done.pop() for _ in range(len(what) if kind is dict else what)]
            done.append(dict(zip(what, vals)) if kind is dict else kind(vals))
    return done[0]


class _Capture:
    """One run of `fn` as its realize saw it: the plan cache's key and entry, where
    each input leaf came from, which positions the plan computes, where each result is, and how many steps
    each optimizer argument took."""

    __slots__ = ("checks", "computed", "entry", "inputs", "key", "outputs", "outside", "spec", "steps")

    def __init__(self, key: Any, entry: Any, inputs: list[tuple], computed: dict[int, tuple],
                 checks: tuple[int, ...]) -> None:
        self.key, self.entry = key, entry
        self.inputs = inputs  # (position, _ARG, argument index) | (position, _CONST, node) | (position, _HOST, (array, dtype))
        self.computed = computed  # position -> (shape, dtype, pin) of each node the realize computed
        self.checks = checks  # positions of the gathers' index checks (graph/guards.py) among them
        self.outputs: list[tuple] = []  # per result tensor: ("pos", position) | ("arg", index) | ("node", node)
        self.spec: tuple = ()
        self.steps: list[int] = []
        self.outside: list[tuple] = []  # the tensors fn read from outside by name (`_outside`), as it ran

    def differs(self, other: _Capture) -> str | None:
        """None when `other` is the same step (so a replay is what running fn would do), else why not."""
        if not (self.key is other.key or self.key == other.key) or self.spec != other.spec:
            return "its graph changed between calls"
        if self.outputs != other.outputs or self.steps != other.steps or len(self.inputs) != len(other.inputs):
            return "its results came from other places between calls"
        for (pa, ka, a), (pb, kb, b) in zip(self.inputs, other.inputs):
            if pa != pb or ka != kb or ka == _ARG and a != b:
                return "its inputs changed between calls"
            if ka == _CONST and a is not b:
                return (f"it reads a tensor of shape {a.shape} {a.dtype} that is not an argument and changed "
                        "between calls (pass that tensor, or the optimizer holding it, as an argument)")
            if ka == _HOST and not (a[1] == b[1] and np.array_equal(a[0], b[0], equal_nan=True)):
                return (f"it makes host data of shape {a[0].shape} that changed between calls (pass it as a "
                        "tensor argument)")
        return None


class _Recorder:
    """Set as the session's `recorder` while `fn` runs and its results are realized. A realize or read
    inside `fn` is counted; the results' realize is recorded as the plan cache looked it up, before any
    upload or result changed a node."""

    def __init__(self, arg_nodes: dict[int, int]) -> None:
        self.arg_nodes = arg_nodes  # id(node) -> argument index
        self.reads = 0
        self.collect = False
        self.capture: _Capture | None = None
        self.positions: dict[int, int] = {}  # id(node) -> position in the recorded structure

    def __call__(self, nodes: list[Node] | None, found: tuple | None) -> None:
        if not self.collect:
            self.reads += 1
            return
        if found is None or nodes is None:
            self.capture = None
            return
        key, order, entry = found
        inputs = []
        for p in leaf_positions(order):
            n = order[p]
            j = self.arg_nodes.get(id(n))
            if j is not None:
                inputs.append((p, _ARG, j))
            elif n.buffer is None and n.host is not None:
                inputs.append((p, _HOST, (n.host, n.dtype)))
            else:
                inputs.append((p, _CONST, n))
        pos = {id(n): i for i, n in enumerate(order)}
        computed = {pos[id(n)]: (n.shape, n.dtype, n.device) for n in nodes if id(n) in pos}
        checks = tuple(pos[id(n)] for n in nodes if id(n) in pos and n in guards.CHECKS)
        self.capture = _Capture(key, entry, inputs, computed, checks)
        self.positions = pos


class _Signature:
    __slots__ = ("capture", "given_up", "last", "misses")

    def __init__(self) -> None:
        self.last: _Capture | None = None  # the latest run of fn
        self.capture: _Capture | None = None  # once two runs in a row agreed: what calls replay
        self.misses = 0  # runs in a row that did not give a capture
        self.given_up = False


class Jit:
    """A jitted function (see the module docstring); `zd.jit(fn)` makes one. `replays` counts the calls
    that ran from a capture, `runs` those that ran `fn`."""

    def __init__(self, fn: Callable) -> None:
        if not callable(fn):
            raise TypeError(f"zd.jit takes a function, got {type(fn).__name__}")
        self.fn = fn
        functools.update_wrapper(self, fn)
        self._signatures: OrderedDict[tuple, _Signature] = OrderedDict()
        self._session: weakref.ref | None = None
        self.replays = self.runs = 0

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        s = session_mod.current()
        if self._session is None or self._session() is not s:  # another session: nothing recorded holds
            self._signatures.clear()
            self._session = weakref.ref(s)
        if not kwargs and all(a.__class__ is Tensor for a in args) and not shard.active():
            # tensors alone, the usual step: its signature without the general walk (tagged, so no other
            # arguments can have the same one)
            tensors, opts = list(args), []
            sig = (_TENSORS, *[(t.node.shape, t.node.dtype.name) for t in args], *_aliases(tensors))
        else:
            tensors, opts, sig = _flatten((args, kwargs))
        entry = self._signatures.get(sig)
        if entry is None:
            entry = self._signatures[sig] = _Signature()
            while len(self._signatures) > MAX_SIGNATURES:
                self._signatures.popitem(last=False)
        else:
            self._signatures.move_to_end(sig)
        # the arguments are the step's leaves: compute the lazy ones first (a sharded value is computed
        # per shard from its pieces, which are arguments of their own)
        lazy = [t.node for t in tensors if t.node.op is not Op.LEAF and shard.sharded(t.node) is None]
        if lazy:
            s.realize(lazy)
        if entry.capture is not None:
            if entry.capture.outside and not _still(entry.capture.outside):  # fn would read other tensors now
                entry.capture = entry.last = None
            else:
                out = self._replay(s, entry.capture, tensors, opts)
                if out is not None:
                    return out
        return self._run(s, entry, args, kwargs, tensors, opts)

    # ---- a run of fn, recorded ----

    def _run(self, s: Any, entry: _Signature, args: tuple, kwargs: dict, tensors: list[Tensor],
             opts: list[Optimizer]) -> Any:
        self.runs += 1
        arg_nodes: dict[int, int] = {}
        for i, t in enumerate(tensors):
            arg_nodes.setdefault(id(t.node), i)  # (a tensor given twice: its first place, as `_aliases` notes)
        rec = _Recorder(arg_nodes)
        outside = _outside(self.fn)
        steps_before = [o.steps for o in opts]
        before, s.recorder = s.recorder, rec
        guards.recording += 1  # (a gather's index is checked in the plan, whatever data later calls bind)
        try:
            result = self.fn(*args, **kwargs)
            flat, spec = _results(result)
            state = [t for o in opts for t in o.jit_outputs()]
            targets = [t.node for t in (*flat, *state)]
            todo = [n for n in targets if not n.realized]
            uploads = [n for n in todo if n.op is Op.LEAF]  # host data returned as it is: uploaded apart
            if uploads:
                s.recorder = None
                s.realize(uploads)
                s.recorder = rec
                todo = [n for n in todo if n.op is not Op.LEAF]
            rec.collect = True
            if todo:
                s.realize(todo)
        finally:
            s.recorder = before
            guards.recording -= 1
        if entry.given_up:
            return result
        why, c = self._recorded(s, rec, targets, todo)
        if c is not None and any(id(t.node) in arg_nodes for _h, _n, t in outside):
            why, c = ("it reads a tensor from outside that is also one of its arguments (one leaf of the plan "
                      "for both: a replay could not tell them apart)"), None
        if c is not None:
            c.spec, c.steps, c.outside = spec, [o.steps - b for o, b in zip(opts, steps_before)], outside
            if entry.last is not None:
                why = entry.last.differs(c)
            entry.capture = c if entry.last is not None and why is None else None
        entry.last = c
        entry.misses = 0 if entry.capture is not None else entry.misses + 1
        if entry.capture is None and why is not None and (c is None or entry.misses >= MAX_RUNS):
            entry.given_up = True
            name = getattr(self.fn, "__name__", "the function")
            warnings.warn(f"zd.jit({name}) runs it on every call: {why}", RuntimeWarning, stacklevel=3)
        return result

    @staticmethod
    def _recorded(s: Any, rec: _Recorder, targets: list[Node], todo: list[Node]
                  ) -> tuple[str | None, _Capture | None]:
        """(why this run cannot be replayed, its capture)."""
        if rec.reads:
            return "it reads values back (item, numpy, realize) while it runs, which may steer its Python", None
        if not todo:
            return "it computes nothing (its results are its arguments or tensors made before)", None
        c = rec.capture
        if c is not None:  # a structure planned for the first time has its entry only now
            c.entry = s.plans.entries.get(c.key)
            if c.entry is not None:  # the stored key: a replay's check of the entry is then by identity
                c.key = c.entry.key
        if c is None or c.entry is None:
            return ("its results are not a graph whose plan is kept (plan templates off, planning debug "
                    "output on, or an empty result)"), None
        arg_of, pos = rec.arg_nodes, rec.positions
        computed = c.computed
        todo_ids = {id(n) for n in todo}
        for n in targets:
            p = pos.get(id(n))
            if p in computed:
                c.outputs.append(("pos", p))
            elif id(n) in arg_of:
                c.outputs.append(("arg", arg_of[id(n)]))
            elif id(n) in todo_ids:
                return "a result was rewritten before its realize (a small view read on the host)", None
            else:
                c.outputs.append(("node", n))
        return None, c

    # ---- a replay ----

    def _replay(self, s: Any, c: _Capture, tensors: list[Tensor], opts: list[Optimizer]) -> Any:
        """The results of a call replayed from `c`, or None (nothing run, nothing changed) when its template
        does not apply now; the caller then runs fn."""
        if not s.replay_plans or s.plans.entries.get(c.key) is not c.entry:
            return None
        leaves: list[Node] = []  # the structure's input leaves, in order (a template's inputs)
        for _p, kind, what in c.inputs:
            if kind == _ARG:
                leaves.append(tensors[what].node)
            elif kind == _CONST:
                leaves.append(what)
            else:  # host data fn made: uploaded again by the template, as a realize of fn's graph would
                leaves.append(Node(Op.LEAF, (), None, what[0].shape, what[1], host=what[0]))
        if s.pending_frees:
            s._take_frees()
        with gc_paused():
            ran = templates.run(s, c.entry.templates, leaves, time.perf_counter())
        if ran is None:
            return None
        t, ids = ran
        computed = c.computed
        made: dict[int, Tensor] = {}
        for pos, slot, dev, nbytes in t.outputs:  # the results, as fresh leaves (no lineage: see the docstring)
            shape, dtype, pin = computed[pos]
            n = Node(Op.LEAF, (), None, shape, dtype, device=pin)
            n.buffer = BufferRef(s, n, dev, ids[slot], nbytes, True)
            made[pos] = Tensor(n)
        if c.checks and any(bad.any() for bad in s._copy_out([made[p].node for p in c.checks], compiled=True)):
            return None  # an index out of range: these results are dropped (freed), and fn's run raises
        self.replays += 1
        outs = [made[what] if kind == "pos" else tensors[what] if kind == "arg" else Tensor(what)
                for kind, what in c.outputs]
        if not opts and c.spec == ("t",):  # one tensor, the usual step's result
            return outs[0]
        n_flat = c.spec.count("t")
        state = outs[n_flat:]
        for o, steps in zip(opts, c.steps):
            k = len(o.jit_outputs())
            o.jit_load(state[:k], steps)
            state = state[k:]
        return _rebuild(c.spec, outs[:n_flat])


def jit(fn: Callable) -> Jit:
    """`fn` recorded at its first calls and replayed after them (see the module docstring); a decorator."""
    return Jit(fn)
