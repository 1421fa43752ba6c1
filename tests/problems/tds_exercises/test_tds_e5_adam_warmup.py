"""tds-e5-adam-warmup: rho_t and the rectification against torch.optim.RAdam's own steps, and the
variants' beta2 and warmup lengths against the printed sources."""
import math

import torch

from graders import problems

P = problems.get("tds-e5-adam-warmup")


def _radam_steps(beta2, steps, lr=1e-3):
    """Per-step update sizes of torch.optim.RAdam on one coordinate with gradient 1 every step."""
    x = torch.zeros(1, dtype=torch.float64, requires_grad=True)
    opt = torch.optim.RAdam([x], lr=lr, betas=(0.9, beta2), eps=0.0)
    sizes, before = [], 0.0
    for _ in range(steps):
        opt.zero_grad()
        x.sum().backward()       # gradient 1
        opt.step()
        now = float(x.detach()[0])
        sizes.append((before - now) / lr)
        before = now
    return sizes


def test_torch_radam_switches_where_rho_t_passes_five_and_scales_by_r_t():
    """torch.optim.RAdam (as the authors' code) takes the adaptive step when rho_t > 5, the plain
    momentum step (size 1 here) otherwise; past the switch the step is r_t. Our rho_t and r_t, from
    Liu et al. 2020 Algorithm 2, must reproduce both; the paper's own switch (rho_t > 4) is one step
    earlier, which is the `implementation-threshold` mistake."""
    for q in P.variants.values():
        r = P.solve(q)
        b2 = q["beta2"]
        sizes = _radam_steps(b2, 40)
        rho_inf = r["rho_inf"]
        for step, size in enumerate(sizes, 1):
            rho = rho_inf - 2 * step * b2**step / (1 - b2**step)
            if rho > 5:
                rect = math.sqrt((rho - 4) * (rho - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho))
                assert math.isclose(size, rect, rel_tol=1e-9), (step, size, rect)
            else:
                assert math.isclose(size, 1.0, rel_tol=1e-9), (step, size)
        torch_first = next(i for i, s in enumerate(sizes, 1) if not math.isclose(s, 1.0))
        assert torch_first == r["first_rectified_step"] + 1
        wrong = dict(next(w for m, w in P.mistaken(q) if m.name == "implementation-threshold"))
        assert wrong["first_rectified_step"] == torch_first


def test_rho_starts_at_one_and_tends_to_rho_inf():
    for q in P.variants.values():
        r = P.solve({**q, "steps": [1, 100000]})
        assert math.isclose(r["rho_t"][0], 1.0, rel_tol=1e-9)
        assert math.isclose(r["rho_t"][1], r["rho_inf"], rel_tol=1e-9)


def test_the_variants_use_printed_beta2_and_the_untuned_warmup_rule():
    """beta2 as printed: Adam's default 0.999 (Kingma and Ba 2015, Algorithm 1); 0.98 (Vaswani et al.
    2017, §5.3); 0.95 (Brown et al. 2020, GPT-3, App. B). 0.99 is nanoGPT's shakespeare-char config
    (a code default, not a paper). Ma and Yarats 2021, abstract: linear warmup over 2/(1 - beta2)
    iterations, i.e. 2000 for beta2 = 0.999. Neither paper's printed figures for rho_t were checked:
    the formulas are taken from Algorithm 2 as torch.optim.RAdam's documentation reproduces it."""
    assert [P.variants[k]["beta2"] for k in "ABCD"] == [0.999, 0.98, 0.95, 0.99]
    assert math.isclose(P.solve(P.variants["A"])["warmup_steps"], 2000.0)
    assert math.isclose(P.solve(P.variants["C"])["warmup_steps"], 40.0)
