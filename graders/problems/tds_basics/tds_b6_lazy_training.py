"""tds-b6-lazy-training: how far the weights travel, relative to where they started.

The term. Training is *lazy* (in the kernel regime) when the weights end close to their
initialisation relative to their own size, so the network behaves like its first-order Taylor
expansion around the initial weights and its tangent kernel hardly moves (Jacot, Gabriel and
Hongler 2018, "Neural Tangent Kernel", NeurIPS; Lee et al. 2019, "Wide Neural Networks of Any
Depth Evolve as Linear Models Under Gradient Descent", NeurIPS; Chizat, Oyallon and Bach 2019,
"On Lazy Training in Differentiable Programming", NeurIPS). The number that measures it is the
relative change of a weight matrix over a run,

    relative change = ||W_T - W_0||_F / ||W_0||_F .

In the NTK parametrisation, for the input-to-hidden matrix of a network of width n (n x d, unit
Gaussian entries, the layer's output divided by sqrt(d), the readout by sqrt(n)), each of the n
rows moves by O(1/sqrt(n)) while ||W_0||_F grows as sqrt(n d); the relative change therefore
falls as 1/sqrt(n) at a fixed number of steps and a fixed rate (the test reproduces this with a
small numpy run).

Answers, for a logged run of width `width` with the Frobenius norms `init_norm` (||W_0||),
`final_norm` (||W_T||) and `change_norm` (||W_T - W_0||): `relative_change` (a float) and
`predicted_changes`, the relative change the 1/sqrt(width) law predicts at each of `other_widths`.
"""
from __future__ import annotations

import math

from graders.numeric import Number, Numbers
from graders.problem import Mistake, Problem


def _read(q):
    n, w0, wt, dw = float(q["width"]), float(q["init_norm"]), float(q["final_norm"]), float(q["change_norm"])
    others = [float(w) for w in q["other_widths"]]
    if not (n > 0 and w0 > 0 and wt > 0 and dw > 0) or not others or any(not w > 0 for w in others):
        raise ValueError("the width, the three norms and every other width must be positive")
    return n, w0, wt, dw, others


def _answers(q, *, denominator="init", numerator="change", power=0.5):
    n, w0, wt, dw, others = _read(q)
    top = dw if numerator == "change" else abs(wt - w0)
    rel = top / (w0 if denominator == "init" else wt)
    return {"relative_change": rel, "predicted_changes": [rel * (n / w) ** power for w in others]}


def _changed(q, **kw):
    right, wrong = _answers(q), _answers(q, **kw)
    out = {}
    if not math.isclose(wrong["relative_change"], right["relative_change"], rel_tol=1e-6):
        out["relative_change"] = wrong["relative_change"]
    if any(not math.isclose(a, b, rel_tol=1e-6) for a, b in zip(wrong["predicted_changes"], right["predicted_changes"])):
        out["predicted_changes"] = wrong["predicted_changes"]
    return out


class LazyTrainingBasics(Problem):
    id = "tds-b6-lazy-training"
    title = "Lazy training: the relative change of the weights, and how it scales with width"
    strand = "basics"
    kind = "basics"
    assignment = "tds-basics"
    # NTK-parametrised two-layer ReLU networks of the sizes NTK experiments use (MNIST's d = 784,
    # CIFAR-10's d = 3072 flattened, a 100-feature regression task, a 512-dimensional embedding);
    # ||W_0||_F is close to sqrt(width * d), as unit Gaussian entries give. The three norms are
    # made up, as a run's log would print them; they are not taken from a paper.
    variants = {
        "A": {"width": 256, "d": 784, "init_norm": 448.3, "final_norm": 448.9, "change_norm": 18.6,
              "other_widths": [1024, 4096, 16384]},
        "B": {"width": 1024, "d": 3072, "init_norm": 1773.1, "final_norm": 1773.4, "change_norm": 31.2,
              "other_widths": [256, 4096, 65536]},
        "C": {"width": 128, "d": 100, "init_norm": 113.4, "final_norm": 114.6, "change_norm": 9.7,
              "other_widths": [512, 2048, 8192]},
        "D": {"width": 2048, "d": 512, "init_norm": 1024.6, "final_norm": 1024.9, "change_norm": 12.9,
              "other_widths": [512, 8192, 32768]},
    }
    checks = {"relative_change": Number(rtol=1e-4), "predicted_changes": Numbers(rtol=1e-4)}
    cells = {"check_lazy": ("relative_change", "predicted_changes")}

    def solve(self, params):
        return _answers(params)

    mistakes = (
        Mistake("change-of-the-norm",
                "the change of the norm, | ||W_T|| - ||W_0|| |, was used in place of the norm of the change, "
                "||W_T - W_0||; a matrix can rotate a long way while its norm barely moves.",
                lambda q: _changed(q, numerator="norms"),
                instant="the distinction between the norm of the change and the change of the norm."),
        Mistake("final-norm-reference",
                "the change was measured against ||W_T||; the relative change is taken against where the "
                "weights started, ||W_0||.",
                lambda q: _changed(q, denominator="final"),
                instant="which matrix the relative change is measured against."),
        Mistake("one-over-width",
                "the prediction used 1/width; in the NTK parametrisation each row moves by O(1/sqrt(n)) and "
                "||W_0|| grows as sqrt(n d), so the ratio falls as 1/sqrt(width).",
                lambda q: _changed(q, power=1.0),
                instant="the width exponent of the relative change in the kernel parametrisation."),
        Mistake("scaling-reversed",
                "the prediction grew with width; wider networks move their weights relatively less in the "
                "NTK parametrisation, by sqrt(width / other_width).",
                lambda q: _changed(q, power=-0.5),
                instant="how laziness depends on width in the kernel parametrisation."),
    )


PROBLEM = LazyTrainingBasics()
