"""Reference genomes: FASTA input, contigs in one coordinate space, 2-bit packing, N runs and
the IUPAC letters that MD writes."""

from __future__ import annotations

import gzip
import os
import zlib
from functools import cached_property

import numpy as np

from .dna import N_CODE, encode
from .errors import MaroseError

MAX_GENOME_LENGTH = 2**32 - 1  # positions are stored as uint32
BLOCK_BYTES = 16 << 20  # of FASTA text parsed at a time
_LF, _CR = ord("\n"), ord("\r")
_ACGTN = b"ACGTNacgtn"
_OTHER_IUPAC = b"URYKMSWBDHVurykmswbdhv"  # the letters a reference may hold besides ACGTN
_NOT_A_BASE, _OTHER_BASE = b"\xff", b"\x05"
# Sequence bytes to codes, a bytes.translate table: A, C, G, T 0..3 and N 4 in either case, the
# other IUPAC letters _OTHER_BASE (until their letters are kept), any other byte _NOT_A_BASE.
_TO_CODES_ARRAY = np.full(256, _NOT_A_BASE[0], dtype=np.uint8)
_TO_CODES_ARRAY[np.frombuffer(_OTHER_IUPAC, dtype=np.uint8)] = _OTHER_BASE[0]
_TO_CODES_ARRAY[np.frombuffer(_ACGTN, dtype=np.uint8)] = encode(_ACGTN)
_TO_CODES = _TO_CODES_ARRAY.tobytes()
_MD_LETTERS = np.frombuffer(b"ACGTN", dtype=np.uint8)
# The code of each other IUPAC letter (upper case): U is T, as bwa and samtools read it; an
# ambiguous letter takes N's code, which matches no base of a read.
_OTHER_CODES = np.full(256, N_CODE, dtype=np.uint8)
_OTHER_CODES[ord("U")] = encode("T")[0]
NO_IUPAC = np.zeros((0, 2), dtype=np.int64)


class Reference:
    """Contigs concatenated into one coordinate space of base codes (N and ambiguous IUPAC
    letters are 4, U is T).

    The bases are held as codes, or packed (2 bits a base, pack_2bit) with their N runs as an
    index stores them, or both: each form is made from the other when first asked for, so that
    loading an index unpacks nothing that the device unpacks faster."""

    def __init__(self, names: list[str], lengths: np.ndarray, codes: np.ndarray | None = None,
                 packed: np.ndarray | None = None, runs: np.ndarray | None = None,
                 iupac: np.ndarray | None = None):
        if codes is None and (packed is None or runs is None):
            raise ValueError("a reference needs its codes, or its packed bases and N runs")
        self.names = names
        self.lengths = lengths  # int64 per contig
        # (n, 2) int64: the position and upper-case letter of each base other than A, C, G, T
        # and N, by position; for MD, which writes the reference's letter
        self.iupac = NO_IUPAC if iupac is None else iupac
        if codes is not None:
            self.__dict__["codes"] = codes
        if packed is not None and runs is not None:
            self.__dict__["packed"], self.__dict__["runs"] = packed, runs

    @cached_property
    def codes(self) -> np.ndarray:
        """uint8 base codes, all contigs back to back."""
        return apply_n_runs(unpack_2bit(self.packed, self.total_length), self.runs)

    @cached_property
    def packed(self) -> np.ndarray:
        """Four bases a byte (pack_2bit); N is stored as A."""
        return pack_2bit(self.codes)

    @cached_property
    def runs(self) -> np.ndarray:
        """The N runs, (n, 2) int64 [start, end)."""
        return n_runs(self.codes)

    @property
    def offsets(self) -> np.ndarray:
        """Start of each contig in the concatenated coordinates, plus the total length."""
        return np.concatenate(([0], np.cumsum(self.lengths))).astype(np.int64)

    @property
    def total_length(self) -> int:
        return int(np.sum(self.lengths))

    def contig_codes(self) -> list[np.ndarray]:
        """Each contig's base codes (views of codes)."""
        offsets = self.offsets
        return [self.codes[a:b] for a, b in zip(offsets[:-1], offsets[1:])]

    def contig_of(self, positions: np.ndarray) -> np.ndarray:
        """Index of the contig holding each concatenated position."""
        return np.searchsorted(self.offsets, positions, side="right") - 1


def _opener(path: str):
    """gzip.open for a gzip file, else open."""
    with open(path, "rb") as raw:
        return gzip.open if raw.read(2) == b"\x1f\x8b" else open


def _first_byte(path: str) -> bytes:
    try:
        with _opener(path)(path, "rb") as handle:
            for line in handle:
                stripped = line.strip()
                if stripped:
                    return stripped[:1]
    except (OSError, EOFError) as exc:
        raise MaroseError(f"{path}: cannot be read ({exc})") from None
    return b""


def read_fasta(path: str) -> Reference:
    """Read a FASTA or FASTA.gz reference, checking what would make a bad index: a sequence line
    may hold IUPAC nucleotide letters only (either case)."""
    if not os.path.isfile(path):
        raise MaroseError(f"{path}: no such file")
    first = _first_byte(path)
    if first == b"":
        raise MaroseError(f"{path}: the file is empty")
    if first != b">":
        raise MaroseError(f"{path}: not a FASTA file (it should start with '>')")
    parser = _FastaParser(path)
    try:
        with _opener(path)(path, "rb") as handle:
            while block := handle.read(BLOCK_BYTES):
                parser.feed(block)
    except (OSError, EOFError, zlib.error) as exc:
        raise MaroseError(f"{path}: not a readable FASTA file ({exc})") from None
    return parser.reference()


class _FastaParser:
    """The contigs of FASTA text fed in blocks cut anywhere. Sequence text is checked and
    encoded a block at a time, by bytes.translate; only a header line waits for its end."""

    def __init__(self, path: str):
        self.path = path
        self.names: list[str] = []
        self.seen: set[str] = set()
        self.starts: list[int] = []  # of each contig in codes
        self.codes = bytearray()
        self.iupac: list[np.ndarray] = []
        self.line = 1  # the line number where the text not yet parsed starts
        self.at_line_start = True  # whether that text starts a line
        self.held = b""  # text not yet parsed: a header line without its end, or a '\r'

    def feed(self, block: bytes) -> None:
        text = self.held + block if self.held else block
        end = len(text)
        last_line = text.rfind(b"\n") + 1
        if text.startswith(b">", last_line) and (last_line or self.at_line_start):
            end = last_line
        elif text.endswith(b"\r"):  # its '\n' may come next
            end -= 1
        self.held = text[end:]
        self._parse(text[:end])

    def reference(self) -> Reference:
        """The contigs read, once the whole text has been fed."""
        self._parse(self.held)
        self._end_contig()
        if not self.names:
            raise MaroseError(f"{self.path}: no contigs found")
        codes = np.frombuffer(self.codes, dtype=np.uint8)
        starts = np.array(self.starts, dtype=np.int64)
        lengths = np.diff(np.append(starts, codes.size))
        if codes.size > MAX_GENOME_LENGTH:
            raise MaroseError(f"{self.path}: {codes.size} bases; marose indexes at most {MAX_GENOME_LENGTH}")
        if (only_n := np.minimum.reduceat(codes, starts) == N_CODE).any():
            raise MaroseError(f"{self.path}: contig '{self.names[int(np.argmax(only_n))]}' holds only N")
        iupac = np.concatenate(self.iupac) if self.iupac else NO_IUPAC
        return Reference(self.names, lengths, codes, iupac=iupac)

    def _parse(self, text: bytes) -> None:
        """Sequence and whole header lines; text starts a line when at_line_start."""
        at = 0
        for head in self._header_starts(text):
            self._sequence(text, at, head)
            end = text.find(b"\n", head)  # none only at the end of the input
            self._header(text, head, len(text) if end < 0 else end)
            at = len(text) if end < 0 else end + 1
            self.line += 1
        self._sequence(text, at, len(text))
        if text:
            self.at_line_start = text.endswith(b"\n")

    def _header_starts(self, text: bytes) -> list[int]:
        """Where the header lines of text start (found by '>', which is rare, not by '\\n>')."""
        starts = []
        at = text.find(b">")
        while at >= 0:
            starts_line = text[at - 1] == _LF if at else self.at_line_start
            if starts_line:
                starts.append(at)
                at = text.find(b"\n", at)  # past the header, which may hold '>'
                if at < 0:
                    break
            at = text.find(b">", at + 1)
        return starts

    def _header(self, text: bytes, head: int, end: int) -> None:
        words = text[head + 1:end].split()
        if not words:
            raise MaroseError(f"{self.path}: line {self.line}: a header line without a name")
        name = words[0].decode("utf-8", "replace")
        self._end_contig()
        if name in self.seen:
            raise MaroseError(f"{self.path}: contig name '{name}' occurs twice")
        self.seen.add(name)
        self.names.append(name)
        self.starts.append(len(self.codes))

    def _end_contig(self) -> None:
        if self.starts and self.starts[-1] == len(self.codes):
            raise MaroseError(f"{self.path}: contig '{self.names[-1]}' has no sequence")

    def _sequence(self, text: bytes, begin: int, end: int) -> None:
        """Checks and encodes the sequence lines text[begin:end], in one pass of bytes.translate
        where they hold A, C, G, T and N only."""
        lines = text[begin:end]
        codes = lines.translate(_TO_CODES, b"\r\n")
        cr = b"\r" in lines
        lone_cr = cr and lines.count(b"\r") != lines.count(b"\r\n")
        if lone_cr or _NOT_A_BASE in codes or (codes and not self.names):
            self._fail(text, begin, end)
        if _OTHER_BASE in codes:
            codes = self._other_bases_kept(lines, codes)
        self.codes += codes
        self.line += lines.count(b"\n") if cr else len(lines) - len(codes)

    def _other_bases_kept(self, lines: bytes, codes: bytes) -> bytes:
        """codes with the codes of the IUPAC letters other than ACGTN, whose letters go to iupac."""
        codes = np.frombuffer(codes, dtype=np.uint8).copy()
        at = np.flatnonzero(codes == _OTHER_BASE[0])
        letters = np.frombuffer(lines.translate(None, b"\r\n"), dtype=np.uint8)[at] & 0xDF
        self.iupac.append(np.stack([at + len(self.codes), letters], axis=1).astype(np.int64))
        codes[at] = _OTHER_CODES[letters]
        return codes.tobytes()

    def _fail(self, text: bytes, begin: int, end: int) -> None:
        """Raises the error of the first byte of text[begin:end] that a sequence line may not hold."""
        lines = np.frombuffer(text, dtype=np.uint8)[begin:end]
        line_end = (lines == _LF) | (lines == _CR) & (np.append(lines[1:], 0) == _LF)
        bad = ~line_end & ((_TO_CODES_ARRAY[lines] == _NOT_A_BASE[0]) | (not self.names))
        at = begin + int(np.argmax(bad))
        line = self.line + text.count(b"\n", begin, at)
        where = f"{self.path}: line {line}"
        if not self.names:
            raise MaroseError(f"{where}: text before the first header line ('>name')")
        if text[at] == ord(">"):
            raise MaroseError(f"{where}: '>' inside a sequence line; a header line must start with '>' on a "
                              "line of its own")
        raise MaroseError(f"{where}: sequence line holds {bytes([text[at]])!r}, which is not an IUPAC "
                          "nucleotide letter (ACGTUNRYKMSWBDHV, either case); fix or remove it")


def pack_2bit(codes: np.ndarray) -> np.ndarray:
    """Four bases per byte, first base in the low bits; N is stored as A (see n_runs)."""
    padded = np.zeros(-(-codes.size // 4) * 4, dtype=np.uint8)
    padded[: codes.size] = codes & 3
    quads = padded.reshape(-1, 4)
    return quads[:, 0] | (quads[:, 1] << 2) | (quads[:, 2] << 4) | (quads[:, 3] << 6)


_UNPACK = ((np.arange(256, dtype=np.uint8)[:, None] >> np.array([0, 2, 4, 6], dtype=np.uint8)) & 3).astype(np.uint8)


def unpack_2bit(packed: np.ndarray, length: int) -> np.ndarray:
    """Inverse of pack_2bit (without the N runs)."""
    return _UNPACK[np.asarray(packed)].reshape(-1)[:length]


def n_runs(codes: np.ndarray, chunk: int = 1 << 26) -> np.ndarray:
    """Runs of code 4 as an (n, 2) int64 array of [start, end), found chunk by chunk (a
    genome-sized mask would take a byte a base)."""
    edges, before = [], False  # whether the base before the chunk is N
    for start in range(0, codes.size, chunk):
        is_n = codes[start:start + chunk] == N_CODE
        changes = np.flatnonzero(is_n[1:] != is_n[:-1]) + 1
        if bool(is_n[0]) != before:
            changes = np.insert(changes, 0, 0)
        edges.append(changes.astype(np.int64) + start)
        before = bool(is_n[-1])
    if before:
        edges.append(np.array([codes.size], dtype=np.int64))
    return np.concatenate(edges or [np.empty(0, np.int64)]).reshape(-1, 2)


def apply_n_runs(codes: np.ndarray, runs: np.ndarray) -> np.ndarray:
    """Put the N runs back into unpacked codes (in place) and return them."""
    runs = np.asarray(runs, dtype=np.int64).reshape(-1, 2)
    lengths = runs[:, 1] - runs[:, 0]
    before = np.cumsum(lengths) - lengths
    codes[np.arange(int(lengths.sum())) + np.repeat(runs[:, 0] - before, lengths)] = N_CODE
    return codes


def md_letters(codes: np.ndarray, at: np.ndarray, iupac: np.ndarray) -> np.ndarray:
    """The reference's letters at positions `at` of codes as MD writes them (uint8 ASCII): the
    letter that iupac (Reference.iupac) holds there, else A, C, G, T or N."""
    at = np.asarray(at, dtype=np.int64)
    letters = _MD_LETTERS[np.minimum(codes[at], N_CODE)]
    if len(iupac) and at.size:
        i = np.minimum(np.searchsorted(iupac[:, 0], at), len(iupac) - 1)
        found = iupac[i, 0] == at
        letters[found] = iupac[i[found], 1]
    return letters
