"""Extend kernels (end distances, tracebacks) against the numpy reference in marose.align."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pysam
import pytest

from marose import align, extend, kept_windows, prefilter
from marose.dna import N_CODE, encode, reverse_complement
from conftest import mutate
from marose.filter import DeviceCandidates
from marose.lookup import device_genome
from marose.reference import NO_IUPAC, md_letters
from marose.regions import region_offsets
from marose.extend import (
    OP_DEL,
    OP_INS,
    OP_MATCH,
    OP_MISMATCH,
    alignment_strings,
    alignment_strings_batch,
    alignment_text,
    best_loci,
    end_distances,
    row_loci,
    pack_reads,
    RowLoci,
    slice_starts,
    trace,
    tracebacks,
    upload_reads,
)

DATA = Path(__file__).parent / "data"
LENGTHS = (1, 40, 63, 64, 65, 100, 150, 250)
K_MAX = 8


def random_seq(rng: np.random.Generator, size: int, alphabet: int, n_rate: float) -> np.ndarray:
    """Codes from the first `alphabet` bases, with N at about n_rate of the positions."""
    seq = rng.integers(0, alphabet, size).astype(np.uint8)
    seq[rng.random(size) < n_rate] = N_CODE
    return seq


class Case:
    """Reads, a genome of two contigs holding mutated copies of them, and candidate windows; half
    of the genome's N are IUPAC letters other than N (iupac, as Reference.iupac)."""

    def __init__(self, seed: int, alphabet: int = 4, n_rate: float = 0.02):
        rng = np.random.default_rng(seed)
        # Every other read has N, so that k = 0 still finds loci for the others.
        self.reads = [random_seq(rng, n, alphabet, n_rate * (i % 2)) for i, n in enumerate(LENGTHS)]
        self.contigs, self.windows = [], []
        for c in range(2):
            # Copies of every read, between random gaps; one starts and one ends the contig.
            order = rng.permutation(np.repeat(np.arange(len(LENGTHS)), 3))
            pieces, at = [], 0
            for i, r in enumerate(order):
                gap = 0 if i == 0 else int(rng.integers(0, 30))
                pieces.append(random_seq(rng, gap, alphabet, n_rate))
                copy = mutate(rng, self.reads[r], int(rng.integers(0, 4)))
                if i == len(order) - 1:
                    copy = copy[:-1]
                pieces.append(copy)
                self.windows.append((int(r), c, at + gap))
                at += gap + len(copy)
            self.contigs.append(np.concatenate(pieces))
            self.windows.extend((r, c, int(rng.integers(0, at))) for r in range(len(LENGTHS)))
        self.contig_start = np.array([0, len(self.contigs[0])])
        self.genome = np.concatenate(self.contigs)
        self.rng = rng
        others = np.random.default_rng(seed + 1)
        n_at = np.flatnonzero(self.genome == N_CODE)
        at = np.sort(others.choice(n_at, n_at.size // 2, replace=False))
        letters = np.frombuffer(b"RYKMSWBDHV", np.uint8)[others.integers(0, 10, at.size)]
        self.iupac = np.stack([at, letters], axis=1).astype(np.int64)

    def candidates(self, k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(read, start, length, contig) of windows of L + 2k bases from k before a copy.

        Some windows are shifted or shortened at random; all are clamped to their contig.
        """
        read, start, length, contig = [], [], [], []
        for r, c, copy_at in self.windows:
            at = copy_at - k + (int(self.rng.integers(-3, 4)) if self.rng.random() < 0.3 else 0)
            size = len(self.reads[r]) + 2 * k
            if self.rng.random() < 0.2:
                size = int(self.rng.integers(0, size + 1))
            lo = max(0, at)
            hi = min(len(self.contigs[c]), at + size)
            read.append(r)
            start.append(self.contig_start[c] + lo)
            length.append(max(0, hi - lo))
            contig.append(c)
        return tuple(np.array(a, dtype=np.int64) for a in (read, start, length, contig))


@pytest.fixture(scope="module")
def case() -> Case:
    return Case(11)


def check_distances(device, case: Case, k: int):
    """Kernel end distances of every candidate window == align.end_distances."""
    read, start, length, contig = case.candidates(k)
    genome = device.to_device(case.genome)
    got = end_distances(device, case.reads, genome, read, start, length, k)
    assert got.shape == (len(read), max(LENGTHS) + 2 * k) and got.dtype == np.uint8
    texts = [case.genome[start[c] : start[c] + length[c]] for c in range(len(read))]
    expected = align.many_end_distances([case.reads[r] for r in read], texts, k)
    for c in range(len(read)):
        assert np.array_equal(got[c, : length[c]], expected[c]), (c, k)
        assert (got[c, length[c] :] == align.NO_HIT).all()
    return got, (read, start, length, contig)


def loci_of(got: np.ndarray, read, start, length, contig, k: int):
    """(read, genome end, contig) of every locus the reference finds in the kernel's rows."""
    loci = []
    for c in range(len(read)):
        ends, _ = align.loci_from_distances(got[c, : length[c]], k)
        loci.extend((read[c], start[c] + e, contig[c]) for e in ends)
    return [np.array(a, dtype=np.int64) for a in zip(*loci)] or [np.zeros(0, np.int64)] * 3


def check_tracebacks(device, reads, genome: np.ndarray, loci, k: int, contig_start: np.ndarray, contigs: list,
                     iupac: np.ndarray = NO_IUPAC) -> list[str]:
    """Kernel tracebacks (start, CIGAR, NM, MD) == align.traceback for every locus, MD with the
    genome's IUPAC letters iupac; returns the MD strings."""
    loci_read, loci_end, loci_contig = loci
    lengths = np.array([len(reads[r]) for r in loci_read])
    first = slice_starts(loci_end, lengths, contig_start[loci_contig], k)
    genome_buffer = device.to_device(genome)
    start, ops, count = tracebacks(device, reads, genome_buffer, loci_read, loci_end, first, k)
    # the walk this device does not take by default: over Myers' columns (CPU devices) or the band's table (GPUs)
    other = tracebacks(device, reads, genome_buffer, loci_read, loci_end, first, k, not device.is_cpu)
    assert all(np.array_equal(a, b) for a, b in zip(other, (start, ops, count)))
    cigars, nms, mds = alignment_strings_batch(ops, count, genome, start, iupac)
    traced = trace(device, reads, genome_buffer, loci_read, loci_end, first, k)
    traced.check(device)  # every locus has an alignment
    text_cigars, text_nms, text_mds = alignment_text(device, traced, device_genome(device, genome_buffer, iupac), k)
    assert [c.decode() for c in text_cigars] == cigars and [m.decode() for m in text_mds] == mds
    assert np.array_equal(text_nms, nms)
    letters = [md_letters(genome, np.arange(c0, c0 + len(c)), iupac).tobytes().decode()
               for c0, c in zip(contig_start, contigs)]
    for t in range(len(loci_read)):
        offset = contig_start[loci_contig[t]]
        expected = align.traceback(reads[loci_read[t]], contigs[loci_contig[t]],
                                   int(loci_end[t] - offset), k, letters[loci_contig[t]])
        assert start[t] == expected.start + offset, t
        cigar, nm, md = alignment_strings(ops[t], int(count[t]), genome, int(start[t]), iupac)
        assert (cigar, nm, md) == (expected.cigar, expected.nm, expected.md), t
        assert (cigars[t], nms[t], mds[t]) == (cigar, nm, md), t
        assert nm == expected.dist
        assert not ops[t, count[t] :].any()
    return mds


@pytest.mark.parametrize("k", range(K_MAX + 1))
def test_end_distances_and_tracebacks_random(device, case: Case, k: int) -> None:
    got, windows = check_distances(device, case, k)
    loci = loci_of(got, *windows, k)
    mds = check_tracebacks(device, case.reads, case.genome, loci, k, case.contig_start, case.contigs, case.iupac)
    assert len(mds) > 0
    if k >= 3:
        assert any(re.search("[0-9][RYKMSWBDHV]", md) for md in mds)  # mismatches at IUPAC letters


def device_candidates(device, rows: list[list[int]]) -> DeviceCandidates:
    """A filter's output for lists of read starts: each row sorted and unique, after a gap."""
    written = [sorted(set(starts)) for starts in rows]
    counts = np.array([len(w) for w in written], dtype=np.uint32)
    offsets = np.concatenate(([0], np.cumsum(counts + 2))).astype(np.uint32)  # room the filter did not use
    buffer = np.full(int(offsets[-1]), 7, dtype=np.uint32)
    for w, at in zip(written, offsets):
        buffer[at : at + len(w)] = w
    return DeviceCandidates(device.to_device(buffer), device.to_device(offsets), device.to_device(counts), offsets)


def expected_row_loci(case: Case, rows: list[list[int]], offsets: np.ndarray, k: int):
    """Per row, (end, distance) of each locus from align: every window's ends within k, the
    least distance of each end, consecutive ends of one contig merged."""
    windows = []  # (row, first base, end) of each window
    for r, starts in enumerate(rows):
        for p in sorted(set(starts)):
            c = np.searchsorted(offsets, p, side="right") - 1
            windows.append((r, max(offsets[c], p - k), min(offsets[c + 1], p + len(case.reads[r]) + k)))
    distances = align.many_end_distances([case.reads[r] for r, _, _ in windows],
                                         [case.genome[first:last] for _, first, last in windows], k)
    best_of_row: list[dict] = [{} for _ in rows]
    for (r, first, _), d in zip(windows, distances):
        best = best_of_row[r]
        for j in np.flatnonzero(d <= k):
            best[first + j] = min(best.get(first + j, 255), int(d[j]))
    found = []
    for best in best_of_row:
        ends = np.array(sorted(best), dtype=np.int64)
        contig = np.searchsorted(offsets, ends, side="right") - 1
        _, loci_end, loci_dist = align.loci_from_hits(contig, ends, np.array([best[e] for e in ends.tolist()]))
        found.append(list(zip(loci_end.tolist(), loci_dist.tolist())))
    return found


# every pair of k, alphabet and slice size once (a covering array: 9 cases instead of 18)
ROW_LOCI_CASES = [(k, 4 if (i + j) % 2 == 0 else 2, slice_size, True, True, None, None)
                  for i, k in enumerate((0, 3, 8)) for j, slice_size in enumerate((1, 3, 32))]
ROW_LOCI_CASES += [(3, 4, slice_size, merge, pre, None, None) for slice_size in (1, 32)
                   for merge, pre in ((False, False), (True, False), (False, True))]
ROW_LOCI_CASES += [(3, 4, 3, True, True, False, None), (3, 4, 32, False, True, True, None),
                   (8, 4, 32, True, True, False, None)]
ROW_LOCI_CASES += [(k, 4, extend.GPU_SLICE, True, True, False, None) for k in (3, 8)]  # as a GPU runs it
# the kept windows aligned apart, row_loci replaying them; with 1 end kept a window, most aligned again
ROW_LOCI_CASES += [(k, 4 if k else 2, slice_size, True, True, True, ends)
                   for k, slice_size, ends in ((0, 32, 12), (3, 1, 12), (3, 3, 1), (8, 3, 12), (8, 32, 2))]
ROW_LOCI_CASES += [(3, 4, 3, True, True, True, "too many")]  # a list longer than MAX_LISTED is not made


@pytest.mark.parametrize("k,alphabet,slice_size,merge_windows,prealign,prefiltered,apart_ends", ROW_LOCI_CASES)
def test_row_loci_merge_the_windows_of_each_row(device, monkeypatch, k: int, alphabet: int, slice_size: int,
                                                merge_windows: bool, prealign: bool, prefiltered,
                                                apart_ends) -> None:
    """row_loci over three candidate lists (index segments), each row cut into slices of
    slice_size candidates, == the loci align finds in every window of the row, whether or not
    near windows are merged and the pre-alignment filter skips windows, in row_loci or over the
    candidates before it (prefiltered; None: where it pays), and whether or not the windows it
    keeps are aligned apart (apart_ends: the ends a window keeps; None: where it pays)."""
    for name in ("SLICE", "GPU_SLICE", "MAX_SLICE"):
        monkeypatch.setattr(extend, name, slice_size)
    if apart_ends == "too many":
        monkeypatch.setattr(kept_windows, "MAX_LISTED", 1)
    elif apart_ends:
        monkeypatch.setattr(kept_windows, "WINDOW_ENDS", apart_ends)
    case = Case(11 if alphabet == 4 else 21, alphabet=alphabet)
    offsets = np.append(case.contig_start, case.genome.size)
    rng = np.random.default_rng(k)
    rows: list[list[int]] = [[] for _ in case.reads]
    for r, c, copy_at in case.windows:
        rows[r].append(int(offsets[c] + copy_at))
    for starts in rows:  # a contig start, a start near 0, near and repeated starts, chains k + 1 and k + 2 apart
        starts += [int(offsets[1]), 5, starts[0] + 1, starts[0] + 3, starts[1]]
        starts += [starts[1] + (k + 1) * j for j in range(1, 4)]
        starts += [max(0, starts[2] - (k + 2) * j) for j in range(1, 3)]
        starts += [int(offsets[1]) - 1 - j for j in range(3)]  # a chain at the first contig's end
    parts = [[], [], []]
    for starts in rows:  # each start in one or two lists, a list empty for some rows
        side = rng.integers(0, 3, len(starts))
        for j in range(3):
            parts[j].append([p for p, s in zip(starts, side) if s == j])
        parts[0][-1] += starts[:2]
    parts[2][1] = []
    lists = [device_candidates(device, part) for part in parts]
    reads = upload_reads(device, case.reads)
    got = row_loci(device, reads, device.to_device(case.genome), lists, device.to_device(offsets.astype(np.uint32)),
                   offsets.size - 1, k, merge_windows, prealign, prefiltered, bool(apart_ends) if apart_ends else None)
    want = expected_row_loci(case, rows, offsets, k)
    if apart_ends:  # the same windows walked, and aligned or replayed
        inline = row_loci(device, reads, device.to_device(case.genome), lists,
                          device.to_device(offsets.astype(np.uint32)), offsets.size - 1, k, True, True, True, False)
        assert inline.aligned == got.aligned
    assert got.count.tolist() == [len(w) for w in want]
    end, dist = got.read(device)
    assert list(zip(end.tolist(), dist.tolist())) == sum(want, [])
    assert got.count.sum() >= len(case.reads)
    if slice_size == 32:  # a task a row: each window aligned once, unless merged or skipped
        n_windows = int(got.candidates.sum())
        assert got.aligned == n_windows if not (merge_windows or prealign) else got.aligned < n_windows
        ran = prealign and (prefilter.pays(device, reads.lengths) if prefiltered is None else prefiltered)
        assert got.prefiltered < n_windows if ran else got.prefiltered == n_windows


def test_row_loci_more_loci_than_candidates(device) -> None:
    """One window holding three loci: the kernel runs again with room for them."""
    reads = upload_reads(device, [encode("TTTTCT"), encode("ACGTACGT")])
    genome = device.to_device(encode("TCTTTGTGTG"))
    lists = [device_candidates(device, [[2], []])]
    got = row_loci(device, reads, genome, lists, device.to_device(np.array([0, 10], np.uint32)), 1, 2)
    assert got.count.tolist() == [3, 0] and got.candidates.tolist() == [1, 0]
    end, dist = got.read(device)
    assert end.tolist() == [4, 6, 8] and dist.tolist() == [2, 2, 2]


def test_row_loci_runs_again_for_tasks_with_many_loci(device, monkeypatch) -> None:
    """A task's 32 candidates each hold a locus, more than a task has room for at first."""
    monkeypatch.setattr(extend, "GPU_SLICE", extend.SLICE)
    reads = upload_reads(device, [encode("ACGTACGT"), encode("GGGGGGGG")])
    genome = device.to_device(encode("ACGTACGTTTTTTTTT" * 40))
    lists = [device_candidates(device, [list(range(0, 640, 16)), []])]
    got = row_loci(device, reads, genome, lists, device.to_device(np.array([0, 640], np.uint32)), 1, 0)
    assert int(got.task_base[-1]) == 2 and got.count.tolist() == [40, 0]
    assert device.read(got.src, np.uint32, 2).tolist()[0] >= extend.RERUN  # the first task ran again
    end, dist = got.read(device)
    assert end.tolist() == list(range(7, 640, 16)) and not dist.any()
    best = best_loci(device, got, 1, 0, None)
    assert best.end.tolist() == end.tolist() and best.row.tolist() == [0] * 40


def test_heavy_loci_follow_the_device_or_the_switch(device, monkeypatch) -> None:
    monkeypatch.delenv(extend.HEAVY_SWITCH, raising=False)
    assert extend.heavy_loci(device) == (extend.NO_HEAVY if device.is_cpu else extend.HEAVY_LOCI)
    monkeypatch.setenv(extend.HEAVY_SWITCH, "12")
    assert extend.heavy_loci(device) == 12


def test_a_heavy_loci_switch_not_a_number_stops_the_map_before_any_output(tmp_path, monkeypatch, capsys) -> None:
    from marose import cli

    reads = tmp_path / "r.fq"
    reads.write_text("@r\nACGTACGTACGTACGTACGTACGT\n+\nIIIIIIIIIIIIIIIIIIIIIIII\n")
    monkeypatch.setenv(extend.HEAVY_SWITCH, "many")
    assert cli.main(["map", "-x", str(tmp_path / "none.fa"), str(reads), "-o", str(tmp_path / "o.sam")]) != 0
    assert "MAROSE_HEAVY_LOCI must be a number of loci, got 'many'" in capsys.readouterr().err
    assert not (tmp_path / "o.sam").exists()


def expected_best(row: np.ndarray, end: np.ndarray, dist: np.ndarray, n_reads: int, max_hits):
    """The numpy reference of best_loci: loci in row order, stably sorted by read then
    distance, cut to max_hits a read."""
    read = row // 2
    n_loci = np.bincount(read, minlength=n_reads)
    order = np.argsort(read * 256 + dist, kind="stable")
    if max_hits is not None:
        rank = np.arange(order.size) - (np.cumsum(n_loci) - n_loci)[read[order]]
        order = order[rank < max_hits]
    return n_loci, row[order], end[order], dist[order]


@pytest.mark.parametrize("k", [0, 3, 8, 20])
@pytest.mark.parametrize("max_hits", [None, 1, 3])
@pytest.mark.parametrize("heavy", [None, 0, 12])
def test_best_loci_equal_a_stable_sort(device, k: int, max_hits, heavy) -> None:
    """Tasks of random rows (some reads without any, a read with many tasks) whose loci lie in
    regions out of task order, some in the rerun's buffers: row_counts moves the tasks with loci
    to the front of their rows, and best_loci == a stable sort by read and distance, cut to
    max_hits; with the reads of more than heavy loci ordered by best_loci_heavy (0: every read
    with loci; None: as the device chooses)."""
    rng = np.random.default_rng(k)
    n_reads = 40
    task_row = np.sort(np.concatenate([rng.integers(0, 2 * n_reads - 10, 90), np.full(25, 2 * n_reads - 7)]))
    found = rng.integers(0, 7, task_row.size) * (rng.random(task_row.size) < 0.7)
    region = rng.permutation(task_row.size)  # task t's loci in region region[t]
    sizes = np.zeros(task_row.size, np.int64)
    sizes[region] = found + 2  # room left over, as the kernel leaves
    starts = np.concatenate(([0], np.cumsum(sizes)))[:-1]
    src = starts[region]
    ends = rng.integers(0, 2**32, int(sizes.sum()), dtype=np.uint32)
    dists = rng.integers(0, k + 1, int(sizes.sum())).astype(np.uint8)
    count = np.bincount(task_row, weights=found, minlength=2 * n_reads).astype(np.int64)
    rerun = rng.random(task_row.size) < 0.3  # the rest in a second pair of buffers
    src = np.where(rerun, src + extend.RERUN, src).astype(np.uint32)
    other_ends, other_dists = rng.permutation(ends), rng.permutation(dists)
    task_base = region_offsets(np.bincount(task_row, minlength=2 * n_reads))
    loci = RowLoci(count, count, 0, task_base, device.to_device(found.astype(np.uint32)), device.to_device(src),
                   (device.to_device(ends), device.to_device(other_ends)),
                   (device.to_device(dists), device.to_device(other_dists)))
    end, dist = loci.read(device)
    listed = extend.row_counts(device, device.to_device(task_base), loci.found, loci.src, 2 * n_reads)
    assert listed.tolist() == count.tolist()
    assert [a.tolist() for a in loci.read(device)] == [end.tolist(), dist.tolist()]
    moved = device.read(loci.found, np.uint32, found.size)
    for row in range(2 * n_reads):  # a row's tasks with loci lead, those without follow
        mine = moved[task_base[row]:task_base[row + 1]]
        assert (mine[:np.count_nonzero(mine)] > 0).all()
    want = expected_best(np.repeat(task_row.astype(np.int64), found), end, dist, n_reads, max_hits)
    got = best_loci(device, loci, n_reads, k, max_hits, heavy)
    if heavy == 12:
        assert 0 < np.count_nonzero(got.n_loci > 12) < np.count_nonzero(got.n_loci)  # both kernels ran
    for g, w in zip((got.n_loci, got.row, got.end, got.dist), want):
        assert g.tolist() == w.tolist()
    assert got.n_loci.sum() == found.sum() and (got.n_loci == 0).any()


@pytest.mark.parametrize("k", [0, 3, 8])
def test_place_loci_equal_slice_starts(device, k: int) -> None:
    """Contig and slice start of loci near contig starts, the genome start and the last base."""
    rng = np.random.default_rng(30 + k)
    contig_start = np.array([0, 7, 50, 51, 400, 1000, 1010], dtype=np.uint32)  # and the genome's end
    lengths = rng.integers(1, 150, 40).astype(np.uint32)
    n = 3000
    first = np.concatenate(([0], np.sort(rng.integers(0, n + 1, lengths.size - 1)), [n])).astype(np.uint32)
    row = rng.integers(0, lengths.size, n).astype(np.uint32)
    end = np.concatenate((contig_start[:-1], contig_start[1:] - 1, [0, 1, 999, 1005],
                          rng.integers(0, 1010, n - 16))).astype(np.uint32)
    buffers = [device.to_device(a) for a in (row, end, np.zeros(n, np.uint8))]
    loci = extend.DeviceLoci(np.zeros(lengths.size, np.int64), first, *buffers)
    reads = extend.DeviceReads(device.empty(1), device.empty(4), device.to_device(lengths), lengths)
    placed = extend.place_loci(device, loci, reads, device.to_device(contig_start), contig_start.size - 1, k)
    contig = np.searchsorted(contig_start, end, side="right") - 1
    want = slice_starts(end, lengths[row], contig_start[contig], k)
    assert device.read(placed.contig, np.uint32, n).tolist() == contig.tolist()
    assert device.read(placed.slice_start, np.uint32, n).tolist() == want.tolist()


@pytest.mark.parametrize("seed", [21, 22])
def test_low_complexity_ties(device, seed: int) -> None:
    # Two-letter sequences with many N make many equal-cost alignments: the tie rules decide.
    case = Case(seed, alphabet=2, n_rate=0.1)
    for k in (3, 6):
        got, windows = check_distances(device, case, k)
        loci = loci_of(got, *windows, k)
        check_tracebacks(device, case.reads, case.genome, loci, k, case.contig_start, case.contigs, case.iupac)


def lambda_genome() -> np.ndarray:
    with pysam.FastxFile(str(DATA / "lambda_virus.fa.gz")) as fasta:
        return encode(next(iter(fasta)).sequence)


def test_lambda_simulated_reads(device) -> None:
    genome = lambda_genome()
    rng = np.random.default_rng(5)
    k = 5
    reads, read, start, length = [], [], [], []
    for i in range(120):
        size = int(rng.choice([36, 100, 150]))
        at = int(rng.integers(0, len(genome) - size))
        piece = mutate(rng, genome[at : at + size], int(rng.integers(0, k + 1)))
        reads.append(piece if i % 2 else reverse_complement(piece))
        for strand in (0, 1):  # both strands of the read are candidates at the true place
            read.append(2 * i + strand)
            lo = max(0, at - k)
            start.append(lo)
            length.append(min(len(genome), at + len(piece) + k) - lo)
    reads = [r for piece in reads for r in (piece, reverse_complement(piece))]
    genome_buffer = device.to_device(genome)
    got = end_distances(device, reads, genome_buffer, read, start, length, k)
    expected = align.many_end_distances([reads[r] for r in read],
                                        [genome[s : s + n] for s, n in zip(start, length)], k)
    for c in range(len(read)):
        assert np.array_equal(got[c, : length[c]], expected[c])
    windows = (np.array(read), np.array(start), np.array(length), np.zeros(len(read), np.int64))
    loci = loci_of(got, *windows, k)
    assert len(loci[0]) >= 120  # every read is found on one of its strands
    check_tracebacks(device, reads, genome, loci, k, np.array([0]), [genome])


def test_packed_reads_and_reuse(device, case: Case) -> None:
    k = 4
    read, start, length, _ = case.candidates(k)
    genome = device.to_device(case.genome)
    expected = end_distances(device, case.reads, genome, read, start, length, k)
    packed = pack_reads(case.reads)
    assert np.array_equal(end_distances(device, packed, genome, read, start, length, k), expected)
    batch = upload_reads(device, case.reads)
    assert np.array_equal(end_distances(device, batch, genome, read, start, length, k), expected)


def test_empty_inputs_and_bad_windows(device) -> None:
    genome = device.to_device(encode("ACGTACGTAC"))
    reads = [encode("ACG")]
    none = np.zeros(0, dtype=np.int64)
    assert end_distances(device, reads, genome, none, none, none, 2).shape == (0, 7)
    got = end_distances(device, reads, genome, [0], [3], [0], 2)
    assert got.tolist() == [[255] * 7]
    with pytest.raises(ValueError):
        end_distances(device, reads, genome, [0], [0], [8], 2)  # longer than L + 2k
    with pytest.raises(ValueError):
        end_distances(device, reads, genome, [0], [5], [6], 2)  # past the genome
    with pytest.raises(ValueError):
        end_distances(device, reads, genome, [1], [0], [5], 2)  # no such read
    with pytest.raises(ValueError):
        end_distances(device, [encode("")], genome, [0], [0], [5], 2)
    start, ops, count = tracebacks(device, reads, genome, none, none, none, 2)
    assert start.shape == count.shape == (0,) and ops.shape[0] == 0


def test_traceback_without_alignment(device) -> None:
    genome = encode("TTTTTTTTTTACGTACGT")
    reads = [encode("ACGTACGT")]
    start, ops, count = tracebacks(device, reads, device.to_device(genome), [0, 0], [9, 17],
                                   [0, 8], 1)
    assert count.tolist()[0] == 0 and start[0] == -1 and not ops[0].any()
    assert start[1] == 10 and ops[1, : count[1]].tolist() == [OP_MATCH] * 8
    traced = trace(device, reads, device.to_device(genome), [0, 0], [9, 17], [0, 8], 1)
    with pytest.raises(RuntimeError, match="no traceback"):
        traced.check(device)
    trace(device, reads, device.to_device(genome), [0], [17], [8], 1).check(device)


def test_alignment_strings_by_hand() -> None:
    genome = encode("GGACGTNACTTGCA")
    row = np.array([OP_MATCH, OP_MATCH, OP_MISMATCH, OP_MATCH, OP_MISMATCH, OP_DEL, OP_DEL,
                    OP_MATCH, OP_INS, OP_INS, OP_MATCH, 0, 0], dtype=np.uint8)
    assert alignment_strings(row, 11, genome, 2) == ("5M2D1M2I1M", 6, "2G1N0^AC2")
    with_n = encode("GGACGTNNCTTGCA")
    assert alignment_strings(row, 11, with_n, 2) == ("5M2D1M2I1M", 6, "2G1N0^NC2")
    iupac = np.array([[6, ord("R")], [7, ord("Y")]])
    assert alignment_strings(row, 11, with_n, 2, iupac) == ("5M2D1M2I1M", 6, "2G1R0^YC2")
    assert alignment_strings_batch(row[None], np.array([11]), with_n, np.array([2]), iupac)[2] == ["2G1R0^YC2"]
    assert alignment_strings(row, 2, genome, 2) == ("2M", 0, "2")


def diagonal_mismatches(read: np.ndarray, genome: np.ndarray, end: int) -> int:
    """h of cl/traceback.cl: the read's mismatches along the diagonal ending at genome end."""
    text = genome[end + 1 - len(read) : end + 1]
    return int(np.count_nonzero((read >= 4) | (read != text)))


def test_tracebacks_where_the_end_diagonal_has_several_mismatches(device) -> None:
    """Loci whose end diagonal holds 2 to k mismatches: the diagonal itself where that is the
    distance (substitutions only), the table where an indel near the read's start costs less."""
    rng = np.random.default_rng(12)
    genome = rng.integers(0, 4, 3000).astype(np.uint8)
    k, reads, ends, cases = 5, [], [], []
    for i in range(60):
        at = 100 + 40 * i
        read = genome[at : at + 100].copy()
        if i % 3 == 0:  # substitutions: the diagonal is the alignment
            for p in rng.choice(np.arange(5, 95), 2 + i % 4, replace=False):
                read[p] = (read[p] + 1 + rng.integers(0, 3)) % 4
        elif i % 3 == 1:  # a base deleted near the start: one edit, several mismatches along the diagonal
            read = np.concatenate([genome[at - 1 : at + 2], genome[at + 3 : at + 100]])
        else:  # a base inserted near the start
            read = np.concatenate([genome[at : at + 2], [(genome[at + 2] + 2) % 4], genome[at + 2 : at + 99]])
        reads.append(read.astype(np.uint8))
        ends.append(at + 99)
        cases.append(diagonal_mismatches(reads[-1], genome, ends[-1]))
    loci = (np.arange(60), np.array(ends), np.zeros(60, np.int64))
    check_tracebacks(device, reads, genome, loci, k, np.array([0]), [genome])
    dist = [align.traceback(r, genome, e, k).dist for r, e in zip(reads, ends)]
    several = [(h, d) for h, d in zip(cases, dist) if 2 <= h <= k]
    assert any(h == d for h, d in several) and any(h > d for h, d in several)


def test_slices_of_candidates_grow_with_the_rows(device) -> None:
    class Gpu:
        is_cpu = False

    class Cpu:
        is_cpu = True

    rows = 200_000  # 100,000 reads
    assert extend.slice_size(device, 10**6, rows) == (extend.SLICE if device.is_cpu else extend.GPU_SLICE)
    assert extend.slice_size(Gpu(), 21_600_000, rows) == extend.GPU_SLICE < extend.SLICE  # chrX: 108 a row
    assert extend.slice_size(Cpu(), 21_600_000, rows) == extend.SLICE
    assert extend.slice_size(Gpu(), 4_300_000_000, rows) == extend.MAX_SLICE  # 3.1 Gbp: 21,500 a row
    assert extend.slice_size(Cpu(), 1_890 * rows, rows) == extend.MAX_SLICE  # 300 Mbp of the same kind
    share = extend.GPU_ROW_SHARE
    assert extend.slice_size(Gpu(), 16 * share * rows, rows) == 16  # the power of two nearest a share of a row
    assert extend.slice_size(Gpu(), 11 * share * rows, rows) == 8
    assert extend.slice_size(Gpu(), 12 * share * rows, rows) == 16
    assert extend.slice_size(Cpu(), 64 * extend.CPU_ROW_SHARE * rows, rows) == 64
    assert extend.slice_size(Gpu(), 0, 0) == extend.GPU_SLICE
    # short rows, but so many that slices of GPU_SLICE would make more than MAX_TASKS tasks
    many = 2 * extend.GPU_SLICE * extend.MAX_TASKS
    assert extend.slice_size(Gpu(), many, many) == 2 * extend.GPU_SLICE
    assert extend.room(extend.GPU_SLICE) == 3 and extend.room(1) == 1  # more loci than room: run again
