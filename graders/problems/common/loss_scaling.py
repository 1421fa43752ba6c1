"""Dynamic loss scaling: torch's scale update, and the same machine with a declared mistake built in."""
import torch


def scaler_settings(overflow, init_scale, growth_factor, backoff_factor, growth_interval):
    if not isinstance(overflow, (list, tuple)) or not all(isinstance(o, bool) for o in overflow):
        raise ValueError("overflow must be a list of bools, one per step")
    if not init_scale > 0:
        raise ValueError("init_scale must be positive")
    if not growth_factor >= 1.0:
        raise ValueError("growth_factor must be at least 1")
    if not 0.0 < backoff_factor <= 1.0:
        raise ValueError("backoff_factor must lie in (0, 1]")
    if int(growth_interval) != growth_interval or growth_interval < 1:
        raise ValueError("growth_interval must be a positive whole number")


def torch_run(overflow, init_scale, growth_factor, backoff_factor, growth_interval):
    """(scale in force at each step, scale after the last step) from torch's update op."""
    scaler_settings(overflow, init_scale, growth_factor, backoff_factor, growth_interval)
    scale = torch.full((), float(init_scale), dtype=torch.float32)
    tracker = torch.zeros((), dtype=torch.int32)
    trajectory = []
    for step_overflowed in overflow:
        trajectory.append(float(scale))
        found_inf = torch.full((), 1.0 if step_overflowed else 0.0, dtype=torch.float32)
        torch._amp_update_scale_(scale, tracker, found_inf, float(growth_factor),
                                 float(backoff_factor), int(growth_interval))
    return trajectory, float(scale)


def python_run(overflow, init_scale, growth_factor, backoff_factor, growth_interval, kind):
    """The same machine with one declared mistake `kind` built in (for feedback)."""
    scale, tracker, trajectory = float(init_scale), 0, []
    for step_overflowed in overflow:
        before = scale
        if step_overflowed:
            scale *= backoff_factor
            if kind != "tracker-not-reset":
                tracker = 0
        else:
            tracker += 1
            if kind == "late-growth" and tracker == growth_interval + 1:
                scale, tracker = scale * growth_factor, 0
            elif kind == "no-reset-after-growth" and tracker >= growth_interval:
                scale *= growth_factor
            elif kind in ("after-update", "tracker-not-reset") and tracker == growth_interval:
                scale, tracker = scale * growth_factor, 0
        trajectory.append(scale if kind == "after-update" else before)
    return trajectory, scale
