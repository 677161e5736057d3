"""Maximal exact matches as the text of `mummer -maxmatch -b -n`, formatted in bulk with numpy."""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from functools import lru_cache

import numpy as np

FIELD = 8  # mummer prints each number as printf's %8ld
_SPACE, _NEWLINE, _ZERO = ord(" "), ord("\n"), ord("0")
PART_LINES = 1 << 18  # lines format_lines_in_parts gives a thread


def digit_counts(values: np.ndarray) -> np.ndarray:
    """How many decimal digits each non-negative value has (int64)."""
    values = np.asarray(values, dtype=np.int64)
    counts = np.ones(values.size, dtype=np.int64)
    for power in range(1, 19):
        counts += values >= 10**power
    return counts


def format_lines(prefixes: list[bytes], prefix_of: np.ndarray,
                 columns: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Line i: prefixes[prefix_of[i]] (all prefixes of one length), then each column's value as
    printf's %8ld, two spaces apart, then a newline. Returns the text (uint8) and where each
    line starts (one more at the end)."""
    n = len(columns[0])
    if all(int(np.max(column, initial=0)) < 10**FIELD for column in columns):
        return _fixed_lines(prefixes, prefix_of, columns)
    digits = [digit_counts(column) for column in columns]
    widths = [np.maximum(FIELD, d) for d in digits]
    prefix_len = len(prefixes[0]) if prefixes else 0
    line_len = prefix_len + sum(widths) + 2 * (len(columns) - 1) + 1
    starts = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(line_len, out=starts[1:])
    text = np.full(int(starts[-1]), _SPACE, dtype=np.uint8)
    if prefix_len and n:
        table = np.frombuffer(b"".join(prefixes), dtype=np.uint8).reshape(-1, prefix_len)
        text[starts[:-1, None] + np.arange(prefix_len)] = table[prefix_of]
    at = starts[:-1] + prefix_len
    for column, count, width in zip(columns, digits, widths):
        end = at + width
        values = np.asarray(column, dtype=np.int64)
        for k in range(int(count.max(initial=0))):
            has = count > k
            text[(end - 1 - k)[has]] = _ZERO + (values[has] // 10**k) % 10
        at = end + 2
    text[starts[1:] - 1] = _NEWLINE
    return text, starts


def format_lines_in_parts(prefixes: list[bytes], prefix_of: np.ndarray,
                          columns: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """format_lines, of parts of PART_LINES lines at once in threads (numpy lets them run side by
    side), joined."""
    n = len(columns[0])
    if n <= PART_LINES:
        return format_lines(prefixes, prefix_of, columns)

    def part(first: int) -> tuple[np.ndarray, np.ndarray]:
        cut = slice(first, first + PART_LINES)
        return format_lines(prefixes, prefix_of[cut], [column[cut] for column in columns])

    parts = list(_pool().map(part, range(0, n, PART_LINES)))
    sizes = np.array([0] + [text.size for text, _ in parts[:-1]], dtype=np.int64)
    shifts = np.cumsum(sizes)
    starts = np.concatenate([p_starts[:-1] + shift for (_, p_starts), shift in zip(parts, shifts)]
                            + [[shifts[-1] + parts[-1][1][-1]]])
    return np.concatenate([text for text, _ in parts]), starts


@lru_cache(maxsize=1)
def _pool() -> ThreadPoolExecutor:
    return ThreadPoolExecutor(max_workers=min(16, os.cpu_count() or 1))


@lru_cache(maxsize=1)
def _strand_pool() -> ThreadPoolExecutor:
    """The reverse strand's lines are ordered beside the forward strand's (its own thread: the
    parts of each go to _pool, whose threads must not wait on one another)."""
    return ThreadPoolExecutor(max_workers=1)


def _fixed_lines(prefixes: list[bytes], prefix_of: np.ndarray,
                 columns: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """format_lines where every value fits its field: lines of one length, filled column by
    column as rows of a matrix."""
    n = len(columns[0])
    prefix_len = len(prefixes[0]) if prefixes else 0
    line_len = prefix_len + (FIELD + 2) * len(columns) - 1
    text = np.full((n, line_len), _SPACE, dtype=np.uint8)
    if prefix_len and n:
        text[:, :prefix_len] = np.frombuffer(b"".join(prefixes), dtype=np.uint8).reshape(-1, prefix_len)[prefix_of]
    for i, column in enumerate(columns):
        last = prefix_len + (FIELD + 2) * i + FIELD - 1
        rest = np.asarray(column).astype(np.uint32)
        for k in range(FIELD):  # the k-th digit from the right, a space once the digits run out
            text[:, last - k] = np.where((rest > 0) | (k == 0), _ZERO + rest % 10, _SPACE)
            rest //= 10
    text[:, -1] = _NEWLINE
    return text.reshape(-1), np.arange(n + 1, dtype=np.int64) * line_len


class MummerWriter:
    """Matches as `mummer -maxmatch -b -n` writes them: per query a '> name' line and its forward
    matches, then '> name Reverse' and its reverse-complement ones, ordered by query then
    reference start; each line the reference start, query start and length (1-based), after
    the reference name (padded to the longest) when there are several. forward_coords (-c): a
    reverse match's query start is counted on the forward strand."""

    def __init__(self, out, ref_names: list[str], ref_starts: np.ndarray, forward_coords: bool):
        self.out, self.ref_starts, self.forward_coords = out, ref_starts, forward_coords
        width = max(map(len, ref_names)) if len(ref_names) > 1 else 0
        self.prefixes = [f"  {name:<{width}}  ".encode() for name in ref_names] if width else []

    def write(self, batch, forward, reverse) -> None:
        """The text of a QueryBatch's matches (mems.Mems of each strand)."""
        reverse_lines = _strand_pool().submit(self._lines, batch, reverse, True)
        strands = [self._lines(batch, forward, False), reverse_lines.result()]
        pieces = []
        for i, name in enumerate(batch.names):
            for (text, starts, bounds), header in zip(strands, (f"> {name}\n", f"> {name} Reverse\n")):
                pieces.append(header.encode())
                pieces.append(text[starts[bounds[i]]:starts[bounds[i + 1]]].tobytes())
        self.out.write(b"".join(pieces))

    def _lines(self, batch, mems, is_reverse: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The strand's lines (text, line starts) in order, and where each query's lines begin."""
        qry = mems.qry.astype(np.int64)
        if is_reverse:  # the reverse strand is the whole batch reversed: query i's last base comes first
            last = batch.forward.size - 1 - qry
            which = np.searchsorted(batch.starts, last, side="right") - 1
            end = batch.starts[which] + batch.lengths[which]
            at = last - batch.starts[which] + 1 if self.forward_coords else end - last
        else:
            which = np.searchsorted(batch.starts, qry, side="right") - 1
            at = qry - batch.starts[which] + 1
        contig = np.searchsorted(self.ref_starts, mems.ref, side="right") - 1
        ref_at = mems.ref.astype(np.int64) - self.ref_starts[contig] + 1
        # by query, query start, reference start: the first two as one place in the batch (below 2^32)
        key = (batch.starts[which] + at).astype(np.uint64) << np.uint64(32) | ref_at.astype(np.uint64)
        order = np.argsort(key, kind="stable")
        text, starts = format_lines_in_parts(self.prefixes, contig[order],
                                             [ref_at[order], at[order], mems.length[order]])
        bounds = np.searchsorted(which[order], np.arange(len(batch.names) + 1))
        return text, starts, bounds
