"""The windows that the filter over candidates keeps, listed and aligned apart from row_loci
(cl/kept_windows.cl, marose.kept_windows): the list holds every kept chain of each task in
order, and each alignment keeps what its numpy twin does."""

from __future__ import annotations

import numpy as np
import pytest

from marose import align, extend, kept_windows, prealign, prefilter
from marose.regions import region_offsets
from test_extend import device_candidates
from test_prealign import Windows


def kept_chain_windows(case: Windows, row: list[int], r: int, k: int) -> dict[int, tuple[int, int]]:
    """The kept chains of a row: first candidate -> its chain's window [w, e)."""
    kept = set(prealign.kept(case.reads[r], case.genome, row, case.bounds, k))
    found = {}
    for first, last in prealign.chains(row, case.bounds, k):
        if row[first] in kept:
            contig = np.searchsorted(case.bounds, row[first], side="right") - 1
            w, _ = prealign.window(row[first], len(case.reads[r]), case.bounds[contig], case.bounds[contig + 1], k)
            _, e = prealign.window(row[last], len(case.reads[r]), case.bounds[contig], case.bounds[contig + 1], k)
            found[first] = (int(w), int(e))
    return found


def listed_and_aligned(device, case: Windows, rows: list[list[int]], k: int, slice_size: int):
    """(task_base, listing, row_loci's arguments from aligned_apart on) of the rows' candidates."""
    values, row_begin, row_size = extend._one_run_per_row(device, [device_candidates(device, rows)])
    reads = extend.upload_reads(device, case.reads)
    defines = extend.alignment_defines(device, max(map(len, case.reads)), k)
    task_base = region_offsets(-(-row_size // slice_size))
    n_tasks = int(task_base[-1])
    tasks, _ = extend.task_arguments(device, reads, device.to_device(case.genome), values, row_begin, row_size,
                                     task_base, slice_size, device.to_device(case.bounds.astype(np.uint32)), 2, k)
    listing = kept_windows.Listing(device, n_tasks)
    keep, _ = prefilter.marks(device, extend.ALIGN, defines, tasks, n_tasks, int((row_begin + row_size).max()),
                              listing)
    return task_base, listing, kept_windows.aligned(device, extend.ALIGN, defines, tasks, listing, keep)


@pytest.mark.parametrize("k,slice_size", [(0, 32), (5, 7), (8, 3)])
def test_kept_windows_are_listed_by_task_and_aligned_as_the_twin(device, monkeypatch, k: int,
                                                                  slice_size: int) -> None:
    monkeypatch.setattr(kept_windows, "WINDOW_ENDS", 4)  # some windows hold more ends: counted, not kept
    case = Windows(20 + k, k)
    rows = [sorted(set(starts)) for starts in case.starts]
    rows[2] = []
    task_base, listing, (_, base, count, at, found, end, dist) = listed_and_aligned(device, case, rows, k, slice_size)
    n_tasks, n = int(task_base[-1]), listing.n
    base, count = (device.read(b, np.uint32, n_tasks).astype(np.int64) for b in (base, count))
    at = device.read(at, np.uint32, 2 * n).reshape(-1, 2).astype(np.int64)
    found = device.read(found, np.uint32, 2 * n).reshape(-1, 2).astype(np.int64)
    end = device.read(end, np.uint16, 4 * n).reshape(-1, 4).astype(np.int64)
    dist = device.read(dist, np.uint8, 4 * n).reshape(-1, 4).astype(np.int64)
    listed, with_more_ends = 0, 0
    for r, row in enumerate(rows):
        want = kept_chain_windows(case, row, r, k)
        got = []
        for t in range(int(task_base[r]), int(task_base[r + 1])):
            entries = at[base[t]:base[t] + count[t]]
            assert (entries[:, 0] == r).all()
            first = (t - task_base[r]) * slice_size
            assert ((entries[:, 1] >= first) & (entries[:, 1] < first + slice_size)).all()
            got += entries[:, 1].tolist()
        assert got == sorted(want)
        for t in range(int(task_base[r]), int(task_base[r + 1])):
            for g in range(int(base[t]), int(base[t] + count[t])):
                w, e = want[int(at[g, 1])]
                ends, b = kept_windows.twin(case.reads[r], case.genome[w:e], k)
                assert found[g].tolist() == [len(ends), w + b]
                kept = min(len(ends), 4)
                assert list(zip(end[g, :kept].tolist(), dist[g, :kept].tolist())) == ends[:kept]
                with_more_ends += len(ends) > 4
        listed += len(want)
    assert n >= listed > 0  # places for the first test's chains; the second's fill the first of them
    assert (at[:, 0] == 0xFFFFFFFF).sum() == n - listed
    assert with_more_ends > 0 or k == 0  # exact ends do not run on


def test_no_list_longer_than_its_places_can_be_numbered(device, monkeypatch) -> None:
    monkeypatch.setattr(kept_windows, "MAX_LISTED", 1)
    case = Windows(23, 3)
    _, listing, arguments = listed_and_aligned(device, case, [sorted(set(s)) for s in case.starts], 3, 32)
    assert not listing.listed and listing.n == 0 and int(arguments[0]) == 0  # row_loci aligns every window


def test_twin_stops_where_the_score_can_no_longer_fall_to_k() -> None:
    read = np.array([0, 1, 2, 3] * 20, np.uint8)
    window = np.concatenate([read, np.full(40, 3, np.uint8)])
    ends, b = kept_windows.twin(read, window, 2)
    assert ends == [(77, 2), (78, 1), (79, 0), (80, 1), (81, 2)]
    scores = align.end_distances(read, window, len(read)).astype(np.int64)
    left = window.size - 1 - np.arange(window.size)
    assert 81 < b < window.size and scores[b] > 2 + left[b] and (scores[:b] <= 2 + left[:b]).all()


def test_a_gpu_aligns_apart_and_a_cpu_does_not_unless_told(device, monkeypatch) -> None:
    monkeypatch.delenv(kept_windows.SWITCH, raising=False)
    assert kept_windows.pays(device) == (not device.is_cpu)
    monkeypatch.setenv(kept_windows.SWITCH, "on")
    assert kept_windows.pays(device)
    monkeypatch.setenv(kept_windows.SWITCH, "off")
    assert not kept_windows.pays(device)


def test_explain_says_where_a_device_tests_the_candidates_first_for_long_rows() -> None:
    text = extend.explain_windows(100, 5, False, True)
    assert "rows of candidates are long" in text and "aligned apart" in text
    assert "long" not in extend.explain_windows(100, 5, False, False)
    assert "long" not in extend.explain_windows(100, 5, True, True)  # tested first on every batch
