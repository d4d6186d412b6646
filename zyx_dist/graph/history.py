"""Driver side: what some recently realized nodes computed, so that a gradient taken after a read still flows
through them (API.md section 11: `y.item()` and then `zd.grad(y, xs)`, or a gradient read and then
differentiated). Takes the nodes a realize is about to turn into leaves (`keep`, called before `become_leaf`
drops their op, arg and sources); gives `former(n)`, that computation, while n lives and was realized by one of
the last WINDOW realizes. Only results of one element (a loss, as read by `item()`) and gradients (`gradient`:
what `zd.grad` returned) keep theirs, each weakly keyed (a node dropped takes its history with it): a history
keeps its sources alive, and every realized tensor keeping its own for ever would keep a training loop's older
weights and batches, and any tensor the user dropped while a result computed from it lives. An optimizer's new
parameters and state (`fresh`) keep none: nothing differentiates through an optimizer's step. A small view that
a realize reads on the host (graph/host_view.py makes it a host leaf, `view`) keeps its movement too, with that
realize's results: a kept result reads it, and the gradient must reach the tensor it views through it.
`host_result` notes the results of decompositions NumPy ran on the host, which have no gradient at all.
"""

from __future__ import annotations

import weakref
from collections import deque
from collections.abc import Iterable
from typing import Any

from .ir import Node

WINDOW = 2  # realizes whose results keep their history: y read, another tensor read, then zd.grad(y)

_FORMER: weakref.WeakKeyDictionary[Node, tuple[Any, Any, tuple[Node, ...]]] = weakref.WeakKeyDictionary()
_RECENT: deque[list[weakref.ref]] = deque()  # per realize: the nodes whose history it kept, oldest first
_GRADIENTS: weakref.WeakSet[Node] = weakref.WeakSet()
_FRESH: weakref.WeakSet[Node] = weakref.WeakSet()
_VIEWS: list[weakref.ref] = []  # views made host leaves since the last `keep`: kept with that realize's results
_HOST: weakref.WeakKeyDictionary[Node, str] = weakref.WeakKeyDictionary()  # host decompositions' results: their names


def keep(nodes: Iterable[Node]) -> None:
    """Remember the (op, arg, sources) of those of `nodes` that keep theirs, before a realize makes them
    leaves; forget those kept by the realize WINDOW realizes back."""
    former = _FORMER
    grads, fresh = _GRADIENTS.data, _FRESH.data  # (their sets of references: emptiness asked in C, every realize)
    kept = []
    for n in nodes:
        if n.srcs and (n.size == 1 or (grads and n in _GRADIENTS)) and not (fresh and n in _FRESH):
            former[n] = (n.op, n.arg, n.srcs)
            kept.append(weakref.ref(n))
    if _VIEWS:
        kept += _VIEWS
        _VIEWS.clear()
    recent = _RECENT
    if kept or recent:
        recent.append(kept)
        if len(recent) > WINDOW:
            for ref in recent.popleft():
                n = ref()
                if n is not None:
                    former.pop(n, None)


def view(n: Node) -> None:
    """Remember the (op, arg, sources) of view `n`, which graph/host_view.py is about to make a host leaf for the
    realize about to run; the next `keep` counts it as one of that realize's."""
    if n.srcs:
        _FORMER[n] = (n.op, n.arg, n.srcs)
        _VIEWS.append(weakref.ref(n))


def host_result(n: Node, what: str) -> None:
    """Note leaf `n` as the result of `what`, a decomposition NumPy ran on the host (frontend/linalg_ext.py): no
    gradient flows through it, which zd.grad's warning names."""
    _HOST[n] = what


def host_origin(n: Node) -> str | None:
    """What host decomposition made leaf `n`, or None."""
    return _HOST.get(n) if _HOST else None


def former(n: Node) -> tuple[Any, Any, tuple[Node, ...]] | None:
    """(op, arg, sources) of realized leaf `n` as it was computed, while kept; else None."""
    return _FORMER.get(n) if _FORMER else None


def gradient(nodes: Iterable[Node]) -> None:
    """Nodes `zd.grad` returned: realized, they keep their history (a gradient read, then differentiated)."""
    for n in nodes:
        _GRADIENTS.add(n)


def fresh(nodes: Iterable[Node]) -> None:
    """Nodes whose history is never kept (an optimizer's new parameters and state)."""
    for n in nodes:
        _FRESH.add(n)


def clear() -> None:
    """Forget every kept history (the session ends: the buffers they hold are gone with it)."""
    _FORMER.clear()
    _RECENT.clear()
    _VIEWS.clear()
