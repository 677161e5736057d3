"""SAM header and records for batches of hits, and MAPQ (the output files are sam_file.py's).

Scores and qualities written on mapped records:

- ``AS:i`` is minus the edit distance of the alignment (0 for an exact match, higher
  is better, as SAM expects of AS).
- ``HN:i`` is the number of loci found for the read, including those beyond
  ``max_hits`` that are not written.
- MAPQ of the primary record, from the best distance d1, the second-best distance
  d2 (the distance of the read's second hit) and the number of loci n:

      n == 1:              60  (the only locus within the error budget)
      d2 == d1:             0  (tied loci: the placement is a guess)
      d2 > d1:       min(59, 20 * (d2 - d1))

  A read with n > 1 whose second hit was not passed in gets 0, because the gap is
  unknown. Secondary records get MAPQ 0.
- Secondary records (flag 256) carry SEQ and QUAL like the primary, oriented to
  their own strand, so each record can be checked on its own (e.g. by calmd).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from itertools import repeat
from typing import Sequence

import numpy as np

from marose.errors import MaroseError
from marose.reads import ReadBatch
from marose.sam_file import SamWriter, kept_at_close  # noqa: F401 (re-exported)

MAPQ_UNIQUE = 60
MAPQ_MAX_AMBIGUOUS = 59
MAPQ_PER_EDIT = 20
MAPQ_SECONDARY = 0

# Complements of IUPAC codes (a code for a set of bases maps to the set's complement), a
# table for bytes.translate.
COMPLEMENT = bytes.maketrans(b"ACGTUNRYKMSWBDHVacgtunrykmswbdhv",
                              b"TGCAANYRMKSWVHDBtgcaanyrmkswvhdb")
_RG_TAG = re.compile(r"[A-Za-z][A-Za-z0-9]:")
_CONTIG_NAME = re.compile(r"[!-)+-<>-~][!-~]*")  # printable, no space, no leading * or =


@dataclass
class Hits:
    """Alignments of the reads of one batch, sorted by read, then best first.

    read: index of the read within the batch; strand: 0 forward, 1 when the reverse
    complement of the read aligns to the forward genome; contig: contig index;
    pos: 0-based leftmost reference position; dist: edit distance; cigar: M/I/D
    CIGAR; md: MD string (str or ASCII bytes); nm: NM value. Any object with these
    attributes works.
    """

    read: np.ndarray
    strand: np.ndarray
    contig: np.ndarray
    pos: np.ndarray
    dist: np.ndarray
    cigar: Sequence[str] | Sequence[bytes]
    md: Sequence[str] | Sequence[bytes]
    nm: np.ndarray
    end: np.ndarray | None = None  # 0-based inclusive reference end, where the mapper gives it


def parse_read_group(text: str) -> tuple[str, str]:
    """A bwa-style read group (``@RG\\tID:x\\tSM:y``) as a header line and its ID.

    Literal ``\\t`` escapes (as typed on a command line) count as tabs.
    """
    line = text.replace("\\t", "\t")
    fields = line.split("\t")
    where = f"read group (-R) {text!r}"
    if fields[0] != "@RG" or len(fields) < 2:
        raise MaroseError(f"{where}: must start with '@RG\\t', e.g. '@RG\\tID:run1\\tSM:sample1'")
    if "\n" in line or "\r" in line:
        raise MaroseError(f"{where}: must be a single line")
    for field in fields[1:]:
        if not _RG_TAG.match(field):
            raise MaroseError(f"{where}: field {field!r} is not of the form TAG:value")
    ids = [f[3:] for f in fields[1:] if f.startswith("ID:")]
    if len(ids) != 1 or not ids[0]:
        raise MaroseError(f"{where}: needs exactly one non-empty ID field, e.g. ID:run1")
    return line, ids[0]


def sam_header(contigs: list[tuple[str, int]], read_group: str | None,
               command_line: str, version: str) -> str:
    """SAM header text: @HD, one @SQ per (name, length), optional @RG, and @PG."""
    lines = ["@HD\tVN:1.6\tSO:unsorted"]
    for name, length in contigs:
        if not _CONTIG_NAME.fullmatch(name):
            raise MaroseError(f"contig name {name!r} is not valid in SAM "
                              "(printable ASCII without spaces; not starting with * or =)")
        lines.append(f"@SQ\tSN:{name}\tLN:{length}")
    if read_group is not None:
        lines.append(parse_read_group(read_group)[0])
    cl = " ".join(command_line.split())  # CL may hold no tabs or newlines
    lines.append(f"@PG\tID:marose\tPN:marose\tVN:{version}\tCL:{cl}")
    return "\n".join(lines) + "\n"


def format_batch(batch: ReadBatch, hits: Hits, n_loci: np.ndarray | Sequence[int],
                 contig_names: Sequence[str], max_hits: int, xa: bool,
                 read_group_id: str | None) -> bytes:
    """SAM records of one batch, in input order, one primary record per read.

    Reads without hits are written unmapped. Of a read's hits the first is the
    primary; the next up to max_hits - 1 become secondary records, or with xa one
    XA:Z tag on the primary. n_loci holds the number of loci found per read.
    """
    if max_hits < 1:
        raise ValueError("max_hits must be at least 1")
    n = len(batch)
    if n == 0:
        return b""
    ranked = rank_hits(hits, n_loci, n)
    read, counts, loci, rank, dist = ranked.read, ranked.counts, ranked.loci, ranked.rank, ranked.dist
    strand = np.asarray(hits.strand, dtype=np.int64)
    rg = read_group_tag(read_group_id)

    # Everything is built as bytes, column by column, and joined in C: per record
    # Python work is limited to the joins.
    names = _objects(_to_bytes(batch.names))
    seqs = _stored(_objects(batch.seqs))
    quals = _stored(_objects([b"*"] * n if batch.quals is None else batch.quals))
    unmapped = np.flatnonzero(counts == 0)
    unmapped_lines = list(map(b"\t".join, zip(
        names[unmapped].tolist(), repeat(b"4\t*\t0\t0\t*\t*\t0\t0"),
        seqs[unmapped].tolist(), quals[unmapped].tolist(), repeat(b"HN:i:0" + rg))))

    idx = np.flatnonzero(rank < (1 if xa else max_hits))
    hread = read[idx]
    hstrand = strand[idx]
    flag, mapq = ranked.flag[idx], ranked.mapq[idx]
    oriented = hread + n * hstrand  # row in [forward..., reverse...]
    seq_col = _with_reverse(batch.seqs, hstrand, complement=True)[oriented]
    qual_col = (quals[hread] if batch.quals is None
                else _with_reverse(batch.quals, hstrand, complement=False)[oriented])
    nm_md = _ints(np.asarray(hits.nm)[idx], "NM:i:", "\tMD:Z:") + _column(hits.md, idx)
    tail = _ints(-dist[idx], "AS:i:", "\tHN:i:") + _ints(loci[hread], "", rg.decode())
    if xa:
        tail += _xa_tags(hits, read, rank, max_hits, contig_names, n)[hread]
    lines = list(map(b"\t".join, zip(
        names[hread].tolist(), _ints(flag).tolist(),
        _objects(_to_bytes(contig_names))[np.asarray(hits.contig)[idx]].tolist(),
        list(map(b"%d".__mod__, (np.asarray(hits.pos, dtype=np.int64)[idx] + 1).tolist())),
        _ints(mapq).tolist(), _column(hits.cigar, idx).tolist(), repeat(b"*\t0\t0"),
        seq_col.tolist(), qual_col.tolist(), nm_md.tolist(), tail.tolist())))

    per_read = np.where(counts > 0, np.minimum(counts, 1 if xa else max_hits), 1)
    start = np.cumsum(per_read) - per_read
    out = np.empty(int(per_read.sum()), dtype=object)
    out[start[hread] + rank[idx]] = _objects(lines)
    out[start[unmapped]] = _objects(unmapped_lines)
    out_lines = out.tolist()
    out_lines.append(b"")
    return b"\n".join(out_lines)


RESCUED_TAG = b"\tXR:i:1"  # on a paired-end record of a locus found by mate rescue


@dataclass
class Records:
    """SAM records laid out one per row, in output order, each naming its read and hits: the
    form paired-end records take (marose.pairs). hit is -1 on an unmapped record; contig and
    mate_contig -1 write '*' (a mate_contig equal to contig writes '='); pos and mate_pos are
    0-based, -1 writing 0. After HN:i come MC:Z with the CIGAR of the hit mate_hit (the mate's
    primary; -1 when the mate is unmapped: MC:Z:* on a mapped record, nothing on an unmapped
    one), XR:i:1 where rescued is 1, and XA:Z listing the hits xa_hit[xa_first:xa_first +
    xa_count] of an array given beside, when xa_count is not 0."""

    read: np.ndarray
    hit: np.ndarray
    flag: np.ndarray
    contig: np.ndarray
    pos: np.ndarray
    mapq: np.ndarray
    mate_contig: np.ndarray
    mate_pos: np.ndarray
    tlen: np.ndarray
    mate_hit: np.ndarray
    rescued: np.ndarray
    xa_first: np.ndarray
    xa_count: np.ndarray


def format_records(batch: ReadBatch, names: Sequence[str], hits: Hits, n_loci: np.ndarray, records: Records,
                   xa_hit: np.ndarray, contig_names: Sequence[str], read_group_id: str | None) -> bytes:
    """The SAM text of records (see Records) of the reads of batch, named by names (one a read):
    SEQ and QUAL oriented to each record's strand (flag 0x10), NM, MD and AS from the hit of a
    mapped record, HN:i from n_loci, then MC:Z, XR:i, XA:Z and the read group's tag."""
    m = records.read.size
    if m == 0:
        return b""
    read, hit = np.asarray(records.read, np.int64), np.asarray(records.hit, np.int64)
    n = len(batch)
    strand = (np.asarray(records.flag) & 16) // 16
    mapped = hit >= 0
    quals = _objects([b"*"] * n if batch.quals is None else batch.quals)
    oriented = read + n * strand
    seq_col = _stored(_with_reverse(batch.seqs, strand, complement=True)[oriented])
    qual_col = _stored(quals[read] if batch.quals is None
                       else _with_reverse(batch.quals, strand, complement=False)[oriented])
    contigs = _objects([b"*"] + _to_bytes(list(contig_names)))
    mate_contig = np.asarray(records.mate_contig, np.int64)
    rnext = contigs[mate_contig + 1]
    rnext[(mate_contig == np.asarray(records.contig)) & (mate_contig >= 0)] = b"="
    cigar = _objects([b"*"] * m)
    alignment_tags = _objects([b""] * m)
    at = hit[mapped]
    if at.size:
        cigar[mapped] = _column(hits.cigar, at)
        alignment_tags[mapped] = (_ints(np.asarray(hits.nm)[at], "NM:i:", "\tMD:Z:") + _column(hits.md, at)
                                  + _ints(-np.asarray(hits.dist, np.int64)[at], "\tAS:i:", "\t"))
    tail = (alignment_tags + _ints(np.asarray(n_loci, np.int64)[read], "HN:i:") + _mate_cigar_tags(hits, records)
            + np.where(np.asarray(records.rescued) != 0, RESCUED_TAG, b"").astype(object)
            + _xa_lists(hits, records, np.asarray(xa_hit, np.int64), contig_names) + read_group_tag(read_group_id))
    lines = list(map(b"\t".join, zip(
        _objects(_to_bytes(list(names)))[read].tolist(), _ints(records.flag).tolist(),
        contigs[np.asarray(records.contig, np.int64) + 1].tolist(), _ints(np.maximum(records.pos, -1) + 1).tolist(),
        _ints(records.mapq).tolist(), cigar.tolist(), rnext.tolist(),
        _ints(np.maximum(records.mate_pos, -1) + 1).tolist(), _ints(records.tlen).tolist(),
        seq_col.tolist(), qual_col.tolist(), tail.tolist())))
    lines.append(b"")
    return b"\n".join(lines)


def _mate_cigar_tags(hits: Hits, records: Records) -> np.ndarray:
    """MC:Z of each record (see Records), with its leading tab, or b''."""
    mate_hit = np.asarray(records.mate_hit, np.int64)
    tags = _objects([b""] * mate_hit.size)
    tags[(mate_hit < 0) & (np.asarray(records.hit) >= 0)] = b"\tMC:Z:*"  # as samtools fixmate writes it
    has = mate_hit >= 0
    if has.any():
        tags[has] = b"\tMC:Z:" + _column(hits.cigar, mate_hit[has])
    return tags


def _xa_lists(hits: Hits, records: Records, xa_hit: np.ndarray, contig_names: Sequence[str]) -> np.ndarray:
    """XA:Z of each record (see Records), with its leading tab, or b''."""
    count = np.asarray(records.xa_count, np.int64)
    owners = np.repeat(np.arange(count.size), count)
    entries = xa_hit[np.repeat(np.asarray(records.xa_first, np.int64), count) + np.arange(owners.size)
                     - np.repeat(np.cumsum(count) - count, count)]
    return _grouped_xa(_xa_items(hits, entries, contig_names), owners, count.size)


@dataclass
class RankedHits:
    """A batch's hits (sorted by read, best first) ranked within their reads, with each one's
    FLAG and MAPQ as a record."""

    read: np.ndarray  # int64, of each hit
    rank: np.ndarray  # of each hit among its read's, 0 for the primary
    dist: np.ndarray  # int64, of each hit
    flag: np.ndarray
    mapq: np.ndarray
    counts: np.ndarray  # hits of each read
    loci: np.ndarray  # loci of each read, as n_loci


def rank_hits(hits: Hits, n_loci: np.ndarray | Sequence[int], n: int) -> RankedHits:
    """The hits of a batch of n reads, ranked; ValueError unless they are sorted by read and
    n_loci holds, per read, at least the number of its hits."""
    read = np.asarray(hits.read, dtype=np.int64)
    m = len(read)
    if m and (np.any(np.diff(read) < 0) or read[0] < 0 or read[-1] >= n):
        raise ValueError("hits must be sorted by read and index reads of the batch")
    counts = np.bincount(read, minlength=n)
    loci = np.asarray(n_loci, dtype=np.int64)
    if loci.shape != (n,) or np.any(loci < counts):
        raise ValueError("n_loci must hold, per read, at least the number of its hits")
    first = np.cumsum(counts) - counts
    rank = np.arange(m) - first[read]
    dist = np.asarray(hits.dist, dtype=np.int64)
    primary = rank == 0
    flag = 16 * np.asarray(hits.strand, dtype=np.int64) + np.where(primary, 0, 256)
    mapq = np.where(primary, primary_mapq(counts, loci, dist, first)[read], MAPQ_SECONDARY)
    return RankedHits(read, rank, dist, flag, mapq, counts, loci)


def read_group_tag(read_group_id: str | None) -> bytes:
    """The RG tag every record of a read group carries (with its leading tab), or nothing."""
    return b"" if read_group_id is None else b"\tRG:Z:" + read_group_id.encode("ascii")


def primary_mapq(counts: np.ndarray, loci: np.ndarray, dist: np.ndarray,
                 first: np.ndarray) -> np.ndarray:
    """MAPQ of each read's primary record (see the module docstring), from the reads' hit
    counts, loci and the distances of hits sorted by read, best first (first: each read's first
    hit)."""
    if not len(dist):
        return np.zeros(len(counts), dtype=np.int64)
    d1 = dist[np.minimum(first, len(dist) - 1)]
    d2 = dist[np.minimum(first + 1, len(dist) - 1)]
    gap = np.where(counts >= 2, np.maximum(d2 - d1, 0), 0)
    mapq = np.minimum(MAPQ_MAX_AMBIGUOUS, MAPQ_PER_EDIT * gap)
    return np.where(loci == 1, MAPQ_UNIQUE, mapq)


def _xa_tags(hits: Hits, read: np.ndarray, rank: np.ndarray, max_hits: int,
             contig_names: Sequence[str], n: int) -> np.ndarray:
    """Per read, b'\\tXA:Z:' and its hits of rank 1 .. max_hits-1, or b''."""
    idx = np.flatnonzero((rank > 0) & (rank < max_hits))
    return _grouped_xa(_xa_items(hits, idx, contig_names), read[idx], n)


def _xa_items(hits: Hits, idx: np.ndarray, contig_names: Sequence[str]) -> np.ndarray:
    """The XA items ("contig,+pos,CIGAR,NM;") of hits idx."""
    if not len(idx):
        return _objects([])
    pos1 = np.asarray(hits.pos, dtype=np.int64)[idx] + 1
    signed = np.where(np.asarray(hits.strand)[idx] == 1, -pos1, pos1)
    return _objects(list(map(b",".join, zip(
        _objects(_to_bytes(contig_names))[np.asarray(hits.contig)[idx]].tolist(),
        list(map(b"%+d".__mod__, signed.tolist())),
        _column(hits.cigar, idx).tolist(),
        _ints(np.asarray(hits.nm)[idx], "", ";").tolist()))))


def _grouped_xa(items: np.ndarray, owners: np.ndarray, n: int) -> np.ndarray:
    """Per owner (0 .. n-1), b'\\tXA:Z:' and its items (owners ascending, one an item), or b''."""
    tags = _objects([b""] * n)
    if not len(items):
        return tags
    last = np.flatnonzero(np.append(np.diff(owners) != 0, True))
    # A newline after each owner's last item lets one join and split group them.
    items = items.copy()
    items[last] += b"\n"
    groups = b"".join(items.tolist()).split(b"\n")[:-1]
    tags[owners[last]] = b"\tXA:Z:" + _objects(groups)
    return tags


def _stored(column: np.ndarray) -> np.ndarray:
    """column (SEQ or QUAL texts, an object array) with '*' for an empty read's, as SAM writes
    a sequence not stored."""
    column[column == b""] = b"*"
    return column


def _with_reverse(texts: list[bytes], strand: np.ndarray, complement: bool) -> np.ndarray:
    """texts followed by each text reversed (and complemented), as one object array.

    The reversed half is only computed when some hit is on the reverse strand;
    reversing the newline-joined block reverses every text at once.
    """
    if not np.any(strand == 1):
        return _objects(texts)
    block = b"\n".join(texts)
    if complement:
        block = block.translate(COMPLEMENT)
    backward = block[::-1].split(b"\n")
    backward.reverse()
    return _objects(texts + backward)


def _to_bytes(texts: Sequence[str] | Sequence[bytes]) -> list[bytes]:
    """ASCII strings (without newlines) as bytes, converted in one pass; bytes stay as they are."""
    if not len(texts):
        return []
    if isinstance(texts[0], bytes):
        return list(texts)
    return "\n".join(texts).encode("ascii").split(b"\n")


def _objects(items: Sequence[object]) -> np.ndarray:
    out = np.empty(len(items), dtype=object)
    out[:] = items
    return out


def _column(values: Sequence[str], idx: np.ndarray) -> np.ndarray:
    """values[idx] as an object array of bytes."""
    return _objects(_to_bytes(list(values)))[idx]


def _ints(values: np.ndarray, prefix: str = "", suffix: str = "") -> np.ndarray:
    """prefix + number + suffix as bytes for each value, as an object array.

    Each distinct value is formatted once (flags, MAPQ, NM and AS take few values).
    """
    distinct, inverse = np.unique(values, return_inverse=True)
    table = _objects([f"{prefix}{v}{suffix}".encode("ascii") for v in distinct.tolist()])
    return table[inverse.reshape(-1)]
