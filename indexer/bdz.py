"""BDZ perfect hashing on 3-hypergraphs, one hash per seed, built for all seeds at once.

For a seed with K distinct neighborhood keys the hash has 3 parts of r vertices
(r = ceil(1.23 K / 3) + 1). Key b is the hyperedge (v0, v1, v2), v_i = voff + i r +
range(h_i(b), r), h_i = MurmurHash3(b, seed 3 J + i). Peeling the hypergraph gives each
edge a vertex of its own; the 2-bit table g makes phf(b) = v_[(g[v0]+g[v1]+g[v2]) mod 3]
point at it. A seed whose hypergraph does not peel retries with J + 1.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .murmur3 import hash_scrambled, scramble_key

PARTS = 3
LOAD_NUM, LOAD_DEN = 123, 100  # |V| / |K| = 1.23
MAX_ATTEMPTS = 256
CHUNK_VERTICES = 1 << 20


@dataclass
class PerfectHash:
    """The hashes of all seeds of one segment."""

    hash_seed: np.ndarray  # J, uint32 per seed
    vertex_offset: np.ndarray  # uint32 per seed, plus the total vertex count
    g: np.ndarray  # uint8 per vertex, values 0..2
    slot: np.ndarray  # uint32 per key: the vertex phf assigns it


def part_sizes(n_keys: np.ndarray) -> np.ndarray:
    """Vertices per part for each seed; at least one, so every seed has a (possibly empty) hash."""
    n_keys = np.asarray(n_keys, dtype=np.int64)
    return (LOAD_NUM * n_keys + PARTS * LOAD_DEN - 1) // (PARTS * LOAD_DEN) + 1


def hyperedges(keys: np.ndarray, hash_seed: np.ndarray, part: np.ndarray, offset: np.ndarray) -> np.ndarray:
    """(n, 3) global vertex ids of each key's hyperedge, given its seed's J, r and vertex offset."""
    with np.errstate(over="ignore"):
        scrambled = scramble_key(keys)
        seeds = np.asarray(hash_seed, dtype=np.uint32) * np.uint32(PARTS)
        edges = np.empty((keys.size, PARTS), dtype=np.int64)
        part = np.asarray(part, dtype=np.uint64)
        for i in range(PARTS):
            h = hash_scrambled(scrambled, seeds + np.uint32(i)).astype(np.uint64)
            edges[:, i] = offset + i * part.astype(np.int64) + ((h * part) >> np.uint64(32)).astype(np.int64)
    return edges


def phf(edges: np.ndarray, g: np.ndarray) -> np.ndarray:
    """The vertex each hyperedge is assigned to."""
    choice = g[edges].sum(axis=1, dtype=np.int64) % PARTS
    return edges[np.arange(edges.shape[0]), choice]


def peel(edges: np.ndarray, n_vertices: int) -> tuple[list[tuple[np.ndarray, np.ndarray]], np.ndarray]:
    """Peel a 3-hypergraph in parallel rounds.

    Returns the rounds (edge indices, column of each edge's free vertex) in peeling order
    and a mask of the edges that were peeled. A vertex of degree one knows its edge as the
    sum of its incident edge ids (exact in float64 for the sizes we build).
    """
    m = edges.shape[0]
    deg = np.bincount(edges.ravel(), minlength=n_vertices).astype(np.int32)
    edge_sum = np.bincount(edges.ravel(), weights=np.repeat(np.arange(m, dtype=np.float64), PARTS),
                           minlength=n_vertices)
    frontier = np.flatnonzero(deg == 1)
    peeled = np.zeros(m, dtype=bool)
    finder = np.empty(m, dtype=np.int64)
    rounds = []
    while frontier.size:
        found = edge_sum[frontier].astype(np.int64)
        finder[found] = frontier  # an edge found through several vertices keeps one of them
        unique = finder[found] == frontier
        found, free = found[unique], frontier[unique]
        found_edges = edges[found]
        column = np.argmax(found_edges == free[:, None], axis=1)
        rounds.append((found, column))
        peeled[found] = True
        touched = _remove(deg, edge_sum, found_edges.ravel(), np.repeat(found, PARTS))
        frontier = touched[deg[touched] == 1]
    return rounds, peeled


def _remove(deg: np.ndarray, edge_sum: np.ndarray, vertices: np.ndarray, edge_ids: np.ndarray) -> np.ndarray:
    """Take edges out of the degree and edge-id-sum tables; return the vertices touched."""
    if vertices.size * 8 < deg.size:  # late rounds: cost by the edges, not the table
        touched, which, count = np.unique(vertices, return_inverse=True, return_counts=True)
        deg[touched] -= count.astype(np.int32)
        edge_sum[touched] -= np.bincount(which, weights=edge_ids.astype(np.float64), minlength=touched.size)
        return touched
    dec = np.bincount(vertices, minlength=deg.size)
    deg -= dec.astype(np.int32)
    edge_sum -= np.bincount(vertices, weights=edge_ids.astype(np.float64), minlength=deg.size)
    return np.flatnonzero(dec)


def _assign(g: np.ndarray, edges: np.ndarray, rounds, slot: np.ndarray) -> None:
    """Set g on each free vertex, last peeled first, so every edge chooses its own vertex;
    slot[edge] receives that vertex."""
    for found, column in reversed(rounds):
        e = edges[found]
        free = e[np.arange(found.size), column]
        g[free] = (column - g[e].sum(axis=1, dtype=np.int64)) % PARTS
        slot[found] = free


def _range_indices(starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Concatenation of arange(start, start + length) for each pair."""
    lengths = np.asarray(lengths, dtype=np.int64)
    if lengths.sum() == 0:
        return np.empty(0, dtype=np.int64)
    starts = np.asarray(starts, dtype=np.int64)
    ends = np.cumsum(lengths)
    offsets = np.repeat(starts - (ends - lengths), lengths)
    return np.arange(int(ends[-1]), dtype=np.int64) + offsets


def _build_chunk(seed_of_key, keys, part, voff, hash_seed, g, slot) -> None:
    """Hash the seeds of one chunk; seed_of_key is relative to it, voff starts at 0."""
    todo = np.arange(keys.size)
    for _ in range(MAX_ATTEMPTS):
        if todo.size == 0:
            return
        s = seed_of_key[todo]
        edges = hyperedges(keys[todo], hash_seed[s], part[s], voff[s])
        if todo.size * 8 >= keys.size:
            rounds, peeled = peel(edges, g.size)
        else:
            used, local = np.unique(edges, return_inverse=True)
            rounds, peeled = peel(local.reshape(edges.shape), used.size)
        edge_slot = np.empty(todo.size, dtype=np.int64)
        _assign(g, edges, rounds, edge_slot)
        slot[todo[peeled]] = edge_slot[peeled]
        failed = np.unique(s[~peeled])
        g[_range_indices(voff[failed], PARTS * part[failed])] = 0
        hash_seed[failed] += 1
        todo = todo[np.isin(s, failed)]
    raise RuntimeError(f"perfect hashing failed for {np.unique(seed_of_key[todo]).size} seeds")


def build(seed_of_key: np.ndarray, keys: np.ndarray, n_seeds: int) -> PerfectHash:
    """Perfect hashes for every seed; keys are sorted by seed and distinct within a seed."""
    n_keys = np.bincount(seed_of_key, minlength=n_seeds)
    part = part_sizes(n_keys)
    voff = np.concatenate(([0], np.cumsum(PARTS * part))).astype(np.int64)
    n_vertices = int(voff[-1])
    if n_vertices >= 2**32:
        raise ValueError("segment too large for 32-bit vertex ids; use a smaller segment size")
    hash_seed = np.zeros(n_seeds, dtype=np.uint32)
    g = np.zeros(n_vertices, dtype=np.uint8)
    slot = np.empty(keys.size, dtype=np.uint32)
    key_start = np.concatenate(([0], np.cumsum(n_keys)))
    # Chunks of about CHUNK_VERTICES keep the per-round tables small and in cache.
    firsts = np.searchsorted(voff, np.arange(0, n_vertices, CHUNK_VERTICES), side="right") - 1
    bounds = np.unique(np.concatenate((firsts, [n_seeds])))
    for s0, s1 in zip(bounds[:-1], bounds[1:]):
        k0, k1, v0, v1 = key_start[s0], key_start[s1], voff[s0], voff[s1]
        chunk_slot = np.empty(k1 - k0, dtype=np.int64)
        _build_chunk(seed_of_key[k0:k1] - s0, keys[k0:k1], part[s0:s1], voff[s0:s1 + 1] - v0,
                     hash_seed[s0:s1], g[v0:v1], chunk_slot)
        slot[k0:k1] = chunk_slot + v0
    return PerfectHash(hash_seed, voff.astype(np.uint32), g, slot)


UNUSED = 3  # g of a vertex that holds no key: 0 mod 3, so the hash is unchanged


def mark_unused(g: np.ndarray, slot: np.ndarray) -> np.ndarray:
    """g with UNUSED on the vertices no key is assigned to (build leaves 0 on them)."""
    held = np.zeros(g.size, dtype=bool)
    held[slot] = True
    if np.any(g[~held] % PARTS):
        raise AssertionError("a vertex that holds no key has a g value other than 0")
    return np.where(held, g, np.uint8(UNUSED)).astype(np.uint8)


def pack_g(g: np.ndarray, keys_before: int = 0) -> np.ndarray:
    """The g table as a flat uint32 array of pairs, one pair per 16 vertices: their 2-bit g
    values (vertex v at bits 2 (v mod 16), UNUSED past the end), and the number of keys held by
    the vertices before them (keys_before on the first)."""
    padded = np.full(-(-g.size // 16) * 16, UNUSED, dtype=np.uint32)
    padded[: g.size] = g
    blocks = padded.reshape(-1, 16)
    shifts = (2 * np.arange(16, dtype=np.uint32))[None, :]
    held = np.count_nonzero(blocks != UNUSED, axis=1)
    ranks = keys_before + np.concatenate(([0], np.cumsum(held)[:-1])).astype(np.int64)
    packed = np.empty((blocks.shape[0], 2), dtype=np.uint32)
    packed[:, 0] = np.bitwise_or.reduce(blocks << shifts, axis=1)
    packed[:, 1] = ranks
    return packed.reshape(-1)


def unpack_g(packed: np.ndarray, v: np.ndarray) -> np.ndarray:
    """g values of vertices v from the packed table."""
    v = np.asarray(v, dtype=np.int64)
    return ((np.asarray(packed)[2 * (v >> 4)] >> ((v & 15) * 2).astype(np.uint32)) & 3).astype(np.uint8)


def _popcount32(x: np.ndarray) -> np.ndarray:
    x = x - ((x >> 1) & 0x55555555)
    x = (x & 0x33333333) + ((x >> 2) & 0x33333333)
    return (((x + (x >> 4)) & 0x0F0F0F0F) * 0x01010101 & 0xFFFFFFFF) >> 24


def vertex_rank(packed: np.ndarray, v: np.ndarray) -> np.ndarray:
    """The keys held by the vertices before v (a key's number in the per-key tables, when v
    holds one), as cl/phf.cl vertex_rank counts them."""
    v = np.asarray(v, dtype=np.int64)
    packed = np.asarray(packed)
    word = packed[2 * (v >> 4)].astype(np.int64)
    within = v & 15
    below = word & ((np.int64(1) << (2 * within)) - 1)
    unused = below & (below >> 1) & 0x55555555
    return packed[2 * (v >> 4) + 1].astype(np.int64) + within - _popcount32(unused)


def build_by_size(seed_of_key: np.ndarray, keys: np.ndarray, n_seeds: int, small_builder, most_keys: int) -> PerfectHash:
    """build's result, with the seeds of at most most_keys keys hashed by small_builder (one
    that suits many small seeds) and the others by build. Which builder hashes a seed depends
    on its key count alone, so the tables do not depend on how the seeds are grouped."""
    n_keys = np.bincount(seed_of_key, minlength=n_seeds)
    large = n_keys > most_keys
    if not large.any():
        return small_builder(seed_of_key, keys, n_seeds)
    if large.all():
        return build(seed_of_key, keys, n_seeds)
    part = part_sizes(n_keys)
    voff = np.concatenate(([0], np.cumsum(PARTS * part))).astype(np.int64)
    hash_seed = np.empty(n_seeds, np.uint32)
    g = np.empty(int(voff[-1]), np.uint8)
    slot = np.empty(keys.size, np.uint32)
    for chosen, builder in ((~large, small_builder), (large, build)):
        seeds = np.flatnonzero(chosen)
        renumber = np.cumsum(chosen) - 1
        mine = chosen[seed_of_key]
        ph = builder(renumber[seed_of_key[mine]], keys[mine], seeds.size)
        hash_seed[seeds] = ph.hash_seed
        sub_voff = ph.vertex_offset.astype(np.int64)
        lengths = sub_voff[1:] - sub_voff[:-1]
        g[_range_indices(voff[seeds], lengths)] = ph.g
        shift = np.repeat(voff[seeds] - sub_voff[:-1], n_keys[seeds])  # keys come in seed order
        slot[mine] = ph.slot.astype(np.int64) + shift
    return PerfectHash(hash_seed, voff.astype(np.uint32), g, slot)

