"""Sorting rows too long for one work-group's local memory (cl/row_sort.cl): the rows are cut
into chunks sorted in local memory, the chunks merged in rounds by tiles, and the distinct
values kept, each step spread over many work-groups, so that one long row does not keep the
device waiting on one work-group."""

from __future__ import annotations

import numpy as np

from .device import Device
from .regions import region_offsets, spans

PROGRAM = ("scan.cl", "sort.cl", "row_sort.cl")
TILE = 512  # outputs of one work-group in a merge round; divides 2 * capacity
KERNELS = ("sort_chunks", "merge_tiles", "count_unique", "scan_unique", "write_unique")


def sort_rows(device: Device, wg: int, capacity: int, key_bits: int, values, offsets: np.ndarray, offsets_buffer,
              totals: np.ndarray, totals_buffer, out_count) -> None:
    """Sorts every row of values and keeps its distinct values, in place, as sort_long_rows does
    (the same arguments): the rows of at most capacity values in local memory, a work-group
    each (sort_rows); the longer ones by sort_long_rows. Empty rows' out_count is left as it is."""
    fit = np.flatnonzero((totals > 0) & (totals <= capacity))
    if fit.size:
        device.launch(device.kernel(PROGRAM, "sort_rows", program_defines(wg, capacity)), (fit.size * wg,), (wg,),
                      np.uint32(key_bits), values, device.to_device(fit.astype(np.uint32)), offsets_buffer,
                      totals_buffer, out_count)
    sort_long_rows(device, wg, capacity, key_bits, values, offsets, offsets_buffer, totals, totals_buffer, out_count)


def program_defines(wg: int, capacity: int) -> dict:
    return {"WG": wg, "CAP": capacity, "TILE": TILE}


def merge_rounds(sizes: np.ndarray, capacity: int) -> np.ndarray:
    """Rounds of pairwise merging that make chunks of capacity into one run: the least j with
    capacity << j >= size."""
    sizes = np.asarray(sizes, dtype=np.int64)
    rounds = np.zeros(sizes.size, dtype=np.int64)
    width = capacity
    while np.any(more := sizes > width):
        rounds[more] += 1
        width *= 2
    return rounds


def sort_long_rows(device: Device, wg: int, capacity: int, key_bits: int, values, offsets: np.ndarray,
                   offsets_buffer, totals: np.ndarray, totals_buffer, out_count) -> None:
    """Sorts rows of values (of key_bits bits) longer than capacity and keeps their distinct
    values, in place: row r's totals[r] values start at offsets[r] (offsets_buffer and
    totals_buffer hold the same on the device, as uint32); its number of distinct values goes to
    out_count[r]. wg: the work-group size, capacity: the values a work-group sorts in local
    memory (cl/sort.cl's WG and row_sort.cl's CAP)."""
    rows = np.flatnonzero(totals > capacity)
    if rows.size == 0:
        return
    rounds = merge_rounds(totals[rows], capacity)
    order = np.argsort(-rounds, kind="stable")  # most rounds first: each round's tiles lead the list
    rows, rounds = rows[order], rounds[order]
    sizes = totals[rows]
    kernels = {name: device.kernel(PROGRAM, name, program_defines(wg, capacity)) for name in KERNELS}
    scratch = device.empty(4 * int(offsets[-1]))
    chunk_row, chunk_first = spans(rows, sizes, capacity)
    device.launch(kernels["sort_chunks"], (chunk_row.size * wg,), (wg,), np.uint32(key_bits), values, scratch,
                  device.to_device(chunk_row), device.to_device(chunk_first), offsets_buffer, totals_buffer)
    tile_row, tile_first = spans(rows, sizes, TILE)
    row_tiles = region_offsets(-(-sizes // TILE))
    tile_row_buffer, tile_first_buffer = device.to_device(tile_row), device.to_device(tile_first)
    tile_args = (tile_row_buffer, tile_first_buffer, offsets_buffer, totals_buffer)
    for j in range(int(rounds[0])):
        n_tiles = int(row_tiles[np.count_nonzero(rounds > j)])
        device.launch(kernels["merge_tiles"], (n_tiles * wg,), (wg,), values, scratch, *tile_args, np.uint32(j))
    n_tiles = tile_row.size
    tile_count = device.empty(4 * n_tiles)
    device.launch(kernels["count_unique"], (n_tiles * wg,), (wg,), scratch, *tile_args, tile_count)
    device.launch(kernels["scan_unique"], (rows.size * wg,), (wg,), device.to_device(rows.astype(np.uint32)),
                  device.to_device(row_tiles), tile_count, out_count)
    device.launch(kernels["write_unique"], (n_tiles * wg,), (wg,), values, scratch, *tile_args, tile_count)
