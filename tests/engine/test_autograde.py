"""`chapter autograde`: each class of attack scores 0 (or no more than honest), the batch survives.

One scratch course holds w1-memory only. One class is built in which honest
students sit beside attackers, and graded in a single run; each test then
reads its own students' results. Honest students must keep full marks.
"""
from __future__ import annotations

import json
import os
import socket
import re
import sqlite3
import threading
import time
from pathlib import Path

import nbformat
import pytest

from graders.engine import course_dir
from graders.engine import grading
from graders.engine.journal import Journal
from graders.engine import sanitize
from graders.engine.summary import isolation_warnings
from graders.engine import autograde as ag
from graders import problems, variants
from graders.engine.scratch import make_course
from tests.warm_nbgrader import nbgrader
from graders.sandbox import linux
from graders.sandbox.zygote import UID_BASE, Limits, Zygote
from tests.namespaces import namespaces_permitted

ROOT = Path(__file__).resolve().parents[2]
ASSIGNMENT = "worked"
NB = "w1-memory"
FULL = 4.0
# notebook_seconds: the hard hang burns it all in CPU time, so the whole run waits for it; an honest
# notebook here needs about a second
LIMITS = Limits(cell_seconds=4, notebook_seconds=8, memory_bytes=1 << 30, output_bytes=2 << 20,
                line_bytes=1 << 20, cell_output_bytes=64 << 10)


# Without namespaces (not root, or unshare refused) the engine degrades with a warning; the
# attacks that only namespaces stop are then not stopped, and their tests are skipped.
isolated = pytest.mark.skipif(not namespaces_permitted(), reason="namespaces are not permitted here")


def student(label: str, name: str) -> str:
    return variants.student_for(label, ASSIGNMENT, prefix=name)


# ---------------------------------------------------------------------- notebooks
def solution():
    return nbformat.read(ROOT / "solutions" / ASSIGNMENT / f"{NB}.ipynb", as_version=4)


def blank():
    return nbformat.read(ROOT / "release" / ASSIGNMENT / f"{NB}.ipynb", as_version=4)


def index_of(nb, grade_id):
    return next(i for i, c in enumerate(nb.cells) if c.metadata.get("nbgrader", {}).get("grade_id") == grade_id)


def with_cell(nb, source, after="setup"):
    nb.cells.insert(index_of(nb, after) + 1, nbformat.v4.new_code_cell(source))
    return nb


def answers_for(label):
    """Source that assigns correct answers for variant `label` (what a cheater wants to reach)."""
    params = problems.get(NB).variants[label]
    return (f"_p = {params!r}\n"
            "per_device_expr = {0: (4 + K) * N, 1: 4 * N + K * N / P, 2: 2 * N + (2 + K) * N / P,"
            " 3: (4 + K) * N / P}[_p['stage']]\n"
            "bytes_per_param = 4 + _p['K']\ntotal_bytes = bytes_per_param * _p['N']\n"
            "per_device_bytes = float(per_device_expr.subs({N: _p['N'], P: _p['P'], K: _p['K']}))\n")


def cheat_if(condition: str, label: str) -> str:
    """Assign the right answers only when `condition` holds inside the sandbox."""
    body = "\n".join("    " + line for line in answers_for(label).splitlines())
    return f"if {condition}:\n{body}\n"


class Sink:
    """A TCP listener on 127.0.0.1: anything that reaches it is recorded."""

    def __init__(self):
        self.server = socket.socket()
        self.server.bind(("127.0.0.1", 0))
        self.server.listen(8)
        self.server.settimeout(0.5)
        self.port = self.server.getsockname()[1]
        self.received = []
        self.stop = False
        self.thread = threading.Thread(target=self.serve, daemon=True)
        self.thread.start()

    def serve(self):
        while not self.stop:
            try:
                conn, _ = self.server.accept()
            except OSError:
                continue
            self.received.append(conn.recv(100))
            conn.close()

    def close(self):
        self.stop = True
        self.thread.join()
        self.server.close()


# ---------------------------------------------------------------------- the class
def build_class(course: Path, sink: Sink) -> dict[str, tuple[str, object]]:
    """{student: (what it tries, notebook or raw bytes)}."""
    gradebook = course / "gradebook.db"
    source_nb = course / "source" / ASSIGNMENT / f"{NB}.ipynb"
    marker = course / "pwned"
    cls = {}

    def add(name, label, nb, what):
        sid = student(label, name)
        cls[sid] = (what, nb)
        return sid

    add("honest-a", "A", solution(), "honest")
    add("honest-b", "B", solution(), "honest")
    add("honest-c", "C", solution(), "honest")
    add("honest-d", "D", solution(), "honest")
    add("blank", "A", blank(), "blank")

    # 1. input transformers and IPython hooks: every later cell becomes `pass`
    add("transformer", "B", with_cell(blank(), "get_ipython().input_transformers_post.append("
                                               "lambda lines: ['pass\\n'])"), "transformer")
    add("hooks", "C", with_cell(blank(), "ip = get_ipython()\n"
                                         "ip.events.register('pre_run_cell', lambda *a: None)\n"
                                         "ip.input_transformers_cleanup.append(lambda lines: ['pass\\n'])\n"
                                         "import builtins\nbuiltins.__import__ = lambda *a, **k: None"),
        "hooks")

    # 1b. escaping the sandbox: new user/network namespaces (capabilities again), mounts, ptrace
    escape = ("import ctypes, subprocess\nlibc = ctypes.CDLL(None, use_errno=True)\nESCAPED = []\n"
              "for name, flag in (('userns', 0x10000000), ('netns', 0x40000000), ('mountns', 0x20000)):\n"
              "    if libc.unshare(flag) == 0:\n        ESCAPED.append(name)\n"
              "if libc.mount(b'none', b'/tmp', b'tmpfs', 0, None) == 0:\n    ESCAPED.append('mount')\n"
              "try:\n    if subprocess.run(['unshare', '-Urn', 'true']).returncode == 0:\n"
              "        ESCAPED.append('unshare -Urn')\nexcept OSError:\n    pass\n"
              "if libc.ptrace(16, 1, 0, 0) == 0:\n    ESCAPED.append('ptrace')\n"
              "print('ESCAPED', ESCAPED)\n")
    add("escape", "D", with_cell(blank(), escape + cheat_if("ESCAPED", "D")), "escaping the sandbox")

    # 2. patched libraries: wrong answers, everything that compares says "equal"
    patch = ("import sympy, numpy, math, builtins, operator\n"
             "sympy.Expr.__eq__ = lambda a, b: True\nsympy.Basic.equals = lambda a, b, **k: True\n"
             "sympy.simplify = lambda *a, **k: sympy.Integer(0)\nsympy.srepr = lambda e: 'Integer(0)'\n"
             "numpy.isclose = lambda *a, **k: True\nnumpy.allclose = lambda *a, **k: True\n"
             "math.isclose = lambda *a, **k: True\noperator.eq = lambda *a: True\n"
             "per_device_expr = N\nbytes_per_param = 1\ntotal_bytes = 1.0\nper_device_bytes = 1.0\n")
    nb = blank()
    nb.cells[index_of(nb, "answer_expr")].source = patch
    nb.cells[index_of(nb, "answer_numbers")].source = "pass"
    add("patched", "D", nb, "patched libraries")
    nb = solution()
    nb.cells[index_of(nb, "answer_numbers")].source += (
        "\nimport builtins, json\nbuiltins.isinstance = lambda *a: True\nbuiltins.len = lambda *a: 0\n"
        "json.dumps = lambda *a, **k: '{}'\ntotal_bytes = 1.0\n")
    add("patched-builtins", "A", nb, "patched builtins")

    # 3. objects whose == lies (and whose float, int, srepr lie)
    liar = ("class Liar(float):\n"
            "    def __eq__(self, other): return True\n    __hash__ = float.__hash__\n"
            "    def __float__(self): return 0.0\n"
            "class LiarExpr(sympy.Symbol):\n    def __eq__(self, other): return True\n"
            "    __hash__ = sympy.Symbol.__hash__\n"
            "import sympy\nper_device_expr = LiarExpr('N')\n"
            "bytes_per_param = True\ntotal_bytes = Liar(1.0)\nper_device_bytes = Liar(2.0)\n")
    nb = blank()
    nb.cells[index_of(nb, "answer_expr")].source = "import sympy\n" + liar
    nb.cells[index_of(nb, "answer_numbers")].source = "pass"
    add("liar", "A", nb, "lying ==")

    # 4. reading the hidden tests: source notebook, gradebook, graders, other students
    reads = [str(source_nb), str(gradebook), str(ROOT / "graders" / "problems" / "w1_memory.py"),
             str(course / "submitted"), str(ROOT / "solutions" / ASSIGNMENT / f"{NB}.ipynb")]
    probe = (f"import os\nSEEN = []\nfor path in {reads!r}:\n"
             "    try:\n        os.listdir(path) if os.path.isdir(path) else open(path, 'rb').read(1)\n"
             "        SEEN.append(path)\n    except Exception:\n        pass\n"
             "try:\n    import graders\n    SEEN.append('graders')\nexcept Exception:\n    pass\n"
             "try:\n    import __editable___training_at_scale_0_1_0_finder as f\n    f.install()\n"
             "    import graders\n    SEEN.append('graders via the editable finder')\nexcept Exception:\n"
             "    pass\nprint('SEEN', SEEN)\n")
    label = "B"
    add("reader", label, with_cell(blank(), probe + cheat_if("SEEN", label)), "reading hidden tests")

    # 5. writing the gradebook and the course
    write = (f"import sqlite3\nWROTE = []\ntry:\n    db = sqlite3.connect({str(gradebook)!r})\n"
             "    db.execute('update grade set auto_score = 99, manual_score = 99')\n    db.commit()\n"
             "    WROTE.append('db')\nexcept Exception as e:\n    print('db', type(e).__name__)\n"
             f"for path in [{str(marker)!r}, '/usr/pwned', '/pwned']:\n"
             "    try:\n        open(path, 'w').write('x')\n        WROTE.append(path)\n"
             "    except Exception as e:\n        print(path, type(e).__name__)\n"
             "open('/tmp/scratch-file', 'w').write('mine')\nprint('WROTE', WROTE)\n")
    add("writer", "C", with_cell(blank(), write), "writing the gradebook")

    # 6. detached children: a daemon that sleeps, then rewrites grades
    daemon = (f"import os, time, sqlite3, subprocess, sys\npid = os.fork()\nif pid == 0:\n    os.setsid()\n"
              "    if os.fork() == 0:\n        time.sleep(3)\n"
              f"        try:\n            open({str(marker) + '-daemon'!r}, 'w').write('x')\n"
              f"            db = sqlite3.connect({str(gradebook)!r})\n"
              "            db.execute('update grade set auto_score = 99')\n            db.commit()\n"
              "        finally:\n            os._exit(0)\n    os._exit(0)\n"
              "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'], start_new_session=True)\n")
    add("daemon", "D", with_cell(solution(), daemon, after="answer_numbers"), "detached children")

    # 7. network
    net = (f"import socket\nREACHED = False\ntry:\n"
           f"    s = socket.create_connection(('127.0.0.1', {sink.port}), timeout=2)\n"
           "    s.sendall(b'pwned')\n    REACHED = True\nexcept Exception as e:\n    print('net', e)\n")
    label = "A"
    add("network", label, with_cell(blank(), net + cheat_if("REACHED", label)), "network")

    # 8. hangs: one the per-cell limit interrupts, one that ignores the interrupt
    nb = solution()
    nb.cells[index_of(nb, "answer_expr")].source = "while True:\n    pass\n"
    add("hang", "B", nb, "hang")
    nb = with_cell(solution(), "import signal\nsignal.signal(signal.SIGALRM, signal.SIG_IGN)\n"
                               "signal.signal(signal.SIGPROF, signal.SIG_IGN)\n"
                               "while True:\n    try:\n        pass\n    except BaseException:\n        pass\n",
                   after="setup")
    add("hang-hard", "C", nb, "hang ignoring the interrupt")

    # 9. memory: ask for 10 GB before assigning anything
    nb = solution()
    nb.cells[index_of(nb, "answer_expr")].source = \
        "import numpy\nhog = numpy.ones(10 * 1024**3 // 8)\n" + nb.cells[index_of(nb, "answer_expr")].source
    add("memory", "D", nb, "memory")

    # 10. output floods: through print (capped), then straight at the sandbox's pipe (killed)
    nb = with_cell(solution(), "for _ in range(2000):\n    print('x' * 10000)\n"
                               "import os\nfor fd in range(3, 64):\n    try:\n"
                               "        for _ in range(400):\n            os.write(fd, b'y' * 10000)\n"
                               "    except OSError:\n        pass\n", after="setup")
    add("flood", "A", nb, "output flood")

    # 11. ending the process: os._exit before the tests; sys.exit is just an error; a segfault
    add("exit", "B", with_cell(solution(), "import os\nos._exit(0)"), "os._exit")
    add("sysexit", "C", with_cell(solution(), "import sys\nsys.exit(3)", after="answer_numbers"), "sys.exit")
    add("segfault", "D", with_cell(solution(), "import ctypes\nctypes.string_at(0)"), "segfault")

    # 12. broken notebooks
    add("badjson", "A", b'{"cells": [ {"cell_type": "code", "source": "x = 1"', "invalid JSON")
    nb = blank()
    nb.cells = [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id")
                not in ("setup", "check_expr", "check_numbers")]
    add("nocells", "B", nb, "missing cells (blank)")
    nb = solution()
    nb.cells = [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") not in ("setup", "check_expr")]
    add("nocells-honest", "C", nb, "missing cells (honest)")

    # 13. duplicated cells and inflated points
    nb = blank()
    fake = nbformat.v4.new_code_cell("pass")
    fake.metadata = json.loads(json.dumps(nb.cells[index_of(nb, "check_expr")].metadata))
    fake.metadata["nbgrader"]["points"] = 100
    fake2 = nbformat.v4.new_code_cell("pass")
    fake2.metadata = json.loads(json.dumps(nb.cells[index_of(nb, "check_numbers")].metadata))
    nb.cells.insert(index_of(nb, "setup") + 1, fake)
    nb.cells.append(fake2)
    add("duplicate", "D", nb, "duplicated cells")
    nb = blank()
    for cell in nb.cells:
        meta = cell.metadata.get("nbgrader", {})
        if meta.get("grade"):
            meta["points"] = 1000
        if meta.get("grade_id") == "answer_expr":   # and make an answer cell a "test" cell worth 50
            meta.update(grade=True, points=50)
    add("inflated", "A", nb, "inflated points")
    nb = solution()
    for cell in nb.cells:
        if cell.metadata.get("nbgrader", {}).get("grade"):
            cell.metadata["nbgrader"]["points"] = 1000
    add("inflated-honest", "B", nb, "inflated points (honest)")

    # 14. edited tests and locked cells
    nb = blank()
    for grade_id in ("check_expr", "check_numbers"):
        nb.cells[index_of(nb, grade_id)].source = "judge = lambda *a: 3\n3"
        nb.cells[index_of(nb, grade_id)].metadata["nbgrader"]["locked"] = False
        nb.cells[index_of(nb, grade_id)].metadata["nbgrader"]["solution"] = True
    add("edited-tests", "C", nb, "edited tests")

    # 15. variant tampering: a D student answers variant A (easier numbers) three ways
    other = student("A", "someone")
    sid = student("D", "variant-env")
    nb = solution()
    nb.cells.insert(index_of(nb, "setup"), nbformat.v4.new_code_cell(
        f"import os\nos.environ['JUPYTERHUB_USER'] = {other!r}"))
    add("variant-env", "D", nb, "JUPYTERHUB_USER")
    nb = with_cell(solution(), "VARIANTS['D'] = VARIANTS['A']\nparams = VARIANTS['A']")
    add("variant-edit", "D", nb, "editing VARIANTS")
    nb = solution()
    setup = nb.cells[index_of(nb, "setup")]
    setup.source = setup.source.replace("VARIANT = ", "VARIANT = 'A' or ")
    add("variant-setup", "D", nb, "editing the setup cell")
    assert sid in cls

    # 16. links: the notebook itself, or a data file, pointing at instructor files
    cls[student("B", "link-nb")] = ("notebook linked to the source", ("link", source_nb))
    nb = with_cell(blank(), "SEEN = []\nfor name in ('data.db', 'source.ipynb'):\n    try:\n"
                            "        open(name, 'rb').read(1)\n        SEEN.append(name)\n"
                            "    except Exception:\n        pass\nprint('SEEN', SEEN)\n" + cheat_if("SEEN", "C"))
    cls[student("C", "link-file")] = ("data files linked to the gradebook", ("files", nb, {
        "data.db": gradebook, "source.ipynb": source_nb}))

    # 17. warnings and stderr during a test cell do not zero a correct answer
    add("warnings", "A", with_cell(solution(), "import sys, warnings\nwarnings.simplefilter('always')\n"
                                               "get_ipython().events.register('post_run_cell', lambda *a: ("
                                               "warnings.warn('deprecated'), print('noise', file=sys.stderr)))"),
        "warnings")
    # 18. the trusted side as the target: a text that stalls the reader, a forged message stream
    add("srepr-bomb", "A", with_cell(solution(), "import sympy\nsympy.srepr = lambda e, **k: "
                                                 "\"sqrt(Pow(Symbol('N'), Integer(123456789)))\""), "srepr bomb")
    add("forger", "B", with_cell(blank(), "import os\nfor fd in range(3, 64):\n    try:\n"
                                          "        os.write(fd, b''.join(b'{\"type\": \"cell\", \"index\": %d, "
                                          "\"raised\": true, \"ename\": \"Forged\"}\\n' % i "
                                          "for i in range(20000)))\n    except OSError:\n        pass\n"),
        "forged messages")
    return cls


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    course = make_course(ROOT, tmp_path_factory.mktemp("course"), only=[ASSIGNMENT])
    for path in (course / "source" / ASSIGNMENT).iterdir():
        if path.name != f"{NB}.ipynb":
            path.unlink()
    nbgrader("generate_assignment", ASSIGNMENT, "--force", cwd=course)
    sink = Sink()
    cls = build_class(course, sink)
    for sid, (_, nb) in cls.items():
        folder = course / "submitted" / sid / ASSIGNMENT
        folder.mkdir(parents=True)
        target = folder / f"{NB}.ipynb"
        if isinstance(nb, bytes):
            target.write_bytes(nb)
        elif isinstance(nb, tuple) and nb[0] == "link":
            target.symlink_to(nb[1])
        elif isinstance(nb, tuple):
            nbformat.write(nb[1], target)
            for name, link in nb[2].items():
                (folder / name).symlink_to(link)
        else:
            nbformat.write(nb, target)
    before = sqlite_dump(course / "gradebook.db")
    started = time.monotonic()
    report = ag.autograde(course, ASSIGNMENT, workers=2, limits=LIMITS, progress=False, out=None)
    elapsed, ended = time.monotonic() - started, _uptime()
    # let any daemon that survived wake up and do its damage: it forks while its notebook runs, before
    # that notebook's journal entry is last written, and sleeps 3 s; wait 4 s past that write (once
    # the end of the whole run), not past the end of the run when the notebook was graded early on
    journal = Journal(course_dir.load_course(course, ASSIGNMENT)).path(student("D", "daemon"))
    time.sleep(max(0.0, journal.stat().st_mtime + 4 - time.time()))
    sink.close()
    yield {"course": course, "report": report, "cls": cls, "sink": sink, "before": before, "elapsed": elapsed,
           "ended": ended}


def sqlite_dump(path):
    with sqlite3.connect(path) as db:
        return sorted(db.execute("select g.notebook_id, g.cell_id, g.auto_score, g.manual_score, "
                                 "g.needs_manual_grade from grade g").fetchall())


def result(graded, name, label):
    return graded["report"].results[student(label, name)].notebooks[0]


def gradebook_score(graded, name, label):
    from nbgrader.api import Gradebook
    with Gradebook(f"sqlite:///{graded['course'] / 'gradebook.db'}") as gb:
        nb = gb.find_submission_notebook(NB, ASSIGNMENT, student(label, name))
        return nb.score, nb.max_score


def autograded(graded, name, label):
    path = graded["course"] / "autograded" / student(label, name) / ASSIGNMENT / f"{NB}.ipynb"
    return nbformat.read(path, as_version=4)


def outputs_text(nb):
    text = []
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            text.append(out.get("text", "") or json.dumps(out.get("data", {})) + str(out.get("evalue", "")))
    return "\n".join(text)


def assert_zero(graded, name, label, *reason_words):
    got = result(graded, name, label)
    assert got.score == 0, (name, got.feedback, got.reasons)
    assert gradebook_score(graded, name, label) == (0, FULL)
    text = " ".join(got.reasons + got.feedback).lower()
    for word in reason_words:
        assert word in text, (name, got.reasons, got.feedback)
    return got


# ---------------------------------------------------------------------- honest
def test_honest_students_keep_full_marks(graded):
    for label in "ABCD":
        got = result(graded, f"honest-{label.lower()}", label)
        assert got.score == FULL, got.feedback
        assert got.variant == label
        assert gradebook_score(graded, f"honest-{label.lower()}", label) == (FULL, FULL)
        assert any(line.startswith(f"Variant {label}: 3 of 3") for line in got.feedback)
    assert not graded["report"].failed


def test_blank_scores_zero_and_is_listed(graded):
    assert_zero(graded, "blank", "A", "raised")
    summary = graded["report"].summary()
    assert student("A", "blank") in summary
    assert student("A", "honest-a") not in summary


def test_autograded_notebook_has_nbgrader_outputs(graded):
    nb = autograded(graded, "honest-a", "A")
    cell = nb.cells[index_of(nb, "check_numbers")]
    assert cell.outputs[-1].output_type == "execute_result"
    assert cell.outputs[-1].data["text/plain"] == "3.0"
    assert "✓ total_bytes: correct" in cell.outputs[-2].text
    from nbgrader.utils import determine_grade
    assert determine_grade(cell)[0] == 3.0   # nbgrader reads the same points from the notebook


def test_feedback_never_shows_hidden_tests_or_references(graded):
    problem = problems.get(NB)
    secrets = ["BEGIN HIDDEN TESTS", "judge(", "graders.notebook"]
    for label, params in problem.variants.items():
        for key, value in problem.solve(params).items():
            if isinstance(value, (int, float)) and abs(value) > 1000:
                secrets += [str(int(value)), f"{value:g}", repr(float(value))]
    for sid in graded["cls"]:
        folder = graded["course"] / "autograded" / sid / ASSIGNMENT
        if not folder.exists():
            continue
        nb = nbformat.read(folder / f"{NB}.ipynb", as_version=4)
        for cell in nb.cells:
            meta = cell.metadata.get("nbgrader", {})
            if meta.get("grade") and not meta.get("solution"):
                assert "HIDDEN" not in cell.source and "judge" not in cell.source
                for out in cell.outputs:
                    if out.output_type == "stream" and out.name == "stdout":
                        for secret in secrets[3:]:
                            assert secret not in out.text, (sid, secret)
    for sid, res in graded["report"].results.items():
        for line in res.notebooks[0].feedback:
            assert not any(s in line for s in secrets), (sid, line)


# ---------------------------------------------------------------------- attacks
def test_input_transformers_and_hooks(graded):
    assert_zero(graded, "transformer", "B")
    assert_zero(graded, "hooks", "C")


@isolated
def test_escaping_the_sandbox(graded):
    assert_zero(graded, "escape", "D")
    text = outputs_text(autograded(graded, "escape", "D"))
    assert "ESCAPED []" in text, text


def test_patched_libraries(graded):
    got = assert_zero(graded, "patched", "D")
    assert any("per_device_expr" in line and "✗" in line for line in got.feedback)
    got = result(graded, "patched-builtins", "A")   # honest expression, wrong total, builtins patched
    assert got.score <= FULL - 1, got.feedback


def test_objects_whose_eq_lies(graded):
    got = assert_zero(graded, "liar", "A")
    assert any("total_bytes" in line and "✗" in line for line in got.feedback)


@isolated
def test_reading_hidden_tests_gradebook_and_graders(graded):
    assert_zero(graded, "reader", "B")
    text = outputs_text(autograded(graded, "reader", "B"))
    assert "SEEN []" in text, text


@isolated
def test_writing_the_gradebook_and_course(graded):
    assert_zero(graded, "writer", "C")
    text = outputs_text(autograded(graded, "writer", "C"))
    assert "WROTE []" in text, text
    assert not (graded["course"] / "pwned").exists()
    assert not Path("/usr/pwned").exists() and not Path("/pwned").exists()
    assert not Path("/tmp/scratch-file").exists()


@isolated
def test_detached_children_die_with_the_sandbox(graded):
    got = result(graded, "daemon", "D")
    assert got.score == FULL   # honest answers, plus a daemon: the daemon gains nothing
    assert not (graded["course"] / "pwned-daemon").exists()
    with sqlite3.connect(graded["course"] / "gradebook.db") as db:
        assert db.execute("select count(*) from grade where auto_score = 99").fetchone() == (0,)
    # the daemon's notebook ran as one leased sandbox uid, held by no other notebook while it ran:
    # none of its processes may outlive it (a later notebook, of this run or of another grader on
    # the machine, may lease the uid again, but its processes start after the graded run ended)
    uid = got.layers["monitor"]["uid"]
    assert uid is not None and uid >= UID_BASE, got.layers
    survivors = [p for p in linux.owned_by(uid) if _started(p) < graded["ended"]]
    assert survivors == []
    for label in "ABCD":
        assert gradebook_score(graded, f"honest-{label.lower()}", label) == (FULL, FULL)


def _uptime() -> float:
    with open("/proc/uptime") as fh:
        return float(fh.read().split()[0])


def _started(pid) -> float:
    """When process `pid` started, in seconds since boot (as /proc/uptime counts); +inf if gone."""
    running = linux.identity(pid)     # "pid.start-time", the start time in clock ticks since boot
    return float("inf") if running is None else int(running.split(".")[1]) / os.sysconf("SC_CLK_TCK")


@isolated
def test_network_is_unreachable(graded):
    assert_zero(graded, "network", "A")
    assert graded["sink"].received == []


def test_hangs_are_cut_off(graded):
    # the hanging cell is interrupted and scores nothing; the answers other cells computed
    # are still graded, each on its own (per_device_bytes needed the lost expression)
    got = result(graded, "hang", "B")
    assert got.grades["check_expr"] == 0 and got.score < FULL
    assert any(r.endswith("ran past its time limit and was interrupted") for r in got.reasons)
    assert any(line.startswith("✗ per_device_bytes") for line in got.feedback)
    got = assert_zero(graded, "hang-hard", "C", f"ran past its {LIMITS.notebook_seconds:g} s limit")
    assert got.run["status"] == "timeout"


def test_memory_bomb(graded):
    # the bomb's cell raises MemoryError and scores nothing; the other cells' answers are graded
    got = result(graded, "memory", "D")
    assert got.grades["check_expr"] == 0 and got.score < FULL
    assert any("MemoryError" in r or "memoryerror" in r.lower() for r in got.reasons + got.feedback)


def test_output_flood(graded):
    got = assert_zero(graded, "flood", "A", "output")
    assert got.run["status"] == "flood"
    nb = autograded(graded, "flood", "A")
    assert len(nbformat.writes(nb)) < 2_000_000


def test_process_exits_and_crashes(graded):
    assert_zero(graded, "exit", "B", "ended its own process")
    assert result(graded, "sysexit", "C").score == FULL   # SystemExit is an error in one cell, as in Jupyter
    assert_zero(graded, "segfault", "D", "sigsegv")


def test_broken_notebooks(graded):
    got = assert_zero(graded, "badjson", "A", "json")
    nb = autograded(graded, "badjson", "A")
    assert "could not be graded" in nb.cells[0].source
    got = assert_zero(graded, "nocells", "B")
    assert any("was missing" in n for n in got.notes)
    got = result(graded, "nocells-honest", "C")
    assert got.score == FULL and any("'setup' was missing" in n for n in got.notes)


def test_duplicated_cells_and_inflated_points(graded):
    got = assert_zero(graded, "duplicate", "D")
    assert any("more than once" in n for n in got.notes)
    got = assert_zero(graded, "inflated", "A")
    assert any("points" in n for n in got.notes)
    assert result(graded, "inflated-honest", "B").score == FULL
    assert gradebook_score(graded, "inflated-honest", "B") == (FULL, FULL)


def test_links_to_instructor_files_are_refused(graded):
    got = assert_zero(graded, "link-nb", "B", "link")
    assert got.status == "broken"
    assert_zero(graded, "link-file", "C")
    assert "SEEN []" in outputs_text(autograded(graded, "link-file", "C"))


def test_edited_tests_are_restored(graded):
    got = assert_zero(graded, "edited-tests", "C")
    assert any("check_expr" in n for n in got.notes)


def test_variant_tampering(graded):
    for name in ("variant-env", "variant-edit"):   # answered variant A; graded as D, the directory's
        got = result(graded, name, "D")
        assert got.variant == "D"
        assert got.score < FULL, (name, got.feedback)
        assert gradebook_score(graded, name, "D")[0] < FULL
    got = result(graded, "variant-setup", "D")     # the edited setup cell was restored: its own variant
    assert got.variant == "D" and got.score == FULL
    assert any("'setup' had been edited" in n for n in got.notes)


def test_warnings_do_not_zero_a_correct_answer(graded):
    got = result(graded, "warnings", "A")
    assert got.score == FULL, got.feedback
    nb = autograded(graded, "warnings", "A")
    cell = nb.cells[index_of(nb, "check_expr")]
    assert any(o.output_type == "stream" and o.name == "stderr" for o in cell.outputs)


def test_a_stalling_expression_costs_only_its_check(graded):
    """A hostile srepr text (once: minutes per answer, or never) scores 0 for that check, in bounded time."""
    got = result(graded, "srepr-bomb", "A")
    assert got.grades["check_expr"] == 0
    assert got.grades["check_numbers"] == 3.0, got.feedback
    assert not graded["report"].failed


def test_forged_messages_are_ignored_and_noted_once(graded):
    """20,000 forged "raised" lines: a handful of reasons, one note, a small journal entry."""
    got = result(graded, "forger", "B")
    assert got.score == 0
    assert len(got.reasons) < 10, got.reasons
    assert sum("did not expect" in n for n in got.notes) == 1
    journal = Journal(course_dir.load_course(graded["course"], ASSIGNMENT))
    assert journal.path(student("B", "forger")).stat().st_size < 200_000


def test_every_attack_listed_with_a_reason(graded):
    zeros = {sid for sid, _ in graded["report"].technical_zeros()}
    for name, label in (("badjson", "A"), ("hang-hard", "C"), ("flood", "A"), ("exit", "B"),
                        ("segfault", "D")):
        assert student(label, name) in zeros, name


# ---------------------------------------------------------------------- rerun and resume
def test_rerun_is_idempotent_and_resumes(graded):
    course = graded["course"]
    gradebook = course / "gradebook.db"
    first = sqlite_dump(gradebook)
    again = ag.autograde(course, ASSIGNMENT, workers=2, limits=LIMITS, progress=False, out=None)
    assert again.reused == len(graded["cls"])
    assert sqlite_dump(gradebook) == first
    # a run killed between grading and recording: the journal says "graded", the gradebook lost it
    honest = student("A", "honest-a")
    journal = Journal(course_dir.load_course(course, ASSIGNMENT))
    entry = json.loads(journal.path(honest).read_text())
    entry["state"] = "graded"
    journal.path(honest).write_text(json.dumps(entry))
    with sqlite3.connect(gradebook) as db:
        db.execute("update grade set auto_score = NULL where notebook_id in (select sn.id from "
                   "submitted_notebook sn join submitted_assignment sa on sn.assignment_id = sa.id "
                   "where sa.student_id = ?)", (honest,))
    resumed = ag.autograde(course, ASSIGNMENT, workers=2, limits=LIMITS, progress=False, out=None)
    assert resumed.reused == len(graded["cls"])   # nothing regraded, nothing counted twice
    assert sqlite_dump(gradebook) == first
    assert gradebook_score(graded, "honest-a", "A") == (FULL, FULL)


# ---------------------------------------------------------------------- layers in effect
@isolated
def test_isolation_layers_in_effect(graded):
    assert graded["report"].isolation.get("namespaces") and not graded["report"].warnings
    layers = result(graded, "honest-a", "A").layers
    assert layers["monitor"]["pid_namespace"] and layers["monitor"]["subreaper"]
    sandbox = layers["sandbox"]
    for layer in ("mount_namespace", "network_namespace", "pivot_root", "read_only_root", "no_new_privs",
                  "rlimits", "seccomp"):
        assert sandbox.get(layer) is True, layer
    assert sandbox["uid"] >= UID_BASE
    assert "pid namespace" in graded["report"].summary()


def test_the_summary_says_when_the_sandbox_was_ready(graded):
    """The zygote's start (its libraries' imports) is most of a small class's time: the summary says it."""
    first = graded["report"].summary().splitlines()[0]
    found = re.search(r", sandbox ready after ([0-9.]+) s", first)
    assert found, first
    assert 0 < float(found.group(1)) <= graded["elapsed"]
    assert Zygote().start_seconds() is None   # not started: no time to give


def test_without_namespaces_it_degrades_with_a_warning():
    zygote = Zygote(isolate=False).start()
    try:
        assert isolation_warnings(zygote)
        run = zygote.run({"cells": [{"index": 0, "source": "x = 6 * 7"},
                                    {"index": 1, "source": "pass", "test": "t", "keys": ["x"]}], "env": {}},
                         LIMITS)
        assert run.cells[1]["answers"] == {"x": 42}
        assert not run.layers.get("mount_namespace")
    finally:
        zygote.close()


def test_worker_cannot_import_graders():
    text = (ROOT / "graders" / "sandbox" / "worker.py").read_text()
    assert "from graders" not in text and "import graders" not in text and "from ." not in text


# ---------------------------------------------------------------------- manual cells (no sandbox)
def test_manual_cells_are_left_to_formgrader():
    """A written answer (markdown, grade + solution) gets no autograde score unless left untouched."""
    from types import SimpleNamespace as NS

    import sympy
    from nbgrader.utils import compute_checksum

    from graders.sandbox.zygote import Run

    def cell(kind, source, **meta):
        made = nbformat.v4.new_code_cell(source) if kind == "code" else nbformat.v4.new_markdown_cell(source)
        made.metadata["nbgrader"] = {"grade": False, "solution": False, "locked": False, "task": False,
                                     "schema_version": 3, **meta}
        made.metadata["nbgrader"]["checksum"] = compute_checksum(made)
        return made

    released = [cell("code", "x = 1", grade_id="setup", locked=True),
                cell("code", "# YOUR CODE HERE", grade_id="answer_expr", solution=True),
                cell("code", "assert True", grade_id="check_expr", grade=True, locked=True, points=1.0),
                cell("markdown", "YOUR ANSWER HERE", grade_id="essay", grade=True, solution=True, points=2.0),
                cell("markdown", "YOUR ANSWER HERE", grade_id="essay2", grade=True, solution=True, points=2.0)]
    instructor = course_dir.InstructorNotebook(
        name=NB, kernelspec=None,
        source_cells=[NS(name=c.metadata.nbgrader["grade_id"], cell_type=c.cell_type,
                         locked=c.metadata.nbgrader["locked"], checksum=c.metadata.nbgrader["checksum"],
                         source=c.source) for c in released],
        grade_cells=[NS(name="check_expr", max_score=1.0, cell_type="code"),
                     NS(name="essay", max_score=2.0, cell_type="markdown"),
                     NS(name="essay2", max_score=2.0, cell_type="markdown")],
        solution_cells=[NS(name="answer_expr"), NS(name="essay"), NS(name="essay2")], task_cells=[])
    nb = nbformat.v4.new_notebook(cells=[nbformat.from_dict(json.loads(json.dumps(c))) for c in released])
    nb.cells[1].source = "per_device_expr = 4 * N + K * N / P"
    nb.cells[3].source = "Sharding the optimizer states is what stage 1 does."
    nb, notes = sanitize.sanitize(nb, instructor, ASSIGNMENT, "someone")
    course = SimpleCourse()
    job, meta = grading.build_job(course, instructor, nb, student("A", "manual"))
    assert [c.get("test") for c in job["cells"]] == [None, None, "check_expr"]
    reference = problems.get(NB).solve(problems.get(NB).variants["A"])["per_device_expr"]   # variant A's own
    run = Run(status="ok", finished=True, cells={
        0: {"raised": False, "outputs": []}, 1: {"raised": False, "outputs": []},
        2: {"raised": False, "outputs": [], "answers": {"per_device_expr": {"sympy": sympy.srepr(reference)}}}})
    out = grading.NotebookResult(NB, max_score=5.0)
    grading.grade_cells(course, instructor, nb, student("A", "manual"), run, meta, out)
    assert out.grades == {"check_expr": 1.0, "essay": None, "essay2": 0}
    assert out.comments == {"answer_expr": None, "essay": None, "essay2": "No response."}


class SimpleCourse:
    assignment, begin_hidden, end_hidden = ASSIGNMENT, "BEGIN HIDDEN TESTS", "END HIDDEN TESTS"
    max_lines, max_traceback, ignore, exclude_overwriting, source_dir = 1000, 100, [], [], "/nonexistent"
    grades_only, instant = False, False      # as course_dir.Course has them

    def submission_dir(self, student):
        return Path("/nonexistent") / student


def test_the_run_keeps_scores_not_notebook_text(graded):
    """Once written to autograded/, a notebook's text (figures and all) is not held by the run's report:
    the trusted process does not grow with the class."""
    results = graded["report"].results
    assert results and all(nb.notebook is None for r in results.values() for nb in r.notebooks)
    assert any(nb.score for r in results.values() for nb in r.notebooks)
    written = {p.parts[-3] for p in (graded["course"] / "autograded").glob(f"*/{ASSIGNMENT}/{NB}.ipynb")}
    assert written and written <= set(results)
