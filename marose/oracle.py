"""Brute-force all-mapper: every locus of every read within k edits.

Each read (forward, strand 0) and its reverse complement (strand 1) is compared
by Myers' bit-vector DP against the whole of every contig, on the contig's
forward strand; alignments never cross contigs. Loci and their canonical
alignments follow the rules of marose.align. This is what the mapper is judged
against.
"""

from __future__ import annotations

from typing import NamedTuple, Sequence

import numpy as np

from marose.align import loci_from_hits, search_hits, traceback
from marose.dna import reverse_complement


class Hit(NamedTuple):
    """One locus of one read strand on one contig (0-based, inclusive end)."""

    read: int
    strand: int
    contig: int
    start: int
    end: int
    dist: int
    cigar: str
    nm: int
    md: str


def oracle_map(
    contigs: Sequence[np.ndarray], reads: Sequence[np.ndarray], k: int,
    letters: Sequence[str] | None = None,
) -> list[Hit]:
    """Every locus within k edits of every read on both strands, sorted.

    Reads and contigs are base codes; reads must not be empty. A read with more
    than k N bases has no hits. letters: each contig's letters as MD writes them
    (align.traceback), by default those of its codes.
    """
    strands: dict[int, list[tuple[int, int, np.ndarray]]] = {}
    for index, read in enumerate(reads):
        read = np.asarray(read, dtype=np.uint8)
        if read.shape[0] == 0:
            raise ValueError(f"read {index} is empty")
        by_length = strands.setdefault(read.shape[0], [])
        by_length.append((index, 0, read))
        by_length.append((index, 1, reverse_complement(read)))
    hits: list[Hit] = []
    for contig_index, contig in enumerate(contigs):
        contig = np.asarray(contig, dtype=np.uint8)
        for group in strands.values():
            patterns = np.stack([seq for _, _, seq in group])
            which, pos, dist = search_hits(patterns, contig, k)
            keys, ends, _ = loci_from_hits(which, pos, dist)
            for key, end in zip(keys.tolist(), ends.tolist()):
                read_index, strand, seq = group[key]
                aln = traceback(seq, contig, end, k, None if letters is None else letters[contig_index])
                hits.append(
                    Hit(
                        read_index,
                        strand,
                        contig_index,
                        aln.start,
                        aln.end,
                        aln.dist,
                        aln.cigar,
                        aln.nm,
                        aln.md,
                    )
                )
    hits.sort()
    return hits
