"""e03-weight-decay: decoupled weight decay (AdamW as torch implements it) versus an L2 penalty.

torch.optim.AdamW applies the decay before the Adam update, as a multiplication:
    θ ← θ · (1 − η λ)          (lr η, weight_decay λ)
then subtracts η · m̂ / (√v̂ + ε). With a zero gradient the Adam part is exactly 0
(m = v = 0, so m̂ / (√v̂ + ε) = 0), and after n steps at constant η a weight has
been multiplied by (1 − ηλ)^n: the shrink factor. Its e-folding time is about
1/(ηλ) steps (Wang & Aitchison 2024 read AdamW as an exponential moving average
of updates with this timescale).

torch.optim.Adam(weight_decay=λ) is an L2 penalty instead: it adds λθ to the
gradient, and that sum goes through Adam's normalisation (Loshchilov & Hutter
2019, Algorithm 2, "Adam with L2 regularization" versus "AdamW"). On the first
step from θ = 1 with a zero loss gradient, Adam moves the weight by
η · λ / (λ + ε) ≈ η, whatever λ is; AdamW moves it by η λ.

Numbers of the variants (real runs):
- A: nanoGPT config/train_shakespeare_char.py: learning_rate 1e-3, max_iters 5000,
  weight_decay 0.1 (train.py default).
- B: karpathy/build-nanogpt train_gpt2.py: max_lr 6e-4, weight_decay 0.1, 19073 steps.
- C: GPT-3 175B (Brown et al. 2020, Table 2.1 and Appendix B): 0.6e-4, weight decay
  0.1, 260B tokens of cosine at 3.2M tokens per step = 81,250 steps.
- D: Llama 2 7B (Touvron et al. 2023, §2.2): 3.0e-4, weight decay 0.1, 2.0T tokens
  at 4M tokens per step ≈ 500,000 steps.
The shrink is asked at constant η (an upper bound on the lr a cosine run spends).

The torch check runs min(steps, 10 000) AdamW steps: enough to test the formula,
short enough for a notebook cell on a CPU.
"""
import math

import sympy

from graders.numeric import Number
from graders.problem import Mistake, Problem
from graders.symbolic import Expr, symbols_for

EXPR_SYMBOLS = ("eta", "lambda", "t")
TORCH_STEPS = 10_000      # AdamW steps the student runs in torch (at most)
ADAM_EPS = 1e-8           # torch.optim.Adam / AdamW default eps


def _read(q):
    out = []
    for name in ("lr", "weight_decay"):
        value = q[name]
        if isinstance(value, bool) or not isinstance(value, (int, float)) \
                or not math.isfinite(value) or value <= 0:
            raise ValueError(f"{name} must be a positive number, not {value!r}")
        out.append(float(value))
    lr, wd = out
    if lr * wd >= 1:
        raise ValueError(f"lr * weight_decay = {lr * wd:g} must be below 1, or each step would "
                         f"flip or zero the weights")
    steps = q["steps"]
    if isinstance(steps, bool) or not isinstance(steps, (int, float)) or not math.isfinite(steps) \
            or steps != int(steps) or steps < 0:
        raise ValueError(f"steps must be a whole number >= 0, not {steps!r}")
    return lr, wd, int(steps)


def torch_steps(params) -> int:
    """AdamW steps the torch check runs for these params."""
    return min(_read(params)[2], TORCH_STEPS)


def shrink(lr, wd, n):
    """(1 − lr·wd)^n, computed without loss of precision for tiny lr·wd."""
    return math.exp(n * math.log1p(-lr * wd))


def idle_weight_path(lr, weight_decay, n, betas=(0.9, 0.999), eps=1e-8):
    """A weight started at 1 with zero loss gradient, after each of 0..n steps of
    torch.optim.Adam(lr, weight_decay=...): an L2 penalty, so its gradient is weight_decay * w.

    The recursion torch's single-tensor Adam runs, in floats: m <- b1 m + (1 - b1) g,
    v <- b2 v + (1 - b2) g^2, w <- w - (lr / (1 - b1^t)) m / (sqrt(v) / sqrt(1 - b2^t) + eps).
    (The defaults are torch's; the notebook's figure holds this function verbatim.)
    """
    (b1, b2), w, m, v, path = betas, 1.0, 0.0, 0.0, [1.0]
    for t in range(1, n + 1):
        g = weight_decay * w
        m, v = b1 * m + (1 - b1) * g, b2 * v + (1 - b2) * g * g
        w -= lr / (1 - b1 ** t) * m / (math.sqrt(v) / math.sqrt(1 - b2 ** t) + eps)
        path.append(w)
    return path


def adam_l2_value(lr, wd, n):
    """θ after n steps of torch.optim.Adam(lr, weight_decay=wd) with a zero loss gradient, from 1."""
    return idle_weight_path(lr, wd, n)[-1]


def _answers(q, *, decay_without_lr=False):
    lr, wd, n = _read(q)
    rate = wd if decay_without_lr else lr * wd
    s = symbols_for(EXPR_SYMBOLS)
    per_step = s["lambda"] if decay_without_lr else s["eta"] * s["lambda"]
    return {
        "shrink_factor": shrink(1.0, rate, n),
        "timescale_steps": 1.0 / rate,
        "shrink_expr": (1 - per_step) ** s["t"],
        "adamw_factor": shrink(1.0, rate, min(n, TORCH_STEPS)),
        "l2_first_step": lr * wd / (wd + ADAM_EPS),
    }


class WeightDecayProblem(Problem):
    id = "e03-weight-decay"
    title = "Decoupled weight decay (AdamW) versus an L2 penalty"
    strand = "mathematics"
    kind = "exercise"
    assignment = "exercises"
    symbols = EXPR_SYMBOLS
    variants = {
        "A": {"lr": 1e-3, "weight_decay": 0.1, "steps": 5000},      # nanoGPT Shakespeare-char
        "B": {"lr": 6e-4, "weight_decay": 0.1, "steps": 19073},     # build-nanogpt GPT-2 124M
        "C": {"lr": 6e-5, "weight_decay": 0.1, "steps": 81_250},    # GPT-3 175B
        "D": {"lr": 3e-4, "weight_decay": 0.1, "steps": 500_000},   # Llama 2 7B
    }
    checks = {
        "shrink_factor": Number(rtol=1e-3),
        "timescale_steps": Number(rtol=1e-3),
        "shrink_expr": Expr(symbols=EXPR_SYMBOLS, ranges=(("eta", (1e-5, 1e-2)), ("lambda", (0.0, 0.3)))),
        # measured in torch; float64 is asked for, float32 drifts by ~1e-4 over 10k steps
        "adamw_factor": Number(rtol=2e-3),
        "l2_first_step": Number(rtol=1e-3),
    }
    cells = {
        "check_expr": ("shrink_expr",),
        "check_numbers": ("shrink_factor", "timescale_steps"),
        "check_torch": ("adamw_factor", "l2_first_step"),
    }

    def solve(self, params):
        return _answers(params)

    mistakes = (
        Mistake(
            "decay-without-lr",
            "the decay was applied as λ per step; torch.optim.AdamW multiplies the weights by "
            "(1 − ηλ): the decay is scaled by the learning rate.",
            lambda q: {k: v for k, v in _answers(q, decay_without_lr=True).items()
                       if k != "l2_first_step"},
            instant="how torch.optim.AdamW scales its decay.",
        ),
        Mistake(
            "linear-not-compound",
            "the decay was added up linearly (1 − ηλ·steps); each step multiplies the weight "
            "that the previous step left, so the factors compound.",
            lambda q: {"shrink_factor": 1 - _read(q)[0] * _read(q)[1] * _read(q)[2],
                       "shrink_expr": 1 - sympy.Symbol("eta", positive=True)
                       * sympy.Symbol("lambda", positive=True) * sympy.Symbol("t", positive=True)},
            instant="what each step's decay acts on.",
        ),
        Mistake(
            "half-life",
            "that is a half-life (ln 2 / (ηλ)); the timescale asked for is the e-folding time "
            "1/(ηλ).",
            lambda q: {"timescale_steps": math.log(2) / (_read(q)[0] * _read(q)[1])},
            instant="which timescale the question defines.",
        ),
        Mistake(
            "continuous-approximation",
            "exp(−ηλt) is the continuous-time approximation; the optimiser takes discrete "
            "steps, each multiplying by (1 − ηλ).",
            lambda q: {"shrink_expr": sympy.exp(-sympy.Symbol("eta", positive=True)
                                                * sympy.Symbol("lambda", positive=True)
                                                * sympy.Symbol("t", positive=True))},
            instant="the discrete steps the optimiser takes.",
        ),
        Mistake(
            "l2-same-as-decoupled",
            "an L2 penalty inside Adam was treated like decoupled decay; its gradient λθ is "
            "divided by Adam's √v̂ like any other gradient, which changes the size of the step.",
            lambda q: {"l2_first_step": _read(q)[0] * _read(q)[1]},
            instant="what Adam's normalisation does to a penalty's gradient.",
        ),
        Mistake(
            "adam-not-adamw",
            "this is what torch.optim.Adam(weight_decay=λ) gives: an L2 penalty, not decoupled "
            "decay. Use torch.optim.AdamW.",
            lambda q: {"adamw_factor": adam_l2_value(_read(q)[0], _read(q)[1], torch_steps(q))},
            instant="which optimiser class applies decoupled decay.",
        ),
    )


PROBLEM = WeightDecayProblem()
