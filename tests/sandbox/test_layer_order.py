"""The isolation layers are applied in the order `LAYERS` declares, and the first that fails stops the run.

graders/sandbox/layers.py is loaded by path, as the zygote loads it (through worker.py).
"""
import os
from pathlib import Path

import pytest

from graders.sandbox import worker
from graders.sandbox.protocol import SandboxConfig
from graders.sandbox.zygote import Limits, SandboxUnavailable, Zygote
from tests.namespaces import namespaces_permitted

layers = worker.layers
DECLARED = ["control_group", "mount_namespace", "working_folder", "uid", "rlimits", "seccomp"]


def test_the_declared_order():
    assert [layer.name for layer in layers.LAYERS] == DECLARED
    assert [layer.name for layer in layers.MONITOR_LAYERS] == ["subreaper", "pid_namespace", "control_group"]
    assert all(callable(layer.function) for layer in layers.MONITOR_LAYERS)


def recording(monkeypatch, fail=None):
    """Every layer's function replaced by one that records its name (and `fail` raises)."""
    called = []

    def make(name):
        def apply(setup):
            called.append(name)
            if name == fail:
                raise OSError(1, f"{name} refused")
        return apply
    monkeypatch.setattr(layers, "LAYERS", [layer._replace(function=make(layer.name)) for layer in layers.LAYERS])
    return called


def setup(strict=True, isolate=True, group=object()):
    config = SandboxConfig(socket="", scratch="", mount_root="", transport="", seccomp="", cgroups="",
                           lease_dir="", uid_base=0)
    return layers.Setup({"limits": {}}, config, os.geteuid(), isolate, strict, "/nowhere", group)


def test_the_walk_follows_the_list(monkeypatch):
    called = recording(monkeypatch)
    done = setup()
    assert layers.isolate(done) is True
    assert called == DECLARED
    assert [k for k in done.layers] == [n for n in DECLARED if n != "working_folder"]   # a step, not a layer


def test_without_isolation_or_group_their_layers_are_skipped(monkeypatch):
    called = recording(monkeypatch)
    assert layers.isolate(setup(isolate=False, group=None)) is True
    assert called == ["working_folder", "uid", "rlimits"]


@pytest.mark.parametrize("failing", ["control_group", "mount_namespace", "uid", "rlimits", "seccomp"])
def test_a_failing_layer_stops_the_walk(monkeypatch, failing):
    called = recording(monkeypatch, fail=failing)
    done = setup()
    assert layers.isolate(done) is False
    assert called == DECLARED[:DECLARED.index(failing) + 1]   # nothing after it ran
    assert done.failed == [f"{failing.replace('_', ' ')}: [Errno 1] {failing} refused"]
    assert f"{failing}_error" in done.layers and failing not in done.layers


def test_in_degraded_mode_a_failing_layer_is_skipped_and_reported(monkeypatch):
    called = recording(monkeypatch, fail="seccomp")
    monkeypatch.setattr(layers, "LAYERS", layers.LAYERS[-1:] + layers.LAYERS[:-1])   # seccomp first
    done = setup(strict=False)
    assert layers.isolate(done) is True
    assert called == ["seccomp"] + DECLARED[:-1]
    assert "seccomp allowlist" not in layers.in_effect(done.layers)
    assert layers.in_effect(done.layers)[-1] == "NOT in force (degraded mode): seccomp"


def test_a_half_applied_layer_stops_even_degraded_mode(monkeypatch):
    called = recording(monkeypatch)

    def half(setup):
        setup.layers["mount_namespace_entered"] = True
        raise OSError(1, "pivot refused")
    monkeypatch.setattr(layers, "LAYERS", [layer._replace(function=half) if layer.name == "mount_namespace"
                                           else layer for layer in layers.LAYERS])
    assert layers.isolate(setup(strict=False)) is False
    assert called == ["control_group"]


def test_the_summary_names_come_from_the_list():
    account = {"subreaper": True, "pid_namespace": True, "control_group": "memory v2", "mount_namespace": True,
               "pivot_root": True, "uid": 2_100_000_001, "no_new_privs": True, "rlimits": True, "seccomp": True}
    assert layers.in_effect(account) == [
        "subreaper sweep", "pid namespace", "control group (memory v2)", "mount namespace", "pivot root",
        "uid 2100000001", "no new privs", "rlimits", "seccomp allowlist"]
    assert layers.in_effect({"uid": 0}) == ["uid 0 (root!)"]


def test_the_readme_table_follows_the_lists():
    """README's isolation table names each layer the summary can name, in the order they are applied."""
    text = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    table = text[text.index("| layer | what it does |"):]
    table = table[:table.index("\n\n")]
    rows = [line.split("|")[1].strip() for line in table.splitlines()[2:]]
    seen, labels = set(), []
    for layer in layers.MONITOR_LAYERS + layers.LAYERS:
        if layer.label and layer.name not in seen:
            seen.add(layer.name)
            labels.append(layer.label)
    assert rows == labels


@pytest.mark.skipif(not namespaces_permitted(), reason="needs namespaces")
def test_a_real_sandbox_applies_them_in_order_and_a_refused_one_runs_nothing():
    job = {"cells": [{"index": 0, "source": "x = 1"}], "env": {}}
    limits = Limits(cell_seconds=20, notebook_seconds=40)
    with Zygote(preload=["IPython"]) as zygote:
        run = zygote.run(job, limits)
    applied = [name for name in run.layers if name in DECLARED]   # the sandbox's account keeps its order
    assert applied == [name for name in DECLARED if name in applied] and len(applied) >= 4, run.layers
    assert 0 in run.cells
    with Zygote(preload=["IPython"], fail_layers=("uid",)) as zygote:
        with pytest.raises(SandboxUnavailable, match="no student code was run: uid"):
            zygote.run(job, limits)
