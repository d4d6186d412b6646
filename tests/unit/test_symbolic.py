"""Unit tests of the index-expression simplifier (`zyx_dist.codegen.symbolic`): bounds, the div/mod
rewrites that make contiguous reshapes free, validity conditions, and a randomized check (hypothesis)
that simplification never changes the value of an expression under Python floor semantics."""

from __future__ import annotations

import itertools

from hypothesis import given, settings
from hypothesis import strategies as st

from zyx_dist.codegen import symbolic as s

I = s.Var("i", 0, 9)
J = s.Var("j", 0, 3)
X = s.Var("x", 0, 99)


# ---- a tiny evaluator -------------------------------------------------------------------------------------

def ev(e: s.Expr, env: dict[str, int], trunc: bool = False) -> int:
    """Value of a simplified expression; `trunc` evaluates Div/Mod as C does (toward zero)."""
    if isinstance(e, s.Var):
        return env[e.name]
    if isinstance(e, s.Sum):
        return e.const + sum(c * ev(t, env, trunc) for t, c in e.terms)
    v = ev(e.x, env, trunc)
    if isinstance(e, s.Div):
        if trunc:
            q = abs(v) // e.c
            return q if v >= 0 else -q
        return v // e.c
    if trunc:
        r = abs(v) % e.c
        return r if v >= 0 else -r
    return v % e.c


def assignments(vs):
    names = [v.name for v in vs]
    for vals in itertools.product(*[range(v.lo, v.hi + 1) for v in vs]):
        yield dict(zip(names, vals))


def div_mod_nodes(e: s.Expr):
    if isinstance(e, s.Sum):
        for t, _ in e.terms:
            yield from div_mod_nodes(t)
    elif isinstance(e, (s.Div, s.Mod)):
        yield e
        yield from div_mod_nodes(e.x)


# ---- bounds ------------------------------------------------------------------------------------------------

def test_bounds_of_var_sum_and_negative_coefficients():
    assert s.bounds(I) == (0, 9)
    assert s.bounds(s.add(s.mul(I, 4), J)) == (0, 39)
    assert s.bounds(s.add(s.mul(I, -2), J, 5)) == (-13, 8)
    assert s.bounds(s.num(7)) == (7, 7)


def test_bounds_of_div_and_mod():
    assert s.bounds(s.Div(X, 10)) == (0, 9)
    assert s.bounds(s.Mod(X, 7)) == (0, 6)
    assert s.bounds(s.Mod(J, 7)) == (0, 3)  # already inside one period: the tighter range


# ---- div / mod ------------------------------------------------------------------------------------------

def test_div_and_mod_of_a_contiguous_reshape_index():
    e = s.add(s.mul(I, 4), J)
    assert s.div(e, 4) == I
    assert s.mod(e, 4) == J


def test_div_and_mod_by_one():
    e = s.add(s.mul(I, 3), J)
    assert s.div(e, 1) == e
    assert s.mod(e, 1) == s.ZERO


def test_div_of_div_merges_divisors():
    assert s.div(s.div(X, 3), 5) == s.Div(X, 15)


def test_div_of_sum_keeps_the_multiple_outside():
    e = s.div(s.add(s.mul(I, 8), X), 4)  # 2*i + x/4
    assert isinstance(e, s.Sum)
    assert dict(e.terms) == {I: 2, s.Div(X, 4): 1}


def test_mod_drops_multiples_of_the_divisor():
    assert s.mod(s.add(s.mul(I, 12), J), 4) == J
    assert s.mod(s.add(s.mul(X, 8), 5), 4) == s.num(1)


def test_div_mod_recombine_to_the_source():
    for c in (2, 3, 7, 10):
        assert s.add(s.mul(s.div(X, c), c), s.mod(X, c)) == X
    # and with another term alongside
    e = s.add(s.mul(s.div(X, 7), 7), s.mod(X, 7), J)
    assert isinstance(e, s.Sum) and e.const == 0 and dict(e.terms) == {X: 1, J: 1}


def test_recombination_with_a_coefficient():
    e = s.add(s.mul(s.div(X, 5), 15), s.mul(s.mod(X, 5), 3))
    assert e == s.mul(X, 3)


def test_constants_fold():
    assert s.add(3, 4) == s.num(7)
    assert s.mul(s.num(3), 5) == s.num(15)
    assert s.div(s.num(17), 5) == s.num(3)
    assert s.mod(s.num(17), 5) == s.num(2)
    assert s.mul(X, 0) == s.ZERO
    assert s.add(X, s.mul(X, -1)) == s.ZERO


def test_div_decided_by_bounds_is_a_constant():
    assert s.div(J, 4) == s.ZERO
    assert s.div(s.add(J, 4), 4) == s.num(1)
    assert s.mod(s.add(J, 4), 4) == J


def test_single_term_sum_normalises_to_the_term():
    assert s.add(X) == X
    assert s.mul(X, 1) == X
    assert s.add(X, 0) == X


# ---- conditions ------------------------------------------------------------------------------------------

def test_cond_decided_by_bounds():
    assert s.cond(J, 0, 3) is True
    assert s.cond(J, -5, 10) is True
    assert s.cond(J, 4, 9) is False
    assert s.cond(s.add(J, -10), 0, 5) is False


def test_cond_undecided_is_clamped_to_the_bounds():
    assert s.cond(X, 0, 50) == (X, 0, 50)
    assert s.cond(X, -10, 50) == (X, 0, 50)
    assert s.cond(X, 10, 500) == (X, 10, 99)


def test_render_cond_emits_only_the_needed_sides():
    assert s.render_cond((X, 0, 50)) == "(x<=50)"
    assert s.render_cond((X, 10, 99)) == "(x>=10)"
    assert s.render_cond((X, 10, 50)) == "((x>=10)&&(x<=50))"


def test_render():
    assert s.render(s.add(s.mul(I, 4), J, 1)) == "(i*4+j+1)"
    assert s.render(s.add(s.mul(I, -1), 9)) == "(-i+9)"
    assert s.render(s.Div(X, 3)) == "(x/3)"
    assert s.render(s.Mod(X, 3)) == "(x%3)"
    assert s.render(s.ZERO) == "0"
    assert s.variables(s.add(s.Div(X, 3), s.mul(J, 2))) == {"x", "j"}


# ---- negative operands (a C renderer truncates, so operands of Div/Mod must stay >= 0) --------------------

def _mirrored():
    """`k - i` for i in [0, k]: never negative, as a flip produces it."""
    for k in range(3, 14):
        i = s.Var("i", 0, k)
        for c in (2, 3, 4, 5):
            yield s.add(s.mul(i, -1), k), i, c


def test_mirrored_index_div_mod_is_right_under_floor_semantics():
    for e, i, c in _mirrored():
        for env in assignments([i]):
            v = ev(e, env)
            assert ev(s.div(e, c), env) == v // c
            assert ev(s.mod(e, c), env) == v % c


def test_div_mod_operands_stay_non_negative_for_non_negative_input():
    for e, i, c in _mirrored():
        d, m = s.div(e, c), s.mod(e, c)
        for node in [*div_mod_nodes(d), *div_mod_nodes(m)]:
            assert s.bounds(node.x)[0] >= 0, (e, c, d, m)
        for env in assignments([i]):  # evaluated as C evaluates the rendered text
            v = ev(e, env)
            assert (ev(d, env, trunc=True), ev(m, env, trunc=True)) == (v // c, v % c), (e, c, env)


# ---- randomized: simplification preserves values ---------------------------------------------------------

VARS = [s.Var("a", 0, 3), s.Var("b", 0, 5), s.Var("c", 0, 2)]


@st.composite
def exprs(draw, depth: int = 3):
    """A pair (simplified expression, plain arithmetic tree) over VARS."""
    if depth == 0 or draw(st.integers(0, 3)) == 0:
        if draw(st.booleans()):
            v = draw(st.sampled_from(VARS))
            return v, ("var", v.name)
        k = draw(st.integers(-6, 6))
        return s.num(k), ("num", k)
    kind = draw(st.sampled_from(["add", "mul", "div", "mod"]))
    a, ta = draw(exprs(depth - 1))
    if kind == "add":
        b, tb = draw(exprs(depth - 1))
        return s.add(a, b), ("add", ta, tb)
    k = draw(st.integers(-4, 6) if kind == "mul" else st.integers(1, 7))
    if kind == "mul":
        return s.mul(a, k), ("mul", ta, k)
    if kind == "div":
        return s.div(a, k), ("div", ta, k)
    return s.mod(a, k), ("mod", ta, k)


def plain(t, env: dict[str, int]) -> int:
    kind = t[0]
    if kind == "var":
        return env[t[1]]
    if kind == "num":
        return t[1]
    if kind == "add":
        return plain(t[1], env) + plain(t[2], env)
    v = plain(t[1], env)
    return v * t[2] if kind == "mul" else v // t[2] if kind == "div" else v % t[2]


@settings(max_examples=300, deadline=None)
@given(exprs())
def test_simplify_preserves_value_under_floor_semantics(pair):
    e, tree = pair
    lo, hi = s.bounds(e)
    for env in assignments(VARS):
        got = ev(e, env)
        assert got == plain(tree, env), (e, tree, env)
        assert lo <= got <= hi, (e, env, (lo, hi))


def test_nested_div_mod_recombine():
    x4 = s.div(X, 4)
    assert s.add(s.mul(s.div(x4, 3), 3), s.mod(x4, 3)) == x4
