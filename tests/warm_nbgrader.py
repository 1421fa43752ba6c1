"""nbgrader's own command line, run from a warm process, for the tests' many scratch courses.

`nbgrader(*args, cwd=...)` is `graders.engine.scratch.nbgrader` (the same arguments, the same
CompletedProcess, the same error) but each command is a fork of one server that has already
imported `nbgrader.apps`, Python's `multiprocessing` forkserver, instead of a new interpreter
that imports it again: about two seconds saved on each of the suite's nbgrader commands. The
child runs nbgrader's console entry point with the command's own argv, folder and environment
(the caller's, as a subprocess would get it), its stdout and stderr in files of its own, and
exits with its exit status. Nothing else is shared: each command is its own process.

The product and the benchmarks keep the plain command (`graders.engine.scratch.nbgrader`): the
benchmarks time nbgrader as an instructor runs it.
"""
from __future__ import annotations

import multiprocessing
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from graders.engine.scratch import checked, nbgrader_env

_CONTEXT = None
# what nbgrader's commands import as they start (its apps, converters, gradebook and exchange), and
# the main module (pytest's), which multiprocessing would otherwise run again in every child
PRELOAD = ["__main__", "nbgrader.apps", "nbgrader.apps.nbgraderapp", "nbgrader.converters", "nbgrader.preprocessors",
           "nbgrader.api", "nbgrader.exchange", "nbgrader.plugins", "nbconvert", "jupyter_client"]


def _context():
    global _CONTEXT
    if _CONTEXT is None:
        context = multiprocessing.get_context("forkserver")
        context.set_forkserver_preload(PRELOAD)
        _CONTEXT = context
    return _CONTEXT


def _command(args, cwd, env, out_path, err_path):
    """In the forked child: become `nbgrader ARGS` run in `cwd` with `env`, and exit as it exits."""
    import atexit
    code = 1
    try:
        out = os.open(out_path, os.O_WRONLY | os.O_TRUNC)
        err = os.open(err_path, os.O_WRONLY | os.O_TRUNC)
        sys.stdout.flush()
        sys.stderr.flush()
        os.dup2(out, 1)
        os.dup2(err, 2)
        os.close(out)
        os.close(err)
        os.chdir(cwd)
        os.environ.clear()
        os.environ.update(env)
        sys.argv = [os.path.join(os.path.dirname(sys.executable), "nbgrader"), *args]
        from nbgrader.apps.nbgraderapp import main
        try:
            main()
            code = 0
        except SystemExit as stop:
            if stop.code is None or isinstance(stop.code, int):
                code = stop.code or 0
            else:
                sys.stderr.write(f"{stop.code}\n")
                code = 1
        atexit._run_exitfuncs()
    except BaseException:  # noqa: BLE001 - what an uncaught exception prints, and its status
        import traceback
        traceback.print_exc()
        code = 1
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code)


def nbgrader(*args: str, cwd: Path, quiet: bool = True) -> subprocess.CompletedProcess:
    """Run one nbgrader command in the course directory `cwd` (see the module docstring)."""
    env = nbgrader_env()
    with tempfile.TemporaryDirectory(prefix="warm-nbgrader-") as tmp:
        out_path, err_path = os.path.join(tmp, "stdout"), os.path.join(tmp, "stderr")
        for path in (out_path, err_path):
            open(path, "w").close()
        process = _context().Process(target=_command, args=(list(args), str(cwd), env, out_path, err_path))
        process.start()
        process.join()
        with open(out_path, errors="replace") as fh:
            stdout = fh.read()
        with open(err_path, errors="replace") as fh:
            stderr = fh.read()
    return checked(subprocess.CompletedProcess(["nbgrader", *args], process.exitcode, stdout, stderr), args)
