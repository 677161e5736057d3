"""Host side of the pre-alignment filter over candidates (cl/prefilter.cl): a row's candidates are
cut into chains as row_loci merges them, and those of a chain whose window surely holds no end
within k are dropped before row_loci aligns any window (prealign.kept is the twin: the read's
first 64 bases from the window's start, then its last 64 backwards from its end, each starting
where an alignment of the whole read within k can).

row_loci applies the first part of the test (the first 64 bases) to each window it would align.
Run first, over the candidates, it takes several windows of a read at once, one word of
Myers a column for all of them, which a CPU runs side by side, and stops a window as soon as no
row it may still cross holds k or less. It marks the candidates kept, and row_loci skips the
others where they lie. Dropping windows that hold no end within k leaves row_loci's loci as they
are (marose.extend.row_loci), so the output is the same. On human chrX
(100 bp reads, k = 5) it keeps 2.8% of the candidates.
"""

from __future__ import annotations

import os

import numpy as np

from .align import WORD_BITS
from .device import Device, groups, pocl_major

LANES = 4  # windows a work-item tests at once on a CPU (8 took as long on the 2-core machine, 1 or 2 3 times longer)
GPU_LANES = 1  # on a GPU (H200, 3.1 Gbp reference: 1.02 s with 1, 1.16 s with 2, 1.30 s with 4)
SWITCH = "MAROSE_PREFILTER"  # "on" or "off": run the filter, or not, whatever the device (to measure it)
SCALAR_POCL = 5  # PoCL 5.0 compiles the lanes as scalar code (BENCHMARKS.md, CPU devices); later ones taken alike


def lanes(device: Device) -> int:
    return LANES if device.is_cpu else GPU_LANES


def pays(device: Device, lengths: np.ndarray, long_rows: bool = False) -> bool:
    """Whether to run the filter before row_loci: for reads longer than one word (the others are
    never rejected), where wanted says so; long_rows: whether the batch's rows of candidates are
    long (row_loci's slices grown past the least)."""
    forced = os.environ.get(SWITCH, "")
    return wanted(device.is_cpu, device.device.platform.version, forced, long_rows) and \
        bool(np.any(np.asarray(lengths) > WORD_BITS))


def wanted(is_cpu: bool, platform_version: str, forced: str = "", long_rows: bool = False) -> bool:
    """Whether a device runs the filter: as forced ("on", "off": MAROSE_PREFILTER) says, else on
    a CPU whose compiler makes vector code of its lanes. PoCL 3.0 and 3.1 do, and the filter takes
    a fifth to a third off chrX's time there; PoCL 5.0 leaves them scalar, four to six times
    slower, and row_loci's own test alone is faster (1.4-2.1x on chrX). A GPU runs that test, one
    window a work-item, among many work-items already: on the H100 the filter's two passes took
    longer than they saved row_loci (1,000,000 chrX reads: kernels 0.55 against 0.52 s). Where
    rows are long (the repeats of a human-size genome) a GPU runs it, and aligns the windows kept
    apart from row_loci (marose.kept_windows), which then only replays them."""
    if forced in ("on", "off"):
        return forced == "on"
    if not is_cpu:
        return long_rows
    pocl = pocl_major(platform_version)
    return not (pocl is not None and pocl >= SCALAR_POCL)


def marks(device: Device, program: tuple, defines: dict, tasks: tuple, n_tasks: int,
          n_values: int, listing=None) -> tuple[object, object]:
    """(keep, n_kept): buffers of a mark per candidate (uint8, 1 where the candidate is kept, at the
    candidate's own index among the n_values of the candidates buffer) and of the number kept (one
    uint32), for the candidates of each row, sorted and unique: prealign.kept's. tasks: the
    kernels' first arguments, which cut the rows into n_tasks tasks (extend.task_arguments). The
    chains are tested with the read's first 64 bases, and those kept with its last 64 bases; the
    host waits for neither, unless listing (a kept_windows.Listing) has the chains kept listed:
    then it waits for the first test's count. program, defines: the alignment program that holds
    cl/prefilter.cl and its build options."""
    keep, n_kept = device.empty(max(1, n_values)), device.zeros(4)
    if n_tasks:
        unused = device.empty(8)
        off = (np.uint32(0), unused, unused, unused, unused)
        device.launch(device.kernel(program, "prefilter", defines), groups(n_tasks, 64), None, *tasks, keep, n_kept,
                      *(listing.first() if listing else off))
        device.launch(device.kernel(program, "prefilter_backwards", defines), groups(n_tasks, 64), None, *tasks,
                      keep, n_kept, *(listing.second() if listing else off))
    return keep, n_kept
