"""The pre-alignment filter of row_loci (cl/extend.cl prefix_rejects) and over the candidates before
it (cl/prefilter.cl) against their numpy twin (marose.prealign), and against brute force: they never
reject a window holding an end within k."""

from __future__ import annotations

import numpy as np
import pytest

from conftest import mutate
from marose import align, extend, prealign, prefilter
from marose.dna import N_CODE
from marose.regions import region_offsets
from test_extend import device_candidates

LENGTHS = (40, 64, 65, 100, 150, 250)


def edited_at_ends(rng: np.random.Generator, read: np.ndarray, edits: int) -> np.ndarray:
    """A copy of read with `edits` insertions, deletions or substitutions at its first or last base."""
    out = list(read)
    for _ in range(edits):
        at = 0 if rng.random() < 0.5 else len(out) - 1
        kind = rng.integers(3)
        if kind == 0:
            out[at] = (out[at] + 1 + int(rng.integers(3))) % 4
        elif kind == 1:
            out.insert(at + (at > 0), int(rng.integers(4)))
        elif len(out) > 1:
            del out[at]
    return np.array(out, dtype=np.uint8)


class Windows:
    """Reads, a genome of two contigs holding copies of them with up to k + 2 edits (in the middle
    or at the read's ends; one copy starts the second contig, one ends the first), and the windows
    row_loci would align for candidate starts at, near and far from the copies."""

    def __init__(self, seed: int, k: int):
        rng = np.random.default_rng(seed)
        self.reads = [rng.integers(0, 4, n).astype(np.uint8) for n in LENGTHS for _ in range(3)]
        for read in self.reads[1::4]:
            read[rng.integers(0, read.size)] = N_CODE
        contigs, copies = [[], []], []
        for r, read in enumerate(self.reads):
            for c in (0, 1):
                edits = int(rng.integers(0, k + 3))
                copy = edited_at_ends(rng, read, edits) if rng.random() < 0.5 else mutate(rng, read, edits)
                gap = rng.integers(0, 4, 0 if (c == 1 and r == 0) else int(rng.integers(0, 40))).astype(np.uint8)
                copies.append((r, c, sum(map(len, contigs[c])) + gap.size))
                contigs[c] += [gap, copy]
        contigs[0].append(np.zeros(0, np.uint8))  # the last copy ends the first contig
        self.contigs = [np.concatenate(parts) for parts in contigs]
        self.genome = np.concatenate(self.contigs)
        self.genome[rng.random(self.genome.size) < 0.005] = N_CODE
        bounds = np.array([0, self.contigs[0].size, self.genome.size])
        self.bounds = bounds
        self.starts = [[] for _ in self.reads]  # the candidate starts of each read
        read_of, begin, end = [], [], []
        for r, c, at in copies:
            starts = [at + d for d in (-k - 2, -1, 0, 1, k + 2)] + [int(rng.integers(0, self.contigs[c].size))]
            starts += [0, self.contigs[c].size - 1, self.contigs[c].size - len(self.reads[r]) + 2]
            for start in starts:
                start = min(max(start, 0), self.contigs[c].size - 1) + bounds[c]
                self.starts[r].append(int(start))
                w, e = prealign.window(start, len(self.reads[r]), bounds[c], bounds[c + 1], k)
                read_of.append(r)
                begin.append(w)
                end.append(e)
        self.read_of, self.begin, self.end = (np.array(a, dtype=np.int64) for a in (read_of, begin, end))


@pytest.mark.parametrize("k", [0, 3, 5, 8])
def test_kernel_equals_twin_and_never_rejects_an_end_within_k(device, k: int) -> None:
    case = Windows(k, k)
    got = extend.prefix_rejects(device, case.reads, device.to_device(case.genome), case.read_of, case.begin,
                                case.end, k)
    distances = align.many_end_distances([case.reads[r] for r in case.read_of],
                                         [case.genome[w:e] for w, e in zip(case.begin, case.end)], k)
    within = np.array([d.size > 0 and d.min() <= k for d in distances])
    for c, (r, w, e) in enumerate(zip(case.read_of, case.begin, case.end)):
        read = case.reads[r]
        assert got[c] == prealign.rejects(read, case.genome, w, e, k)
        assert not (got[c] and within[c])
        if len(read) <= 64:
            assert not got[c]  # no filter for reads of one word
    long_reads = np.array([len(case.reads[r]) > 64 for r in case.read_of])
    assert within.sum() >= 5  # windows the filter must keep
    assert got[long_reads & ~within].mean() > 0.5  # most of the others it rejects


def test_windows_too_short_for_the_first_word_are_rejected(device) -> None:
    read = np.arange(100, dtype=np.uint8) % 4
    genome = np.concatenate([read, read])
    got = extend.prefix_rejects(device, [read], device.to_device(genome), np.zeros(3, np.int64),
                                np.array([0, 0, 100]), np.array([100, 60, 130]), 5)
    assert got.tolist() == [False, True, True]  # the copy; 60 bases (the first 64 within 29); 30 < 31 bases
    assert [prealign.rejects(read, genome, w, e, 5) for w, e in ((0, 100), (0, 60), (100, 130))] == got.tolist()


@pytest.mark.parametrize("k,slice_size", [(0, 32), (5, 7), (8, 3)])
def test_prefilter_keeps_what_the_twin_keeps_and_every_end_within_k(device, k: int, slice_size: int) -> None:
    """prefilter.marks over rows cut into tasks of slice_size candidates (chains running from one
    task into the next, lanes left empty) marks what its twin prealign.kept keeps, and counts
    them; a candidate dropped holds no end within k in its window, a read of one word keeps all
    of them."""
    case = Windows(10 + k, k)
    rows = [sorted(set(starts)) for starts in case.starts]
    rows[2] = []  # a row without candidates
    values, row_begin, row_size = extend._one_run_per_row(device, [device_candidates(device, rows)])
    reads = extend.upload_reads(device, case.reads)
    defines = extend.alignment_defines(device, max(map(len, case.reads)), k)
    task_base = region_offsets(-(-row_size // slice_size))
    tasks, _ = extend.task_arguments(device, reads, device.to_device(case.genome), values, row_begin, row_size,
                                     task_base, slice_size, device.to_device(case.bounds.astype(np.uint32)), 2, k)
    total, span = int(row_size.sum()), int((row_begin + row_size).max())
    keep, n_kept = prefilter.marks(device, extend.ALIGN, defines, tasks, int(task_base[-1]), span)
    starts, marks = device.read(values, np.uint32, span), device.read(keep, np.uint8, span)
    dropped_windows = []  # (read, first base, end)
    for r, row in enumerate(rows):
        assert starts[row_begin[r]:row_begin[r] + row_size[r]].tolist() == row
        want = prealign.kept(case.reads[r], case.genome, row, case.bounds, k)
        got = [p for p, mark in zip(row, marks[row_begin[r]:row_begin[r] + row_size[r]]) if mark]
        assert got == want
        if len(case.reads[r]) <= 64:
            assert want == row
        for p in sorted(set(row) - set(want)):
            contig = np.searchsorted(case.bounds, p, side="right") - 1
            dropped_windows.append((r, *prealign.window(p, len(case.reads[r]), case.bounds[contig],
                                                         case.bounds[contig + 1], k)))
    distances = align.many_end_distances([case.reads[r] for r, _, _ in dropped_windows],
                                         [case.genome[w:e] for _, w, e in dropped_windows], k)
    assert all(d.min() > k for d in distances)
    dropped = len(dropped_windows)
    assert int(device.read(n_kept, np.uint32, 1)[0]) == total - dropped
    assert dropped > len(rows)  # most candidates far from a copy are dropped
    assert slice_size > 16 or any(first // slice_size < last // slice_size  # a chain runs into the next task
                                  for row in rows for first, last in prealign.chains(row, case.bounds, k))


def test_the_filter_over_candidates_runs_on_a_cpu_or_as_the_environment_says(device, monkeypatch) -> None:
    monkeypatch.delenv(prefilter.SWITCH, raising=False)
    assert prefilter.pays(device, np.array([40, 100])) == prefilter.wanted(device.is_cpu,
                                                                           device.device.platform.version)
    assert not prefilter.pays(device, np.array([40, 64]))  # reads of one word are never rejected
    monkeypatch.setenv(prefilter.SWITCH, "off")
    assert not prefilter.pays(device, np.array([100]))
    monkeypatch.setenv(prefilter.SWITCH, "on")
    assert prefilter.pays(device, np.array([100]))


@pytest.mark.parametrize("is_cpu, version, forced, runs", [
    (True, "OpenCL 3.0 PoCL 3.1+debian  Linux, None+Asserts, RELOC, SPIR, LLVM 15.0.6", "", True),
    (True, "OpenCL 3.0 PoCL 3.0-rc2  Linux, Release, RELOC, LLVM 14.0.6", "", True),
    (True, "OpenCL 3.0 PoCL 5.0+debian  Linux, None+Asserts, RELOC, SPIR, LLVM 16.0.6", "", False),
    (True, "OpenCL 3.0 PoCL 6.0  Linux, Release", "", False),
    (True, "OpenCL 3.0 PoCL 5.0+debian", "on", True),
    (True, "OpenCL 3.0 PoCL 3.1+debian", "off", False),
    (True, "OpenCL 1.2 (Oclgrind 21.10)", "", True),
    (False, "OpenCL 3.0 CUDA 13.0.98", "", False),
    (False, "OpenCL 3.0 CUDA 13.0.98", "on", True),
])
def test_which_devices_run_the_filter_over_candidates(is_cpu, version, forced, runs) -> None:
    assert prefilter.wanted(is_cpu, version, forced) == runs


def test_a_gpu_runs_the_filter_where_rows_are_long() -> None:
    cuda, pocl5 = "OpenCL 3.0 CUDA 13.0.98", "OpenCL 3.0 PoCL 5.0+debian"
    assert prefilter.wanted(False, cuda, "", long_rows=True) and not prefilter.wanted(False, cuda, "off", True)
    assert not prefilter.wanted(True, pocl5, "", long_rows=True)  # a CPU decides by its compiler alone
