"""A q-mer hash table: each q-gram's genome positions, found by direct address (a run start for
every q-mer) for q <= DIRECT_MAX_Q, by open addressing with linear probing beyond; lookups of a
query's neighbors one by one (cl/qmer_hash.cl), and their numpy twin."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from marose.device import Device
from marose.reference import Reference

from .passes import Answer, count_and_emit
from .queries import Hits, Queries, QueryShape, hits_of_runs, neighbors, window_keys, window_starts

DIRECT_MAX_Q = 14
HASH_MULTIPLIER = np.uint64(0x9E3779B97F4A7C15)
MIN_BITS = 4
PROGRAM = ("neighbors.cl", "qmer_hash.cl")


@dataclass
class QmerHash:
    shape: QueryShape
    table: np.ndarray  # uint32: run starts (direct), or slots of 4 words (key low, key high, start, count)
    positions: np.ndarray  # uint32, grouped by q-mer, ascending in each
    bits: int  # log2 of the slots (open addressing); 0 for direct address

    @property
    def direct(self) -> bool:
        return self.bits == 0

    @property
    def nbytes(self) -> int:
        return self.table.nbytes + self.positions.nbytes


def home_slot(keys: np.ndarray, bits: int) -> np.ndarray:
    """The slot where a key's probing starts: the top bits of its product (Fibonacci hashing)."""
    return ((keys * HASH_MULTIPLIER) >> np.uint64(64 - bits)).astype(np.int64)


def build(ref: Reference, shape: QueryShape) -> QmerHash:
    starts = window_starts(ref, shape.q)
    keys = window_keys(ref.codes, starts, shape.q)
    order = np.argsort(keys, kind="stable")
    keys, positions = keys[order], starts[order]
    first = np.flatnonzero(np.append(True, keys[1:] != keys[:-1]))
    unique, counts = keys[first], np.diff(np.append(first, keys.size))
    if shape.q <= DIRECT_MAX_Q:
        table = np.zeros(4**shape.q + 1, dtype=np.uint32)
        table[unique.astype(np.int64) + 1] = counts
        np.cumsum(table, out=table)
        return QmerHash(shape, table, positions, 0)
    bits = max(MIN_BITS, int(2 * max(1, unique.size) - 1).bit_length())  # load 1/4 to 1/2
    slots = np.zeros((1 << bits, 4), dtype=np.uint32)
    pending, at = np.arange(unique.size), home_slot(unique, bits)
    while pending.size:
        free = slots[at, 3] == 0
        _, first_free = np.unique(at[free], return_index=True)  # one key takes each free slot
        taken = np.flatnonzero(free)[first_free]
        k, s = pending[taken], at[taken]
        slots[s] = np.stack([(unique[k] & np.uint64(0xFFFFFFFF)).astype(np.uint32),
                             (unique[k] >> np.uint64(32)).astype(np.uint32), first[k].astype(np.uint32),
                             counts[k].astype(np.uint32)], axis=1)
        rest = np.ones(pending.size, dtype=bool)
        rest[taken] = False
        pending, at = pending[rest], (at[rest] + 1) & ((1 << bits) - 1)
    return QmerHash(shape, slots.reshape(-1), positions, bits)


def runs(index: QmerHash, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """[begin, end) into positions of each key (empty when absent), as qmer_run computes it."""
    if index.direct:
        k = keys.astype(np.int64)
        return index.table[k].astype(np.int64), index.table[k + 1].astype(np.int64)
    slots = index.table.reshape(-1, 4)
    begin = np.zeros(keys.size, np.int64)
    end = np.zeros(keys.size, np.int64)
    pending, at = np.arange(keys.size), home_slot(keys, index.bits)
    while pending.size:
        slot = slots[at]
        key_at = slot[:, 0].astype(np.uint64) | (slot[:, 1].astype(np.uint64) << np.uint64(32))
        found = (slot[:, 3] != 0) & (key_at == keys[pending])
        begin[pending[found]] = slot[found, 2]
        end[pending[found]] = slot[found, 2].astype(np.int64) + slot[found, 3]
        going = (slot[:, 3] != 0) & ~found
        pending, at = pending[going], (at[going] + 1) & ((1 << index.bits) - 1)
    return begin, end


def twin(index: QmerHash, queries: Queries, e: int) -> Hits:
    """What qmer_lookup answers."""
    which, keys = neighbors(queries.shape, queries.packed, e)
    begin, end = runs(index, keys)
    return hits_of_runs(queries.ids[which], begin, end, index.positions)


class DeviceQmerHash:
    """The table on a device, and its lookups."""

    def __init__(self, device: Device, index: QmerHash):
        self.device, self.index = device, index
        self.tables = tuple(device.upload([index.table, index.positions]))

    def lookup(self, queries: Queries, e: int, emit: bool = True) -> Answer:
        defines = {"LN": self.index.shape.ln, "E": e, "DIRECT": int(self.index.direct), "BITS": self.index.bits}
        kernel = self.device.kernel(PROGRAM, "qmer_lookup", defines)
        return count_and_emit(self.device, kernel, self.tables, queries, emit)
