"""Building the BDZ hashes of all seeds on an OpenCL device (cl/bdz.cl), one work-item per seed;
and the hash builder an index build uses."""

from __future__ import annotations

import numpy as np

from marose.device import Device, groups
from marose.errors import MaroseError

from . import bdz

PROGRAM = ("murmur3.cl", "phf.cl", "bdz.cl")
# The device hashes a seed in one work-item: a seed with more keys is hashed faster by numpy's
# rounds over all its keys at once.
DEVICE_MOST_KEYS = 1 << 16


def hash_builder(spec: str | None, verbose: bool, log):
    """The hash builder of an index build: on the chosen device (once it passed its known-answer
    check) for seeds of up to DEVICE_MOST_KEYS keys, numpy's for the others, and for all when
    there is no device."""
    from marose import known_answer
    from marose.device import all_devices

    if not all_devices():
        if spec:
            raise MaroseError(f"--device {spec}: no OpenCL device found")
        log("no OpenCL device: building the hashes with numpy")
        return bdz.build
    device = Device(spec, verbose=verbose)
    known_answer.ensure(device, ("index",), log)
    on_device = lambda seed_of_key, keys, n_seeds: build(device, seed_of_key, keys, n_seeds)
    return lambda seed_of_key, keys, n_seeds: bdz.build_by_size(seed_of_key, keys, n_seeds, on_device,
                                                                DEVICE_MOST_KEYS)


def build(device: Device, seed_of_key: np.ndarray, keys: np.ndarray, n_seeds: int) -> bdz.PerfectHash:
    """Same contract as bdz.build; the hash seeds J come out identical, g may differ."""
    n_keys = np.bincount(seed_of_key, minlength=n_seeds)
    part = bdz.part_sizes(n_keys)
    voff = np.concatenate(([0], np.cumsum(bdz.PARTS * part))).astype(np.int64)
    n_vertices = int(voff[-1])
    if n_vertices >= 2**32 or keys.size >= 2**32:
        raise ValueError("segment too large for 32-bit vertex ids; use a smaller segment size")
    key_start = np.concatenate(([0], np.cumsum(n_keys))).astype(np.uint32)
    kernel = device.kernel(PROGRAM, "bdz_build", {"MAX_ATTEMPTS": bdz.MAX_ATTEMPTS})
    hash_seed = device.empty(4 * n_seeds)
    g = device.empty(n_vertices)
    failed = device.zeros(4)
    slot = device.empty(4 * keys.size)
    scratch = [device.empty(4 * n_vertices) for _ in range(3)] + [device.empty(4 * keys.size) for _ in range(2)]
    device.launch(kernel, groups(n_seeds, 64), None, np.uint32(n_seeds), device.to_device(key_start),
                  device.to_device(keys.astype(np.uint32)), device.to_device(voff.astype(np.uint32)),
                  hash_seed, g, *scratch, slot, failed)
    if device.read(failed, np.uint32, 1)[0]:
        raise RuntimeError("perfect hashing failed for some seeds")
    return bdz.PerfectHash(device.read(hash_seed, np.uint32, n_seeds), voff.astype(np.uint32),
                           device.read(g, np.uint8, n_vertices), device.read(slot, np.uint32, keys.size))
