"""marose against the brute-force oracle on real human repeats: 200 kbp of GRCh37 chrX (77 Alu
copies), with reads drawn from the Alus, where the filter's candidates pile up."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

from conftest import DATA, mutate, write_fasta
from marose.dna import decode
from marose.reference import read_fasta
from test_map import build_index, compare, run_map, simulate, write_reads

CHRX = os.path.join(DATA, "hs37_chrX_44500001_44700000.fa.gz")
ALU = ("GGCTCACGCC", "GGCGTGAGCC")  # a stretch of the Alu consensus, both strands


@pytest.fixture(scope="module")
def chrx_two_contigs(tmp_path_factory):
    """The slice cut into two contigs, so that windows are cut at contig ends."""
    seq = decode(read_fasta(CHRX).codes)
    return write_fasta(tmp_path_factory.mktemp("chrx") / "chrx.fa", {"x1": seq[:120_000], "x2": seq[120_000:]})


def alu_reads(ref, n: int, rng) -> list[np.ndarray]:
    """Reads of 100 bp around Alu copies, with up to 4 edits."""
    seq = decode(ref.codes)
    at = sorted(i for motif in ALU for i in _find_all(seq, motif))
    assert len(at) >= 70
    reads = []
    for p in rng.choice(at, n, replace=False):
        start = int(np.clip(p + rng.integers(-80, 40), 0, ref.total_length - 110))
        reads.append(mutate(rng, ref.codes[start:start + 105], int(rng.integers(0, 5)))[:100])
    return reads


def _find_all(seq: str, motif: str):
    """Every position of motif in seq."""
    at = seq.find(motif)
    while at >= 0:
        yield at
        at = seq.find(motif, at + 1)


@pytest.mark.parametrize("k", [5, 8])
def test_chrx_repeats_equal_oracle(chrx_two_contigs, tmp_path, k: int):
    from indexer import store

    index = store.load(build_index(chrx_two_contigs))
    ref = index.reference
    rng = np.random.default_rng(29)
    reads = alu_reads(ref, 60, rng) + simulate(ref, 30, 100, 4, rng)
    reads.append(ref.codes[120_000 - 100:120_000].copy())  # ends exactly at the first contig's end
    reads.append(ref.codes[120_000:120_100].copy())  # starts the second contig
    reads.append(np.concatenate([ref.codes[120_000 - 50:120_000], ref.codes[120_000:120_050]]))  # straddles
    fq = write_reads(tmp_path / "reads.fq", reads)
    out, stats = tmp_path / "out.sam", tmp_path / "stats.json"
    assert run_map("-x", chrx_two_contigs, fq, "-o", out, "-k", k, "--stats", stats) == 0
    got, want = compare(ref, reads, k, out, index)
    assert len(got) >= len(reads) - 1
    assert any(x[0] == len(reads) - 3 and x[4] == 0 for x in got)
    with open(stats) as handle:
        counted = json.load(handle)
    assert counted["candidates"] >= 5 * counted["loci"]  # the Alus give the filter many candidates
    assert counted["aligned"] <= counted["candidates"] / 5  # most are never aligned
