"""p10-collectives: what an all-reduce moves, and what a ZeRO-3 (FSDP) rank holds, measured for real.

The notebook starts 2 to 4 CPU processes itself (fork, `torch.distributed` with the gloo
backend, a FileStore rendezvous in a fresh temporary directory) and does two measurements.

1. A ring all-reduce written by the student from point-to-point messages. The harness hands
   the student counting `send` (an `isend`) and `recv` wrappers, so every byte a rank puts on
   the wire is counted where it is sent. gloo's own `all_reduce` cannot be measured from Python
   (it keeps no byte counters, and its algorithm depends on the message size); what it is
   *given* is the tensor's bytes, and what a ring must move for it is the quantity that
   nccl-tests calls the bus bandwidth factor: each rank sends and receives 2(P-1)/P times the
   tensor's bytes (nccl-tests, doc/PERFORMANCE.md, "AllReduce": busbw = algbw * 2(n-1)/n).
   The harness checks the student's result against `dist.all_reduce` on the same inputs.
2. A small MLP sharded with torch's FSDP2 (`torch.distributed.fsdp.fully_shard`), which runs
   on gloo on the CPU in torch 2.13, trained one Adam step; the student counts the bytes of
   the parameters, gradients and optimiser state each rank holds, and compares them with
   ZeRO's stage-3 formula (Rajbhandari et al. 2020, §5.3 / Figure 1: (2+2+K)N/P for
   mixed-precision Adam, K = 12). The run keeps every tensor in one dtype of e bytes
   (fp32 or bf16: no separate master copy, and torch's Adam keeps its two moments in the
   parameter's dtype), so the formula adapted to what the run really holds is (e+e+2e)N/P.

FSDP2 shards every parameter on dim 0 as `torch.chunk` does: a chunk of ceil(d0/P) rows
per rank, the last ranks getting fewer rows, or none. The reference computes the shards
from that rule, and the ring's traffic from the ring's schedule (below); the tests check
both against real runs on gloo.

The ring's schedule, as the notebook states it. The tensor is split into P chunks with
`torch.tensor_split` (sizes differing by at most one element). Reduce-scatter, steps
s = 0..P-2: rank r sends chunk (r - s) mod P to rank r+1 and adds the chunk (r - s - 1) mod P
it receives from rank r-1. All-gather, steps s = 0..P-2: rank r sends chunk (r + 1 - s) mod P
and overwrites chunk (r - s) mod P with what it receives.
"""
from __future__ import annotations

import functools
import json
import math
from dataclasses import dataclass

import numpy as np

from graders.feedback import FAIL, INVALID, PASS, Outcome
from graders.numeric import WRONG_OUTPUT_COUNT, Count, Number, as_real
from graders.problem import Mistake, Probe, Problem, seed_for

ELEMENT_BYTES = {"float32": 4, "bfloat16": 2, "float64": 8}
# how far a ring's sum may sit from gloo's all_reduce, relative to the largest entry: the
# two add the same numbers in different orders, and bf16 keeps 8 significant bits
SUM_TOLERANCE = {"float32": 1e-5, "bfloat16": 4e-2, "float64": 1e-12}
LAUNCH_SECONDS = 45.0


# --- the harness (the notebook's locked cells run the same code) -------------------------------
def launch(worker, world, *args):
    """Run worker(rank, world, *args) in `world` forked processes joined by gloo; their results by rank.

    The processes meet through a FileStore in a fresh temporary directory (no port to pick),
    and gloo talks over the loopback interface. A worker that fails makes this raise, with the
    worker's error; one that hangs is killed after LAUNCH_SECONDS.
    """
    import multiprocessing
    import shutil
    import tempfile
    import time

    # FSDP imports torch._dynamo lazily, which takes seconds; done here once, every forked rank
    # inherits it instead of importing it again
    import torch._dynamo  # noqa: F401
    import torch.distributed.fsdp  # noqa: F401

    _check_loopback()
    context = multiprocessing.get_context("fork")
    folder = tempfile.mkdtemp(prefix="p10-")
    store = f"file://{folder}/store"
    pipes, processes = [], []
    try:
        for rank in range(world):
            mine, theirs = context.Pipe(duplex=False)
            process = context.Process(target=_join_and_run, args=(worker, rank, world, store, theirs, args))
            process.start()
            theirs.close()
            pipes.append(mine)
            processes.append(process)
        results, deadline = [None] * world, time.monotonic() + LAUNCH_SECONDS
        for rank, pipe in enumerate(pipes):
            if not pipe.poll(max(0.0, deadline - time.monotonic())):
                raise TimeoutError(f"rank {rank} did not finish within {LAUNCH_SECONDS:g} s (a send without its recv?)")
            status, value = pipe.recv()
            if status != "ok":
                raise RuntimeError(f"rank {rank}: {value}")
            results[rank] = value
        return results
    finally:
        for process in processes:
            process.join(timeout=5)
            if process.is_alive():
                process.kill()
                process.join()
        for pipe in pipes:
            pipe.close()
        shutil.rmtree(folder, ignore_errors=True)


def _check_loopback():
    """Raise a clear error where gloo could not work: no loopback interface with an address (a
    network namespace whose `lo` is down, as in a sandbox that never brought it up)."""
    import socket
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as server, \
                socket.create_connection(_listening(server), timeout=5):
            pass
    except OSError as exc:
        raise RuntimeError(f"gloo needs the loopback interface, and 127.0.0.1 is not usable here ({exc})") from None


def _listening(server):
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    return server.getsockname()


def _join_and_run(worker, rank, world, store, pipe, args):
    import datetime
    import os
    import sys

    import torch
    import torch.distributed as dist

    torch.set_num_threads(1)
    # gloo binds to loopback: named, so that it does not warn that the host name has no address
    os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo0" if sys.platform == "darwin" else "lo")
    quiet = os.open(os.devnull, os.O_WRONLY)   # a rank's C++ warnings; its errors come back by the pipe
    os.dup2(quiet, 2)
    try:
        dist.init_process_group("gloo", init_method=store, rank=rank, world_size=world,
                                timeout=datetime.timedelta(seconds=30))
        try:
            pipe.send(("ok", worker(rank, world, *args)))
        finally:
            dist.destroy_process_group()
    except Exception as exc:  # noqa: BLE001 - reported to the parent, which raises it
        pipe.send(("error", f"{type(exc).__name__}: {exc}"))
    finally:
        pipe.close()


class CountingWire:
    """`send` and `recv` for one rank that count the bytes of every tensor they move.

    `send` starts an `isend` and returns a handle to `wait()` on; `recv` blocks. A gloo
    send must be waited on exactly once (a second wait never returns), so the handle
    remembers, and `finish` waits on whatever the caller left unwaited.
    """

    def __init__(self):
        self.sent = 0
        self.received = 0
        self.pending = []

    def send(self, tensor, dst):
        import torch.distributed as dist
        self.sent += tensor.numel() * tensor.element_size()
        handle = SendHandle(dist.isend(tensor.contiguous(), dst))
        self.pending.append(handle)
        return handle

    def recv(self, tensor, src):
        import torch.distributed as dist
        self.received += tensor.numel() * tensor.element_size()
        dist.recv(tensor, src)
        return tensor

    def finish(self):
        for handle in self.pending:
            handle.wait()
        self.pending.clear()


class SendHandle:
    """An isend in flight; wait() returns once it is done, however often it is called."""

    def __init__(self, work):
        self.work = work
        self.done = False

    def wait(self):
        if not self.done:
            self.work.wait()
            self.done = True
        return True


def ring_worker(rank, world, numel, dtype, seed, all_reduce):
    """One rank of `ring_run`: [bytes sent, bytes received, error of the ring's sum against gloo's]."""
    import torch
    import torch.distributed as dist

    gen = torch.Generator().manual_seed(seed * 1000 + rank)
    data = torch.randn(numel, generator=gen, dtype=torch.float64).to(getattr(torch, dtype))
    expected = data.clone()
    dist.all_reduce(expected)                   # gloo's own all-reduce: the yardstick
    wire = CountingWire()
    tensor = data.clone()
    all_reduce(tensor, rank, world, wire.send, wire.recv)
    wire.finish()
    scale = float(expected.abs().max().double()) or 1.0
    error = float((tensor.double() - expected.double()).abs().max()) / scale
    return [wire.sent, wire.received, error]


def ring_run(world, numel, dtype, seed, all_reduce):
    """Run `all_reduce` on `world` ranks, each holding `numel` random values of `dtype`; return
    [bytes sent per rank, bytes received per rank, largest error of any rank's result against
    gloo's all_reduce, relative to the largest entry]."""
    rows = launch(ring_worker, int(world), int(numel), str(dtype), int(seed), all_reduce)
    return [[row[0] for row in rows], [row[1] for row in rows], max(row[2] for row in rows)]


def make_mlp(widths, dtype, seed):
    """An MLP of Linear layers of the given widths with ReLU between them, in `dtype`."""
    import torch
    torch.manual_seed(seed)
    layers = []
    for i, (n_in, n_out) in enumerate(zip(widths[:-1], widths[1:])):
        if i:
            layers.append(torch.nn.ReLU())
        layers.append(torch.nn.Linear(n_in, n_out))
    return torch.nn.Sequential(*layers).to(getattr(torch, dtype))


def fsdp_worker(rank, world, widths, dtype, seed, state_bytes):
    """One rank of `fsdp_run`: shard the MLP with FSDP2, take one Adam step, count what this rank holds."""
    import torch
    from torch.distributed.fsdp import fully_shard

    model = make_mlp(widths, dtype, seed)
    for layer in model:
        if isinstance(layer, torch.nn.Linear):
            fully_shard(layer)
    fully_shard(model)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    gen = torch.Generator().manual_seed(seed * 1000 + rank)      # each rank its own batch
    x = torch.randn(8, widths[0], generator=gen).to(getattr(torch, dtype))
    model(x).square().mean().backward()
    optimizer.step()
    return [int(v) for v in state_bytes(model, optimizer)]


def fsdp_run(world, widths, dtype, seed, state_bytes):
    """Shard make_mlp(widths, dtype, seed) over `world` ranks and take one Adam step; return, per
    rank, what `state_bytes` counts: [parameter, gradient, optimiser] bytes."""
    return launch(fsdp_worker, int(world), [int(w) for w in widths], str(dtype), int(seed), state_bytes)
# --- end of the harness ------------------------------------------------------------------------


# --- the reference: the ring's schedule and FSDP2's sharding rule, as arithmetic -------------
def chunk_sizes(numel: int, world: int) -> list[int]:
    """torch.tensor_split's sizes: the first numel % world chunks hold one element more."""
    base, extra = divmod(numel, world)
    return [base + (1 if i < extra else 0) for i in range(world)]


def ring_traffic(numel, world, dtype, kind="ring"):
    """(bytes sent per rank, bytes received per rank) of the ring's schedule; `kind` builds in a mistake."""
    e = ELEMENT_BYTES[dtype]
    sizes = chunk_sizes(numel, world)
    sent, received = [0] * world, [0] * world
    phases = ("reduce-scatter",) if kind == "one-phase" else ("reduce-scatter", "all-gather")
    for r in range(world):
        for phase in phases:
            for s in range(world - 1):
                if kind == "whole-tensor":
                    out = into = numel
                elif phase == "reduce-scatter":
                    out, into = sizes[(r - s) % world], sizes[(r - s - 1) % world]
                else:
                    out, into = sizes[(r + 1 - s) % world], sizes[(r - s) % world]
                sent[r] += out * e
                received[r] += into * e
    return sent, received


def shard_rows(rows: int, world: int) -> list[int]:
    """Rows of a dim-0 shard per rank, as FSDP2 splits a parameter (torch.chunk's sizes, then empty)."""
    size = math.ceil(rows / world)
    return [max(0, min(size, rows - r * size)) for r in range(world)]


def parameter_shapes(widths):
    shapes = []
    for n_in, n_out in zip(widths[:-1], widths[1:]):
        shapes += [(n_out, n_in), (n_out,)]
    return shapes


def fsdp_bytes(world, widths, dtype, kind="right"):
    """Per rank [parameter, gradient, optimiser-state] bytes of the sharded MLP after one Adam step."""
    e = ELEMENT_BYTES[dtype]
    shapes = parameter_shapes(widths)
    rows = []
    for r in range(world):
        local = 0
        for shape in shapes:
            rest = math.prod(shape[1:])
            local += (shape[0] if kind == "unsharded" else shard_rows(shape[0], world)[r]) * rest
        unit = 1 if kind == "elements" else e
        optim = 2 * local * unit + (4 * len(shapes) if kind == "adam-step" else 0)
        rows.append([local * unit, local * unit, optim])
    return rows


def stage3_bytes(n, world, param_bytes, grad_bytes, optim_bytes):
    """ZeRO stage 3's model states per rank: (parameter + gradient + optimiser bytes per parameter) N / P."""
    return (param_bytes + grad_bytes + optim_bytes) * n / world


def n_parameters(widths) -> int:
    return sum(math.prod(shape) for shape in parameter_shapes(widths))


# --- the variants and the hidden calls --------------------------------------------------------
def _check_params(q):
    for key in ("world", "numel", "seed"):
        if isinstance(q[key], bool) or int(q[key]) != q[key]:
            raise ValueError(f"{key} must be a whole number")
    if not 2 <= q["world"] <= 8:
        raise ValueError("world must lie in 2..8")
    if q["numel"] < q["world"]:
        raise ValueError("numel must be at least world: every chunk of the ring holds an element")
    for key in ("dtype", "model_dtype"):
        if q[key] not in ELEMENT_BYTES:
            raise ValueError(f"{key} must be one of {', '.join(ELEMENT_BYTES)}")
    if len(q["widths"]) < 2 or any(int(w) != w or w < 1 for w in q["widths"]):
        raise ValueError("widths are at least two positive whole numbers")


def probe_calls(params: dict) -> dict:
    """Hidden calls: ring_run [world, numel, dtype, seed] and fsdp_run [world, widths, dtype, seed]."""
    rng = np.random.default_rng(seed_for(params, "p10-collectives"))
    seeds = [int(s) for s in rng.integers(1, 10_000, size=5)]
    ring = [
        [2, int(rng.integers(101, 200)) | 1, "float32", seeds[0]],          # odd: two unequal chunks
        [3, int(rng.integers(30, 60)) * 3 + 1, "bfloat16", seeds[1]],
        [4, int(rng.integers(10, 40)) * 4 + 3, "float64", seeds[2]],       # three long chunks, one short
    ]
    fsdp = [
        [3, [int(rng.integers(5, 12)), int(rng.integers(13, 30)), 2], "float32", seeds[3]],  # a rank with no bias rows
        [4, [int(rng.integers(8, 20)), 4 * int(rng.integers(3, 8)) + 1, 3], "bfloat16", seeds[4]],
    ]
    return {"ring": ring, "fsdp": fsdp}


def ring_probe_reference(calls, kind="ring"):
    out = []
    for world, numel, dtype, _seed in calls:
        sent, received = ring_traffic(numel, world, dtype, kind)
        out.append([sent, received, 0.0])
    return out


@functools.lru_cache(maxsize=64)
def _solve(text: str, kind: str) -> dict:
    q = json.loads(text)
    _check_params(q)
    world, numel, dtype = q["world"], q["numel"], q["dtype"]
    e, m = ELEMENT_BYTES[dtype], ELEMENT_BYTES[q["model_dtype"]]
    tensor_bytes = numel * e
    ring_factor = 2 * (world - 1) / world
    factor = {"no-fraction": 2.0, "one-phase": (world - 1) / world,
              "whole-tensor": 2.0 * (world - 1)}.get(kind, ring_factor)
    traffic_kind = kind if kind in ("one-phase", "whole-tensor") else "ring"
    sent, _ = ring_traffic(numel, world, dtype, traffic_kind)
    n = n_parameters(q["widths"])
    fsdp_kind = kind if kind in ("unsharded", "elements", "adam-step") else "right"
    rows = fsdp_bytes(world, q["widths"], q["model_dtype"], fsdp_kind)
    # this run's bytes per parameter: e (parameter) + e (gradient) + 2e (Adam's two moments)
    per_param = (2, 2, 12) if kind == "mixed-precision-k12" else (m, m, 2 * m)
    holders = 1 if kind == "unsharded" else world
    calls = probe_calls(q)
    return {
        "ring_probe": ring_probe_reference(calls["ring"], traffic_kind),
        "ring_sent_bytes": sent,
        "allreduce_input_bytes": tensor_bytes,
        "ring_formula_bytes": factor * tensor_bytes,
        "bus_factor": factor,
        "fsdp_probe": [fsdp_bytes(w, widths, dt, fsdp_kind) for w, widths, dt, _ in calls["fsdp"]],
        "param_bytes_per_rank": [row[0] for row in rows],
        "grad_bytes_per_rank": [row[1] for row in rows],
        "optim_bytes_per_rank": [row[2] for row in rows],
        "n_params": n,
        "stage3_formula_bytes": stage3_bytes(n, holders, *per_param),
    }


def solve_kind(params: dict, kind: str) -> dict:
    return json.loads(json.dumps(_solve(json.dumps(params, sort_keys=True), kind)))


# --- checks -----------------------------------------------------------------------------------
def _whole(value):
    number = as_real(value)
    if isinstance(number, str):
        return number
    if number != int(number):
        return "is not a whole number of bytes"
    return int(number)


@dataclass(frozen=True)
class ByteCounts:
    """A list of byte counts, one per rank, each exact. Says which of the student's entries are
    wrong, never what they should be or how many there should be."""
    points: float = 1.0

    def judge(self, ref, ans) -> Outcome:
        if isinstance(ans, dict) or not isinstance(ans, (list, tuple)):
            return Outcome(INVALID, "is not a list of byte counts, one per rank.")
        if len(ans) > 64:
            return Outcome(INVALID, "has more entries than there are ranks in any variant.")
        wrong = []
        for i, a in enumerate(ans):
            number = _whole(a)
            if isinstance(number, str):
                return Outcome(INVALID, f"entry {i} {number}.")
            if i >= len(ref) or number != int(ref[i]):
                wrong.append(i)
        if len(ans) != len(ref):
            return Outcome(FAIL, "does not have one entry per rank of your variant.")
        if wrong:
            shown = ", ".join(f"rank {i}" for i in wrong[:5])
            return Outcome(FAIL, f"the counts of {shown} do not match the run of your variant.")
        return Outcome(PASS)


@dataclass(frozen=True)
class RingOutputs:
    """Hidden calls of ring_run: bytes sent and received per rank exact, the sum within the dtype's
    tolerance of gloo's all_reduce."""
    points: float = 1.0

    def judge(self, ref, ans) -> Outcome:
        if isinstance(ans, dict) or not isinstance(ans, (list, tuple)):
            return Outcome(INVALID, "was not gathered: define ring_all_reduce and run the harness cell.")
        if len(ans) != len(ref):
            return Outcome(INVALID, WRONG_OUTPUT_COUNT)
        calls_dtypes = [len(r[0]) for r in ref]
        wrong_bytes, wrong_sum = [], []
        for i, (r, a) in enumerate(zip(ref, ans)):
            if isinstance(a, dict):
                return Outcome(INVALID, f"hidden call {i}: ring_run {a.get('error') or 'gave no list'}.")
            if not isinstance(a, (list, tuple)) or len(a) != 3 or not all(
                    isinstance(row, (list, tuple)) and len(row) == calls_dtypes[i] for row in a[:2]):
                wrong_bytes.append(i)
                continue
            counts = [_whole(v) for v in list(a[0]) + list(a[1])]
            bad = next((c for c in counts if isinstance(c, str)), None)
            if bad:
                return Outcome(INVALID, f"hidden call {i}: a byte count {bad}.")
            if counts != [int(v) for v in list(r[0]) + list(r[1])]:
                wrong_bytes.append(i)
            error = as_real(a[2])
            if isinstance(error, str) or error > self.tolerance(i, ref):
                wrong_sum.append(i)
        parts = []
        if wrong_bytes:
            parts.append(f"the bytes sent or received differ from the ring's schedule in hidden calls "
                         f"{', '.join(map(str, wrong_bytes))}")
        if wrong_sum:
            parts.append(f"the result differs from gloo's all_reduce in hidden calls {', '.join(map(str, wrong_sum))}")
        if parts:
            return Outcome(FAIL, "; ".join(parts) + ".")
        return Outcome(PASS)

    @staticmethod
    def tolerance(i, ref):
        return RING_TOLERANCES[i] if i < len(RING_TOLERANCES) else 1e-5


# the dtypes of the three hidden ring calls, in order (probe_calls fixes them)
RING_TOLERANCES = [SUM_TOLERANCE["float32"], SUM_TOLERANCE["bfloat16"], SUM_TOLERANCE["float64"]]


@dataclass(frozen=True)
class FsdpOutputs:
    """Hidden calls of fsdp_run: per rank [parameter, gradient, optimiser] bytes, exact."""
    points: float = 1.0

    def judge(self, ref, ans) -> Outcome:
        if isinstance(ans, dict) or not isinstance(ans, (list, tuple)):
            return Outcome(INVALID, "was not gathered: define state_bytes and run the harness cell.")
        if len(ans) != len(ref):
            return Outcome(INVALID, WRONG_OUTPUT_COUNT)
        wrong = []
        for i, (r, a) in enumerate(zip(ref, ans)):
            if isinstance(a, dict):
                return Outcome(INVALID, f"hidden call {i}: fsdp_run {a.get('error') or 'gave no list'}.")
            if not isinstance(a, (list, tuple)) or len(a) != len(r) or not all(
                    isinstance(row, (list, tuple)) and len(row) == 3 for row in a):
                wrong.append(i)
                continue
            counts = [_whole(v) for row in a for v in row]
            bad = next((c for c in counts if isinstance(c, str)), None)
            if bad:
                return Outcome(INVALID, f"hidden call {i}: a byte count {bad}.")
            if counts != [int(v) for row in r for v in row]:
                wrong.append(i)
        if wrong:
            return Outcome(FAIL, f"{len(wrong)} of {len(ref)} hidden runs of FSDP (numbers "
                                 f"{', '.join(map(str, wrong))}) give byte counts that differ from what the ranks hold.")
        return Outcome(PASS)


def _mistaken_answers(kind, keys, q):
    answers = solve_kind(q, kind)
    return {key: answers[key] for key in keys}


def _wrong_kind(kind, keys):
    """The answers (for `keys` only) that the reference gives with mistake `kind` built in."""
    return functools.partial(_mistaken_answers, kind, keys)


def _printed_k12(q):
    """ZeRO's mixed-precision count (2+2+12 bytes a parameter) used as printed. It is a mistake
    only in a run whose tensors are narrower than fp32: an fp32 run keeps 4+4+8 bytes a parameter
    (no master copy, Adam's moments in fp32), the same 16 bytes, so there it cannot be made."""
    if q["model_dtype"] == "float32":
        return {}
    return _mistaken_answers("mixed-precision-k12", ("stage3_formula_bytes",), q)


class CollectivesProblem(Problem):
    id = "p10-collectives"
    title = "At scale, on a CPU: an all-reduce and a sharded model, measured"
    strand = "practice"
    kind = "practice"
    assignment = "practice"
    symbols = ()
    # P, the all-reduced tensor (numel, dtype) and the FSDP model (widths, dtype): every one
    # runs here, on gloo, on a 2-core CPU, in about a second per launch.
    variants = {
        "A": {"world": 2, "numel": 1000, "dtype": "float32", "widths": [32, 64, 10],
              "model_dtype": "float32", "seed": 1},
        "B": {"world": 3, "numel": 1000, "dtype": "float32", "widths": [24, 48, 48, 5],
              "model_dtype": "bfloat16", "seed": 2},
        "C": {"world": 4, "numel": 4096, "dtype": "bfloat16", "widths": [40, 30, 7],
              "model_dtype": "float32", "seed": 3},
        "D": {"world": 4, "numel": 1502, "dtype": "float64", "widths": [16, 64, 64, 3],
              "model_dtype": "bfloat16", "seed": 4},
    }
    checks = {
        "ring_probe": RingOutputs(points=3.0),
        "ring_sent_bytes": ByteCounts(),
        "allreduce_input_bytes": Count(),
        "ring_formula_bytes": Number(rtol=1e-9),
        "bus_factor": Number(rtol=1e-9),
        "fsdp_probe": FsdpOutputs(points=3.0),
        "param_bytes_per_rank": ByteCounts(),
        "grad_bytes_per_rank": ByteCounts(),
        "optim_bytes_per_rank": ByteCounts(),
        "n_params": Count(),
        "stage3_formula_bytes": Number(rtol=1e-9),
    }
    cells = {
        "check_ring": ("ring_probe",),
        "check_ring_numbers": ("ring_sent_bytes", "allreduce_input_bytes", "ring_formula_bytes", "bus_factor"),
        "check_fsdp": ("fsdp_probe",),
        "check_fsdp_numbers": ("param_bytes_per_rank", "grad_bytes_per_rank", "optim_bytes_per_rank",
                               "n_params", "stage3_formula_bytes"),
    }

    def probes(self, params):
        calls = probe_calls(params)
        return {"ring_probe": Probe(function="ring_run", calls=calls["ring"]),
                "fsdp_probe": Probe(function="fsdp_run", calls=calls["fsdp"])}

    def solve(self, params):
        return solve_kind(params, "right")

    mistakes = (
        Mistake(
            "no-fraction",
            "the ring's traffic was taken as twice the tensor's bytes; each rank sends only its share: "
            "P-1 chunks of 1/P of the tensor in the reduce-scatter and P-1 in the all-gather, 2(P-1)/P in all.",
            _wrong_kind("no-fraction", ("ring_formula_bytes", "bus_factor")),
            instant="the share of the tensor each rank sends.",
        ),
        Mistake(
            "one-phase",
            "only one phase of the ring was counted; an all-reduce is a reduce-scatter followed by an "
            "all-gather, and each moves (P-1)/P of the tensor through every rank.",
            _wrong_kind("one-phase", ("ring_probe", "ring_sent_bytes", "ring_formula_bytes", "bus_factor")),
            instant="the phases of a ring all-reduce.",
        ),
        Mistake(
            "whole-tensor",
            "the whole tensor was sent at every step; in a ring each step carries one chunk, 1/P of the tensor.",
            _wrong_kind("whole-tensor", ("ring_probe", "ring_sent_bytes", "ring_formula_bytes", "bus_factor")),
            instant="what one step of the ring carries.",
        ),
        Mistake(
            "unsharded",
            "each rank was counted as holding the full model; under FSDP (ZeRO-3) a rank keeps 1/P of every "
            "parameter, gradient and optimiser state. A sharded parameter is a DTensor: p.numel() is the "
            "global size, p.to_local() is what this rank holds.",
            _wrong_kind("unsharded", ("fsdp_probe", "param_bytes_per_rank", "grad_bytes_per_rank",
                                      "optim_bytes_per_rank", "stage3_formula_bytes")),
            instant="the shard of each parameter that a rank holds.",
        ),
        Mistake(
            "elements",
            "elements were counted, not bytes; multiply each tensor's numel() by its element_size().",
            _wrong_kind("elements", ("fsdp_probe", "param_bytes_per_rank", "grad_bytes_per_rank",
                                     "optim_bytes_per_rank")),
            instant="what a byte count measures.",
        ),
        Mistake(
            "adam-step",
            "Adam's step counters were counted as optimiser state; count its two moments, exp_avg and "
            "exp_avg_sq (the step is one number per tensor, not per parameter).",
            _wrong_kind("adam-step", ("fsdp_probe", "optim_bytes_per_rank")),
            instant="which of Adam's state tensors are kept per parameter.",
        ),
        Mistake(
            "mixed-precision-k12",
            "ZeRO's mixed-precision count (2+2+12 bytes per parameter) was used as printed; this run keeps "
            "every tensor in one dtype and no fp32 master copy, so a parameter costs e+e+2e bytes.",
            _printed_k12,
            instant="the dtypes this run really keeps.",
        ),
    )


PROBLEM = CollectivesProblem()
