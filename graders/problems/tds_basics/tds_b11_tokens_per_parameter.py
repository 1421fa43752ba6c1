"""tds-b11-tokens-per-parameter: tokens per parameter, training compute, and over-training.

The term. A model of N parameters trained on D tokens has seen D / N tokens per parameter, and its
training cost is close to C = 6 N D FLOPs: about 2N per token for the forward pass and twice that
for the backward pass (Kaplan et al. 2020, "Scaling Laws for Neural Language Models", section 2.1).
Hoffmann et al. (2022, "Training Compute-Optimal Large Language Models") found that for a fixed C
the loss is lowest with N and D grown in step, and trained Chinchilla, 70B parameters on 1.4T
tokens: 20 tokens per parameter, the ratio now called Chinchilla-optimal. A model trained on many
more tokens per parameter than that is *over-trained*: it spends extra training compute to be
small at inference time (Llama 3 8B on about 15T tokens is the standard example).

Answers, for the variant's `models` (name, N, D): `tokens_per_param` (D / N), `compute` (6 N D, in
FLOPs) and `chinchilla_multiple` ((D / N) / 20, how many times Chinchilla's ratio), one per model.
"""
from __future__ import annotations

import math

from graders.numeric import Numbers
from graders.problem import Mistake, Problem

CHINCHILLA_RATIO = 1.4e12 / 70e9      # Hoffmann et al. 2022: 70B parameters, 1.4T tokens


def _read(q):
    models = [(str(m["name"]), float(m["N"]), float(m["D"])) for m in q["models"]]
    if not models or any(not (n > 0 and d > 0) for _, n, d in models):
        raise ValueError("every model needs N > 0 and D > 0")
    return models


def _answers(q, *, flops_per=6.0, inverted=False, against_tokens=False):
    models = _read(q)
    ratios = [(n / d) if inverted else (d / n) for _, n, d in models]
    multiples = [d / 1.4e12 for _, n, d in models] if against_tokens else [r / CHINCHILLA_RATIO for r in ratios]
    return {"tokens_per_param": ratios, "compute": [flops_per * n * d for _, n, d in models],
            "chinchilla_multiple": multiples}


def _changed(q, **kw):
    right, wrong = _answers(q), _answers(q, **kw)
    return {key: wrong[key] for key in right
            if any(not math.isclose(a, b, rel_tol=1e-9) for a, b in zip(wrong[key], right[key]))}


def _model(name, n, d):
    return {"name": name, "N": n, "D": d}


class TokensPerParameterBasics(Problem):
    id = "tds-b11-tokens-per-parameter"
    title = "Tokens per parameter: D/N, 6ND, and how far past Chinchilla a model was trained"
    strand = "basics"
    kind = "basics"
    assignment = "tds-basics"
    # Published sizes and token counts: OPT-175B on 180B (Zhang et al. 2022); Gopher 280B on
    # 300B (Hoffmann et al. 2022); LLaMA 7B and 13B on 1T and 65B on 1.4T
    # (Touvron et al. 2023a); Llama 2 7B on 2T (Touvron et al. 2023b); Llama 3 8B and 70B on
    # about 15T (Meta 2024) and Llama 3 405B on 15.6T (Llama 3 Herd report); PaLM 540B on 780B
    # (Chowdhery et al. 2022); TinyLlama 1.1B on 3T (Zhang et al. 2024); BLOOM 176B on 366B
    # (BigScience 2022). Parameter counts are the
    # nominal ones in the models' names, as the papers write them.
    variants = {
        "A": {"models": [_model("OPT-175B", 175e9, 180e9), _model("LLaMA 13B", 13e9, 1e12),
                         _model("Llama 3 8B", 8e9, 15e12)]},
        "B": {"models": [_model("Gopher 280B", 280e9, 300e9), _model("LLaMA 65B", 65e9, 1.4e12),
                         _model("Llama 2 7B", 7e9, 2e12)]},
        "C": {"models": [_model("PaLM 540B", 540e9, 780e9), _model("LLaMA 7B", 7e9, 1e12),
                         _model("Llama 3 70B", 70e9, 15e12)]},
        "D": {"models": [_model("Llama 3 405B", 405e9, 15.6e12), _model("TinyLlama 1.1B", 1.1e9, 3e12),
                         _model("BLOOM 176B", 176e9, 366e9)]},
    }
    checks = {"tokens_per_param": Numbers(rtol=1e-4), "compute": Numbers(rtol=1e-4),
              "chinchilla_multiple": Numbers(rtol=1e-4)}
    cells = {"check_tokens": ("tokens_per_param", "compute", "chinchilla_multiple")}

    def solve(self, params):
        return _answers(params)

    mistakes = (
        Mistake("forward-only-compute",
                "the compute counted the forward pass alone, 2ND; training also runs the backward pass, about "
                "twice the forward, so C is close to 6ND.",
                lambda q: _changed(q, flops_per=2.0),
                instant="which passes a training step runs for every token."),
        Mistake("ratio-inverted",
                "parameters per token, N / D, was given; the ratio asked is tokens per parameter, D / N.",
                lambda q: _changed(q, inverted=True),
                instant="which quantity is counted per which in the ratio."),
        Mistake("chinchilla-tokens-not-ratio",
                "the token count was compared with Chinchilla's 1.4T tokens; the multiple compares ratios, "
                "(D / N) / 20, so a model's size matters.",
                lambda q: _changed(q, against_tokens=True),
                instant="whether the comparison with Chinchilla is about tokens or about tokens per parameter."),
    )


PROBLEM = TokensPerParameterBasics()
