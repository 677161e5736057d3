"""A suffix array of the genome, holding the suffixes where a q-gram can occur (A/C/G/T within
one contig); searched by binary search with the mlr bound (cl/suffix_array.cl), neighbor by
neighbor within the seed's interval; and its numpy twin."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from marose.device import Device
from marose.dna import N_CODE
from marose.reference import Reference

from .passes import Answer, count_and_emit
from .queries import Hits, Queries, QueryShape, hits_of_runs, neighbors, window_keys, window_starts
from .suffix_sort import suffix_array

PROGRAM = ("neighbors.cl", "suffix_array.cl")
SENTINEL, FIRST_BASE, OTHER = 1, 2, 6  # suffix_sort symbols: the end, A (then C, G, T), N


@dataclass
class SuffixArray:
    shape: QueryShape
    sa: np.ndarray  # uint32 suffix starts, in suffix order
    genome: np.ndarray  # uint32, 16 bases a word, first base highest, 2 words of padding

    @property
    def nbytes(self) -> int:
        return self.sa.nbytes + self.genome.nbytes


def genome_symbols(codes: np.ndarray) -> np.ndarray:
    """The genome as suffix_sort symbols, with its sentinel."""
    symbols = np.where(codes == N_CODE, OTHER, codes + FIRST_BASE).astype(np.uint8)
    return np.append(symbols, np.uint8(SENTINEL))


def pack_words(codes: np.ndarray) -> np.ndarray:
    """16 bases a uint32, first base highest (N as A), with two words of padding."""
    words = -(-codes.size // 16) + 2
    padded = np.zeros(words * 16, dtype=np.uint32)
    padded[:codes.size] = codes & 3
    shifts = np.arange(30, -1, -2, dtype=np.uint32)
    return np.bitwise_or.reduce(padded.reshape(-1, 16) << shifts, axis=1).astype(np.uint32)


def build(ref: Reference, shape: QueryShape, order: np.ndarray | None = None) -> SuffixArray:
    """order: the genome's suffix array, when already sorted (it depends on the genome alone)."""
    if order is None:
        order = suffix_array(genome_symbols(ref.codes))
    valid = np.zeros(ref.total_length + 1, dtype=bool)
    valid[window_starts(ref, shape.q)] = True
    sa = order[valid[order]].astype(np.uint32)
    return SuffixArray(shape, sa, pack_words(ref.codes))


def twin(index: SuffixArray, queries: Queries, e: int) -> Hits:
    """What sa_lookup answers: the suffixes whose q bases are a neighbor's."""
    which, keys = neighbors(queries.shape, queries.packed, e)
    prefixes = window_keys(unpack_words(index.genome), index.sa, queries.shape.q)
    return hits_of_runs(queries.ids[which], np.searchsorted(prefixes, keys, "left"),
                        np.searchsorted(prefixes, keys, "right"), index.sa)


def unpack_words(words: np.ndarray) -> np.ndarray:
    shifts = np.arange(30, -1, -2, dtype=np.uint32)
    return ((words[:, None] >> shifts) & 3).astype(np.uint8).reshape(-1)


class DeviceSuffixArray:
    def __init__(self, device: Device, index: SuffixArray):
        self.device, self.index = device, index
        sa, genome = device.upload([index.sa, index.genome])
        self.tables = (sa, np.uint32(index.sa.size), genome)

    def lookup(self, queries: Queries, e: int, emit: bool = True) -> Answer:
        shape = self.index.shape
        defines = {"Q": shape.q, "SEED": shape.seed, "LN": shape.ln, "E": e}
        kernel = self.device.kernel(PROGRAM, "sa_lookup", defines)
        return count_and_emit(self.device, kernel, self.tables, queries, emit)
