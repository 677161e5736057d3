import numpy as np
import pytest

from marose.regions import region_offsets


@pytest.mark.parametrize("dtype", [np.uint32, np.int64, np.uint8, np.bool_])
def test_region_offsets_are_the_running_sum_from_zero(dtype):
    sizes = np.random.default_rng(4).integers(0, 2 if dtype is np.bool_ else 200, 10_000).astype(dtype)
    offsets = region_offsets(sizes)
    assert offsets.dtype == np.uint32
    assert np.array_equal(offsets, np.concatenate([[0], np.cumsum(sizes, dtype=np.int64)]))
    assert np.array_equal(region_offsets(np.zeros(0, dtype)), [0])


def test_region_offsets_up_to_the_last_uint32_and_not_past_it():
    assert region_offsets(np.array([2**31, 2**31 - 1], np.uint32))[-1] == 2**32 - 1
    with pytest.raises(MemoryError, match="over 2\\^32"):
        region_offsets(np.array([2**31, 2**31], np.uint32))
    with pytest.raises(MemoryError, match="over 2\\^32"):
        region_offsets(np.array([2**33], np.int64))
