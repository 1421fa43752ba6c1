"""What a run did: counts, failures, notes and every isolation layer in force, as the instructor reads them."""
from __future__ import annotations

import os
from dataclasses import dataclass, field

from graders.engine import feedback
from graders.engine.shared import some
from graders.sandbox import worker
from graders.sandbox.zygote import Zygote


@dataclass
class Report:
    assignment: str
    results: dict = field(default_factory=dict)       # student -> SubmissionResult
    reused: int = 0                                    # submissions taken from the journal
    failed: dict = field(default_factory=dict)         # student -> why it could not be graded
    untimed: dict = field(default_factory=dict)        # student -> why their submission has no usable time
    set_aside: list = field(default_factory=list)      # lines: submissions set aside, or graded at another time
    seconds: float = 0.0
    workers: int = 0
    isolation: dict = field(default_factory=dict)
    warnings: list = field(default_factory=list)
    time_limits: dict = field(default_factory=dict)    # notebook -> (its CPU seconds, from its solution's time?)
    sandbox_start: float | None = None                 # seconds from starting this run's zygote to its ready

    def technical_zeros(self):
        for student, result in sorted(self.results.items()):
            for nb in result.notebooks:
                if nb.technical_zero:
                    yield student, nb

    def summary(self) -> str:
        graded = len(self.results)
        notebooks = sum(len(r.notebooks) for r in self.results.values())
        rate = (graded - self.reused) / self.seconds if self.seconds else 0.0
        lines = [f"autograde {self.assignment}: {graded} submissions ({notebooks} notebooks) in "
                 f"{self.seconds:.1f} s with {self.workers} workers"
                 + (f", {rate:.2f} students/s" if rate else "")
                 + (f"; {self.reused} unchanged since the last run" if self.reused else "")
                 + (f", sandbox ready after {self.sandbox_start:.1f} s" if self.sandbox_start is not None else "")]
        zeros = list(self.technical_zeros())
        if zeros:
            lines.append(f"scored 0 for a non-mathematical reason ({len(zeros)}):")
            width = max(len(s) for s, _ in zeros)
            for student, nb in zeros:
                said = some(nb.reasons + nb.notes, 2, "; ", "; and {} more (`chapter report` lists them)")
                lines.append(f"  {student:<{width}}  {nb.name}: {said}")
        inside = [(student, nb) for student, result in sorted(self.results.items())
                  for nb in result.notebooks if nb.inside]
        if inside:
            cells = sum(len(nb.inside) for _, nb in inside)
            names = sorted({nb.name for _, nb in inside})
            lines.append(f"judged inside the student's process, as plain nbgrader judges them: {cells} test "
                         f"cell(s) with no checks registered in graders.problems ({', '.join(names)[:200]}); "
                         "the student's code could have changed their outcome")
        flagged = [(student, nb) for student, result in sorted(self.results.items())
                   for nb in result.notebooks if nb.flags]
        if flagged:
            lines.append(f"FLAGGED for a person ({len(flagged)}): an error the sandbox may have caused, not the "
                         "student, or an answer the grader could not decide; those test cells are left "
                         "ungraded for formgrader, not scored 0:")
            for student, nb in flagged:
                lines.append(f"  {student}  {nb.name}: {'; '.join(nb.flags)[:300]}")
        for student, why in sorted(self.failed.items()):
            lines.append(feedback.not_graded_line(student, why))
        for student, why in sorted(self.untimed.items()):
            lines.append(f"NO USABLE TIME {student}: {why}; graded, with no late penalty applied")
        lines += self.set_aside
        if self.time_limits:
            lines.append(self.time_limits_line())
        layers = self.layers_in_effect()
        if layers:
            lines.append(f"isolation in effect: {layers}")
        lines += [f"warning: {w}" for w in self.warnings]
        return "\n".join(lines)

    def time_limits_line(self) -> str:
        """Each notebook's CPU-time limit, and whether it follows its solution's measured time."""
        derived = [f"{name} {seconds:g} s" for name, (seconds, measured) in sorted(self.time_limits.items())
                   if measured]
        ceiling = sorted(name for name, (_, measured) in self.time_limits.items() if not measured)
        parts = []
        if derived:
            parts.append(f"{', '.join(derived)} (from their solutions' measured time)")
        if ceiling:
            seconds = self.time_limits[ceiling[0]][0]
            parts.append(f"{', '.join(ceiling)} at the configured {seconds:g} s (no current measurement of "
                         f"{'its' if len(ceiling) == 1 else 'their'} solution: `chapter status` measures it)")
        return "time limits (CPU): " + "; ".join(parts)

    def layers_in_effect(self) -> str:
        """Every isolation layer one sandbox had in force, from the monitor's trusted account
        (namespaces, uid, seccomp, control group, rlimits), and those that were not, in the order
        they are applied: `MONITOR_LAYERS`, then `LAYERS` (graders/sandbox/layers.py)."""
        for result in self.results.values():
            for nb in result.notebooks:
                monitor, sandbox = nb.layers.get("monitor") or {}, nb.layers.get("sandbox") or {}
                if not monitor and not sandbox:
                    continue
                layers = {**sandbox, **monitor}   # the monitor's copy wins: it was sent before student code
                return ", ".join(worker.layers.in_effect(layers))   # named and ordered by the two lists
        return ""


def isolation_warnings(zygote: Zygote) -> list[str]:
    probe = zygote.isolation
    warnings = []
    degraded = zygote.allow_degraded
    for layer, what in (("seccomp", "the seccomp allowlist"), ("control_group", "the per-notebook control group")):
        if layer in probe and not probe[layer]:
            why = probe.get(f"{layer}_error") or probe.get(f"{layer}_detail") or "unknown"
            warnings.append(f"{what} cannot be applied here ({why}): " +
                            ("notebooks run without it (degraded mode)" if degraded else
                             "every notebook will be reported NOT GRADED; chapter autograde --allow-degraded "
                             "runs them without it"))
    if probe.get("namespaces"):
        return warnings
    text = (f"namespaces are not available here ({probe.get('reason', 'unknown')}): student code runs "
            "WITHOUT filesystem, network and PID isolation; only rlimits, a private session, a private "
            "working directory and process sweeping apply")
    if os.geteuid() == 0 and not zygote.python_world_readable:
        text += ", and it keeps root's uid, since the Python installation is not readable by an " \
                "unprivileged user"
    if not degraded:
        text += " -- but degraded mode is off, so every notebook will be reported NOT GRADED " \
                "(chapter autograde --allow-degraded runs them anyway)"
    return warnings + [text + ". Run as root where unshare is permitted for full isolation."]
