"""graders/sandbox/linux.py's parsing of /proc, on text (and one check against this process's own)."""
import os
import subprocess
import sys

import pytest

from graders.sandbox import linux


def test_stat_fields_cut_at_the_last_parenthesis():
    line = b"4242 (evil) 1 2 (name) S 17 4242 4242 0 -1 4194560 0 0 0 0 0 0 0 0 20 0 1 0 987654 0 0\n"
    fields = linux.stat_fields(line)
    assert fields[0] == b"S" and fields[1] == b"17" and fields[19] == b"987654"


def test_a_line_without_a_name_is_refused():
    with pytest.raises(ValueError):
        linux.stat_fields(b"4242 S 17")


def test_identity_is_the_pid_and_its_start_time():
    me = linux.identity(os.getpid())
    with open(f"/proc/{os.getpid()}/stat", "rb") as fh:
        start = fh.read().rsplit(b")", 1)[1].split()[19].decode()
    assert me == f"{os.getpid()}.{start}"
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        with open(f"/proc/{child.pid}/stat", "rb") as fh:
            its_start = fh.read().rsplit(b")", 1)[1].split()[19].decode()
        alive = linux.identity(child.pid)
        assert alive == f"{child.pid}.{its_start}" and alive != me
    finally:
        child.kill()
        child.wait()
    assert linux.identity(child.pid) != alive      # gone (None), or the number is another process's


def test_a_zombie_is_not_alive():
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    os.waitid(os.P_PID, child.pid, os.WEXITED | os.WNOWAIT)   # exited, not yet reaped: a zombie
    try:
        assert not linux.alive(child.pid)
        assert linux.alive(os.getpid())
        assert child.pid in linux.children_of(os.getpid())
    finally:
        child.wait()
    assert child.pid not in linux.children_of(os.getpid())


def test_children_are_read_from_the_kernels_list_as_a_scan_of_every_process_finds_them(monkeypatch):
    """The kernel's list of a process's children (read without looking at any other process)
    names the same children as reading every process's parent; a process that has ended has none."""
    kids = [subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"]) for _ in range(3)]
    try:
        assert linux.CHILDREN_FILE
        scanned = linux._children_by_scan(os.getpid())
        monkeypatch.setattr(linux, "_pids", lambda: pytest.fail("every process was read"))
        listed = linux.children_of(os.getpid())
        assert {k.pid for k in kids} <= set(listed) and sorted(listed) == sorted(scanned)
        gone = kids[0].pid
    finally:
        for kid in kids:
            kid.kill()
            kid.wait()
    assert linux.children_of(gone) == []


def test_vm_size_reads_kilobytes_as_bytes():
    status = "Name:\tpython\nVmPeak:\t  999 kB\nVmSize:\t  2048 kB\nVmRSS:\t 10 kB\n"
    assert linux.vm_size(status) == 2048 * 1024
    assert linux.vm_size("Name:\tkthreadd\n") == 0
    assert linux.own_vm_size() > 0


def test_pivot_root_without_a_number_is_refused(monkeypatch):
    monkeypatch.setattr(linux, "SYS_PIVOT_ROOT", None)
    with pytest.raises(OSError, match="unknown syscall number"):
        linux.pivot_root("/nonexistent", "/nonexistent/.old")


def test_only_whole_huge_pages_of_private_writable_anonymous_memory_are_collapsible():
    maps = "\n".join([
        "00400000-00a00000 r-xp 00000000 08:01 123 /usr/bin/python3.11",       # code: not anonymous
        "01000000-01700000 rw-p 00000000 00:00 0 [heap]",                        # the heap: 3 whole
        "7f0000100000-7f0000500000 rw-p 00000000 00:00 0",                     # 1 whole of 2 MiB
        "7f0001000000-7f0001100000 rw-p 00000000 00:00 0",                     # under one: none
        "7f0002000000-7f0002400000 rw-s 00000000 00:05 9 /dev/zero (deleted)",   # shared: no
        "7f0003000000-7f0003400000 r--p 00000000 00:00 0",                     # read-only: no
        "7f0004000000-7f0004400000 rw-p 00000000 08:01 77 /usr/lib/libx.so",    # a file's data: no
        "7ffd00000000-7ffd00400000 rw-p 00000000 00:00 0 [stack]",               # the stack: no
        "garbage"])
    assert linux.collapsible(maps) == [(0x01000000, 0x01600000), (0x7f0000200000, 0x7f0000400000)]
