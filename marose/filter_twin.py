"""The seed-and-filter kernels' numpy twin: each row's pattern offsets (fixed, or placed by
placement.py from the pattern costs), and a read's candidates by the definition, every pattern,
every neighbor within e substitutions (or its own key alone, where placement.looks_up_neighbors
leaves it exact), every position, clamped to its contig."""

from __future__ import annotations

import itertools
from typing import Iterator, Sequence

import numpy as np

from indexer import query
from indexer.build import IndexParams, Segment

from . import placement
from .dna import N_CODE
from .filter import NO_PATTERN, Candidates, Layout, Strands, unique_candidates
from .sensitivity import neighborhood_size


def neighbors(key: int, ln: int, e: int) -> list[int]:
    """Every key within Hamming distance e (as base substitutions) of key."""
    found = [key]
    for n_sub in range(1, e + 1):
        for where in itertools.combinations(range(ln), n_sub):
            for changes in itertools.product((1, 2, 3), repeat=n_sub):
                k = key
                for i, c in zip(where, changes):
                    k ^= c << (2 * i)
                found.append(k)
    return found


def pattern_offsets(length: int, width: int, step: int) -> list[int]:
    """Where a row's patterns start in the fixed layout: every step bases, and one ending at the
    row's end."""
    if length < width:
        return []
    return sorted({min(t * step, length - width) for t in range(-(-(length - width) // step) + 1)})


def _seeds_and_keys(params: IndexParams, reads: np.ndarray, offsets) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Seed, neighborhood key and whether the seed holds no N, of the patterns at offsets of each
    read (reads: one row, or rows of one length); an N in the neighborhood reads as A, as
    make_pattern reads it."""
    at = np.asarray(offsets, dtype=np.int64)[:, None]
    seed_bases = reads[..., at + np.array(params.seed_offsets)].astype(np.int64)
    ok = ~np.any(seed_bases == N_CODE, axis=-1)
    seed = np.sum((seed_bases & 3) << (2 * np.arange(params.weight)[::-1]), axis=-1)
    after = reads[..., at + params.span + np.arange(params.ln)].astype(np.int64)
    key = np.sum(np.where(after == N_CODE, 0, after) << (2 * np.arange(params.ln)[::-1]), axis=-1)
    return seed, key, ok


NO_SEED = 0xFFFFFFFF  # cl/filter.cl's mark of an empty pattern slot or a seed holding an N


def slot_keys(params: IndexParams, read: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """What pattern_keys writes for a row's pattern slots at these read offsets (NO_PATTERN for
    a slot left empty): (seed, neighborhood key) each, (NO_SEED, 0) where the slot is empty or
    its seed holds an N."""
    offsets = np.asarray(offsets, np.int64)
    used = offsets != NO_PATTERN
    seed, key, ok = _seeds_and_keys(params, read, np.where(used, offsets, 0))
    kept = used & ok
    return np.stack([np.where(kept, seed, NO_SEED), np.where(kept, key, 0)], axis=-1).astype(np.uint32)


def pattern_costs(segments: Sequence[Segment], params: IndexParams, reads: np.ndarray, e: int) -> np.ndarray:
    """What pattern_costs writes for a row (reads: one row, or rows of one length): the cost of
    the pattern at every offset 0..L - W."""
    seed, key, ok = _seeds_and_keys(params, reads, range(reads.shape[-1] - params.width + 1))
    exact = np.zeros(seed.shape, np.int64)
    seed_count = np.zeros(seed.shape, np.int64)
    for seg in segments:
        begin, end = query.slot_ranges(seg, seed.ravel(), key.ravel().astype(np.uint32))
        exact += (end - begin).reshape(seed.shape)
        mine = (seed >= seg.seed_lo) & (seed < seg.seed_hi)
        seed_count[mine] = query.seed_counts(seg, seed[mine] - seg.seed_lo)
    return np.where(ok, placement.pattern_cost(exact, seed_count, e), 0)


def own_positions(segments: Sequence[Segment], params: IndexParams, reads: np.ndarray) -> np.ndarray:
    """What pattern_costs writes as exact_cost for a row (reads: one row, or rows of one length):
    the positions of the pattern's own key at every offset 0..L - W, capped."""
    seed, key, ok = _seeds_and_keys(params, reads, range(reads.shape[-1] - params.width + 1))
    exact = np.zeros(seed.shape, np.int64)
    for seg in segments:
        begin, end = query.slot_ranges(seg, seed.ravel(), key.ravel().astype(np.uint32))
        exact += (end - begin).reshape(seed.shape)
    return np.where(ok, np.minimum(exact, placement.COST_CAP), 0)


def ranking_costs(segments: Sequence[Segment], params: IndexParams, reads: np.ndarray, e: int,
                  found: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The costs by which the filter ranks the offsets of placed rows (reads of one length) whose
    fixed layout found `found` positions: each offset's neighborhoods' positions where
    placement.worth_ranking_neighborhoods says so (what pattern_costs writes with whole), else
    pattern_costs; and each offset's own positions (own_positions), what it costs looked up
    exactly."""
    length = reads.shape[-1]
    rows = reads.reshape(-1, length)
    whole = placement.worth_ranking_neighborhoods(found, length, params.width, neighborhood_size(params.ln, e))
    whole = np.broadcast_to(whole, rows.shape[:1])
    costs = np.zeros((rows.shape[0], length - params.width + 1), np.int64)
    if not whole.all():
        costs[~whole] = pattern_costs(segments, params, rows[~whole], e)
    if whole.any():
        offsets = np.tile(np.arange(costs.shape[1]), (int(whole.sum()), 1))
        costs[whole] = np.minimum(neighborhood_counts(segments, params, rows[whole], e, offsets), placement.COST_CAP)
    return costs, own_positions(segments, params, rows)


def neighborhood_counts(segments: Sequence[Segment], params: IndexParams, reads: np.ndarray, e: int,
                        offsets: np.ndarray, wide: np.ndarray | None = None) -> np.ndarray:
    """Positions the patterns at offsets (one row of them per read, reads of one length) find
    with every neighborhood within e (with their own key alone where wide, of offsets' shape, is
    False): what the filter emits for each, before de-duplication."""
    count = np.zeros(offsets.shape, np.int64)
    seed = np.empty(offsets.shape, np.int64)
    key = np.empty(offsets.shape, np.int64)
    ok = np.empty(offsets.shape, bool)
    for r in range(offsets.shape[0]):
        seed[r], key[r], ok[r] = _seeds_and_keys(params, reads[r], offsets[r])
    for change in neighbors(0, params.ln, e):
        for seg in segments:
            begin, end = query.slot_ranges(seg, seed.ravel(), (key ^ change).ravel().astype(np.uint32))
            looked_up = 1 if change == 0 or wide is None else wide  # the key itself, or its neighbors where wide
            count += looked_up * (end - begin).reshape(count.shape)
    return np.where(ok, count, 0)


def layout_offsets(segments: Sequence[Segment], params: IndexParams, strands: Strands, e: int, layout: Layout,
                   active: np.ndarray | None = None) -> list[np.ndarray]:
    """Each row's pattern offsets as Filter.candidates leaves them (layout_patterns)."""
    return layout_patterns(segments, params, strands, e, layout, active)[0]


def layout_patterns(segments: Sequence[Segment], params: IndexParams, strands: Strands, e: int, layout: Layout,
                    active: np.ndarray | None = None) -> tuple[list[np.ndarray], np.ndarray]:
    """Each row's pattern offsets as Filter.candidates leaves them (inactive rows have none): the
    fixed layout's, or placed ones for a row the layout allows to place whose fixed patterns
    find more positions than it has offsets; and whether each row's patterns may be exact
    (layout.exact_apart, or placed). Rows of one length and step are looked up together."""
    lengths = [int(strands.lengths[r]) if active is None or active[r] else 0 for r in range(strands.n)]
    found = [np.array(pattern_offsets(length, params.width, int(step)), np.int64)
             for length, step in zip(lengths, layout.step)]
    exact_apart = np.asarray(layout.exact_apart, bool).copy()
    placeable = [r for r in range(strands.n) if lengths[r] >= params.width and layout.n_placed[r] > 0]
    by_shape = itertools.groupby(sorted(placeable, key=lambda r: (lengths[r], int(layout.step[r]))),
                                 key=lambda r: (lengths[r], int(layout.step[r])))
    for (length, _), group in by_shape:
        rows = np.array(list(group))
        reads = strands.codes[rows, :length]
        fixed = np.tile(found[rows[0]], (rows.size, 1))
        wide = np.where(exact_apart[rows, None], placement.looks_up_neighbors(fixed, params.width), True)
        positions = neighborhood_counts(segments, params, reads, e, fixed, wide).sum(axis=1)
        worth = placement.worth_placing(positions, length, params.width)
        costs, exact = ranking_costs(segments, params, reads[worth], e, positions[worth])
        for r, row_costs, row_exact in zip(rows[worth], costs, exact):
            rule = placement.Placement(int(layout.n_placed[r]), int(layout.short_gaps[r]),
                                       placement.min_gap(params.mask, params.ln, e), params.width)
            found[r] = placement.choose_offsets(row_costs[None], rule, row_exact[None])[0]
            exact_apart[r] = True
    return found, exact_apart


def fixed_offsets(strands: Strands, width: int, step: int) -> list[np.ndarray]:
    """Each row's pattern offsets in the fixed layout."""
    return [np.array(pattern_offsets(int(length), width, step), np.int64) for length in strands.lengths]


def patterns(params: IndexParams, strands: Strands, e: int, row_offsets: Sequence,
             exact_apart: np.ndarray | None = None) -> Iterator[tuple]:
    """(row, read offset, seed, neighborhood keys) of every pattern of the rows (at row_offsets[row])
    with no N in its seed; a row marked in exact_apart looks up its neighborhoods only where
    placement.looks_up_neighbors says so."""
    for r in range(strands.n):
        offsets = row_offsets[r]
        if len(offsets) == 0:
            continue
        read = strands.codes[r, : strands.lengths[r]]
        seed, key, ok = _seeds_and_keys(params, read, offsets)
        wide = (placement.looks_up_neighbors(offsets, params.width) if exact_apart is not None and exact_apart[r]
                else np.ones(len(offsets), bool))
        for o, s, k, good, w in zip(offsets, seed, key, ok, wide):
            if good:
                yield r, int(o), int(s), np.array(neighbors(int(k), params.ln, e if w else 0), dtype=np.uint32)


def reference_filter(segments: Sequence[Segment], params: IndexParams, strands: Strands, e: int,
                     row_offsets: Sequence, offsets: np.ndarray, exact_apart: np.ndarray | None = None) -> Candidates:
    """The candidates of every row (host rows in strands.codes) from its patterns at
    row_offsets[row] (exact where exact_apart allows, see patterns), sorted and unique; offsets:
    the contig starts."""
    found = list(patterns(params, strands, e, row_offsets, exact_apart))
    if not found:
        return unique_candidates(np.zeros(0, np.uint32), np.zeros(0, np.uint32))
    row = np.concatenate([np.full(keys.size, r) for r, _, _, keys in found])
    offset = np.concatenate([np.full(keys.size, o) for _, o, _, keys in found])
    seed = np.concatenate([np.full(keys.size, s) for _, _, s, keys in found])
    key = np.concatenate([keys for _, _, _, keys in found])
    rows, starts = [], []
    for seg in segments:
        begin, end = query.slot_ranges(seg, seed, key)
        count = end - begin
        at = np.repeat(begin - np.cumsum(count) + count, count) + np.arange(count.sum())
        q = seg.positions[at].astype(np.int64)
        contig_start = offsets[np.searchsorted(offsets, q, side="right") - 1]
        starts.append(np.maximum(q - np.repeat(offset, count), contig_start))
        rows.append(np.repeat(row, count))
    return unique_candidates(np.concatenate(rows).astype(np.uint32), np.concatenate(starts).astype(np.uint32))
