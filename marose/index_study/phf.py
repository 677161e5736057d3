"""marose's own index, its PHF neighborhoods (indexer/build.py), answering the study's queries:
built for the seed mask of `seed` '#' and a neighborhood of ln bases; looked up with the
perfect hash of cl/phf.cl through marose/lookup.py's device segments (cl/phf_study.cl); its
twin is indexer/query.py's.

A slot keeps a 16-bit fingerprint of its key, so that for ln > 8 an absent key may find the
positions of another (build.FINGERPRINT): the answers drop them, and the repeats of positions
found, by reading the genome, as marose's alignment would reject and merge them;
false_positives counts them."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from indexer import query as phf_query
from indexer.build import IndexParams, Segment, build_segments
from marose import lookup
from marose.device import Device
from marose.reference import Reference

from .passes import Answer, count_and_emit
from .queries import Hits, Queries, QueryShape, hits_of_runs, mismatches, neighbors, window_keys

PROGRAM = ("murmur3.cl", "phf.cl", "neighbors.cl", "phf_study.cl")


@dataclass
class PhfIndex:
    shape: QueryShape
    segments: list[Segment]
    codes: np.ndarray  # the genome, which the answers are checked against (not counted in nbytes)

    @property
    def nbytes(self) -> int:
        return sum(s.nbytes() for s in self.segments)


def build(ref: Reference, shape: QueryShape) -> PhfIndex:
    params = IndexParams(mask="#" * shape.seed, ln=shape.ln)
    return PhfIndex(shape, build_segments(ref, params), ref.codes)


def true_hits(index: PhfIndex, hits: Hits, queries: Queries, e: int) -> tuple[Hits, int]:
    """The hits whose genome q-gram is within e of the query's, each once, and how many others
    there were (a variant that meets the fingerprint of another variant's slot finds its
    positions again)."""
    shape = queries.shape
    if len(hits) == 0:
        return hits, 0
    packed = queries.packed[np.searchsorted(queries.ids, hits.query)]
    near = mismatches(shape, window_keys(index.codes, hits.position, shape.q), packed) <= e
    near[1:] &= (hits.query[1:] != hits.query[:-1]) | (hits.position[1:] != hits.position[:-1])
    return Hits(hits.query[near], hits.position[near]), int(np.count_nonzero(~near))


def twin(index: PhfIndex, queries: Queries, e: int) -> Hits:
    """What phf_lookup finds (fingerprint matches dropped), by indexer/query.py."""
    shape = queries.shape
    which, keys = neighbors(shape, queries.packed, e)
    seeds = (keys >> np.uint64(2 * shape.ln)).astype(np.int64)
    right = (keys & np.uint64((1 << 2 * shape.ln) - 1)).astype(np.uint32)
    found = [hits_of_runs(queries.ids[which], *phf_query.slot_ranges(s, seeds, right), s.positions)
             for s in index.segments]
    return true_hits(index, Hits.joined(found), queries, e)[0]


class DevicePhf:
    def __init__(self, device: Device, index: PhfIndex):
        self.device, self.index = device, index
        self.segments = [lookup.upload(device, s) for s in index.segments]
        self.false_positives = 0

    def lookup(self, queries: Queries, e: int, emit: bool = True) -> Answer:
        kernel = self.device.kernel(PROGRAM, "phf_lookup", {"LN": self.index.shape.ln, "E": e})
        answers = [count_and_emit(self.device, kernel, (*s.tables, s.positions), queries, emit)
                   for s in self.segments]
        hits = None
        if emit:
            hits, self.false_positives = true_hits(self.index, Hits.joined([a.hits for a in answers]), queries, e)
        return Answer(hits, sum(a.n_positions for a in answers), sum(a.count_seconds for a in answers),
                      sum(a.emit_seconds for a in answers))
