"""Finding the control groups (graders/sandbox/cgroups.py) from fake mount tables and hierarchies:
cgroup v2, v1 and neither, whatever this machine has."""
import os

from graders.sandbox import cgroups

V2_MOUNTINFO = "35 24 0:30 / /sys/fs/cgroup rw,nosuid shared:9 - cgroup2 cgroup2 rw,nsdelegate\n"
V1_MOUNTINFO = (
    "30 24 0:26 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n"
    "31 24 0:27 / /sys/fs/cgroup/pids rw - cgroup cgroup rw,pids\n"
    "32 24 0:28 / /sys/fs/cgroup/cpu,cpuacct rw - cgroup cgroup rw,cpu,cpuacct\n"
    "33 24 0:29 / /sys/fs/cgroup/freezer rw - cgroup cgroup rw,freezer\n"
    "20 1 8:1 / / rw,relatime - ext4 /dev/sda1 rw\n")


def test_mountinfo_is_parsed(tmp_path):
    info = tmp_path / "mountinfo"
    info.write_text(V1_MOUNTINFO + r"36 24 0:31 /a\040b /sys/fs/cgroup/x\040y rw - cgroup2 cgroup2 rw" + "\n")
    mounts = cgroups._mounts(str(info))
    assert mounts[0] == ("/sys/fs/cgroup/memory", "/", "cgroup", ["rw", "memory"])
    assert ("/sys/fs/cgroup/x y", "/a b", "cgroup2", ["rw"]) in mounts   # escaped spaces
    assert len(mounts) == 5   # the ext4 root is not a control group


def test_own_paths_by_controller(tmp_path):
    text = tmp_path / "cgroup"
    text.write_text("0::/user.slice/session-1.scope\n4:memory:/grader\n3:cpu,cpuacct:/grader/cpu\n")
    assert cgroups._own_paths(str(text)) == {"": "/user.slice/session-1.scope", "memory": "/grader",
                                             "cpu": "/grader/cpu", "cpuacct": "/grader/cpu"}


def test_join_inside_a_namespaced_root():
    assert cgroups._join("/sys/fs/cgroup", "/", "/a/b") == "/sys/fs/cgroup/a/b"
    assert cgroups._join("/sys/fs/cgroup", "/a", "/a/b") == "/sys/fs/cgroup/b"
    assert cgroups._join("/sys/fs/cgroup", "/a", "/a") == "/sys/fs/cgroup"


def fake(monkeypatch, mounts, own):
    monkeypatch.setattr(cgroups, "_mounts", lambda: mounts)
    monkeypatch.setattr(cgroups, "_own_paths", lambda: own)


def test_v2_with_every_controller_delegated(tmp_path, monkeypatch):
    base = tmp_path / "grader"
    base.mkdir()
    (base / "cgroup.controllers").write_text("cpuset cpu io memory pids\n")
    (base / "cgroup.subtree_control").write_text("")   # handed down by detect() itself
    (base / "cgroup.kill").write_text("")
    fake(monkeypatch, [(str(tmp_path), "/", "cgroup2", ["rw"])], {"": "/grader"})
    plan = cgroups.detect()
    assert plan == {name: (2, str(base)) for name in ("memory", "pids", "cpu", "kill", "cpuacct")}
    assert (base / "cgroup.subtree_control").read_text() == "+cpu"   # the last one written (a fake file)
    assert cgroups.describe(plan) == "memory v2, pids v2, cpu v2, kill v2, cpuacct v2"


def test_v2_without_a_controller_says_which(tmp_path, monkeypatch):
    (tmp_path / "cgroup.controllers").write_text("cpu memory\n")
    (tmp_path / "cgroup.subtree_control").write_text("cpu memory\n")
    fake(monkeypatch, [(str(tmp_path), "/", "cgroup2", ["rw"])], {"": "/"})
    plan = cgroups.detect()
    assert plan == {"error": "no usable control group for pids"}
    assert cgroups.describe(plan) == plan["error"]


def test_v1_hierarchies_where_writable(tmp_path, monkeypatch):
    mounts = []
    for name in ("memory", "pids", "cpu,cpuacct", "freezer"):
        (tmp_path / name / "grader").mkdir(parents=True)
        mounts.append((str(tmp_path / name), "/", "cgroup", ["rw"] + name.split(",")))
    fake(monkeypatch, mounts, {"memory": "/grader", "pids": "/grader", "cpu": "/grader", "cpuacct": "/grader",
                               "freezer": "/grader"})
    plan = cgroups.detect()
    assert plan["memory"] == (1, str(tmp_path / "memory" / "grader"))
    assert plan["kill"] == (1, str(tmp_path / "freezer" / "grader"))   # the freezer kills a v1 group
    assert plan["cpuacct"] == (1, str(tmp_path / "cpu,cpuacct" / "grader"))
    assert cgroups.describe(plan) == "memory v1, pids v1, cpu v1, kill v1, cpuacct v1"


def test_no_control_groups_at_all(monkeypatch):
    fake(monkeypatch, [], {})
    assert "no usable control group for memory, pids, cpu" in cgroups.detect()["error"]


def test_counters_are_read_from_their_text():
    assert cgroups._int("123\n") == 123 and cgroups._int("max\n") is None
    assert cgroups._field("low 0\nhigh 0\nmax 3\noom 1\noom_kill 2\n", "oom_kill") == 2
    assert cgroups._field("oom_kill_disable 0\nunder_oom 0\n", "oom_kill") is None
    assert cgroups.monitor_of("chapter-sandbox-100-200") == 200 and cgroups.monitor_of("chapter-sandbox-x") is None


def _fake_group(tmp_path):
    plan = {"memory": (1, str(tmp_path / "v1")), "pids": (2, str(tmp_path / "v2"))}
    group = cgroups.Group(plan, "chapter-sandbox-1-2")
    for _, path in group.dirs.values():
        os.makedirs(path)
    return group


def test_a_single_threaded_process_joins_v1_through_tasks_and_v2_through_cgroup_procs(tmp_path, monkeypatch):
    """v1's tasks file with "0" moves the caller's one thread (the whole process) without the
    kernel's global threadgroup lock and its grace-period wait; v2 has no such file."""
    monkeypatch.setattr(cgroups, "_single_threaded", lambda: True)
    group = _fake_group(tmp_path)
    group.join()
    v1, v2 = group.dirs["memory"][1], group.dirs["pids"][1]
    assert open(f"{v1}/tasks").read() == "0" and not os.path.exists(f"{v1}/cgroup.procs")
    assert open(f"{v2}/cgroup.procs").read() == "0" and not os.path.exists(f"{v2}/tasks")


def test_a_process_with_threads_joins_through_cgroup_procs_everywhere(tmp_path, monkeypatch):
    """tasks would move only the calling thread: the others would stay outside the group."""
    monkeypatch.setattr(cgroups, "_single_threaded", lambda: False)
    group = _fake_group(tmp_path)
    group.join()
    for _, path in group.dirs.values():
        assert open(f"{path}/cgroup.procs").read() == "0" and not os.path.exists(f"{path}/tasks")


def test_threads_are_counted_from_the_task_folder(tmp_path):
    (tmp_path / "100").mkdir()
    assert cgroups._single_threaded(str(tmp_path))
    (tmp_path / "101").mkdir()
    assert not cgroups._single_threaded(str(tmp_path))
    assert not cgroups._single_threaded(str(tmp_path / "gone"))
