"""The device driver's teardown, handed to a helper process so that `marose` ends without it.

A GPU driver tears its context down when the last reference to its device files goes: on the
H100 machine 0.07-0.22 s after `os._exit` in the runs measured (BENCHMARKS.md), about a tenth of
a million reads' whole run. A helper forked at the command's start, before any thread or device
exists, waits on a socket. Just before the process ends, it passes the helper its open
character-device descriptors (the GPU driver's files: /dev/nvidia* on NVIDIA's), and the process
is gone at once. The helper closes them, and with them the context, once the socket tells it
that the process has ended.

The helper holds nothing else: not stdin, stdout or stderr, so a pipe reading marose's output
ends with marose, and not the output file. It ignores Ctrl-C, which reaches the whole process
group, and ends with the process however it ends. Linux only (the descriptors are listed in
/proc/self/fd); elsewhere, or where fork fails, the process tears the driver down itself.
"""

from __future__ import annotations

import os
import signal
import socket
import stat
import sys

MAX_FDS_A_MESSAGE = 250  # Linux takes at most 253 descriptors in one message (SCM_MAX_FD)
_helper: socket.socket | None = None  # this process's end of the helper's socket, once started


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
    try:
        pid = os.fork()
    except OSError:
        mine.close()
        its.close()
        return None
    if pid == 0:
        mine.close()
        _hold_until_the_process_ends(its)
    its.close()
    _helper = mine
    return pid


def hand_over() -> list[int]:
    """Passes the helper the process's open character devices but stdin, stdout and stderr (the
    process keeps its own references, released as it ends); the descriptors passed. Call just
    before the process ends."""
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


def _hold_until_the_process_ends(sock: socket.socket) -> None:
    """The helper: everything the fork copied closed but sock; the descriptors passed to it held
    until the process closes its end, then released as the helper ends."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        quiet = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(quiet, fd)
        keep = sock.fileno()
        os.closerange(3, keep)
        os.closerange(keep + 1, os.sysconf("SC_OPEN_MAX"))
        while socket.recv_fds(sock, 1, MAX_FDS_A_MESSAGE)[0]:
            pass  # the descriptors received stay open until os._exit
    finally:
        os._exit(0)
