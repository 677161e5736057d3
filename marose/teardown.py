"""The end of the process, handed to a helper so that `marose` is gone as soon as it is done.

Two costs follow `os._exit`, on the critical path of every run: a GPU driver tears its context
down when the last reference to its device files goes (on the H100 machine 0.07-0.22 s in the
runs measured, BENCHMARKS.md), and the kernel frees the process's memory, about 0.1 s a GB (a
CPU device's buffers are host memory). A helper forked at the command's start, before any thread
or device exists, waits on a socket. Just before the process ends, it makes a sleeper: a task
that shares the process's memory and descriptor table (clone with CLONE_VM and CLONE_FILES) and
sleeps, every signal blocked. The process then ends at once, its memory and descriptors still
held by the sleeper, and the helper ends the sleeper (SIGKILL) once the process has gone: the
sleeper's end frees the memory and closes the device files. A sleeper that is not ended ends by
itself after SLEEPER_SECONDS. Where no sleeper can be made, the process passes the helper its
character-device descriptors (the GPU driver's files) instead, which the helper closes once the
process has ended.

Before the sleeper is made, stdin, stdout and stderr become /dev/null, and the process closes its
end of the helper's socket before it ends: a pipe reading marose's output ends with marose. The
helper holds nothing else. It ignores Ctrl-C, which reaches the whole process group, and ends
with the process however it ends. Linux only; elsewhere, or where fork fails, the process pays
its end itself.
"""

from __future__ import annotations

import ctypes
import os
import signal
import socket
import stat
import struct
import sys
import time

MAX_FDS_A_MESSAGE = 250  # Linux takes at most 253 descriptors in one message (SCM_MAX_FD)
CLONE_VM, CLONE_FILES = 0x100, 0x400
SLEEPER_SECONDS = 60  # a sleeper that the helper does not end ends by itself after these
SLEEPER_STACK = 1 << 16  # bytes; the sleeper runs libc's sleep() alone
SLEEPER = b"s"  # the helper's message that names a sleeper (its pid follows)
_helper: socket.socket | None = None  # this process's end of the helper's socket, once started
_sleeper_stacks: list = []  # kept for the sleepers' lives: they share this process's memory


def start() -> int | None:
    """Forks the helper, once; its pid, or None where it cannot be had. Call before any thread
    starts."""
    global _helper
    if _helper is not None or not sys.platform.startswith("linux"):
        return None
    try:
        mine, its = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    except OSError:
        return None
    parent = os.getpid()  # the helper's own getppid() may already be another's
    try:
        pid = os.fork()
    except OSError:
        mine.close()
        its.close()
        return None
    if pid == 0:
        mine.close()
        _hold_until_the_process_ends(its, parent)
    its.close()
    _helper = mine
    return pid


def end() -> int | None:
    """Hands the process's end to the helper (the module's docstring says how): the sleeper's pid,
    or None where the device descriptors were handed over instead, or nothing was done (no
    helper). Call just before os._exit, with the output written and stdout and stderr flushed."""
    global _helper
    if _helper is None:
        return None
    quiet = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(quiet, fd)
    os.close(quiet)
    sleeper = make_sleeper()
    if sleeper is None:
        hand_over()  # held by the helper until the process's end closes its socket
        return None
    helper, _helper = _helper, None
    with helper:  # closed here: the sleeper shares the descriptor table, and holds what is left open
        try:
            helper.sendall(SLEEPER + struct.pack("=i", sleeper))
        except OSError:  # the helper gone: the sleeper ends by itself
            pass
    return sleeper


def make_sleeper(seconds: int = SLEEPER_SECONDS) -> int | None:
    """A task sharing this process's memory and descriptor table that sleeps, every signal
    blocked, until it is killed or seconds pass; its pid, or None where it cannot be made."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        clone, sleep = libc.clone, libc.sleep
    except (OSError, AttributeError):
        return None
    stack = ctypes.create_string_buffer(SLEEPER_STACK)
    _sleeper_stacks.append(stack)
    clone.restype = ctypes.c_int
    clone.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p]
    top = ctypes.addressof(stack) + SLEEPER_STACK - 64  # stacks grow down; clone aligns it
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, signal.valid_signals())  # the sleeper's, from this thread
    try:
        pid = clone(ctypes.cast(sleep, ctypes.c_void_p), top, CLONE_VM | CLONE_FILES | signal.SIGCHLD, seconds)
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)
    return pid if pid > 0 else None


def hand_over() -> list[int]:
    """Passes the helper the process's open character devices but stdin, stdout and stderr (the
    process keeps its own references, released as it ends); the descriptors passed."""
    if _helper is None:
        return []
    try:
        held = device_descriptors(exclude=_helper.fileno())
        for first in range(0, len(held), MAX_FDS_A_MESSAGE):
            socket.send_fds(_helper, [b"d"], held[first:first + MAX_FDS_A_MESSAGE])
    except OSError:  # no /proc, or the helper gone: the process tears the driver down itself
        return []
    return held


def device_descriptors(exclude: int = -1) -> list[int]:
    """This process's open descriptors of character devices, but 0, 1, 2 and exclude."""
    found = []
    for name in os.listdir("/proc/self/fd"):
        fd = int(name)
        if fd <= 2 or fd == exclude:
            continue
        try:
            if stat.S_ISCHR(os.fstat(fd).st_mode):
                found.append(fd)
        except OSError:  # the descriptor of the listing itself, closed by now
            continue
    return found


def _hold_until_the_process_ends(sock: socket.socket, process: int) -> None:
    """The helper: everything the fork copied closed but sock; the descriptors passed to it held
    until the process (pid process) closes its end, then released as the helper ends; a sleeper
    named to it killed once the process has gone (the helper's parent no longer the process)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        quiet = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(quiet, fd)
        keep = sock.fileno()
        os.closerange(3, keep)
        os.closerange(keep + 1, os.sysconf("SC_OPEN_MAX"))
        sleeper = None
        while message := socket.recv_fds(sock, 1, MAX_FDS_A_MESSAGE)[0]:
            if message == SLEEPER:  # the descriptors received otherwise stay open until os._exit
                sleeper = _pidfd(struct.unpack("=i", sock.recv(4, socket.MSG_WAITALL))[0])
        if sleeper is not None:
            while os.getppid() == process:
                time.sleep(0.001)
            _kill(sleeper)
    finally:
        os._exit(0)


def _pidfd(pid: int) -> tuple[int, int | None]:
    """The pid, and a descriptor of it where the system has them (pidfd_open: Linux 5.3), so that
    the kill cannot reach another process given the pid later."""
    try:
        return pid, os.pidfd_open(pid)
    except (AttributeError, OSError):
        return pid, None


def _kill(sleeper: tuple[int, int | None]) -> None:
    pid, pidfd = sleeper
    try:
        if pidfd is not None:
            signal.pidfd_send_signal(pidfd, signal.SIGKILL)
        else:
            os.kill(pid, signal.SIGKILL)
    except OSError:  # ended by itself
        pass
