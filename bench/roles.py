"""Where a command's CPU time goes, by the role of each process in its tree, from `perf`.

    from roles import record_roles, print_roles
    print_roles(record_roles(command, cwd), notebooks)

The command runs under `perf record -a -e cpu-clock`: every core is sampled at a fixed rate,
idle or not, so the samples count core-seconds. `perf` also records each fork and exec, and
from them the process tree of the command is rebuilt and every sample given a role:

  command          the grading process (its start and imports, reading the course, recording)
  grading workers  the processes forked from it that grade submissions (trusted comparison)
  their children   what the workers fork: one child a submission that grades its notebooks
  zygote 1, 2      the sandbox's zygotes (the first imports IPython, numpy, sympy, matplotlib;
                   the second is forked from it and imports torch)
  monitors         one a notebook, forked by a zygote: it makes the notebook's control group and
                   namespaces, forks the sandbox, relays its output and sweeps after it
  sandboxes        the student's code: IPython and the cells (with what they start)
  other programs   what the command executes (ldconfig, for instance)
  idle             no process on the core
  rest of machine  processes outside the command's tree

This is one more run of the command, beside the timed ones: perf's sampling costs a little.
Needs `perf` and the right to sample every core (root, or perf_event_paranoid <= 0).
"""
from __future__ import annotations

import collections
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

FREQUENCY = 999
ROLES = ("command", "grading workers", "their children", "zygote 1", "zygote 2", "monitors", "sandboxes",
         "other programs", "idle", "rest of machine")
PER_NOTEBOOK = ("grading workers", "their children", "monitors", "sandboxes")

FORK = re.compile(r"PERF_RECORD_FORK\((\d+):(\d+)\):\((\d+):(\d+)\)")
EXEC = re.compile(r"PERF_RECORD_COMM exec: (.+?):(\d+)/(\d+)")


def why_not() -> str | None:
    """Why perf cannot sample every core here, or None when it can."""
    if shutil.which("perf") is None:
        return "perf is not installed"
    try:
        paranoid = int(Path("/proc/sys/kernel/perf_event_paranoid").read_text())
    except (OSError, ValueError):
        paranoid = 2
    if os.geteuid() != 0 and paranoid > 0:
        return f"sampling every core needs root or perf_event_paranoid <= 0 (it is {paranoid})"
    return None


def record_roles(command: list[str], cwd: Path) -> dict:
    """Run `command` in `cwd` under perf; core-seconds by role (see the module's docstring)."""
    folder = Path(tempfile.mkdtemp(prefix="roles-"))
    try:
        data = folder / "perf.data"
        subprocess.run(["perf", "record", "-a", "-e", "cpu-clock", "-F", str(FREQUENCY), "-q", "-o", str(data),
                        "--", *command], cwd=cwd, capture_output=True, check=False)
        script = subprocess.run(["perf", "script", "-i", str(data), "--show-task-events", "-F", "pid,tid,time"],
                                capture_output=True, text=True, check=True).stdout
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return classify(script, command[0])


def classify(script: str, program: str) -> dict:
    """Core-seconds by role from `perf script --show-task-events -F pid,tid,time` output, the
    command being the process that executed `program` (a path, or its name)."""
    name = Path(program).name
    parent, executed, samples = {}, {}, collections.Counter()
    for line in script.splitlines():
        if found := FORK.search(line):
            child, thread, father, _ = map(int, found.groups())
            if child == thread:   # a process, not a thread
                parent.setdefault(child, father)
        elif found := EXEC.search(line):
            executed.setdefault(int(found.group(2)), found.group(1))
        elif found := re.match(r"^\s*(-?\d+)/(-?\d+)\s+[\d.]+:", line):
            samples[int(found.group(1))] += 1
    roots = [pid for pid, comm in executed.items() if comm == name[:15]]
    if not roots:
        raise ValueError(f"perf saw no process executing {name}")
    root = roots[0]
    children = collections.defaultdict(list)
    for child, father in parent.items():
        children[father].append(child)

    def tree(pid):
        out, stack = [], [pid]
        while stack:
            out.append(stack.pop())
            stack.extend(children[out[-1]])
        return out

    role = {root: "command"}
    executed_children = [c for c in children[root] if c in executed]
    zygote = max(executed_children, key=lambda c: len(tree(c)), default=None)
    for child in children[root]:
        if child == zygote:
            continue
        if child in executed:
            role.update({p: "other programs" for p in tree(child)})
        else:
            role.update({p: "their children" for p in tree(child)})
            role[child] = "grading workers"
    if zygote is not None:
        second = [c for c in children[zygote] if len(children[c]) > 1]   # a monitor forks one sandbox
        zygotes = {zygote: "zygote 1", **({second[0]: "zygote 2"} if second else {})}
        role.update(zygotes)
        for z in zygotes:
            for monitor in children[z]:
                if monitor in zygotes:
                    continue
                role[monitor] = "monitors"
                for sandbox in children[monitor]:
                    role.update({p: "sandboxes" for p in tree(sandbox)})
    seconds = collections.Counter()
    for pid, count in samples.items():
        seconds["idle" if pid == 0 else role.get(pid, "rest of machine")] += count / FREQUENCY
    return {r: seconds.get(r, 0.0) for r in ROLES}


def print_roles(seconds: dict, notebooks: int) -> None:
    busy = sum(v for r, v in seconds.items() if r not in ("idle", "rest of machine"))
    print(f"the run's CPU time by process (perf, one more run): {busy:.1f} core-s in the command's processes")
    for r in ROLES:
        each = f"  {1000 * seconds[r] / notebooks:6.1f} ms a notebook" if r in PER_NOTEBOOK else ""
        share = f"{100 * seconds[r] / busy:5.1f} %" if r not in ("idle", "rest of machine") and busy else "       "
        print(f"   {r:<18} {seconds[r]:6.2f} core-s  {share}{each}")
