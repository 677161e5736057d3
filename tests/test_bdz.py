"""BDZ perfect hashing: numpy and OpenCL builds give injective hashes with the same J."""

import numpy as np
import pytest

from indexer import bdz, bdz_cl


def _keys(n, n_seeds, ln=7, seed=3):
    rng = np.random.default_rng(seed)
    s = rng.integers(0, n_seeds, n).astype(np.int64)
    k = rng.integers(0, 4**ln, n).astype(np.int64)
    pairs = np.unique(s << 32 | k)
    return pairs >> 32, (pairs & 0xFFFFFFFF).astype(np.uint32)


def _slots(ph, seeds, keys):
    voff = ph.vertex_offset.astype(np.int64)
    part = (voff[seeds + 1] - voff[seeds]) // bdz.PARTS
    return bdz.phf(bdz.hyperedges(keys, ph.hash_seed[seeds], part, voff[seeds]), ph.g), voff


@pytest.mark.parametrize("n,n_seeds", [(0, 16), (1, 4), (50, 4**3), (20000, 4**5), (200000, 4**8)])
def test_numpy_build_is_a_perfect_hash(n, n_seeds):
    seeds, keys = _keys(n, n_seeds)
    ph = bdz.build(seeds, keys, n_seeds)
    slots, voff = _slots(ph, seeds, keys)
    assert np.unique(slots).size == slots.size
    assert np.all((slots >= voff[seeds]) & (slots < voff[seeds + 1]))
    assert ph.g.max(initial=0) <= 2
    assert voff[-1] <= 1.23 * n + 6 * n_seeds  # 3 parts, each rounded up and one extra


def test_device_build_matches_numpy(device):
    seeds, keys = _keys(100000, 4**7, seed=5)
    host = bdz.build(seeds, keys, 4**7)
    dev = bdz_cl.build(device, seeds, keys, 4**7)
    assert np.array_equal(dev.hash_seed, host.hash_seed)
    assert dev.hash_seed.max() > 0  # retries happened and agree
    slots, _ = _slots(dev, seeds, keys)
    assert np.unique(slots).size == slots.size


def test_seeds_are_hashed_by_the_builder_their_size_picks(device):
    """Small seeds by the device, large ones by numpy: each seed's g and slots are those its
    builder gives it alone, wherever the seeds are split."""
    rng = np.random.default_rng(8)
    n_seeds = 64
    seeds = np.sort(np.concatenate([rng.integers(0, n_seeds, 3000), np.full(5000, 7), np.full(4000, 40)]))
    pairs = np.unique(seeds.astype(np.int64) << 32 | rng.integers(0, 4**9, seeds.size))
    seeds, keys = pairs >> 32, (pairs & 0xFFFFFFFF).astype(np.uint32)
    on_device = lambda s, k, n: bdz_cl.build(device, s, k, n)
    mixed = bdz.build_by_size(seeds, keys, n_seeds, on_device, 1000)
    host, dev = bdz.build(seeds, keys, n_seeds), on_device(seeds, keys, n_seeds)
    slots, voff = _slots(mixed, seeds, keys)
    assert np.array_equal(slots, mixed.slot) and np.unique(slots).size == slots.size
    assert np.array_equal(mixed.vertex_offset, host.vertex_offset)
    large = np.isin(seeds, [7, 40])
    assert np.array_equal(mixed.slot[large], host.slot[large]) and np.array_equal(mixed.slot[~large], dev.slot[~large])
    for seed in range(n_seeds):
        vertices = slice(voff[seed], voff[seed + 1])
        assert np.array_equal(mixed.g[vertices], (host if seed in (7, 40) else dev).g[vertices])


def test_range_indices():
    got = bdz._range_indices(np.array([5, 0, 9]), np.array([2, 0, 3]))
    assert got.tolist() == [5, 6, 9, 10, 11]


def test_pack_g_roundtrip_and_ranks():
    rng = np.random.default_rng(1)
    g = rng.integers(0, 4, 1000).astype(np.uint8)  # 3: bdz.UNUSED
    packed = bdz.pack_g(g, keys_before=7)
    assert packed.size == 2 * 63
    assert np.array_equal(bdz.unpack_g(packed, np.arange(1000)), g)
    held_before = 7 + np.concatenate(([0], np.cumsum(g != bdz.UNUSED)))
    assert np.array_equal(bdz.vertex_rank(packed, np.arange(1001)), held_before)


def test_mark_unused_keeps_every_slot():
    seeds, keys = _keys(3000, 4**3)
    ph = bdz.build(seeds, keys, 4**3)
    before, _ = _slots(ph, seeds, keys)
    ph.g = bdz.mark_unused(ph.g, ph.slot)
    assert np.count_nonzero(ph.g == bdz.UNUSED) == ph.g.size - keys.size
    assert np.array_equal(_slots(ph, seeds, keys)[0], before)
    with pytest.raises(AssertionError, match="holds no key"):
        bdz.mark_unused(np.ones_like(ph.g), ph.slot)
