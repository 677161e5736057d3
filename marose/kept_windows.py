"""The windows that the filter over candidates kept, aligned apart from row_loci
(cl/kept_windows.cl).

row_loci walks a task's candidates and aligns each window that its test, or the filter over
candidates (marose.prefilter), keeps. On a GPU the work-items of a warp run in step: while one
aligns a window, 110 columns of two words of Myers for a 100 bp read, the others, which only
test windows and reject most of them after a few columns, wait. Against the 3.1 Gbp reference
(200,000 reads, H200) row_loci took 2.96 s, and 1.14 s with the alignments left out.

Here the kept windows are listed, task by task, and aligned a work-item each. What row_loci
needs of an alignment is kept: the ends within k before the column where the score can no longer
fall to k, and that column (`replay_window` in cl/extend.cl). row_loci then replays them in its
walk instead of aligning the window, so its loci are the same. A window with more than
WINDOW_ENDS such ends, or one that starts inside a chain (a task's first), row_loci aligns itself.
"""

from __future__ import annotations

import os

import numpy as np

from . import align
from .device import Device, groups

WINDOW_ENDS = 12  # ends within k a listed window keeps (more: row_loci aligns it again)
MAX_LISTED = ((1 << 32) - 1) // WINDOW_ENDS  # places a list may take: the kernels number its ends in 32 bits
SWITCH = "MAROSE_ALIGN_APART"  # "on" or "off": align the kept windows apart, or not, whatever the device


class Listing:
    """Where the filter over candidates lists the chains it keeps (cl/prefilter.cl,
    WINDOW_LIST_ARGS): per task, their number and first place; the places (row, first
    candidate), as many as the first test kept, NOT_LISTED where the second dropped one."""

    def __init__(self, device: Device, n_tasks: int):
        self.device = device
        self.count, self.base = device.empty(4 * max(1, n_tasks)), device.empty(4 * max(1, n_tasks))
        self.counters = device.zeros(8)
        self.at, self.n, self.listed = device.empty(8), 0, False

    def first(self) -> tuple:
        """The first test's arguments from list_windows on."""
        return np.uint32(1), self.count, self.base, self.counters, self.at

    def second(self) -> tuple:
        """The second test's, once the first has counted the places (the host waits for it); a
        list of more than MAX_LISTED places is not made (row_loci then aligns every window)."""
        n = int(self.device.read(self.counters, np.uint32, 1)[0])
        self.listed = n <= MAX_LISTED
        self.n = n if self.listed else 0
        self.at = self.device.empty(8 * max(1, self.n))
        return np.uint32(int(self.listed)), self.count, self.base, self.counters, self.at


def pays(device: Device) -> bool:
    """Whether the kept windows are aligned apart: on a GPU (above), or as SWITCH forces it. A
    CPU runs a work-group's items one after another, and gains nothing by it."""
    forced = os.environ.get(SWITCH, "")
    if forced in ("on", "off"):
        return forced == "on"
    return not device.is_cpu


def unused(device: Device) -> tuple:
    """row_loci's arguments from aligned_apart on, where the windows are not aligned apart."""
    nothing = device.empty(8)
    return (np.uint32(0), *[nothing] * 6)


def aligned(device: Device, program: tuple, defines: dict, tasks: tuple, listing: Listing, keep) -> tuple:
    """row_loci's arguments from aligned_apart on: the windows listing lists aligned, and what
    row_loci needs of each kept. tasks: extend.task_arguments; program, defines: the alignment
    program (with cl/kept_windows.cl) and its build options."""
    if not listing.listed:
        return unused(device)
    d, n = device, max(1, listing.n)
    found, end, dist = d.empty(8 * n), d.empty(2 * WINDOW_ENDS * n), d.empty(WINDOW_ENDS * n)
    if listing.n:
        d.launch(d.kernel(program, "align_kept_windows", defines), groups(listing.n, 64), None, *tasks, keep,
                 d.empty(4), np.uint32(listing.n), listing.at, found, end, dist)
    return np.uint32(1), listing.base, listing.count, listing.at, found, end, dist


def twin(read: np.ndarray, window: np.ndarray, k: int) -> tuple[list[tuple[int, int]], int]:
    """What align_kept_windows keeps of one window (codes): the (column, distance) of its ends
    within k before b, and b, columns counted from the window's start."""
    scores = align.end_distances(read, window, len(read)).astype(np.int64)  # a read's length: none capped
    past = np.flatnonzero(scores > k + np.arange(window.size - 1, -1, -1))
    b = int(past[0]) if past.size else int(window.size)
    return [(j, int(scores[j])) for j in range(b) if scores[j] <= k], b
