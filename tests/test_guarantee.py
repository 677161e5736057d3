"""Reads with exactly k errors placed to kill as many patterns as possible: where marose claims the
guarantee, it loses none of the loci the oracle finds on E. coli."""

import itertools

import numpy as np
import pytest

from conftest import ECOLI
from indexer import store
from marose.dna import reverse_complement
from marose.params import choose_filter
from marose.sensitivity import pattern_offsets
from test_map import build_index, compare, run_map, write_reads

SUB, INDEL = 1, 2


def survivors(errors: np.ndarray, params) -> np.ndarray:
    """Patterns left alive by each row of error types (0 none, SUB, INDEL) over the read."""
    n, length = errors.shape
    seed_cols = np.array([j for j, c in enumerate(params.mask) if c == "#"])
    alive = np.zeros(n, dtype=np.int64)
    for o in pattern_offsets(length, params.width, params.step):
        window = errors[:, o : o + params.width]
        dead = np.any(window == INDEL, axis=1) | np.any(errors[:, o + seed_cols] == SUB, axis=1)
        dead |= np.sum(window[:, params.span :] == SUB, axis=1) > params.e
        alive += ~dead
    return alive


def worst_placements(length, k, params, kinds, rng, n_random=20000):
    """Error placements (rows of types) leaving the fewest surviving patterns: every placement of
    k substitutions when that is small, else the worst of many random ones."""
    if len(kinds) == 1 and len(list(itertools.combinations(range(length), k))) <= 20000:
        where = np.array(list(itertools.combinations(range(length), k)))
    else:
        where = np.array([rng.choice(length, k, replace=False) for _ in range(n_random)])
    errors = np.zeros((len(where), length), dtype=np.uint8)
    rows = np.repeat(np.arange(len(where)), k)
    errors[rows, where.ravel()] = rng.choice(kinds, where.size)
    alive = survivors(errors, params)
    return errors[alive == alive.min()], int(alive.min())


def apply_errors(genome, errors, rng):
    """A read from a random place of the genome with the given errors (indels as insertions)."""
    length = errors.size
    start = int(rng.integers(0, genome.size - length))
    read = []
    for base, kind in zip(genome[start : start + length], errors):
        if kind == SUB:
            read.append((int(base) + int(rng.integers(1, 4))) % 4)
        elif kind == INDEL:
            read.extend([int(rng.integers(4)), int(base)])
        else:
            read.append(int(base))
    read = np.array(read[:length], dtype=np.uint8)
    return reverse_complement(read) if rng.integers(2) else read


@pytest.fixture(scope="module")
def ecoli_index(tmp_path_factory):
    fasta = tmp_path_factory.mktemp("ecoli") / "ecoli.fa.gz"
    fasta.write_bytes(open(ECOLI, "rb").read())
    return str(fasta), store.load(build_index(str(fasta)))


@pytest.mark.parametrize("length,k,indels", [(40, 3, False), (100, 4, True), (40, 2, True)])
def test_adversarial_errors_lose_nothing_where_guaranteed(ecoli_index, tmp_path, length, k, indels):
    fasta, index = ecoli_index
    p = index.params
    n_positions = sum(s.positions.size for s in index.segments)
    occupancy = sum(s.sum_count_sq for s in index.segments) / n_positions  # as the mapper computes it
    chosen = choose_filter(length, k, p.mask, p.ln, n_positions, occupancy, indels)
    assert chosen.guaranteed, chosen.explain()
    rng = np.random.default_rng(length + k)
    kinds = [SUB, INDEL] if indels else [SUB]
    worst, alive = worst_placements(length, k, chosen.params, kinds, rng)
    assert alive >= 1  # the checker's claim, seen from the placements themselves
    assert worst.shape[0] >= 1
    picks = worst[rng.integers(0, worst.shape[0], 60)]
    reads = [apply_errors(index.reference.codes, row, rng) for row in picks]
    out = tmp_path / "adversarial.sam"
    assert run_map("-x", fasta, write_reads(tmp_path / "r.fq", reads), "-o", out, "-k", k) == 0
    got, want = compare(index.reference, reads, k, out, index, indels=indels)
    assert got == want
    assert {x[0] for x in got} == set(range(len(reads)))
