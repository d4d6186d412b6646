"""Driver side: the optimizers of API.md section 11, `zd.optim.SGD` and `zd.optim.Adam`. Each takes the
parameters (float tensors) once; `step(grads)` takes one gradient per parameter and gives the new
parameters as lazy tensors (tensors are immutable), keeping the optimizer state (momenta) as tensors.

Each parameter's update is one elementwise expression over its gradient, its state and the parameter, and
the new state is computed in the same kernel: the outputs share one node (the gradient as the update
reads it), which is what makes the kernelizer put same-shape outputs into one kernel, and the new state
rides along whenever the new parameter is realized (`graph.companions`), so `zd.realize(loss, *params)`
computes everything of a step in one pass. Step-dependent scalars (Adam's bias corrections) are small
host tensors, not constants baked into the kernel source, so every step reuses the same kernels. Half
precision parameters are updated, and their state kept, in float32 (rounded to the parameter's dtype once).

An optimizer passed as an argument of a `zd.jit` function is part of the call's state: `jit_inputs`
gives its tensors (parameters, momenta, and the next step's scalars as host tensors, so a replayed step
uploads new bias corrections instead of baking the first ones in), `jit_outputs` its new state after a
step, and `jit_load` puts a replay's results back, so the object stays current whoever steps it.
"""

from __future__ import annotations

import weakref
from typing import Any

import numpy as np

from .. import dtypes
from ..dtypes import DType
from ..errors import DTypeError, ShapeError
from ..graph import companions, history
from ..graph import ir as graph
from ..graph.ir import Node, UnaryOp
from .tensor import Tensor

__all__ = ["SGD", "Adam", "Optimizer"]




def _scalar_leaf(name: str, value: float, dtype: DType, made: dict) -> Node:
    """A step-dependent scalar as a 0-d host leaf; `made` keeps one leaf per name and dtype for the step:
    one upload each, whatever the number of parameters."""
    key = (name, dtype)
    leaf = made.get(key)
    if leaf is None:
        leaf = made[key] = graph.leaf(np.array(value, dtype.np_dtype), dtype)
    return leaf


def _scalar(name: str, value: float, like: Node, made: dict) -> Node:
    """`_scalar_leaf` broadcast to like's shape (no new kernel)."""
    leaf = _scalar_leaf(name, value, like.dtype, made)
    return graph.expand(graph.reshape(leaf, (1,) * len(like.shape)), like.shape)


def _compute_dtype(d: DType) -> DType:
    """Half-precision parameters are updated in float32 and keep their state in float32 (Adam's eps and a
    squared gradient underflow in float16); the new parameter is rounded once."""
    return dtypes.float32 if d.is_float and d.itemsize < 4 else d


def _updated(p: Tensor, update) -> Tensor:
    """The new parameter: `update` of p (in the compute dtype), in p's dtype."""
    return Tensor(graph.cast(update(graph.cast(p.node, _compute_dtype(p.dtype))), p.dtype))


def _fresh(*lists: list[Tensor]) -> None:
    """A step's new parameters and state keep no history once realized (graph/history.py): nothing takes a
    gradient through an optimizer's step, and the history would keep the old parameters and state alive."""
    history.fresh([t.node for ts in lists for t in ts])


class Optimizer:
    """The common part: the parameters, checks of the gradients, the step count."""

    def __init__(self, params: Any, lr: float):
        self.params: list[Tensor] = list(params)
        if not self.params:
            raise ValueError("an optimizer needs at least one parameter")
        for i, p in enumerate(self.params):
            if not isinstance(p, Tensor):
                raise TypeError(f"parameter {i} is a {type(p).__name__}, not a zd.Tensor")
            if not p.dtype.is_float:
                raise DTypeError(f"parameter {i} has dtype {p.dtype}; only float tensors can be optimized")
        if not lr >= 0:
            raise ValueError(f"learning rate must be >= 0, got {lr}")
        self.lr = float(lr)
        self.steps = 0
        # the state before the last step, held weakly (while the step's new state is unrealized, its graph keeps
        # the old state alive; once it is realized nothing is held), and the step count then
        self._before: tuple[list, int] | None = None

    def _grads(self, grads: Any) -> list[Node]:
        gs = list(grads)
        if len(gs) != len(self.params):
            raise ShapeError(f"step got {len(gs)} gradients for {len(self.params)} parameters")
        out = []
        for i, (p, g) in enumerate(zip(self.params, gs)):
            if not isinstance(g, Tensor):
                raise TypeError(f"gradient {i} is a {type(g).__name__}, not a zd.Tensor")
            if g.shape != p.shape:
                raise ShapeError(f"gradient {i} has shape {g.shape}, its parameter {p.shape}")
            # one node every output of the update computes (x * 1 is exact): see the module docstring
            gn = graph.cast(g.node, _compute_dtype(p.dtype))
            out.append(graph.mul(gn, graph.full_like(1, gn)))
        return out

    def step(self, grads: Any) -> list[Tensor]:
        raise NotImplementedError

    def _begin_step(self) -> None:
        """Before a step replaces the state: go back from a step whose realize failed, and note the state."""
        self._recover()
        self._before = ([None if x is None else [weakref.ref(t.node) for t in x] for x in self._state()], self.steps)

    def _recover(self) -> None:
        """The state before the last step, where that step's new parameters failed to compute (a realize of
        them raised): a failed step leaves the optimizer as it was, as it leaves every other tensor."""
        if self._before is None or not companions.any_failed() or \
                not any(companions.has_failed(p.node) for p in self.params):
            return
        refs, steps = self._before
        state = [None if x is None else [r() for r in x] for x in refs]
        if all(n is not None for x in state if x is not None for n in x):  # (the failed graph keeps them alive)
            self._set_state([None if x is None else [Tensor(n) for n in x] for x in state])
            self.steps = steps
        self._before = None

    # ---- the state as zd.jit sees it (see the module docstring) ----

    def _state(self) -> list[list[Tensor] | None]:
        return [self.params]

    def _set_state(self, lists: list[list[Tensor]]) -> None:
        self.params = lists[0]

    def jit_static(self) -> tuple:
        """What a captured step bakes in: a change (a new learning rate) makes zd.jit trace again."""
        self._recover()
        return (type(self).__name__, self.lr, tuple(len(x) if x is not None else -1 for x in self._state()))

    def jit_inputs(self) -> list[Tensor]:
        """The tensors a step reads: the state (and, for Adam, the next step's scalars)."""
        self._recover()
        return self.jit_outputs()

    def jit_outputs(self) -> list[Tensor]:
        """The state a step leaves: parameters, then momenta."""
        return [t for x in self._state() if x is not None for t in x]

    def jit_load(self, tensors: list[Tensor], steps: int) -> None:
        """The state after `steps` steps that zd.jit replayed (in `jit_outputs`' order), as if `step` ran."""
        it = iter(tensors)
        self._set_state([None if x is None else [next(it) for _ in x] for x in self._state()])
        self.steps += steps


class SGD(Optimizer):
    """p <- p - lr * v with v <- momentum * v + g (v = g without momentum), as torch.optim.SGD."""

    def __init__(self, params: Any, lr: float, momentum: float = 0.0):
        super().__init__(params, lr)
        if not momentum >= 0:
            raise ValueError(f"momentum must be >= 0, got {momentum}")
        self.momentum = float(momentum)
        self.velocity: list[Tensor] | None = None

    def step(self, grads: Any) -> list[Tensor]:
        gs = self._grads(grads)
        self._begin_step()
        self.steps += 1
        mu = self.momentum
        new_params, new_velocity = [], []
        for i, (p, g) in enumerate(zip(self.params, gs)):
            if not mu:
                new_params.append(_updated(p, lambda w, g=g: graph.sub(w, graph.mul(graph.full_like(self.lr, g), g))))
                continue
            v = None if self.velocity is None else self.velocity[i].node

            def velocity(v=v, g=g) -> Node:  # built twice: the state output and inside the update
                # the first step's velocity is the gradient (as torch's buffer); + 0 makes it a node of its own
                return graph.add(g, graph.full_like(0, g)) if v is None else graph.add(graph.mul(graph.full_like(mu, v), v), g)

            pn = _updated(p, lambda w, g=g, velocity=velocity: graph.sub(w, graph.mul(graph.full_like(self.lr, g), velocity())))
            vt = Tensor(velocity())
            companions.attach(pn.node, [vt.node])
            new_params.append(pn)
            new_velocity.append(vt)
        if mu:
            self.velocity = new_velocity
        self.params = new_params
        _fresh(new_params, new_velocity)
        return list(new_params)

    def _state(self) -> list[list[Tensor] | None]:
        return [self.params, self.velocity]

    def _set_state(self, lists: list[list[Tensor]]) -> None:
        self.params, self.velocity = lists

    def jit_static(self) -> tuple:
        return (*super().jit_static(), self.momentum)


class Adam(Optimizer):
    """Adam as torch.optim.Adam (no weight decay, no amsgrad): m <- b1 m + (1 - b1) g,
    v <- b2 v + (1 - b2) g^2, p <- p - lr / (1 - b1^t) * m / (sqrt(v) / sqrt(1 - b2^t) + eps)."""

    def __init__(self, params: Any, lr: float, betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8):
        super().__init__(params, lr)
        b1, b2 = (float(b) for b in betas)
        if not (0 <= b1 < 1 and 0 <= b2 < 1):
            raise ValueError(f"betas must lie in [0, 1), got {betas}")
        if not eps >= 0:
            raise ValueError(f"eps must be >= 0, got {eps}")
        self.betas, self.eps = (b1, b2), float(eps)
        self.m: list[Tensor] | None = None
        self.v: list[Tensor] | None = None
        self._next: tuple[tuple, dict] | None = None  # ((step, lr, betas), its scalar leaves) made by jit_inputs

    def _scalars(self, t: int) -> dict:
        """The leaves of step t's scalars, (name, dtype) -> node: those jit_inputs made for it, else new."""
        if self._next is not None and self._next[0] == (t, self.lr, self.betas):
            return self._next[1]
        return {}

    def _state(self) -> list[list[Tensor] | None]:
        return [self.params, self.m, self.v]

    def _set_state(self, lists: list[list[Tensor]]) -> None:
        self.params, self.m, self.v = lists

    def jit_static(self) -> tuple:
        return (*super().jit_static(), self.betas, self.eps)

    def jit_inputs(self) -> list[Tensor]:
        """The state and the next step's scalars, one host tensor per name and compute dtype."""
        self._recover()
        t = self.steps + 1
        step_size, inv_bc2 = self._step_scalars(t)
        made: dict = {}
        for d in sorted({_compute_dtype(p.dtype) for p in self.params}, key=lambda d: d.name):
            _scalar_leaf("step_size", step_size, d, made)
            _scalar_leaf("inv_bc2", inv_bc2, d, made)
        self._next = ((t, self.lr, self.betas), made)
        return self.jit_outputs() + [Tensor(n) for n in made.values()]

    def jit_load(self, tensors: list[Tensor], steps: int) -> None:
        super().jit_load(tensors, steps)
        self._next = None

    def _step_scalars(self, t: int) -> tuple[float, float]:
        b1, b2 = self.betas
        return self.lr / (1 - b1 ** t), 1 / float(np.sqrt(1 - b2 ** t))

    def step(self, grads: Any) -> list[Tensor]:
        gs = self._grads(grads)
        self._begin_step()
        self.steps += 1
        t = self.steps
        b1, b2 = self.betas
        step_size, inv_bc2 = self._step_scalars(t)
        new_params, new_m, new_v = [], [], []
        scalars = self._scalars(t)
        for i, (p, g) in enumerate(zip(self.params, gs)):
            m = self.m[i].node if self.m is not None else None
            v = self.v[i].node if self.v is not None else None

            def moment1(m=m, g=g) -> Node:  # built twice: the state output and inside the update
                new = graph.mul(graph.full_like(1 - b1, g), g)
                return new if m is None else graph.add(graph.mul(graph.full_like(b1, m), m), new)

            def moment2(v=v, g=g) -> Node:
                new = graph.mul(graph.full_like(1 - b2, g), graph.mul(g, g))
                return new if v is None else graph.add(graph.mul(graph.full_like(b2, v), v), new)

            denom = graph.add(graph.mul(graph.unary(UnaryOp.SQRT, moment2()), _scalar("inv_bc2", inv_bc2, g, scalars)), graph.full_like(self.eps, g))
            pn = _updated(p, lambda w, g=g, m1=moment1, d=denom: graph.sub(w, graph.div(graph.mul(_scalar("step_size", step_size, g, scalars), m1()), d)))
            mt, vt = Tensor(moment1()), Tensor(moment2())
            companions.attach(pn.node, [mt.node, vt.node])
            new_params.append(pn)
            new_m.append(mt)
            new_v.append(vt)
        self.params, self.m, self.v = new_params, new_m, new_v
        self._next = None
        _fresh(new_params, new_m, new_v)
        return list(new_params)
