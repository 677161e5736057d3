"""Tests of the brute-force oracle against simulated reads and a naive mapper."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pysam

from marose.align import end_distances, end_distances_dp, loci_from_distances, traceback
from marose.dna import N_CODE, encode, reverse_complement
from marose.oracle import Hit, oracle_map
from conftest import mutate

DATA = Path(__file__).parent / "data"


def naive_map(contigs: list[np.ndarray], reads: list[np.ndarray], k: int) -> list[Hit]:
    """The oracle's definition, one read, strand and contig at a time, by plain DP."""
    hits = []
    for r, read in enumerate(reads):
        for strand, seq in enumerate((read, reverse_complement(read))):
            for c, contig in enumerate(contigs):
                ends, _ = loci_from_distances(end_distances_dp(seq, contig, k), k)
                for end in ends.tolist():
                    a = traceback(seq, contig, end, k)
                    hits.append(Hit(r, strand, c, a.start, a.end, a.dist, a.cigar, a.nm, a.md))
    return sorted(hits)


def test_lambda_simulated_reads_are_found() -> None:
    with pysam.FastxFile(str(DATA / "lambda_virus.fa.gz")) as fasta:
        genome = encode(next(iter(fasta)).sequence)
    rng = np.random.default_rng(2024)
    k = 4
    reads, truth = [], []
    for i in range(40):
        at = int(rng.integers(0, len(genome) - 120))
        edits = i % (k + 1)
        read = mutate(rng, genome[at : at + 100], edits)
        strand = i % 2
        reads.append(reverse_complement(read) if strand else read)
        truth.append((strand, at, at + 99, edits))
    hits = oracle_map([genome], reads, k)
    assert hits == sorted(hits)
    for i, (strand, start, end, edits) in enumerate(truth):
        mine = [h for h in hits if h.read == i and h.strand == strand]
        # The true placement's end lies in a run of D <= k whose locus is reported.
        seq = reads[i] if strand == 0 else reverse_complement(reads[i])
        d = end_distances(seq, genome, k)
        assert d[end] <= edits
        lo = end
        while lo > 0 and d[lo - 1] <= k:
            lo -= 1
        hi = end
        while hi + 1 < len(d) and d[hi + 1] <= k:
            hi += 1
        found = [h for h in mine if lo <= h.end <= hi]
        assert len(found) == 1
        hit = found[0]
        assert hit.dist <= edits and hit.nm == hit.dist
        assert abs(hit.start - start) <= 2 * k and abs(hit.end - end) <= 2 * k


def test_oracle_equals_naive_mapper() -> None:
    rng = np.random.default_rng(99)
    a = rng.integers(0, 4, 3000).astype(np.uint8)
    b = rng.integers(0, 4, 500).astype(np.uint8)
    copy = mutate(rng, a[100:250], 2)
    a[2000 : 2000 + len(copy)] = copy
    copy = reverse_complement(mutate(rng, a[100:250], 1))
    b[200 : 200 + len(copy)] = copy
    a[1020:1060] = a[1000:1040]  # tandem repeat across a chunk boundary
    a[2500:2510] = N_CODE
    contigs = [a, b]
    reads = [
        mutate(rng, a[100:250], 3),
        mutate(rng, a[120:190], 1),
        a[130:150].copy(),
        reverse_complement(mutate(rng, a[990:1090], 2)),
        a[2470:2570].copy(),  # covers the run of N in the contig
        mutate(rng, b[300:400], 4),
        np.concatenate([a[-35:], b[:35]]),
        reverse_complement(b[430:500]),
        rng.integers(0, 4, 64).astype(np.uint8),
        a[700:765].copy(),
        a[1500:1628].copy(),
    ]
    with_ns = a[400:480].copy()
    with_ns[[3, 30, 60]] = N_CODE
    reads.append(with_ns)
    too_many_ns = a[500:580].copy()
    too_many_ns[10:16] = N_CODE
    reads.append(too_many_ns)
    k = 5
    got = oracle_map(contigs, reads, k)
    assert got == naive_map(contigs, reads, k)
    assert {h.read for h in got} >= {0, 1, 2, 3, 5, 7, 9, 10, 11}
    assert 12 not in {h.read for h in got}
    assert len([h for h in got if h.read == 0]) >= 3  # the repeats


def test_reads_do_not_span_contigs() -> None:
    rng = np.random.default_rng(8)
    a = rng.integers(0, 4, 600).astype(np.uint8)
    b = rng.integers(0, 4, 600).astype(np.uint8)
    spanning = np.concatenate([a[-50:], b[:50]])
    off_end = np.concatenate([a[-60:], b[:2]])
    off_start = np.concatenate([a[-2:], b[:60]])
    reads = [spanning, off_end, off_start]
    hits = oracle_map([a, b], reads, 3)
    assert not [h for h in hits if h.read == 0]
    end_hits = [h for h in hits if h.read == 1]
    assert [(h.strand, h.contig, h.end) for h in end_hits] == [(0, 0, 599)]
    assert end_hits[0].dist <= 2
    start_hits = [h for h in hits if h.read == 2]
    assert [(h.strand, h.contig, h.start) for h in start_hits] == [(0, 1, 0)]
    assert start_hits[0].dist <= 2
    joined = oracle_map([np.concatenate([a, b])], reads, 3)
    assert (0, 0, 0, 550, 649, 0, "100M", 0, "100") in joined
