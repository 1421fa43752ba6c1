"""tds-b10-loss-spike: what counts as a loss spike in a log, and how long the run takes to recover.

The term. A loss spike is a sudden rise of the training loss far above where the run had been
heading, followed (if the run survives) by a return. Chowdhery et al. (2022, "PaLM: Scaling
Language Modeling with Pathways", section 5.1) saw "spikes in the loss roughly 20 times" while
training the 540B model and handled each by restarting "from a checkpoint roughly 100 steps
before the spike started" and skipping "roughly 200-500 data batches"; the OPT-175B logbook
(Zhang et al. 2022) records the same fight by hand. To act on a spike one needs a rule that says
which logged steps are spikes. This item uses the common one:

- the reference is an exponential moving average of the loss, r_0 = loss_0 and, after each step
  that is not flagged, r_i = beta * r_{i-1} + (1 - beta) * loss_i (a flagged loss does not enter
  it: the reference stays where the run was before the spike);
- row i (i >= 1) is flagged when loss_i > spike_factor * r_{i-1};
- a spike starts at a flagged row whose previous row is not flagged; its pre-spike reference is
  the r_{i-1} it was compared with; the run has recovered at the first later row whose loss is at
  most (1 + tolerance) times that pre-spike reference.

Answers, for the variant's log (losses at steps first_step + i * interval) and its `ema_beta`,
`spike_factor` and `tolerance`: `spike_steps` (the optimisation steps of every flagged row) and
`recovery_steps` (for each spike, the steps from its start to its recovery).
"""
from __future__ import annotations

from graders.numeric import Numbers
from graders.problem import Mistake, Problem


def _read(q):
    first, interval = int(q["first_step"]), int(q["interval"])
    beta, factor, tol = float(q["ema_beta"]), float(q["spike_factor"]), float(q["tolerance"])
    losses = [float(x) for x in q["losses"]]
    if not (interval > 0 and 0 < beta < 1 and factor > 1 and tol >= 0) or len(losses) < 2:
        raise ValueError("interval > 0, ema_beta in (0, 1), spike_factor > 1, tolerance >= 0, two losses or more")
    return first, interval, beta, factor, tol, losses


def _answers(q, *, ema_absorbs=False, current_in_reference=False, rows=False):
    first, interval, beta, factor, tol, losses = _read(q)
    step = (lambda i: i) if rows else (lambda i: first + i * interval)
    ref, flagged, starts, previous = losses[0], [], [], False
    for i in range(1, len(losses)):
        against = beta * ref + (1 - beta) * losses[i] if current_in_reference else ref
        spike = losses[i] > factor * against
        if spike:
            flagged.append(i)
            if not previous:
                starts.append((i, ref))
        previous = spike
        if not spike or ema_absorbs:
            ref = beta * ref + (1 - beta) * losses[i]
    recovery = []
    for i, pre in starts:
        back = next((j for j in range(i + 1, len(losses)) if losses[j] <= (1 + tol) * pre), None)
        if back is None:
            raise ValueError("the log ends before the run recovers from a spike")
        recovery.append(step(back) - step(i))
    return {"spike_steps": [step(i) for i in flagged], "recovery_steps": recovery}


def _changed(q, **kw):
    right, wrong = _answers(q), _answers(q, **kw)
    return {k: v for k, v in wrong.items() if v != right[k]}


class LossSpikeBasics(Problem):
    id = "tds-b10-loss-spike"
    title = "Loss spikes: flagging them against a moving average, and the steps to recover"
    strand = "basics"
    kind = "basics"
    assignment = "tds-basics"
    # Synthetic logs shaped like a large run's (a slowly falling loss near 2 to 3 nats with small
    # noise, two spikes of 1.2x to 1.6x lasting a few rows), logged every 5 to 50 steps at steps a
    # long run reaches; the detection settings are of the kind monitoring code uses.
    variants = {
        "A": {"first_step": 20000, "interval": 10, "ema_beta": 0.9, "spike_factor": 1.2, "tolerance": 0.02,
              "losses": [2.192, 2.196, 2.191, 2.177, 2.196, 2.192, 2.183, 2.193, 3.177, 3.505, 2.844, 2.456, 2.29, 2.23, 2.183, 2.193, 2.188, 2.185, 2.18, 2.185, 2.187, 2.185, 2.198, 2.196, 2.163, 2.17, 2.731, 2.65, 2.342, 2.21, 2.205, 2.177, 2.183, 2.204, 2.192, 2.192, 2.181, 2.171, 2.187, 2.187]},
        "B": {"first_step": 51000, "interval": 50, "ema_beta": 0.95, "spike_factor": 1.15, "tolerance": 0.02,
              "losses": [2.209, 2.203, 2.204, 2.186, 2.223, 2.217, 2.865, 3.143, 2.651, 2.334, 2.282, 2.204, 2.203, 2.199, 2.21, 2.205, 2.211, 2.201, 2.207, 2.198, 2.213, 2.207, 2.208, 2.209, 3.514, 2.986, 2.557, 2.3, 2.233, 2.192, 2.212, 2.206, 2.214, 2.211, 2.206, 2.207, 2.203, 2.212, 2.194, 2.2]},
        "C": {"first_step": 3000, "interval": 5, "ema_beta": 0.9, "spike_factor": 1.1, "tolerance": 0.01,
              "losses": [3.306, 3.245, 3.283, 3.27, 3.271, 3.273, 3.249, 3.272, 3.263, 3.318, 3.997, 4.249, 3.759, 3.394, 3.258, 3.266, 3.277, 3.267, 3.282, 3.266, 3.269, 3.288, 3.274, 3.26, 3.264, 3.273, 3.29, 3.261, 4.891, 4.096, 3.61, 3.357, 3.306, 3.269, 3.262, 3.269, 3.223, 3.273, 3.247, 3.237]},
        "D": {"first_step": 120000, "interval": 20, "ema_beta": 0.8, "spike_factor": 1.15, "tolerance": 0.03,
              "losses": [1.786, 1.789, 1.802, 1.795, 1.778, 1.79, 1.786, 2.418, 2.277, 2.25, 1.935, 1.855, 1.792, 1.794, 1.779, 1.806, 1.776, 1.798, 1.788, 1.784, 1.785, 1.785, 1.793, 1.789, 1.801, 2.274, 2.506, 2.14, 1.957, 1.81, 1.788, 1.791, 1.779, 1.797, 1.791, 1.797, 1.797, 1.783, 1.784, 1.788]},    }
    checks = {"spike_steps": Numbers(exact=True), "recovery_steps": Numbers(exact=True)}
    cells = {"check_spikes": ("spike_steps", "recovery_steps")}

    def solve(self, params):
        return _answers(params)

    mistakes = (
        Mistake("current-in-reference",
                "each loss was compared with an average that already contains it; the reference must be the "
                "average of the rows before, r_{i-1}.",
                lambda q: _changed(q, current_in_reference=True),
                instant="which rows the reference for a row is built from."),
        Mistake("reference-absorbs-spike",
                "the flagged losses were folded into the moving average; the reference then climbs with the "
                "spike and stops flagging it before the spike is over. Keep r where it was while a row is flagged.",
                lambda q: _changed(q, ema_absorbs=True),
                instant="what the reference is meant to remember while a spike lasts."),
        Mistake("rows-not-steps",
                "the answers are in rows of the log; the log is written every `interval` steps from `first_step`, "
                "and the question asks for optimisation steps.",
                lambda q: _changed(q, rows=True),
                instant="what the position of a row in the log stands for."),
    )


PROBLEM = LossSpikeBasics()
