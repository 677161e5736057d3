"""Host side of the pre-alignment filter over candidates (cl/prefilter.cl): a row's candidates are
cut into chains as row_loci merges them, and those of a chain whose window surely holds no end
within k are dropped before row_loci aligns any window (prealign.kept is the twin: the read's
first 64 bases from the window's start, then its last 64 backwards from its end, each starting
where an alignment of the whole read within k can).

row_loci applies the first part of the test (the first 64 bases) to each window it would align.
Run first, over the candidates, it takes several windows of a read at once, one word of
Myers a column for all of them, which a CPU runs side by side, and stops a window as soon as no
row it may still cross holds k or less. Dropping windows that hold no end within k leaves
row_loci's loci as they are (marose.extend.row_loci), so the output is the same. On human chrX
(100 bp reads, k = 5) it keeps 2.8% of the candidates.
"""

from __future__ import annotations

import os
import re

import numpy as np

from .align import WORD_BITS
from .device import Device, groups
from .regions import region_offsets

LANES = 4  # windows a work-item tests at once (8 took as long on the 2-core machine, 1 or 2 3 times longer)
SWITCH = "MAROSE_PREFILTER"  # "on" or "off": run the filter, or not, whatever the device (to measure it)
SCALAR_POCL = 5  # PoCL 5.0 compiles the lanes as scalar code (BENCHMARKS.md, CPU devices); later ones taken alike


def pays(device: Device, lengths: np.ndarray) -> bool:
    """Whether to run the filter before row_loci: for reads longer than one word (the others are
    never rejected), where wanted says so."""
    forced = os.environ.get(SWITCH, "")
    return wanted(device.is_cpu, device.device.platform.version, forced) and \
        bool(np.any(np.asarray(lengths) > WORD_BITS))


def wanted(is_cpu: bool, platform_version: str, forced: str = "") -> bool:
    """Whether a device runs the filter: as forced ("on", "off": MAROSE_PREFILTER) says, else on
    a CPU whose compiler makes vector code of its lanes. PoCL 3.0 and 3.1 do, and the filter takes
    a fifth to a third off chrX's time there; PoCL 5.0 leaves them scalar, four to six times
    slower, and row_loci's own test alone is faster (1.4-2.1x on chrX). A GPU runs that test, one
    window a work-item, among many work-items already."""
    if forced in ("on", "off"):
        return forced == "on"
    pocl = re.search(r"PoCL (\d+)\.", platform_version)
    return is_cpu and not (pocl and int(pocl.group(1)) >= SCALAR_POCL)


def kept_candidates(device: Device, program: tuple, defines: dict, reads, genome_buffer, values, row_begin: np.ndarray,
                    row_size: np.ndarray, contig_start_buffer, n_contigs: int, k: int,
                    slice_size: int) -> tuple[object, np.ndarray, np.ndarray]:
    """(buffer, row begin, row size) of the candidates each row keeps, sorted and unique as given:
    prealign.kept's. The chains are tested with the read's first 64 bases, and those kept with its
    last 64 bases. program, defines: the alignment program that holds cl/prefilter.cl and its build
    options; reads: extend.DeviceReads; slice_size: candidates a work-item takes."""
    for backwards in (False, True):
        values, row_begin, row_size = _kept(device, program, defines, reads, genome_buffer, values, row_begin,
                                            row_size, contig_start_buffer, n_contigs, k, slice_size, backwards)
    return values, row_begin, row_size


def _kept(device: Device, program: tuple, defines: dict, reads, genome_buffer, values, row_begin: np.ndarray,
          row_size: np.ndarray, contig_start_buffer, n_contigs: int, k: int, slice_size: int,
          backwards: bool) -> tuple[object, np.ndarray, np.ndarray]:
    """One pass of kept_candidates: the read's first 64 bases, or its last 64 backwards."""
    n_rows = row_size.size
    task_base = region_offsets(-(-row_size // slice_size))
    n_tasks = int(task_base[-1])
    if n_tasks == 0:
        return values, row_begin, row_size
    task_base_buffer = device.to_device(task_base)
    rows = (device.to_device(row_begin.astype(np.uint32)), device.to_device(row_size.astype(np.uint32)))
    tasks = (task_base_buffer, np.uint32(n_rows), np.uint32(slice_size))
    keep = device.empty(int((row_begin.astype(np.int64) + row_size).max()))
    device.launch(device.kernel(program, "prefilter_backwards" if backwards else "prefilter", defines),
                  groups(n_tasks, 64), None, *reads.buffers, genome_buffer, values, *rows, *tasks, contig_start_buffer,
                  np.uint32(n_contigs), np.uint32(k), keep)
    kept_count = device.empty(4 * n_tasks)
    device.launch(device.kernel(program, "count_kept", defines), groups(n_tasks, 64), None, keep, *rows, *tasks,
                  kept_count)
    counts = device.read(kept_count, np.uint32, n_tasks).astype(np.int64)
    task_out = region_offsets(counts)
    out = device.empty(4 * max(1, int(task_out[-1])))
    device.launch(device.kernel(program, "gather_kept", defines), groups(n_tasks, 64), None, values, keep, *rows,
                  *tasks, device.to_device(task_out), out)
    kept_size = np.add.reduceat(np.append(counts, 0), task_base[:-1]) if n_rows else np.zeros(0, np.int64)
    kept_size[row_size == 0] = 0
    return out, task_out[task_base[:-1]].astype(np.int64), kept_size
