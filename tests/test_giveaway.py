"""The feedback policy (graders/giveaway.py) and the gate's checks that hold texts to it."""
import nbformat
import pytest
import sympy

from graders import giveaway, numeric, symbolic
from graders.course import gate
from graders.course.cards import Card
from graders.engine.grading import instant_lines
from graders.problem import Mistake, Problem
from graders.problems import get


# --- instant texts --------------------------------------------------------------------------
@pytest.mark.parametrize("text", [
    "one power of two too large.",          # w3, t1 as issue 27 found them
    "one short.",                            # t1 fencepost
    "one more.",                             # t4 index-not-count
    "one step more.",                        # tds-c1
    "the answer is 1 − x.",                  # busy-share
    "the answer was divided by 2**30.",      # gib-not-bytes
    "the interval is √(2δΘ).",               # e06 young-without-2
    "the ratio is inverted.",                # inverted-ratio
    "which way round the batch ratio of the rule is formed.",   # tds-b8, the same inversion in other words
    "a percentage, not a fraction.",         # percent-not-fraction
    "in hours, not days.",                   # seconds-/hours-not-days
    "the threshold is 2/S.",                 # tds-e1
    "the L-th root of the target.",          # tds-b3
])
def test_an_instant_text_with_a_direction_factor_conversion_number_or_formula_is_refused(text):
    assert giveaway.instant_reasons(text)


@pytest.mark.parametrize("text", ["the fp32 master copy of the weights.",
                                  "the partial batch at the end of each epoch.",
                                  "the unit the notation asks for."])
def test_an_instant_text_that_names_the_idea_passes(text):
    assert giveaway.instant_reasons(text) == []


def test_a_mistake_without_an_instant_text_is_refused():
    assert giveaway.instant_reasons("") == ["has no instant text"]


def test_names_with_digits_are_not_numbers():
    assert giveaway.instant_reasons("the fp32 copy, bf16 weights and E4M3 scales of GPT-2.") == []


# --- values as they are printed ----------------------------------------------------------------
def values(text):
    return {p.value for p in giveaway.printed_values(text)}


def test_printed_values_read_percent_units_and_powers_of_ten():
    assert 0.25 in values("a quarter: 25% of the steps")
    assert 4e9 in values("4 GB of memory")
    assert 2.0**30 * 3 in values("3 GiB")
    assert 1.6e9 in values("1.6 × 10⁹ tokens") and 1.6e9 in values("1.6e9 tokens")
    assert 1024 in values("1,024 GPUs")
    assert values("fp32 and bf16 on GPT-2") == set()


def test_a_reference_is_given_away_rounded_for_print_or_within_its_tolerance():
    (rounded,) = [p for p in giveaway.printed_values("about 16.3 s") if p.value == 16.3]
    assert giveaway.gives_value(rounded, 16.27, 1e-3)
    assert not giveaway.gives_value(rounded, 16.2, 1e-3)
    (one_digit,) = giveaway.printed_values("about 2 s")
    assert not giveaway.gives_value(one_digit, 2.4, 1e-3)     # one digit rounds too much to tell
    assert giveaway.gives_value(one_digit, 2.0, 1e-3)
    (unit,) = giveaway.printed_values("0 or 1")[1:]
    assert not giveaway.gives_value(unit, 1.0, 1e-3)          # the values every prose says


# --- formulas in prose --------------------------------------------------------------------------
def test_formulas_are_read_from_latex_and_plain_notation_through_the_safe_reader():
    names = ("delta", "Theta", "B", "b", "P", "eta", "lambda", "n_stages", "n_micro")
    young = sympy.sqrt(2 * sympy.Symbol("delta", positive=True) * sympy.Symbol("Theta", positive=True))
    for text in (r"the optimum is $\sqrt{2\delta\Theta}$.", "the optimum is √(2δΘ).",
                 r"$$\tau = \sqrt{2 \cdot \delta \cdot \Theta}$$"):
        found = giveaway.formulas(text, names)
        assert any(sympy.simplify(e - young) == 0 for e in found), text
    ratio = giveaway.formulas(r"$\frac{n_{\text{stages}}-1}{n_\text{micro}+n_\text{stages}-1}$", names)
    s, m = sympy.Symbol("n_stages", positive=True), sympy.Symbol("n_micro", positive=True)
    assert any(sympy.simplify(e - (s - 1) / (m + s - 1)) == 0 for e in ratio)
    eta, lam = sympy.Symbol("eta", positive=True), sympy.Symbol("lambda", positive=True)
    assert any(sympy.simplify(e - (1 - eta * lam)) == 0 for e in giveaway.formulas("shrinks by 1 − ηλ", names))


def test_only_the_items_notation_is_read():
    assert giveaway.formulas("x / y + z", ("N",)) == ()


def test_a_stated_expression_is_found_as_mathematics_and_a_different_one_is_not():
    problem = get("e06-checkpointing")
    check = problem.checks["interval_expr"]
    refs = [problem.reference(q)["interval_expr"] for q in problem.variants.values()]
    assert giveaway.states_expression("take √(2·Θ·δ) seconds", "interval_expr", check, refs) is not None
    assert giveaway.states_expression(r"take $\sqrt{\delta\Theta}$ seconds", "interval_expr", check, refs) is None


# --- the gate ----------------------------------------------------------------------------------
N = sympy.Symbol("N", positive=True)


class Toy(Problem):
    id = "toy"
    kind = "exercise"
    symbols = ("N",)
    variants = {"A": {"n": 2}, "B": {"n": 3}, "C": {"n": 5}, "D": {"n": 7}}
    checks = {"bytes": numeric.Number(), "bytes_expr": symbolic.Expr(symbols=("N",))}
    mistakes = (
        Mistake("no-master-copy", "the fp32 master copy was left out: 12N, not 16N.",
                lambda q: {"bytes": 12 * q["n"], "bytes_expr": 12 * N},
                instant="the fp32 master copy of the weights."),
        Mistake("moments-in-bf16", "the moments were counted in bf16.",
                lambda q: {"bytes": 10 * q["n"]} if q["n"] > 2 else {},   # cannot be made in A
                instant="the precision of Adam's moments."),
        Mistake("no-gradient", "the gradient was left out.", lambda q: {"bytes": 14 * q["n"]},
                instant="the gradient buffer."),
    )

    def solve(self, params):
        return {"bytes": 16 * params["n"], "bytes_expr": 16 * N}


def toy_reasons(tmp_path, monkeypatch, cards=(), prose="", problem=None):
    monkeypatch.setattr("graders.course.cards.item_cards", lambda item: [Card("toy", f, b, "s") for f, b in cards])
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell(prose)])
    (tmp_path / "release" / "a").mkdir(parents=True)
    nbformat.write(nb, tmp_path / "release" / "a" / "toy.ipynb")
    return gate.giveaway_reasons(tmp_path, "a/toy", problem or Toy())


def test_the_gate_passes_an_item_that_keeps_the_policy(tmp_path, monkeypatch):
    assert toy_reasons(tmp_path, monkeypatch, cards=[("What does Adam keep?", "Two moments per weight.")],
                       prose="Count the bytes each parameter needs.") == []
    assert gate.mistake_reasons(Toy()) == []


def test_the_gate_refuses_a_card_with_a_reference_value_or_expression(tmp_path, monkeypatch):
    reasons = toy_reasons(tmp_path, monkeypatch, cards=[("Bytes for n = 5?", "80 bytes."),
                                                          ("In general?", "16 N bytes.")])
    assert any("card 1 prints '80'" in r for r in reasons)
    assert any("card 2 states bytes_expr" in r for r in reasons)


def test_the_gate_refuses_prose_that_states_a_graded_expression_but_not_in_a_worked_problem(tmp_path, monkeypatch):
    prose = r"Each parameter costs $16N$ bytes in all."
    assert any("released notebook states bytes_expr" in r for r in toy_reasons(tmp_path, monkeypatch, prose=prose))
    worked = Toy()
    worked.kind = "worked"
    assert toy_reasons(tmp_path / "w", monkeypatch, prose=prose, problem=worked) == []


def test_the_gate_refuses_an_instant_text_that_gives_the_way_back(tmp_path, monkeypatch):
    toy = Toy()
    toy.mistakes = (Mistake("no-master-copy", "left out", lambda q: {"bytes": 12 * q["n"]},
                            instant="four bytes too few."),) + Toy.mistakes[1:]
    reasons = toy_reasons(tmp_path, monkeypatch, problem=toy)
    assert any("'no-master-copy''s instant text gives" in r for r in reasons)


def test_the_gate_refuses_a_variant_its_item_says_has_broken_down(tmp_path, monkeypatch):
    toy = Toy()
    toy.breakdown = lambda params: ["the waste share is above 1"] if params["n"] == 7 else []
    assert toy_reasons(tmp_path, monkeypatch, problem=toy) == ["toy: variant D cannot run: the waste share is above 1"]


def test_the_gate_refuses_a_mistake_that_gives_the_reference_in_a_variant():
    toy = Toy()
    toy.mistakes = Toy.mistakes[:2] + (Mistake("lucky", "x", lambda q: {"bytes": 14 * q["n"] if q["n"] != 3 else 48},
                                               instant="the gradient buffer."),)
    assert gate.mistake_reasons(toy) == ["toy: mistake 'lucky' gives the right answers in variant B"]


def test_instant_feedback_shows_the_instant_text_and_never_the_released_one():
    toy = Toy()
    result = toy.grade({"n": 2}, {"bytes": 24, "bytes_expr": 12 * N})
    released = " ".join(result.feedback)
    assert "12N, not 16N" in released
    lines = " ".join(instant_lines(toy, result))
    assert "Look again at: the fp32 master copy of the weights." in lines
    assert "12N" not in lines and "16N" not in lines
