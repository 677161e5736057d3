"""numpy and OpenCL MurmurHash3 equal mmh3, bit for bit."""

import mmh3
import numpy as np

from indexer.murmur3 import murmur3_32
from marose.device import groups


def _random_inputs(n=20000, seed=7):
    rng = np.random.default_rng(seed)
    keys = rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32)
    seeds = rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32)
    keys[:4] = [0, 1, 0xFFFFFFFF, 0x80000000]
    seeds[:4] = [0, 0xFFFFFFFF, 3, 1]
    return keys, seeds


def _mmh3(keys, seeds):
    return np.array([mmh3.hash(int(k).to_bytes(4, "little"), int(s), signed=False)
                     for k, s in zip(keys, seeds)], dtype=np.uint32)


def test_numpy_murmur3_equals_mmh3():
    keys, seeds = _random_inputs()
    assert np.array_equal(murmur3_32(keys, seeds), _mmh3(keys, seeds))


def test_opencl_murmur3_equals_mmh3(device):
    keys, seeds = _random_inputs(seed=11)
    out = device.empty(4 * keys.size)
    device.kernel(("murmur3.cl",), "murmur3_batch")(device.queue, groups(keys.size), None,
                                                    device.to_device(keys), device.to_device(seeds),
                                                    out, np.uint32(keys.size))
    assert np.array_equal(device.read(out, np.uint32, keys.size), _mmh3(keys, seeds))
