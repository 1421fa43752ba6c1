"""Compute-optimal allocation under a fitted loss law (Hoffmann et al. 2022, eq. 4; C = 6ND)."""


FLOPS_PER_PARAM_TOKEN = 6   # C = 6ND (Kaplan et al. 2020 §2.1, used by Hoffmann et al. §3.3)


def allocation(c, e, a_coef, b_coef, alpha, beta, *, six=True, swap=False, invert_g=False):
    """(n, d, g, exponent_n) of eq. (4); the keyword flags reproduce declared mistakes."""
    g = (alpha * a_coef / (beta * b_coef)) ** (1.0 / (alpha + beta))
    if invert_g:
        g = 1.0 / g
    a = beta / (alpha + beta)
    b = alpha / (alpha + beta)
    if swap:
        a, b = b, a
    budget = c / FLOPS_PER_PARAM_TOKEN if six else c
    n = g * budget ** a
    d = budget ** b / g
    return n, d, g, a
