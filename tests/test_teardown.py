"""The process's end handed to a helper process (marose/teardown.py), with /dev/zero standing in
for a GPU driver's files."""

import contextlib
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


ENDING_CHILD = r"""
import os, sys, time
from marose import teardown
if sys.argv[3] == "no sleeper":
    teardown.make_sleeper = lambda: None
helper = teardown.start()
zero = os.open("/dev/zero", os.O_RDONLY)
memory = bytearray(64 << 20)
print("the output", flush=True)
sleeper = teardown.end()
with open(sys.argv[1], "w") as told:
    print(helper, zero, sleeper, file=told)
while not os.path.exists(sys.argv[2]):
    time.sleep(0.01)
os._exit(0)
"""


QUICK_CHILD = r"""
import os, time
from marose import teardown
helper_runs = teardown._hold_until_the_process_ends
def late_helper(*args):  # the helper gets the processor only once the process has gone
    time.sleep(0.5)
    helper_runs(*args)
teardown._hold_until_the_process_ends = late_helper
print(teardown.start(), flush=True)
teardown.end()
os._exit(0)
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


def waited_for(condition, seconds: float = 10) -> None:
    deadline = time.time() + seconds
    while not condition():
        assert time.time() < deadline
        time.sleep(0.02)


@contextlib.contextmanager
def ending_child(tmp_path, mode: str):
    """ENDING_CHILD run past its teardown.end(): (helper, /dev/zero's descriptor, sleeper) as it
    told them; the child ends when the block does."""
    told, go = tmp_path / "told", tmp_path / "go"
    child = subprocess.Popen([sys.executable, "-c", ENDING_CHILD, str(told), str(go), mode],
                             stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout.read() == "the output\n"  # stdout let go before the process ends
        waited_for(lambda: told.exists() and told.read_text().endswith("\n"))
        helper, zero, sleeper = told.read_text().split()
        yield int(helper), int(zero), None if sleeper == "None" else int(sleeper)
    finally:
        go.touch()
        if child.wait(10) != 0:
            child.kill()


def test_a_sleeper_holds_the_process_memory_and_descriptors_until_the_helper_ends_it(tmp_path):
    with ending_child(tmp_path, "sleeper") as (helper, zero, sleeper):
        names = held(sleeper)  # the process's own table, shared
        assert names[zero] == "/dev/zero" and [names[fd] for fd in (0, 1, 2)] == ["/dev/null"] * 3
        status = open(f"/proc/{sleeper}/status").read()
        assert int(status.split("VmRSS:")[1].split()[0]) > 64 << 10  # KiB: the process's memory
        assert "/dev/zero" not in held(helper).values()  # nothing handed over where a sleeper holds it
    waited_for(lambda: ended(sleeper) and ended(helper))  # long before the sleeper's SLEEPER_SECONDS


def test_without_a_sleeper_the_devices_are_handed_over(tmp_path):
    with ending_child(tmp_path, "no sleeper") as (helper, zero, sleeper):
        assert sleeper is None
        waited_for(lambda: "/dev/zero" in held(helper).values())
    waited_for(lambda: ended(helper))


def test_without_a_helper_the_end_is_the_process_own(monkeypatch):
    monkeypatch.setattr(teardown, "_helper", None)
    assert teardown.end() is None


def test_the_helper_ends_when_the_process_ends_before_it_starts():
    """A command that fails at once can end before its helper has run a line."""
    child = subprocess.run([sys.executable, "-c", QUICK_CHILD], capture_output=True, text=True, timeout=30)
    assert child.returncode == 0
    helper = int(child.stdout)
    try:
        waited_for(lambda: ended(helper))  # a sleeper would end by itself after SLEEPER_SECONDS
    finally:
        if not ended(helper):
            os.kill(helper, signal.SIGKILL)
