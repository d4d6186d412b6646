"""Driver side: integer index expressions with known bounds, used to turn movement ops into index
arithmetic. Takes loop and work-item variables with their ranges; gives simplified expressions
(sums of scaled terms, floor division and modulo by positive constants) and validity conditions,
rendered as C. Expressions are interned (hash-consed): building one that exists already returns the
existing object, so equality and hashing are identity, O(1) however deep the expression, and every
node carries its bounds and variables. The simplifier uses bounds to drop what is provably redundant,
which is what makes a reshape of a contiguous view cost nothing (`(i*4 + j) / 4` with `0 <= j < 4` is
just `i`), and it treats `(x / a) % b` as a digit of x: dividing or reducing a sum of digits at a digit
boundary picks digits, and adjacent digits added back together merge, so a chain of permutes and
reshapes that line up with the dims stays a sum of at most one digit per dim. No function here recurses.
"""

from __future__ import annotations

import math
import weakref

_TABLE: weakref.WeakValueDictionary = weakref.WeakValueDictionary()  # key -> the one live expression


class Expr:
    """An interned index expression: `lo`/`hi` are its bounds (inclusive), `names` the loop or
    work-item variables it depends on, `text` its C rendering once rendered."""

    __slots__ = ("__weakref__", "hi", "lo", "names", "text")

    def __repr__(self) -> str:
        return f"{type(self).__name__}<{render(self)}>"


class Var(Expr):
    """A variable in [lo, hi]. `deps` names the variables it stands for when it is a temporary holding
    an expression of them (a reshape's flat index the renderer stores in a C variable)."""

    __slots__ = ("name",)

    def __new__(cls, name: str, lo: int, hi: int, deps: frozenset[str] | None = None) -> Var:  # noqa: PYI034
        key = (cls, name, lo, hi, deps)
        e = _TABLE.get(key)
        if e is None:
            e = object.__new__(cls)
            e.name, e.lo, e.hi, e.text = name, lo, hi, name
            e.names = frozenset((name,)) if deps is None else deps
            _TABLE[key] = e
        return e

    def __reduce__(self):
        return Var, (self.name, self.lo, self.hi, None if self.names == {self.name} else self.names)


class Sum(Expr):
    """`const + sum(coef * term)`; terms are Var, Div or Mod, each appearing once."""

    __slots__ = ("const", "terms")

    def __new__(cls, terms: tuple[tuple[Expr, int], ...], const: int) -> Sum:  # noqa: PYI034
        key = (cls, terms, const)
        e = _TABLE.get(key)
        if e is None:
            e = object.__new__(cls)
            e.terms, e.const, e.text = terms, const, None
            lo = hi = const
            names: frozenset[str] = frozenset()
            for t, c in terms:
                lo += min(t.lo * c, t.hi * c)
                hi += max(t.lo * c, t.hi * c)
                names = names | t.names
            e.lo, e.hi, e.names = lo, hi, names
            _TABLE[key] = e
        return e

    def __reduce__(self):
        return Sum, (self.terms, self.const)


class _ByConstant(Expr):
    """x combined with a positive constant c (Div, Mod): interned by (class, x, c), bounds from `_bounds`."""

    __slots__ = ("c", "x")

    def __new__(cls, x: Expr, c: int):  # gives an existing expression of the subclass where there is one
        key = (cls, x, c)
        e = _TABLE.get(key)
        if e is None:
            e = object.__new__(cls)
            e.x, e.c, e.text, e.names = x, c, None, x.names
            e.lo, e.hi = cls._bounds(x, c)
            _TABLE[key] = e
        return e

    def __reduce__(self):
        return type(self), (self.x, self.c)


class Div(_ByConstant):
    """floor(x / c) for a constant c > 1 (operands are non-negative wherever the result is used)."""

    __slots__ = ()

    @staticmethod
    def _bounds(x: Expr, c: int) -> tuple[int, int]:
        return x.lo // c, x.hi // c


class Mod(_ByConstant):
    """x mod c for a constant c > 1."""

    __slots__ = ()

    @staticmethod
    def _bounds(x: Expr, c: int) -> tuple[int, int]:
        return (x.lo, x.hi) if x.lo >= 0 and x.hi < c else (0, c - 1)


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


def _digit(t: Expr) -> tuple[Expr, int, int | None]:
    """t as a digit of some x: (x, a, b) meaning (x / a) % b, b None for an unbounded x / a."""
    if isinstance(t, Mod):
        if isinstance(t.x, Div):
            return t.x.x, t.x.c, t.c
        return t.x, 1, t.c
    if isinstance(t, Div):
        return t.x, t.c, None
    return t, 1, None


def _merge_digits(terms: dict) -> int:
    """Add adjacent digits of the same x back together, in place: `((x/a) % b) * k + ((x/(a*b)) % c) * k*b`
    is `((x/a) % (b*c)) * k`, and with an unbounded upper digit `(x/a) * k` (`(x/c)*c + x%c == x`). Gives
    the constant that merging brought out (x itself may be a sum with one)."""
    const = 0
    merged = True
    while merged:
        merged = False
        lower = {}  # (x, a) -> the term holding that digit
        for t, k in terms.items():
            if k:
                x, a, _ = _digit(t)
                lower[(x, a)] = t
        for t, k in list(terms.items()):
            x, a, b = _digit(t)
            if not k or b is None:
                continue
            up = lower.get((x, a * b))
            if up is None or up is t or terms.get(up) != k * b:
                continue
            ub = _digit(up)[2]
            del terms[t], terms[up]
            d = x if a == 1 else Div(x, a)  # both digits were simplified already: so is their union
            if ub is not None and not (d.lo >= 0 and d.hi < b * ub):
                d = Mod(d, b * ub)
            scaled = _as_sum(mul(d, k))
            for dt, dk in scaled.terms:
                terms[dt] = terms.get(dt, 0) + dk
            const += scaled.const
            merged = True
            break
    return const


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
    const += _merge_digits(terms)
    return _norm(terms, const)


def mul(e: Expr, c: int) -> Expr:
    if c == 0:
        return ZERO
    s = _as_sum(e)
    return _norm({t: k * c for t, k in s.terms}, s.const * c)


def bounds(e: Expr) -> tuple[int, int]:
    return e.lo, e.hi


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
    lo = _norm(r, 0).lo
    m = (lo + s.const) // c
    return _norm(q, m), _norm(r, s.const - m * c)


def _positional(r: Expr, c: int) -> tuple[Expr, int, Expr] | None:
    """(a, g, b) with r = g*a + b, g a proper divisor of c and 0 <= b < g, when r has such a split: then
    floor(r / c) = floor(a / (c/g)) and r mod c = g * (a mod (c/g)) + b, a smaller problem."""
    s = _as_sum(r)
    for g in sorted({math.gcd(k, c) for _, k in s.terms}, reverse=True):
        if g == 1:
            break
        high = {t: k // g for t, k in s.terms if k % g == 0}
        low = _norm({t: k for t, k in s.terms if k % g}, s.const % g)
        if low.lo >= 0 and low.hi < g:
            return _norm(high, s.const // g), g, low
    return None


def div(e: Expr, c: int) -> Expr:
    """floor(e / c) for a positive constant c."""
    outer: list = []  # (addend, digits) to wrap the inner result in, innermost last
    while True:
        if c == 1:
            out = e
            break
        q, r = _split(e, c)
        if r.lo // c == r.hi // c:
            out = add(q, r.lo // c)
            break
        if isinstance(r, Div):  # (x / a) / c == x / (a*c)
            outer.append((q, None))
            e, c = r.x, r.c * c
            continue
        if isinstance(r, Mod) and r.c % c == 0:  # ((x % b) / c) == (x / c) % (b/c) when c divides b
            outer.append((q, r.c // c))
            e = r.x
            continue
        split = _positional(r, c)
        if split is None:
            out = add(q, Div(r, c))
            break
        outer.append((q, None))
        e, c = split[0], c // split[1]
    for q, digits in reversed(outer):
        out = add(q, out if digits is None else mod(out, digits))
    return out


def mod(e: Expr, c: int) -> Expr:
    """e mod c (Python sign convention) for a positive constant c."""
    outer: list[tuple[int, Expr]] = []  # (scale, low part): the inner result times scale, plus low
    while True:
        if c == 1:
            out: Expr = ZERO
            break
        _, r = _split(e, c)
        if r.lo >= 0 and r.hi < c:
            out = r
            break
        if r.lo // c == r.hi // c:  # r stays inside one period: subtract it
            out = add(r, -(r.lo // c) * c)
            break
        if isinstance(r, Mod) and r.c % c == 0:  # (x % b) % c == x % c when c divides b
            e = r.x
            continue
        split = _positional(r, c)
        if split is None:
            out = Mod(r, c)
            break
        outer.append((split[1], split[2]))
        e, c = split[0], c // split[1]
    for g, low in reversed(outer):
        out = add(mul(out, g), low)
    return out


# ---- validity conditions: each is (expr, lo, hi) meaning lo <= expr <= hi --------------------------------

Cond = tuple[Expr, int, int]


def cond(e: Expr, lo: int, hi: int) -> Cond | bool:
    """The condition lo <= e <= hi, or True/False when the bounds of e decide it."""
    if e.lo >= lo and e.hi <= hi:
        return True
    if e.hi < lo or e.lo > hi:
        return False
    return (e, max(lo, e.lo), min(hi, e.hi))


def variables(e: Expr) -> frozenset[str]:
    return e.names


def tangled(e: Expr) -> bool:
    """Whether e divides or reduces a sum (a Div or Mod of a Sum): what a reshape leaves behind when it
    does not line up with the digits of the index it splits."""
    stack = [e]
    while stack:
        x = stack.pop()
        if isinstance(x, Sum):
            stack.extend(t for t, _ in x.terms)
        elif isinstance(x, (Div, Mod)):
            if isinstance(x.x, Sum):
                return True
            stack.append(x.x)
    return False


def _pieces(e: Expr) -> list:
    """e's C text as a list of strings and operand expressions, in order."""
    if isinstance(e, Div):
        return ["(", e.x, f"/{e.c})"]
    if isinstance(e, Mod):
        return ["(", e.x, f"%{e.c})"]
    out: list = []
    for t, c in e.terms:
        if c < 0 or out:
            out.append("-" if c < 0 else "+")
        out.append(t)
        if abs(c) != 1:
            out.append(f"*{abs(c)}")
    if e.const or not out:
        out.append(f"{e.const:+d}" if out else str(e.const))
    return out if len(e.terms) + bool(e.const) <= 1 else ["(", *out, ")"]


def render(e: Expr) -> str:
    """C text of e, written out piece by piece from an explicit stack (linear in the text's length
    however deep e is) and kept on e, so rendering it again costs nothing."""
    if e.text is None:
        out: list[str] = []
        stack: list = [e]
        while stack:
            x = stack.pop()
            if isinstance(x, str):
                out.append(x)
            elif x.text is not None:
                out.append(x.text)
            else:
                stack.extend(reversed(_pieces(x)))
        e.text = "".join(out)
    return e.text


def render_cond(c: Cond) -> str:
    e, lo, hi = c
    r = render(e)
    if lo > e.lo and hi < e.hi:
        return f"(({r}>={lo})&&({r}<={hi}))"
    return f"({r}>={lo})" if lo > e.lo else f"({r}<={hi})"
