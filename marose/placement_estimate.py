"""Candidates a read strand finds in the fixed layout and where its patterns are placed, measured
on reads drawn from the reference without errors (for `marose map --explain`)."""

from __future__ import annotations

import numpy as np

from . import placement
from .dna import N_CODE
from .filter import Strands
from .filter_twin import neighborhood_counts, ranking_costs
from .params import Choice
from .sensitivity import pattern_offsets

SAMPLE_READS = 500
SAMPLE_SEED = 29


def sample_reads(reference, length: int, n: int, rng) -> np.ndarray:
    """(at most n, length) codes from random places of the reference, inside a contig and
    without N; fewer where such places are rare."""
    starts = reference.offsets
    found = []
    for _ in range(20):
        if sum(len(f) for f in found) >= n or reference.total_length < length:
            break
        at = rng.integers(0, reference.total_length - length + 1, 2 * n)
        contig = np.searchsorted(starts, at, side="right") - 1
        at = at[at + length <= starts[contig + 1]]
        windows = reference.codes[at[:, None] + np.arange(length)]
        found.append(windows[~np.any(windows == N_CODE, axis=1)])
    reads = np.concatenate(found) if found else np.zeros((0, length), np.uint8)
    return reads[:n]


def expected_candidates(index, choice: Choice, n_reads: int = SAMPLE_READS) -> tuple[float, float, float, int] | None:
    """(fixed, placed, share placed, reads): the positions a read strand's patterns find (before
    de-duplication) in the fixed layout and as the filter lays them out (placed where
    placement.worth_placing), averaged over both strands of up to n_reads reads drawn from the
    reference, and the share of strands placed; None when the choice places no patterns or no
    such read exists."""
    rule = choice.placement
    if rule is None:
        return None
    p, length = choice.params, choice.read_length
    reads = sample_reads(index.reference, length, n_reads, np.random.default_rng(SAMPLE_SEED))
    if not len(reads):
        return None
    rows = Strands.from_reads(reads, np.full(len(reads), length)).codes
    fixed_offsets = np.tile(pattern_offsets(length, p.width, p.step), (rows.shape[0], 1))
    exact_apart = placement.fixed_layout_is_exact_apart(length, p.step, rule)
    wide = placement.looks_up_neighbors(fixed_offsets, p.width) if exact_apart else None
    fixed = neighborhood_counts(index.segments, index.params, rows, p.e, fixed_offsets, wide).sum(axis=1)
    worth = placement.worth_placing(fixed, length, p.width)
    costs, exact = ranking_costs(index.segments, index.params, rows[worth], p.e, fixed[worth])
    placed_offsets = placement.choose_offsets(costs, rule, exact)
    laid_out = fixed.copy()
    laid_out[worth] = neighborhood_counts(index.segments, index.params, rows[worth], p.e, placed_offsets,
                                          placement.looks_up_neighbors(placed_offsets, p.width)).sum(axis=1)
    return float(fixed.mean()), float(laid_out.mean()), float(worth.mean()), len(reads)
