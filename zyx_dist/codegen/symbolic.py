"""Driver side: integer index expressions with known bounds, used to turn movement ops into index
arithmetic. Takes loop and work-item variables with their ranges; gives simplified expressions
(sums of scaled terms, floor division and modulo by positive constants) and validity conditions,
rendered as C. The simplifier uses bounds to drop what is provably redundant, which is what makes a
reshape of a contiguous view cost nothing (`(i*4 + j) / 4` with `0 <= j < 4` is just `i`).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Var:
    name: str
    lo: int
    hi: int  # inclusive


@dataclass(frozen=True)
class Sum:
    """`const + sum(coef * term)`; terms are Var, Div or Mod, each appearing once."""

    terms: tuple[tuple[Expr, int], ...]
    const: int


@dataclass(frozen=True)
class Div:
    x: Expr
    c: int  # > 1; floor division (operands are non-negative wherever the result is used)


@dataclass(frozen=True)
class Mod:
    x: Expr
    c: int  # > 1


Expr = Var | Sum | Div | Mod


def num(v: int) -> Sum:
    return Sum((), int(v))


ZERO = num(0)


def _as_sum(e: Expr) -> Sum:
    return e if isinstance(e, Sum) else Sum(((e, 1),), 0)


def _norm(terms: dict, const: int) -> Expr:
    items = tuple((t, c) for t, c in terms.items() if c != 0)
    if const == 0 and len(items) == 1 and items[0][1] == 1:
        return items[0][0]
    return Sum(items, const)


def add(*es: Expr | int) -> Expr:
    terms: dict = {}
    const = 0
    for e in es:
        if isinstance(e, int):
            const += e
            continue
        s = _as_sum(e)
        const += s.const
        for t, c in s.terms:
            terms[t] = terms.get(t, 0) + c
    # (x / c) * c + (x % c) == x: what a reshape of a contiguous view leaves behind
    for t, k in list(terms.items()):
        if isinstance(t, Mod) and k:
            q = div(t.x, t.c)
            if not isinstance(q, Sum) and terms.get(q, 0) == k * t.c:
                del terms[t], terms[q]
                return add(_norm(terms, const), mul(t.x, k))
    return _norm(terms, const)


def mul(e: Expr, c: int) -> Expr:
    if c == 0:
        return ZERO
    s = _as_sum(e)
    return _norm({t: k * c for t, k in s.terms}, s.const * c)


def bounds(e: Expr) -> tuple[int, int]:
    if isinstance(e, Var):
        return e.lo, e.hi
    if isinstance(e, Sum):
        lo = hi = e.const
        for t, c in e.terms:
            tlo, thi = bounds(t)
            lo += min(tlo * c, thi * c)
            hi += max(tlo * c, thi * c)
        return lo, hi
    if isinstance(e, Div):
        lo, hi = bounds(e.x)
        return lo // e.c, hi // e.c
    lo, hi = bounds(e.x)
    if lo >= 0 and hi < e.c:
        return lo, hi
    return 0, e.c - 1


def _split(e: Expr, c: int) -> tuple[Expr, Expr]:
    """e = q*c + r where q collects the terms whose coefficients are multiples of c, and r keeps the rest
    with a constant chosen so that r >= 0: then C's truncating `/` and `%` on r agree with floor division."""
    s = _as_sum(e)
    q: dict = {}
    r: dict = {}
    for t, k in s.terms:
        if k % c == 0:
            q[t] = k // c
        else:
            r[t] = k
    lo, _ = bounds(_norm(r, 0))
    m = (lo + s.const) // c
    return _norm(q, m), _norm(r, s.const - m * c)


def div(e: Expr, c: int) -> Expr:
    """floor(e / c) for a positive constant c."""
    if c == 1:
        return e
    q, r = _split(e, c)
    lo, hi = bounds(r)
    if lo // c == hi // c:
        return add(q, lo // c)
    if isinstance(r, Div):  # (x / a) / c == x / (a*c)
        return add(q, Div(r.x, r.c * c))
    return add(q, Div(r, c))


def mod(e: Expr, c: int) -> Expr:
    """e mod c (Python sign convention) for a positive constant c."""
    if c == 1:
        return ZERO
    _, r = _split(e, c)
    lo, hi = bounds(r)
    if lo >= 0 and hi < c:
        return r
    if lo // c == hi // c:  # r stays inside one period: subtract it
        return add(r, -(lo // c) * c)
    return Mod(r, c)


# ---- validity conditions: each is (expr, lo, hi) meaning lo <= expr <= hi --------------------------------

Cond = tuple[Expr, int, int]


def cond(e: Expr, lo: int, hi: int) -> Cond | bool:
    """The condition lo <= e <= hi, or True/False when the bounds of e decide it."""
    elo, ehi = bounds(e)
    if elo >= lo and ehi <= hi:
        return True
    if ehi < lo or elo > hi:
        return False
    return (e, max(lo, elo), min(hi, ehi))


def variables(e: Expr) -> set[str]:
    if isinstance(e, Var):
        return {e.name}
    if isinstance(e, Sum):
        out: set[str] = set()
        for t, _ in e.terms:
            out |= variables(t)
        return out
    return variables(e.x)


def render(e: Expr) -> str:
    if isinstance(e, Var):
        return e.name
    if isinstance(e, Div):
        return f"({render(e.x)}/{e.c})"
    if isinstance(e, Mod):
        return f"({render(e.x)}%{e.c})"
    out = ""
    for t, c in e.terms:
        rt = render(t)
        term = rt if abs(c) == 1 else f"{rt}*{abs(c)}"
        out += (f"-{term}" if c < 0 else f"+{term}") if out else (f"-{term}" if c < 0 else term)
    if e.const or not out:
        out += (f"{e.const:+d}" if out else str(e.const))
    return out if len(e.terms) + bool(e.const) <= 1 else f"({out})"


def render_cond(c: Cond) -> str:
    e, lo, hi = c
    elo, ehi = bounds(e)
    r = render(e)
    if lo > elo and hi < ehi:
        return f"(({r}>={lo})&&({r}<={hi}))"
    return f"({r}>={lo})" if lo > elo else f"({r}<={hi})"
