"""Symbolic checks: mathematical equality, safe reading, clear messages, bounded time."""
import time

import pytest
import sympy

from graders.feedback import FAIL, INVALID, PASS, UNDECIDED
from graders.symbolic import Expr, ExpressionError, compare, from_srepr, symbols_for
from tests.conftest import code_never_run

S = symbols_for(("N", "P", "K"))
N, P, K = S["N"], S["P"], S["K"]
CHECK = Expr(symbols=("N", "P", "K"))


@pytest.mark.parametrize("answer", [16 * N, 8 * N + 8 * N, 2**4 * N, sympy.Symbol("N") * 16,
                                    4 * N + 12 * N, sympy.expand((2 + 2 + K) * N).subs(K, 12)])
def test_equal_expressions_pass(answer):
    assert CHECK.judge(16 * N, answer).status == PASS


def test_written_forms_of_zero_stage_formulas_are_equal():
    assert CHECK.judge(2 * N + (2 + K) * N / P, (2 * N * P + 2 * N + K * N) / P).status == PASS


def test_an_expression_equal_at_one_point_only_fails():
    # N**2 equals 16*N at N = 16, and nowhere else among positive reals
    assert (N**2).subs(N, 16) == (16 * N).subs(N, 16)
    assert CHECK.judge(16 * N, N**2).status == FAIL


def test_a_close_but_different_expression_fails():
    assert CHECK.judge(4 * N + K * N / P, 4 * N + K * N / (P + 1)).status == FAIL


def test_a_symbol_outside_the_notation_is_named():
    outcome = CHECK.judge(16 * N, 16 * sympy.Symbol("x"))
    assert outcome.status == INVALID
    assert "x" in outcome.reason and "N, P, K" in outcome.reason


def test_a_complex_root_is_named_as_such():
    # sympy.solve's first root of a quadratic may be the complex one: say so, not "something other"
    outcome = CHECK.judge(16 * N, 16 * N + 2 * sympy.I * N)
    assert outcome.status == INVALID and "imaginary unit I" in outcome.reason


@pytest.mark.parametrize("answer, words", [("16*N", "string"), (16.0, "not a sympy expression"),
                                           (None, "not a sympy expression"), ([N], "not a sympy expression")])
def test_non_expressions_are_invalid_with_a_reason(answer, words):
    outcome = CHECK.judge(16 * N, answer)
    assert outcome.status == INVALID and words in outcome.reason


@pytest.mark.parametrize("text", [
    "__import__('os').system('touch /tmp/pwned')",
    "Symbol('N').__class__",
    "Mul(Integer(16), Symbol('N')).subs",
    "eval('1')",
    "lambda: 1",
    "Integer(" + "9" * 100 + ")",
    "Mul(" * 3000 + ")" * 3000,
])
def test_untrusted_text_is_never_evaluated(text, tmp_path):
    pwned = tmp_path / "pwned"
    with code_never_run("eval", "exec", "system") as calls, pytest.raises(ExpressionError):
        from_srepr(text.replace("/tmp/pwned", str(pwned)), S)
    assert calls == [] and not pwned.exists(), calls


def test_the_reader_builds_the_expression_srepr_describes():
    expr = (2 + 2 + K) * N / P
    assert sympy.expand(from_srepr(sympy.srepr(expr), S) - expr) == 0
    # assumptions a student attached to a symbol do not matter: symbols match by name
    assert sympy.expand(from_srepr(sympy.srepr(sympy.Symbol("N", integer=True) * 2), S) - 2 * N) == 0


def test_a_comparison_that_cannot_finish_is_undecided_within_its_bound():
    # an enormous power makes evaluation run far past the bound; it is built unevaluated,
    # as the reader builds a student's expression, so only the bounded child computes
    slow = from_srepr("Mul(Pow(Integer(3), Integer(1000000000000)), Symbol('N'))", S)
    start = time.monotonic()
    result = compare(16 * N, slow, timeout=1.0)
    assert time.monotonic() - start < 5
    assert result.verdict in ("undecided", "different")   # never "equal", and never unbounded


def test_undecided_is_reported_as_such_and_scores_nothing(monkeypatch):
    from graders import symbolic
    from graders.bounded import Timeout

    def out_of_time(*args, **kwargs):
        raise Timeout("no answer within the bound")

    monkeypatch.setattr(symbolic, "run_bounded", out_of_time)
    outcome = Expr(symbols=("N", "P", "K")).judge(16 * N, 16 * N + 1)
    assert outcome.status == UNDECIDED and "could not be decided" in outcome.reason
    assert not outcome.passed


def test_float_constants_compare_within_the_stated_tolerance():
    C = sympy.Symbol("C", positive=True)
    check = Expr(symbols=("C",), rtol=1e-6)
    reference = sympy.Float(0.6) * C**sympy.Float(0.5)
    assert check.judge(reference, sympy.Float(0.6000001) * C**sympy.Float(0.5)).status == PASS
    assert check.judge(reference, sympy.Float(0.61) * C**sympy.Float(0.5)).status == FAIL
    assert check.judge(reference, sympy.Float(0.6) * C**sympy.Float(0.49)).status == FAIL


def test_confined_symbols_are_sampled_where_they_mean_something():
    # (1 - eta*lambda)**t and exp(t*log(1 - eta*lambda)) agree only while eta*lambda < 1
    s = symbols_for(("eta", "lambda", "t"))
    reference = (1 - s["eta"] * s["lambda"]) ** s["t"]
    rewritten = sympy.exp(s["t"] * sympy.log(1 - s["eta"] * s["lambda"]))
    confined = Expr(symbols=("eta", "lambda", "t"), ranges=(("eta", (1e-5, 1e-2)), ("lambda", (0.0, 0.3))))
    assert confined.judge(reference, rewritten).status == PASS   # proved, not only sampled
    assert confined.judge(reference, (1 - s["eta"] * s["lambda"]) ** (s["t"] + 1)).status == FAIL


def test_a_scaling_law_written_through_its_own_optimum_is_proved_equal():
    # Hoffmann's D_opt/N_opt, as tds-w2's reference writes it, and as students write it from
    # N_opt·D_opt = C/6: the difference never cancels, but the quotient and the logarithms do
    s = symbols_for(("C", "alpha", "beta", "A_N", "B_D"))
    C, al, be, A, B = (s[k] for k in ("C", "alpha", "beta", "A_N", "B_D"))
    G = (al * A / (be * B)) ** (1 / (al + be))
    n_opt, d_opt = G * (C / 6) ** (be / (al + be)), (C / 6) ** (al / (al + be)) / G
    check = Expr(symbols=("C", "alpha", "beta", "A_N", "B_D"))
    forms = [(C / 6) / n_opt**2, C / (6 * n_opt * n_opt),
             sympy.exp((2 * sympy.log(be * B / (al * A)) + (al - be) * sympy.log(C / 6)) / (al + be))]
    for form in forms:
        assert check.judge(d_opt / n_opt, form).status == PASS, form
    assert check.judge(d_opt / n_opt, (C / 6) / n_opt).status == FAIL


def test_a_cosine_schedule_through_a_half_angle_is_proved_without_simplify(monkeypatch):
    # e02's cosine phase, and the same rate through cos² of the half angle and through sin²;
    # simplify proves them only after seconds, near the comparison's bound on a loaded machine
    from graders import symbolic
    s = symbols_for(("eta_max", "eta_min", "W", "n_steps", "t"))
    hi, lo, W, n, t = (s[k] for k in ("eta_max", "eta_min", "W", "n_steps", "t"))
    x = sympy.pi * (t - W) / (n - W)
    reference = lo + (hi - lo) / 2 * (1 + sympy.cos(x))
    monkeypatch.setattr(symbolic.sympy, "simplify", lambda expr, *a, **k: expr)   # the slow step, gone
    check = Expr(symbols=("eta_max", "eta_min", "W", "n_steps", "t"))
    for form in (lo + (hi - lo) * sympy.cos(x / 2) ** 2, hi - (hi - lo) * sympy.sin(x / 2) ** 2):
        assert check.judge(reference, form).status == PASS, form
    assert check.judge(reference, lo + (hi - lo) * sympy.cos(x) ** 2).status == FAIL


def test_a_cosine_schedule_through_the_supplementary_angle_is_proved(monkeypatch):
    # cos(π(n − t)/(n − W)) = −cos(π(t − W)/(n − W)): sympy's own steps, simplify included, never
    # saw it, so the answer went to a person; the angles are now related before any other step
    from graders import symbolic
    s = symbols_for(("eta_max", "eta_min", "W", "n_steps", "t"))
    hi, lo, W, n, t = (s[k] for k in ("eta_max", "eta_min", "W", "n_steps", "t"))
    reference = lo + (hi - lo) / 2 * (1 + sympy.cos(sympy.pi * (t - W) / (n - W)))
    monkeypatch.setattr(symbolic.sympy, "simplify", lambda expr, *a, **k: expr)
    check = Expr(symbols=("eta_max", "eta_min", "W", "n_steps", "t"))
    supplementary = sympy.pi * (n - t) / (n - W)
    for form in (lo + (hi - lo) / 2 * (1 - sympy.cos(supplementary)),
                 lo + (hi - lo) / 2 * (1 + sympy.sin(supplementary - sympy.pi / 2)),
                 lo + (hi - lo) / 2 * (1 - sympy.cos(supplementary + 2 * sympy.pi))):
        assert check.judge(reference, form).status == PASS, form
    # a shift by something other than a multiple of π/2 is not an identity, and is still refused
    assert check.judge(reference, lo + (hi - lo) / 2 * (1 - sympy.cos(supplementary + 1))).status == FAIL
    assert check.judge(reference, lo + (hi - lo) / 2 * (1 + sympy.cos(supplementary))).status == FAIL
