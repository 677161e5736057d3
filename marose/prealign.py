"""Pre-alignment filter: a cheap test that a candidate window holds no end within k edits of a read.

This module defines what row_loci's first step (cl/extend.cl, prefix_rejects) computes. A
candidate read start p of a read of L bases gives the window [w, e) = [p - k, p + L + k) cut to
p's contig, as row_loci aligns it (marose.extend). An alignment of the read within k edits to a
substring of the window aligns its first 64 bases (one word of Myers' bit-vectors) within k
edits too, ending at least L - 64 - k bases before e, where the rest of the read still takes
that many window bases. A window where the first 64 bases have no end within k there holds no
end of the read within k, and row_loci skips it: every end it would have found there is above
k, and any later window gives those ends no less, so the loci are the same. Reads of at most
64 bases are never rejected (the test would cost the alignment itself).
"""

from __future__ import annotations

import numpy as np

from .align import WORD_BITS, end_distances


def window(start: int, length: int, contig_begin: int, contig_end: int, k: int) -> tuple[int, int]:
    """The genome window [w, e) row_loci aligns a read of `length` bases in, for a candidate start."""
    w = start - k if start - contig_begin >= k else contig_begin
    return w, min(contig_end, start + length + k)


def rejects(read: np.ndarray, genome: np.ndarray, w: int, e: int, k: int) -> bool:
    """Whether the window genome[w, e) surely holds no end within k edits of the read."""
    length = len(read)
    if length <= WORD_BITS:
        return False
    end = e - max(0, length - WORD_BITS - k)
    if end <= w:
        return True
    return bool(end_distances(np.asarray(read)[:WORD_BITS], genome[w:end], k).min() > k)
