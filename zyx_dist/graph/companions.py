"""Driver side, pure: tensors realized together. An optimizer's new parameters and its new state (momenta)
come from one fused expression, and the state must be realized whenever the parameters are, or it would
stay a lazy graph growing with every step. `attach(node, others)` records that `others` are to be
computed whenever `node` is; `with_companions(nodes)` gives the nodes to realize: `nodes` plus the live,
unrealized companions of each. Companions are held weakly: a state that its owner has dropped is not
computed. `failed(nodes)` notes nodes whose realize raised, so that an optimizer whose new state failed to
compute goes back to the state before that step (`has_failed`).
"""

from __future__ import annotations

import weakref

from .ir import Node

_COMPANIONS: weakref.WeakKeyDictionary[Node, tuple[weakref.ref, ...]] = weakref.WeakKeyDictionary()
LIVE = _COMPANIONS.data  # (the registry's own dict: empty unless some node has companions; a realize checks it)


def attach(node: Node, others: list[Node]) -> None:
    _COMPANIONS[node] = tuple(weakref.ref(o) for o in others)


def with_companions(nodes: list[Node]) -> list[Node]:
    if not _COMPANIONS.data:  # (the dict's own: len() of a weak dictionary is a Python call)
        return nodes
    extra: list[Node] = []
    for n in nodes:
        refs = _COMPANIONS.get(n)
        if refs is None:
            continue
        if n.realized:  # done: its companions were realized with it (or dropped)
            del _COMPANIONS[n]
            continue
        extra.extend(o for o in (r() for r in refs) if o is not None and not o.realized)
    if not extra:
        return nodes
    seen = {n.id for n in nodes}
    return list(nodes) + [o for o in extra if o.id not in seen and not seen.add(o.id)]


_FAILED: weakref.WeakSet[Node] = weakref.WeakSet()


def failed(nodes: list[Node]) -> None:
    """Note that a realize of `nodes` raised (those still unrealized)."""
    for n in nodes:
        if not n.realized:
            _FAILED.add(n)


def any_failed() -> bool:
    """Whether any node noted by `failed` lives (a check made on every optimizer step: the set's own data)."""
    return bool(_FAILED.data)


def has_failed(node: Node) -> bool:
    """Whether a realize of `node` raised, and it is still unrealized."""
    return node in _FAILED and not node.realized
