"""t1-range-before-speed: the scaler against torch's own GradScaler, the casts against torch, the
limits against what the sources print, and the grader against mistakes and bad input."""
import math
import random

import pytest
import sympy
import torch

from graders import problems
from graders.problems.theory import t1_range_before_speed as t1

PROBLEM = problems.get("t1-range-before-speed")

# --- (a) primary sources -----------------------------------------------------------------------
# torch.amp.GradScaler's documented defaults; initial scales printed by Megatron-LM
# (--initial-loss-scale 2**32) and fairseq (--fp16-init-scale 2**7).
GRADSCALER_DEFAULTS = {"init_scale": 2.0 ** 16, "growth_factor": 2.0, "backoff_factor": 0.5,
                       "growth_interval": 2000}
PRINTED_INITIAL_SCALES = {"A": 2.0 ** 16, "B": 2.0 ** 32, "C": 2.0 ** 16, "D": 2.0 ** 7}
# IEEE binary16 (and Micikevicius et al. 2018, section 3.2): largest finite value 65,504;
# section 3.1: below 2^-24 values become zero. bfloat16: 7 fraction bits, so the relative rounding
# error of a normal number is at most 2^-8 (half a unit in the last place).
FP16_MAX, FP16_MIN_SUBNORMAL, BF16_REL_BOUND = 65504.0, 2.0 ** -24, 2.0 ** -8


def test_gradscaler_defaults_are_as_documented():
    scaler = torch.amp.GradScaler("cpu")
    assert scaler.get_scale() == GRADSCALER_DEFAULTS["init_scale"]
    assert scaler.get_growth_factor() == GRADSCALER_DEFAULTS["growth_factor"]
    assert scaler.get_backoff_factor() == GRADSCALER_DEFAULTS["backoff_factor"]
    assert scaler.get_growth_interval() == GRADSCALER_DEFAULTS["growth_interval"]


@pytest.mark.parametrize("label", "ABCD")
def test_variants_use_printed_scaler_settings(label):
    params = PROBLEM.variants[label]
    assert params["init_scale"] == PRINTED_INITIAL_SCALES[label]
    assert params["growth_factor"] == GRADSCALER_DEFAULTS["growth_factor"]
    assert params["backoff_factor"] == GRADSCALER_DEFAULTS["backoff_factor"]


def test_fp16_ceiling_and_floor():
    assert torch.finfo(torch.float16).max == FP16_MAX == t1.FP16_MAX
    values = torch.tensor([65504.0, 65519.0, 65520.0, 65536.0, FP16_MIN_SUBNORMAL, 2.0 ** -25])
    held = values.to(torch.float16).tolist()
    assert held[:2] == [FP16_MAX, FP16_MAX] and math.isinf(held[2]) and math.isinf(held[3])
    assert held[4] == FP16_MIN_SUBNORMAL and held[5] == 0.0
    assert [t1.overflows(v, 1.0) for v in (65504.0, 65519.0, 65520.0, 65536.0)] == [False, False, True, True]


def run_real_gradscaler(grad_max, init_scale, growth_factor, backoff_factor, growth_interval):
    """torch.amp.GradScaler on a one-parameter model whose gradient passes through fp16.

    The hook rounds the (scaled) gradient to fp16 as an fp16 backward pass would store it, so
    inf appears exactly when the largest gradient times the scale overflows fp16. Returns
    (skipped steps, final scale), a step counting as skipped when the optimizer left w alone.
    """
    w = torch.nn.Parameter(torch.tensor([1.0]))
    w.register_hook(lambda g: g.half().float())
    opt = torch.optim.SGD([w], lr=1e-3)
    scaler = torch.amp.GradScaler("cpu", init_scale=init_scale, growth_factor=growth_factor,
                                  backoff_factor=backoff_factor, growth_interval=growth_interval)
    skipped = []
    for step, m in enumerate(grad_max):
        opt.zero_grad()
        scaler.scale((w * m).sum()).backward()
        before = w.detach().clone()
        scaler.step(opt)
        scaler.update()
        if torch.equal(before, w.detach()):
            skipped.append(step)
    return skipped, scaler.get_scale()


@pytest.mark.parametrize("label", "ABCD")
def test_scaler_matches_real_gradscaler(label):
    params = PROBLEM.variants[label]
    answers = PROBLEM.solve(params)
    skipped, final = run_real_gradscaler(params["grad_max"], params["init_scale"],
                                         params["growth_factor"], params["backoff_factor"],
                                         params["growth_interval"])
    assert answers["skipped_steps"] == skipped
    assert answers["final_scale"] == final


def test_scaler_on_random_runs_matches_real_gradscaler():
    rng = random.Random(11)
    for _ in range(4):
        grad_max = [2.0 ** rng.uniform(-3, 8) for _ in range(30)]
        settings = dict(init_scale=2.0 ** rng.randrange(8, 34), growth_factor=2.0,
                        backoff_factor=0.5, growth_interval=rng.randrange(1, 6))
        params = dict(PROBLEM.variants["A"], grad_max=grad_max, **settings)
        answers = PROBLEM.solve(params)
        assert (answers["skipped_steps"], answers["final_scale"]) == run_real_gradscaler(grad_max, **settings)


def _torch_lost(grads, dtype, k=0):
    return int(((torch.tensor(grads) * 2.0 ** k).to(dtype) == 0).sum())


@pytest.mark.parametrize("label", "ABCD")
def test_casts_and_window_match_torch(label):
    params = PROBLEM.variants[label]
    grads = params["grads"]
    answers = PROBLEM.solve(params)
    assert answers["fp16_lost_count"] == _torch_lost(grads, torch.float16)
    assert answers["bf16_lost_count"] == _torch_lost(grads, torch.bfloat16) == 0
    g64 = torch.tensor(grads, dtype=torch.float64)
    rel = ((torch.tensor(grads).to(torch.bfloat16).double() - g64).abs() / g64.abs()).max().item()
    assert answers["bf16_max_rel_error"] == pytest.approx(rel, rel=1e-6)
    assert answers["bf16_max_rel_error"] <= BF16_REL_BOUND * (1 + 1e-6)
    peak = max(abs(g) for g in grads)
    assert answers["max_log2_scale"] == max(k for k in range(128) if peak * 2.0 ** k <= FP16_MAX)
    rescue = min(k for k in range(128) if _torch_lost(grads, torch.float16, k) == 0)
    assert answers["min_rescue_log2_scale"] == rescue
    safe = [k for k in range(128)
            if _torch_lost(grads, torch.float16, k) == 0
            and not torch.isinf((torch.tensor(grads) * 2.0 ** k).to(torch.float16)).any()]
    assert answers["safe_scale_count"] == len(safe)


def test_loss_scaling_fails_when_the_histogram_is_wider_than_fp16():
    # fp16's window: from 2^-24 to 65504, about 40 binades; variant B spans about 45
    window = math.log2(FP16_MAX / FP16_MIN_SUBNORMAL)
    assert 39.9 < window < 40.0
    grads = PROBLEM.variants["B"]["grads"]
    assert math.log2(max(map(abs, grads)) / min(map(abs, grads))) > window
    answers = PROBLEM.solve(PROBLEM.variants["B"])
    assert answers["safe_scale_count"] == 0
    assert answers["min_rescue_log2_scale"] > answers["max_log2_scale"]


def test_start_up_cost_of_megatron_initial_scale():
    # from 2^32 the scaler halves once per skipped step until max|g| * scale fits below 65504
    params = PROBLEM.variants["B"]
    ceiling = math.floor(math.log2(FP16_MAX / max(params["grad_max"][:16])))
    skipped = PROBLEM.solve(params)["skipped_steps"]
    start_up = 32 - ceiling
    assert skipped[:start_up] == list(range(start_up))
    assert all(step > start_up for step in skipped[start_up:])   # a clean step ends the start-up


# --- every variant tests every idea its declared mistakes are about ---------------------------------
def _trace(params):
    """(step, product, overflowed, clean steps before it) along the run, by torch's own scaler."""
    scale, tracker, rows = params["init_scale"], 0, []
    for step, peak in enumerate(params["grad_max"]):
        product = t1.to_float32(t1.to_float32(peak) * scale)
        inf = t1.overflows(peak, scale)
        rows.append((step, product, inf, tracker))
        if inf:
            scale, tracker = scale * params["backoff_factor"], 0
        else:
            tracker += 1
            if tracker == params["growth_interval"]:
                scale, tracker = scale * params["growth_factor"], 0
    return rows


@pytest.mark.parametrize("label", "ABCD")
def test_every_scaler_trace_reaches_the_edges(label):
    # issue 27: in some variants a declared scaler mistake gave the right answers because the
    # run never came near the situation it is about; each variant now reaches all of them
    rows = _trace(PROBLEM.variants[label])
    assert any(FP16_MAX < product < 65520 and not inf for _, product, inf, _ in rows)   # kept
    assert any(65520 <= product <= 2.0 ** 16 and inf for _, product, inf, _ in rows)     # inf
    assert any(inf and clean > 0 for _, _, inf, clean in rows)    # the tracker must restart


@pytest.mark.parametrize("name", [m.name for m in PROBLEM.mistakes])
def test_each_mistake_either_cannot_be_made_or_changes_an_answer(name):
    index = [m.name for m in PROBLEM.mistakes].index(name)
    shown = 0
    for params in PROBLEM.variants.values():
        right, wrong = PROBLEM.reference(params), PROBLEM.mistaken(params)[index][1]
        if wrong:
            assert any(not PROBLEM.checks[k].judge(right[k], wrong[k]).passed for k in wrong)
            shown += 1
    assert shown >= 1


def test_window_mistakes_are_moot_only_where_the_window_says_so():
    # fencepost needs a window with ends, negative-count an empty one, truncate-not-round a
    # gradient below fp16's smallest subnormal: decided from the gradients, per variant
    by_name = {m.name: m for m in PROBLEM.mistakes}
    for params in PROBLEM.variants.values():
        top, rescue = t1._window(params)
        assert bool(by_name["fencepost"].wrong(params)) == (top >= rescue)
        assert bool(by_name["negative-count"].wrong(params)) == (top < rescue)
        below = min(abs(g) for g in params["grads"]) < FP16_MIN_SUBNORMAL
        assert bool(by_name["truncate-not-round"].wrong(params)) == below


def test_solve_rejects_bad_parameters():
    base = PROBLEM.variants["A"]
    for change in ({"grads": []}, {"grads": [0.0]}, {"grads": [1e6]}, {"grad_max": []},
                   {"grad_max": [-1.0]}, {"init_scale": 0.0}, {"backoff_factor": 1.5},
                   {"growth_interval": 0}, {"growth_interval": 2.5}):
        with pytest.raises(ValueError):
            PROBLEM.solve(dict(base, **change))


# --- (b) the grader --------------------------------------------------------------------------------

def test_problem_declares_the_interface():
    assert PROBLEM.strand == "theory" and PROBLEM.kind == "theory" and PROBLEM.assignment == "theory"


def test_variants_differ():
    answers = [PROBLEM.solve(q) for q in PROBLEM.variants.values()]
    for key in ("fp16_lost_count", "safe_scale_count", "skipped_steps", "bf16_max_rel_error"):
        assert len({repr(a[key]) for a in answers}) >= 3, key
    assert len({repr(a["skipped_steps"]) for a in answers}) == 4


@pytest.mark.parametrize("bad", [None, "3", float("nan"), {"x": 1}, sympy.Symbol("x"), [1.5], 2.5])
def test_bad_answers_score_zero_without_raising(bad):
    params = PROBLEM.variants["D"]
    result = PROBLEM.grade(params, {key: bad for key in PROBLEM.checks})
    assert result.score == 0
    assert len(result.feedback) == len(PROBLEM.checks)


def test_missing_answers_score_zero():
    result = PROBLEM.grade(PROBLEM.variants["C"], {})
    assert result.score == 0 and all("missing" in line for line in result.feedback)


def test_a_variant_puts_a_product_on_the_round_to_infinity_edge():
    """Some variant's scaled gradient lies in (65504, 65520): finite in fp16 (torch's own cast
    rounds it down to 65504), so a test `> 65504` skips a step that GradScaler keeps."""
    edges = []
    for label, params in PROBLEM.variants.items():
        scale = torch.full((), params["init_scale"])
        tracker = torch.zeros((), dtype=torch.int32)
        for step, peak in enumerate(params["grad_max"]):
            product = float(torch.tensor([peak]) * float(scale))
            if FP16_MAX < product < 65520.0:
                held = torch.tensor([product]).to(torch.float16).item()
                assert held == FP16_MAX
                edges.append((label, step))
            found_inf = t1.overflows(peak, float(scale))
            torch._amp_update_scale_(scale, tracker, torch.full((), float(found_inf)),
                                     params["growth_factor"], params["backoff_factor"],
                                     params["growth_interval"])
    assert edges, "no variant tests the edge between 65504 and 65520"
    label, step = edges[0]
    params = PROBLEM.variants[label]
    assert step not in PROBLEM.solve(params)["skipped_steps"]
    strict = t1.python_scaler(params["grad_max"], params["init_scale"], params["growth_factor"],
                              params["backoff_factor"], params["growth_interval"], "ceiling-65504")
    assert step in strict[0]
    result = PROBLEM.grade(params, {**PROBLEM.solve(params), "skipped_steps": strict[0],
                                    "final_scale": strict[1]})
    assert result.score < result.max_score


def test_the_scale_trajectory_figure_shows_gradscalers_run():
    """The notebook's figure plots the scale GradScaler had in force at each step and marks
    exactly the steps the reference (torch's own update op) skips."""
    import matplotlib
    matplotlib.use("Agg")
    import nbformat
    from matplotlib import pyplot as plt

    from tests.conftest import REPO
    nb = nbformat.read(REPO / "source" / "theory" / "t1-range-before-speed.ipynb", as_version=4)
    code = [c.source for c in nb.cells if c.cell_type == "code" and "nbgrader" not in c.metadata]
    namespace = {}
    for source in code:
        exec(compile(source, "t1-example", "exec"), namespace)  # noqa: S102 - our own notebook
        if "example_figure" in namespace:
            break
    plt.close("all")
    example = namespace["example"]
    settings = {k: example[k] for k in ("init_scale", "growth_factor", "backoff_factor", "growth_interval")}
    reference_skipped, _ = t1.torch_scaler(example["grad_max"], settings["init_scale"],
                                           settings["growth_factor"], settings["backoff_factor"],
                                           settings["growth_interval"])
    ax = namespace["example_figure"].axes[0]
    marked = sorted(int(x) for x, _ in ax.collections[0].get_offsets())
    assert marked == reference_skipped and marked
    scales = [2.0 ** y for y in ax.lines[0].get_ydata()]
    assert scales[0] == settings["init_scale"]
    for step in range(1, len(scales)):       # GradScaler semantics, step by step
        if step - 1 in reference_skipped:
            assert scales[step] == scales[step - 1] * settings["backoff_factor"]
        else:
            assert scales[step] in (scales[step - 1], scales[step - 1] * settings["growth_factor"])
    # for every variant too, the figure's scaler agrees with the reference
    for params in PROBLEM.variants.values():
        s = {k: params[k] for k in settings}
        _, skipped = namespace["scale_history"](params["grad_max"], **s)
        assert skipped == PROBLEM.solve(params)["skipped_steps"]
