"""Sorting rows too long for local memory (cl/row_sort.cl) against numpy."""

import numpy as np

from marose.regions import region_offsets, spans
from marose.row_sort import merge_rounds, sort_long_rows, sort_rows

CAP = 256


def test_rounds_and_spans():
    assert merge_rounds(np.array([1, 256, 257, 512, 513, 256 * 16 + 1]), CAP).tolist() == [0, 0, 1, 1, 2, 5]
    row, first = spans(np.array([4, 9]), np.array([5, 2]), 2)
    assert row.tolist() == [4, 4, 4, 9] and first.tolist() == [0, 2, 4, 0]


def test_long_rows_are_sorted_unique_in_place(device):
    rng = np.random.default_rng(7)
    sizes = [0, 3, CAP, CAP + 1, 2 * CAP, 2 * CAP + 1, 5 * CAP + 37, 16 * CAP + 1, 700, CAP - 1]
    ranges = [10, 10, 50, 2**20, 2**20, 300, 2**20, 5000, 1, 2**20]  # few values: duplicates across chunks
    rows = [rng.integers(0, top, size).astype(np.uint32) for size, top in zip(sizes, ranges)]
    totals = np.array(sizes, dtype=np.int64)
    offsets = region_offsets(totals)
    values = device.to_device(np.concatenate(rows))
    sentinel = np.full(len(rows), 12345, dtype=np.uint32)
    out_count = device.to_device(sentinel)
    sort_long_rows(device, 64, CAP, 20, values, offsets, device.to_device(offsets), totals,
                   device.to_device(totals.astype(np.uint32)), out_count)
    got = device.read(values, np.uint32, int(offsets[-1]))
    counts = device.read(out_count, np.uint32, len(rows))
    for r, row in enumerate(rows):
        part = got[offsets[r]: offsets[r + 1]]
        if sizes[r] <= CAP:  # left for the filter's local sort
            assert counts[r] == 12345 and np.array_equal(part, row)
        else:
            want = np.unique(row)
            assert counts[r] == want.size
            assert np.array_equal(part[: want.size], want)
    assert counts[8] == 1 and counts[7] < 0.7 * sizes[7]  # duplicates removed within and across chunks


def test_rows_of_every_size_are_sorted_unique_in_place(device):
    """sort_rows: the rows that fit local memory a work-group each, the longer ones as
    sort_long_rows sorts them; an empty row's count is left as it was."""
    rng = np.random.default_rng(8)
    sizes = [0, 1, 3, 64, 65, CAP - 1, CAP, CAP + 1, 3 * CAP + 5, 0, 40]
    ranges = [10, 10, 10, 2**20, 20, 2**20, 2**20, 50, 2**20, 10, 2**20]
    rows = [rng.integers(0, top, size).astype(np.uint32) for size, top in zip(sizes, ranges)]
    totals = np.array(sizes, dtype=np.int64)
    offsets = region_offsets(totals)
    values = device.to_device(np.concatenate(rows))
    out_count = device.to_device(np.full(len(rows), 12345, dtype=np.uint32))
    sort_rows(device, 64, CAP, 20, values, offsets, device.to_device(offsets), totals,
              device.to_device(totals.astype(np.uint32)), out_count)
    got = device.read(values, np.uint32, int(offsets[-1]))
    counts = device.read(out_count, np.uint32, len(rows))
    for r, row in enumerate(rows):
        want = np.unique(row)
        assert counts[r] == (want.size if sizes[r] else 12345)
        assert np.array_equal(got[offsets[r]: offsets[r] + want.size], want)
    assert counts[4] <= 20 and counts[7] <= 50  # duplicates removed, in local memory and across chunks
