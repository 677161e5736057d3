"""The driver's teardown handed to a helper process (marose/teardown.py), with /dev/zero standing
in for a GPU driver's files."""

import os
import signal
import socket
import subprocess
import sys
import time

import pytest

from marose import teardown

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the helper is Linux's")

CHILD = r"""
import os, sys
from marose import teardown
helper = teardown.start()
zero = os.open("/dev/zero", os.O_RDONLY)
text = open(sys.argv[1])
print(helper, zero, *teardown.hand_over(), flush=True)
sys.stdin.readline()
"""


def held(pid: int) -> dict:
    return {int(fd): os.readlink(f"/proc/{pid}/fd/{fd}") for fd in os.listdir(f"/proc/{pid}/fd")}


def ended(pid: int) -> bool:
    try:
        return open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[0] in "ZX"
    except FileNotFoundError:
        return True


def test_the_helper_holds_the_devices_alone_and_ends_with_the_process(tmp_path):
    text = tmp_path / "a.txt"
    text.write_text("not a device")
    child = subprocess.Popen([sys.executable, "-c", CHILD, str(text)], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True)
    helper, zero, *handed = map(int, child.stdout.readline().split())
    assert handed == [zero]
    deadline = time.time() + 10
    while "/dev/zero" not in held(helper).values():
        assert time.time() < deadline
        time.sleep(0.02)
    names = held(helper)
    assert [names[fd] for fd in (0, 1, 2)] == ["/dev/null"] * 3  # not the child's pipes
    assert str(text) not in names.values() and len(names) == 5  # 0-2, /dev/zero and its socket
    os.kill(helper, signal.SIGINT)  # Ctrl-C reaches the whole process group
    time.sleep(0.2)
    assert not ended(helper)
    child.stdin.write("\n")
    child.stdin.flush()
    assert child.stdout.read() == ""  # the pipe ends with the child, the helper holding none of it
    assert child.wait(10) == 0
    while not ended(helper):
        assert time.time() < deadline
        time.sleep(0.02)


def test_only_character_devices_but_the_standard_streams_are_handed_over(tmp_path):
    zero = os.open("/dev/zero", os.O_RDONLY)
    regular = os.open(tmp_path / "f", os.O_CREAT | os.O_RDONLY)
    read_end, write_end = os.pipe()
    try:
        found = teardown.device_descriptors(exclude=-1)
        assert zero in found and regular not in found and read_end not in found
        assert not {0, 1, 2} & set(found)
        assert zero not in teardown.device_descriptors(exclude=zero)
    finally:
        for fd in (zero, regular, read_end, write_end):
            os.close(fd)


def test_without_a_helper_nothing_is_handed_over(monkeypatch):
    monkeypatch.setattr(teardown, "_helper", None)
    assert teardown.hand_over() == []


def test_a_process_without_proc_ends_as_before(monkeypatch):
    """hand_over runs on the way out of every marose command: a failure there is no error."""
    mine, its = socket.socketpair()
    monkeypatch.setattr(teardown, "_helper", mine)

    def no_proc(path):
        raise FileNotFoundError(path)

    monkeypatch.setattr(teardown.os, "listdir", no_proc)
    try:
        assert teardown.hand_over() == []
    finally:
        mine.close()
        its.close()
