"""BAM (SAM spec 4.2) as htslib writes it from SAM text (`samtools view -b`): the header, and the
record of a SAM line (the twin of cl/bam_records.cl, which makes a batch's records on the
device). Without numpy, so that a client of `marose serve` starts quickly."""

from __future__ import annotations

import struct

MAGIC = b"BAM\x01"
CIGAR_OPS = b"MIDNSHP=X"
NT16 = b"=ACMGRSVTWYHKDBN"  # a base's 4-bit code is its place here (any other letter: N)
MISSING_QUALITY = 0xFF


def nt16_table() -> bytes:
    """The 4-bit code of every byte as htslib's seq_nt16_table gives it: the letters of NT16 in
    either case, U as T, the digits 0-3 as A, C, G, T, and 15 (N) for anything else."""
    table = bytearray([15]) * 256
    for code, letter in enumerate(NT16):
        table[letter] = table[letter | 0x20] = code
    table[ord("=")] = 0
    for letter in b"Uu":
        table[letter] = NT16.index(b"T")
    for digit, letter in zip(b"0123", b"ACGT"):
        table[digit] = NT16.index(letter)
    return bytes(table)


_NT16 = nt16_table()


def contigs_of_header(header: str) -> list[tuple[str, int]]:
    """The (name, length) of each @SQ line of a SAM header, in order."""
    contigs = []
    for line in header.splitlines():
        if line.startswith("@SQ\t"):
            fields = dict(field.split(":", 1) for field in line.split("\t")[1:] if ":" in field)
            contigs.append((fields["SN"], int(fields["LN"])))
    return contigs


def bam_header(header: str) -> bytes:
    """The BAM header of a SAM header: its text as it is, then its @SQ contigs."""
    text = header.encode("utf-8")
    parts = [MAGIC, struct.pack("<i", len(text)), text, struct.pack("<i", len(contigs := contigs_of_header(header)))]
    for name, length in contigs:
        encoded = name.encode("utf-8") + b"\0"
        parts += [struct.pack("<i", len(encoded)), encoded, struct.pack("<i", length)]
    return b"".join(parts)


def bam_records(text: bytes, contig_names: list[str]) -> bytes:
    """The BAM records of SAM text (whole lines) over the contigs named, in the header's order."""
    ids = {name.encode("utf-8"): i for i, name in enumerate(contig_names)}
    return b"".join(bam_record(line, ids) for line in text.splitlines())


def reg2bin(begin: int, end: int) -> int:
    """The BAI bin of the 0-based interval [begin, end) (SAM spec 5.3, htslib's hts_reg2bin)."""
    end -= 1
    for shift, first in ((14, 4681), (17, 585), (20, 73), (23, 9), (26, 1)):
        if begin >> shift == end >> shift:
            return first + (begin >> shift)
    return 0


def bam_record(line: bytes, contig_ids: dict[bytes, int]) -> bytes:
    """The BAM record (its block_size first) of one SAM line (without its newline), as htslib's
    sam_parse1 and bam_write1 make it. ValueError for a line it cannot take: fewer than 11
    fields, an unknown contig, SEQ and QUAL of different lengths, or a tag of a type other than
    A, i, Z or H (which marose does not write)."""
    fields = line.split(b"\t")
    if len(fields) < 11:
        raise ValueError(f"{len(fields)} fields")
    name, flag, rname, pos, mapq, cigar, rnext, pnext, tlen, seq, qual = fields[:11]
    flag = int(flag)
    ref_id = -1 if rname == b"*" else contig_ids[rname]
    pos = int(pos) - 1
    if ref_id < 0 or pos < 0:
        ref_id, flag = -1, flag | 4
    ops = _cigar(cigar)
    if not ops:
        flag |= 4
    span = sum(length for length, op in ops if op in (0, 2, 3, 7, 8)) if not flag & 4 else 1
    next_id = ref_id if rnext == b"=" else -1 if rnext == b"*" else contig_ids[rnext]
    next_pos = int(pnext) - 1
    if next_pos < 0:
        next_id = -1
    seq = b"" if seq == b"*" else seq
    if qual == b"*":
        quals = bytes([MISSING_QUALITY]) * len(seq)
    elif len(qual) == len(seq):
        quals = bytes(q - 33 for q in qual)
    else:
        raise ValueError("SEQ and QUAL of different lengths")
    body = b"".join([
        struct.pack("<iiBBHHHiiii", ref_id, pos, len(name) + 1, int(mapq), reg2bin(pos, pos + max(span, 1)), len(ops),
                    flag, len(seq), next_id, next_pos, int(tlen)),
        name, b"\0",
        b"".join(struct.pack("<I", length << 4 | op) for length, op in ops),
        _packed(seq), quals, b"".join(_tag(field) for field in fields[11:])])
    return struct.pack("<i", len(body)) + body


def _cigar(text: bytes) -> list[tuple[int, int]]:
    """(length, op code) of each CIGAR operation ('*': none)."""
    if text == b"*":
        return []
    ops, number = [], 0
    for byte in text:
        if 48 <= byte <= 57:
            number = number * 10 + byte - 48
        else:
            ops.append((number, CIGAR_OPS.index(byte)))
            number = 0
    return ops


def _packed(seq: bytes) -> bytes:
    """Bases as 4-bit codes, two a byte, the first in the high half."""
    codes = [_NT16[b] for b in seq] + [0]
    return bytes(codes[i] << 4 | codes[i + 1] for i in range(0, len(seq), 2))


def _tag(field: bytes) -> bytes:
    """One optional field: XX:i as the narrowest integer type htslib picks, A, Z and H as they are."""
    key, kind, value = field[:2], field[3:4], field[5:]
    if kind == b"i":
        number = int(value)
        if value.startswith(b"-"):
            for code, fmt, low in ((b"c", "<b", -128), (b"s", "<h", -32768), (b"i", "<i", None)):
                if low is None or number >= low:
                    return key + code + struct.pack(fmt, number)
        for code, fmt, high in ((b"C", "<B", 255), (b"S", "<H", 65535), (b"I", "<I", None)):
            if high is None or number <= high:
                return key + code + struct.pack(fmt, number)
    if kind in (b"Z", b"H"):
        return key + kind + value + b"\0"
    if kind == b"A" and len(value) == 1:
        return key + kind + value
    raise ValueError(f"tag {field.decode(errors='replace')}")
