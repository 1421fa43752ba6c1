"""Running the notebook's cells inside the sandbox, and the warm interpreter they run in.

Standard library only, nothing from `graders`; loaded by path (as `_sandbox_cells`) by
`worker.py`. `preload` runs once in the zygote (libraries, an IPython shell, first calls
warmed up); `run_notebook` runs in each sandbox after every layer is in force: the cells in
order, each under its time limit, with its outputs captured under a byte budget, and for each
graded test cell its answers read back as plain data (never a reason or a grade).
"""
import json
import os
import signal
import sys
import time

RICH_MIMES = ("text/plain", "image/png", "image/jpeg", "text/latex")


class Capture:
    """The outputs of one cell, as nbformat-shaped dicts, with a byte budget."""

    def __init__(self, limit):
        self.outputs, self.used, self.limit, self.truncated = [], 0, limit, False

    def _take(self, text):
        room = self.limit - self.used
        if room <= 0:
            self.truncated = True
            return ""
        if len(text) > room:
            self.truncated = True
            text = text[:room]
        self.used += len(text)
        return text

    def stream(self, name, text):
        text = self._take(str(text))
        if not text:
            return
        last = self.outputs[-1] if self.outputs else None
        if last and last["output_type"] == "stream" and last["name"] == name:
            last["text"] += text
        else:
            self.outputs.append({"output_type": "stream", "name": name, "text": text})

    def rich(self, kind, data, count=None):
        bundle = {}
        for mime, value in (data or {}).items():
            if mime not in RICH_MIMES:
                continue
            if isinstance(value, (list, tuple)):
                value = "".join(str(v) for v in value)
            elif isinstance(value, bytes):
                continue
            value = str(value)
            if mime != "text/plain" and len(value) > self.limit - self.used:
                self.truncated = True   # an image cut short is no image: leave it out
                continue
            value = self._take(value)
            if value:
                bundle[mime] = value
        if not bundle:
            return
        output = {"output_type": kind, "data": bundle, "metadata": {}}
        if kind == "execute_result":
            output["execution_count"] = count
        self.outputs.append(output)

    def error(self, ename, evalue, traceback):
        lines = [self._take(str(line)) for line in list(traceback or [])[:200]]
        self.outputs.append({"output_type": "error", "ename": str(ename)[:200],
                             "evalue": self._take(str(evalue)[:2000]), "traceback": lines})

    def clear(self):
        self.outputs = []


CURRENT = Capture(0)


class Stream:
    """sys.stdout / sys.stderr inside the sandbox: text goes to the current cell."""
    encoding, errors = "utf-8", "replace"

    def __init__(self, name):
        self.name = name

    def write(self, text):
        CURRENT.stream(self.name, text)
        return len(text) if isinstance(text, str) else 0

    def writelines(self, lines):
        for line in lines:
            self.write(line)

    def flush(self):
        pass

    def isatty(self):
        return False

    def writable(self):
        return True

    def readable(self):
        return False

    def fileno(self):
        import io
        raise io.UnsupportedOperation("fileno")


class CellTimeout(BaseException):
    """The cell ran past its time limit (like nbgrader's CellTimeoutError).

    A BaseException, as KeyboardInterrupt is, so that `except Exception` in the
    student's code (or in the answer encoder) does not swallow it.
    """


SHELL = None
ENCODE = None


def preload(config):
    """Everything a child needs, imported once, before any student code exists."""
    global SHELL, ENCODE
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMEXPR_NUM_THREADS"):
        os.environ[var] = "1"
    os.environ["MPLBACKEND"] = "module://matplotlib_inline.backend_inline"
    os.environ.setdefault("MPLCONFIGDIR", config.scratch)
    os.environ["IPYTHONDIR"] = os.path.join(config.scratch, "ipython")
    import importlib.util
    spec = importlib.util.spec_from_file_location("_sandbox_transport", config.transport)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    ENCODE = module.encode
    _import(config.preload)
    # Only what was preloaded is set up here: a course whose notebooks never import torch or
    # matplotlib does not pay for them. One that a cell imports later is set up then (OMP_NUM_THREADS
    # holds torch to one thread; MPLBACKEND makes matplotlib's first import the inline backend).
    _one_torch_thread()
    SHELL = make_shell()
    if "matplotlib" in sys.modules:
        try:
            SHELL.run_line_magic("matplotlib", "inline")
        except Exception as exc:  # noqa: BLE001
            sys.stderr.write(f"sandbox zygote: no inline matplotlib: {exc}\n")
    warm_up()


def preload_later(config):
    """In the second zygote (forked from a ready first one): `config.later` (torch's modules),
    set up and warmed as `preload` sets up and warms what it imports."""
    _import(config.later)
    _one_torch_thread()
    warm_up_torch()
    import linecache
    linecache.clearcache()


def _import(names):
    for name in names:
        try:
            __import__(name)
        except Exception as exc:  # noqa: BLE001 - a missing optional library is not fatal
            sys.stderr.write(f"sandbox zygote: could not preload {name}: {exc}\n")


def _one_torch_thread():
    if "torch" in sys.modules:
        try:
            sys.modules["torch"].set_num_threads(1)
        except Exception:  # noqa: BLE001
            pass


def warm_up():
    """Touch the lazily imported parts every notebook uses, so children need not (for the
    libraries preloaded: a zygote started for notebooks that never import torch skips it)."""
    SHELL.logger  # noqa: B018 - a lazy import inside IPython's run_cell
    for source in ("1/0", "def f(:"):
        try:
            compile(source, "<warm-up>", "exec") if ":" in source else eval(source)
        except Exception:  # noqa: BLE001 - format one traceback of each kind, once
            SHELL.InteractiveTB.structured_traceback(*sys.exc_info())
            SHELL.SyntaxTB.structured_traceback(*sys.exc_info())
    try:
        sympy = sys.modules["sympy"]
        n, p = sympy.symbols("N P", positive=True)
        expr = 4 * n + 12 * n / p
        ENCODE(expr)
        float(expr.subs({n: 1, p: 2}))
        # the first simplify and solve import their helpers (sympy.physics among them): ~0.25 s
        sympy.simplify(expr / n)
        sympy.solve(sympy.Eq(expr, 1), n)
        SHELL.display_formatter.format(expr)
        SHELL.display_formatter.format([1.5, "x"])
    except Exception:  # noqa: BLE001
        pass
    warm_up_torch()
    try:
        plt = sys.modules["matplotlib.pyplot"]
        namespace = {}
        exec(WARM_UP_PLOT, namespace)
        SHELL.display_formatter.format(namespace["fig"])   # render once through the inline backend
        plt.close("all")
    except Exception:  # noqa: BLE001
        pass
    import linecache
    linecache.clearcache()


def warm_up_torch():
    """torch's first calls (when it was preloaded), its random state left as it was."""
    try:
        numpy, torch = sys.modules["numpy"], sys.modules["torch"]
        ENCODE(numpy.arange(3) * 2.0)
        ENCODE(torch.ones(2) * 2)
        state = torch.random.get_rng_state()
        exec(WARM_UP_TORCH, {})
        if "torch._dynamo" in sys.modules:
            exec(WARM_UP_OPTIMIZERS, {})
        torch.random.set_rng_state(state)
    except Exception:  # noqa: BLE001
        pass


# First calls that cost a second or more in a fresh interpreter (lazy imports inside torch and
# matplotlib: optimizers, autograd, fonts, mathtext); paid once here instead of in every child.
WARM_UP_TORCH = """
import torch
w = torch.nn.Parameter(torch.zeros(8, dtype=torch.float64)); w.grad = torch.ones(8, dtype=torch.float64)
torch.nn.utils.clip_grad_norm_([w], 1.0)
layer = torch.nn.Linear(4, 4)
layer(torch.ones(2, 4)).pow(2).sum().backward()
torch.ones(3).to(torch.float16); torch.ones(3).to(torch.bfloat16); torch.finfo(torch.float16)
"""

# Only when torch._dynamo was preloaded (the assignment's notebooks use an optimizer, checkpointing
# or the loss scaler, whose first call imports it): elsewhere it would cost every run 0.8 s for nothing.
WARM_UP_OPTIMIZERS = """
import torch, torch.utils.checkpoint
w = torch.nn.Parameter(torch.zeros(8, dtype=torch.float64)); w.grad = torch.ones(8, dtype=torch.float64)
for opt in (torch.optim.AdamW([w], lr=1e-3, weight_decay=0.1), torch.optim.Adam([w], lr=1e-3),
            torch.optim.SGD([w], lr=0.1, momentum=0.9)):
    opt.step(); opt.zero_grad()
sched = torch.optim.lr_scheduler.LambdaLR(torch.optim.SGD([w], lr=0.1), lambda step: 1.0); sched.step()
try:
    torch.amp.GradScaler("cpu")
except Exception:
    pass
"""


WARM_UP_PLOT = """
import matplotlib.pyplot as plt
fig, (a, b) = plt.subplots(1, 2, figsize=(6, 3))
a.bar(["x", "y"], [1, 2], label="bars"); a.axhline(1.5, ls="--"); a.set_title("$x^2$ and $\\eta$")
b.plot([1, 2, 3], [1, 4, 9], marker="o"); b.set_yscale("log"); b.set_xlabel("step"); b.legend(["y"])
b.scatter([1, 2], [2, 3]); b.text(1, 2, "label"); fig.tight_layout()
"""


def make_shell():
    from IPython.core.displayhook import DisplayHook
    from IPython.core.displaypub import DisplayPublisher
    from IPython.core.interactiveshell import InteractiveShell
    from traitlets.config import Config

    class Hook(DisplayHook):
        def start_displayhook(self):
            self._bundle = None

        def write_output_prompt(self):
            pass

        def write_format_data(self, format_dict, md_dict=None):
            self._bundle = format_dict

        def finish_displayhook(self):
            if self._bundle:
                CURRENT.rich("execute_result", self._bundle, self.shell.execution_count)
            self._bundle = None

    class Publisher(DisplayPublisher):
        def publish(self, data, metadata=None, source=None, *, transient=None, update=False, **kwargs):
            CURRENT.rich("display_data", data)

        def clear_output(self, wait=False):
            CURRENT.clear()

    class Shell(InteractiveShell):
        displayhook_class = Hook
        display_pub_class = Publisher

        def _showtraceback(self, etype, evalue, stb):
            CURRENT.error(getattr(etype, "__name__", "Error"), evalue, stb)

        def enable_gui(self, gui=None):
            pass

        def system_piped(self, cmd):
            """`!cmd` as a kernel runs it, through pipes: IPython's own runs it on a pseudo-terminal,
            and the sandbox has none. Its output is the cell's, under the cell's bounds."""
            import subprocess
            if cmd.rstrip().endswith("&"):
                raise OSError("Background processes not supported.")
            done = subprocess.run(self.var_expand(cmd, depth=1), shell=True, executable="/bin/sh",
                                  stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                  stderr=subprocess.STDOUT, check=False)
            sys.stdout.write(done.stdout.decode("utf-8", "replace"))
            self.user_ns["_exit_code"] = done.returncode
            if self.system_raise_on_error and done.returncode != 0:
                raise subprocess.CalledProcessError(done.returncode, cmd)

        system = system_piped

    config = Config()
    config.HistoryManager.enabled = False
    config.InteractiveShell.colors = "NoColor"
    config.InteractiveShell.autocall = 0
    return Shell.instance(config=config)


def quiet_fds(keep):
    null = os.open("/dev/null", os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    os.close(null)
    os.closerange(3, keep)
    os.closerange(keep + 1, 4096)


def environment(job, work):
    keep = {k: os.environ[k] for k in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
                                      "NUMEXPR_NUM_THREADS", "MPLBACKEND") if k in os.environ}
    os.environ.clear()
    os.environ.update(keep)
    os.environ.update({
        "PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": "/tmp", "TMPDIR": "/tmp", "LANG": "C.UTF-8",
        "MPLCONFIGDIR": "/tmp/.matplotlib", "IPYTHONDIR": "/tmp/.ipython", "PWD": work,
        "NBGRADER_EXECUTION": "autograde",
    })
    os.environ.update({str(k): str(v) for k, v in job.get("env", {}).items()})
    import tempfile
    tempfile.tempdir = None


class Emitter:
    """Writes one JSON line per message with json's C encoder, bound before student code runs,
    so that patching json, isinstance or os.write later does not change what is sent."""

    def __init__(self, fd):
        from json import encoder
        self.fd, self.write, self.join = fd, os.write, "".join
        self.make = encoder.c_make_encoder or None
        self.basestring = encoder.encode_basestring_ascii
        self.fallback = json.dumps

    def _encode(self, obj):
        if self.make is None:
            return self.fallback(obj, allow_nan=False, default=str)
        iterencode = self.make({}, str, self.basestring, None, ": ", ", ", False, False, False)
        return self.join(iterencode(obj, 0))

    def __call__(self, obj):
        try:
            data = memoryview((self._encode(obj) + "\n").encode())
        except (ValueError, TypeError, RecursionError):
            data = memoryview(b'{"type": "unencodable"}\n')
        try:
            while data:
                data = data[self.write(self.fd, data):]
        except OSError:
            pass


def _alarm(signum, frame):
    _disarm()   # one interrupt per cell: the other timer must not give a cell that swallowed it a second one
    raise CellTimeout("the cell ran past its time limit")


WALL_FACTOR = 3.0


def _arm(seconds):
    """The cell's limit in this process's own CPU time, with a generous wall-clock backstop:
    time a busy neighbour takes from the machine is not charged to this notebook."""
    signal.setitimer(signal.ITIMER_PROF, seconds)
    signal.setitimer(signal.ITIMER_REAL, seconds * WALL_FACTOR)


def _disarm():
    signal.setitimer(signal.ITIMER_PROF, 0)
    signal.setitimer(signal.ITIMER_REAL, 0)


def run_cells(job, limits, emit):
    global CURRENT, WALL_FACTOR
    signal.signal(signal.SIGALRM, _alarm)
    signal.signal(signal.SIGPROF, _alarm)
    WALL_FACTOR = float(limits.get("wall_factor", 3.0))
    stdout, stderr = Stream("stdout"), Stream("stderr")
    sys.stdout, sys.stderr = stdout, stderr
    sys.stdin = open(os.devnull)
    shell = SHELL
    if job.get("figures") == "drawn":
        figures_drawn_only(shell)
    seconds = float(limits["cell_seconds"])
    for cell in job["cells"]:
        CURRENT = Capture(int(limits["cell_output_bytes"]))
        emit({"type": "begin", "index": cell["index"]})
        raised, ename, timed_out = False, "", False
        started = time.monotonic()
        try:
            _arm(seconds)
            sys.stdout, sys.stderr = stdout, stderr
            result = shell.run_cell(cell["source"], store_history=True, silent=False)
            _disarm()
            error = result.error_before_exec or result.error_in_exec
            if error is not None:
                raised, ename = True, type(error).__name__
                timed_out = isinstance(error, CellTimeout)
        except BaseException as exc:  # noqa: BLE001 - the student's code may raise anything
            _disarm()
            raised, ename, timed_out = True, type(exc).__name__, isinstance(exc, CellTimeout)
            CURRENT.error(ename, "the cell could not be run to the end", [])
        message = {"type": "cell", "index": cell["index"], "raised": raised, "ename": ename,
                   "timeout": timed_out, "seconds": round(time.monotonic() - started, 4), "started_at": started}
        if cell.get("test") and not timed_out:   # a failed visible check still leaves the answers to grade
            read_at = time.monotonic()
            message["answers"] = snapshot(cell, shell, seconds)
            message["answer_seconds"] = round(time.monotonic() - read_at, 4)
        sys.stdout, sys.stderr = stdout, stderr
        message["outputs"] = CURRENT.outputs
        message["truncated"] = CURRENT.truncated
        emit(message)


def figures_drawn_only(shell):
    """Build every figure, but display it as text instead of rasterizing it to PNG (a run whose
    only use is its grades: the gate's). Nothing a cell computes changes; only the image is left out."""
    try:
        from matplotlib.figure import Figure
    except Exception:  # noqa: BLE001 - no matplotlib: no figures to leave out
        return
    for mime in ("image/png", "image/jpeg", "image/svg+xml", "application/pdf"):
        formatter = shell.display_formatter.formatters.get(mime)
        if formatter is not None:
            formatter.pop(Figure, None)


def snapshot(cell, shell, seconds):
    """The cell's answers as plain data (the same rule as graders.notebook.gather)."""
    answers = {}
    try:
        _arm(seconds)
        namespace = shell.user_ns
        probes = cell.get("probes", {})
        for key in cell.get("keys", []):
            try:
                if key in probes:
                    function = namespace.get(probes[key]["function"])
                    if not callable(function):
                        continue
                    outputs = []
                    for args in probes[key]["calls"]:
                        try:
                            outputs.append(ENCODE(function(*args)))
                        except Exception as exc:  # noqa: BLE001 - the student's function failed
                            outputs.append({"error": f"raised {type(exc).__name__}"})
                    answers[key] = outputs
                elif key in namespace:
                    answers[key] = ENCODE(namespace[key])
            except BaseException as exc:  # noqa: BLE001
                if isinstance(exc, CellTimeout):
                    raise
                answers[key] = {"error": f"could not be read ({type(exc).__name__})"}
        _disarm()
    except BaseException:  # noqa: BLE001 - a timeout while reading answers
        _disarm()
        answers["__timeout__"] = True
    return answers



def run_notebook(job, out_fd, work, layers):
    """In the sandbox, every layer in force: run the cells, each message one JSON line on `out_fd`."""
    quiet_fds(out_fd)
    os.chdir(work)
    environment(job, work)
    sys.path.insert(0, work)   # as a kernel has its notebook's folder: modules shipped beside it import
    emit = Emitter(out_fd)
    emit({"type": "isolation", "layers": layers})
    run_cells(job, job["limits"], emit)
    emit({"type": "done"})
