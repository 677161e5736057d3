"""Device buffers: uploads through the pinned staging buffers."""

import numpy as np

import marose.device


def test_upload_round_trip(device, monkeypatch):
    monkeypatch.setattr(marose.device, "STAGING_BYTES", 4096)  # many turns of both staging buffers
    rng = np.random.default_rng(5)
    arrays = [rng.integers(0, 2**32, 10_000, dtype=np.uint32),  # 40 kB: ten parts
              rng.integers(0, 4, 4097, dtype=np.uint8),  # one byte into a second part
              np.arange(7, dtype=np.int64),  # below the staging threshold: copied directly
              np.zeros(0, dtype=np.uint32),
              rng.integers(0, 2**16, (300, 7), dtype=np.uint16)]
    buffers = device.upload(arrays)
    assert len(buffers) == len(arrays)
    for array, buffer in zip(arrays, buffers):
        assert np.array_equal(device.read(buffer, array.dtype, array.size), array.reshape(-1))


def test_upload_of_small_arrays_only(device):
    arrays = [np.arange(100, dtype=np.uint32), np.ones(3, dtype=np.uint8)]
    assert [device.read(b, a.dtype, a.size).tolist() for a, b in zip(arrays, device.upload(arrays))] == \
        [a.tolist() for a in arrays]
