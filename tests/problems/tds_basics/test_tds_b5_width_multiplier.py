"""tds-b5-width-multiplier: muP's Adam rules (Tensor Programs V, in the form of its Table 8) at the variants' widths."""
import numpy as np

from graders import problems

P = problems.get("tds-b5-width-multiplier")


def test_base_width_keeps_the_base_rate_and_rates_fall_as_one_over_m():
    for q in P.variants.values():
        r = P.solve(q)
        for w, m, lr, out in zip(q["widths"], r["width_multipliers"], r["hidden_lrs"], r["output_multipliers"]):
            assert np.isclose(m * q["base_width"], w)
            assert np.isclose(lr * w, q["base_lr"] * q["base_width"])     # eta * fan_in constant
            assert np.isclose(out * m, 1.0)


def test_agrees_with_the_rate_tds_t1_derives():
    t1 = problems.get("tds-t1-mup-transfer")
    q = P.variants["A"]
    assert np.allclose(P.solve(q)["hidden_lrs"], t1.solve(q)["sp_best_lrs"])


def test_the_output_multiplier_is_cited_to_table_8():
    """Tensor Programs V's Table 3 writes muP through initialisation variances and learning rates;
    the output logits multiplied by 1/m are the equivalent form of its Table 8, which microsoft/mup
    implements. Wherever the course multiplies the logits by 1/m and cites Table 3, it cites Table 8."""
    import re
    import tomllib

    from tests.conftest import REPO
    wrong = []
    for path in [*REPO.glob("source/*/*.pct.py"), *REPO.glob("graders/problems/*/*.py"), *REPO.glob("tests/**/*.py")]:
        prose = " ".join(re.sub(r"^\s*#\s?", "", line) for line in path.read_text().splitlines())
        for match in re.finditer(r"Table 3", prose):
            around = prose[max(0, match.start() - 250):match.end() + 250]
            if "Tensor Programs" in prose and "logits" in around and "1/m" in around and "Table 8" not in around:
                wrong.append((path.relative_to(REPO).as_posix(), around))
    for path in REPO.glob("graders/problems/*/*.cards.toml"):
        for card in tomllib.loads(path.read_text())["card"]:
            if "logits" in card["back"] and "Table 3" in card["source"] and "Table 8" not in card["source"]:
                wrong.append((path.relative_to(REPO).as_posix(), card["source"]))
    assert not wrong, wrong
