"""tds-b8-linear-scaling-rule: moving a tuned learning rate to a new batch size.

The term. A learning rate is tuned at one batch size B_0; the batch then changes (more devices,
a different accumulation). Two rules carry the rate across, with k = B / B_0:
- the linear scaling rule, eta = eta_0 * k: "When the minibatch size is multiplied by k, multiply
  the learning rate by k" (Goyal et al. 2017, "Accurate, Large Minibatch SGD: Training ImageNet in
  1 Hour", section 2.1; section 5.1 writes it eta = 0.1 * kn / 256 for ResNet-50, and at kn = 8k
  = 8192 it gives 3.2, Table 1);
- the square-root rule, eta = eta_0 * sqrt(k), which keeps the size of the gradient noise per
  step fixed (Krizhevsky 2014, "One weird trick for parallelizing convolutional neural
  networks"); Malladi, Lyu, Panigrahi and Arora (2022, "On the SDEs and Scaling Rules for
  Adaptive Gradient Algorithms", NeurIPS) derive it for Adam and RMSprop (where it also moves the
  betas and epsilon, which this item does not grade).
Both stop working past the critical batch size (II.8 t3-critical-batch): Goyal et al.'s error
rises from 8k to 16k and training diverges beyond 64k (section 5.3, Fig. 1).

Answers, for the variant's `base_lr` at `base_batch` and the `new_batches`: `linear_lrs` and
`sqrt_lrs`, the rate at each new batch under each rule.
"""
from __future__ import annotations

import math

from graders.numeric import Numbers
from graders.problem import Mistake, Problem


def _read(q):
    lr, b0 = float(q["base_lr"]), float(q["base_batch"])
    batches = [float(b) for b in q["new_batches"]]
    if not (lr > 0 and b0 > 0) or not batches or any(not b > 0 for b in batches):
        raise ValueError("base_lr, base_batch and every new batch must be positive")
    return lr, b0, batches


def _answers(q, *, inverted=False, linear_power=1.0, sqrt_power=0.5):
    lr, b0, batches = _read(q)
    ks = [(b0 / b) if inverted else (b / b0) for b in batches]
    return {"linear_lrs": [lr * k ** linear_power for k in ks], "sqrt_lrs": [lr * k ** sqrt_power for k in ks]}


def _changed(q, **kw):
    right, wrong = _answers(q), _answers(q, **kw)
    return {key: wrong[key] for key in right
            if any(not math.isclose(a, b, rel_tol=1e-9) for a, b in zip(wrong[key], right[key]))}


class LinearScalingRuleBasics(Problem):
    id = "tds-b8-linear-scaling-rule"
    title = "The linear and the square-root scaling rule: a tuned rate at a new batch size"
    strand = "basics"
    kind = "basics"
    assignment = "tds-basics"
    # A Goyal et al. 2017's ResNet-50 on ImageNet (momentum SGD, 0.1 at 256 images; 8k and 16k
    # are Fig. 1's last good and first degraded batch); B GPT-3 125M (Brown et al. 2020, Table
    # 2.1: Adam, 6.0e-4 at 0.5M tokens), batches in tokens; C Llama 2 7B (Touvron et al. 2023,
    # section 2.2: AdamW, 3.0e-4 at 4M tokens), moved to smaller and larger batches; D BERT-base
    # pre-training (Devlin et al. 2019, appendix A.2: Adam, 1e-4 at 256 sequences), moved to the
    # larger batches later BERT recipes used.
    variants = {
        "A": {"base_lr": 0.1, "base_batch": 256, "new_batches": [1024, 8192, 16384]},
        "B": {"base_lr": 6e-4, "base_batch": 524288, "new_batches": [1048576, 2097152, 4194304]},
        "C": {"base_lr": 3e-4, "base_batch": 4194304, "new_batches": [1048576, 2097152, 8388608]},
        "D": {"base_lr": 1e-4, "base_batch": 256, "new_batches": [512, 2048, 8192]},
    }
    checks = {"linear_lrs": Numbers(rtol=1e-6), "sqrt_lrs": Numbers(rtol=1e-6)}
    cells = {"check_scaling": ("linear_lrs", "sqrt_lrs")}

    def solve(self, params):
        return _answers(params)

    mistakes = (
        Mistake("ratio-inverted",
                "the ratio was taken as B_0 / B; a bigger batch averages more gradients, so the rule moves the "
                "rate the same way as the batch, k = B / B_0.",
                lambda q: _changed(q, inverted=True),
                instant="how the linear scaling rule ties the rate to the batch."),
        Mistake("square-root-as-linear",
                "the square-root rule was applied where the linear rule was asked; Goyal et al.'s rule multiplies "
                "the rate by k itself.",
                lambda q: _changed(q, linear_power=0.5),
                instant="which rule Goyal et al. state for momentum SGD."),
        Mistake("linear-as-square-root",
                "the linear rule was applied where the square-root rule was asked; the square-root rule multiplies "
                "the rate by sqrt(k), which keeps the gradient noise per step fixed.",
                lambda q: _changed(q, sqrt_power=1.0),
                instant="what the square-root rule keeps fixed as the batch changes."),
    )


PROBLEM = LinearScalingRuleBasics()
