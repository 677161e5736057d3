"""Reference genomes: FASTA input, contigs in one coordinate space, 2-bit packing, N runs."""

from __future__ import annotations

import gzip
import os
from functools import cached_property

import numpy as np

from .dna import N_CODE, encode
from .errors import MaroseError

MAX_GENOME_LENGTH = 2**32 - 1  # positions are stored as uint32


class Reference:
    """Contigs concatenated into one coordinate space of base codes (N and IUPAC are 4).

    The bases are held as codes, or packed (2 bits a base, pack_2bit) with their N runs as an
    index stores them, or both: each form is made from the other when first asked for, so that
    loading an index unpacks nothing that the device unpacks faster."""

    def __init__(self, names: list[str], lengths: np.ndarray, codes: np.ndarray | None = None,
                 packed: np.ndarray | None = None, runs: np.ndarray | None = None):
        if codes is None and (packed is None or runs is None):
            raise ValueError("a reference needs its codes, or its packed bases and N runs")
        self.names = names
        self.lengths = lengths  # int64 per contig
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

    def contig_of(self, positions: np.ndarray) -> np.ndarray:
        """Index of the contig holding each concatenated position."""
        return np.searchsorted(self.offsets, positions, side="right") - 1


def _first_byte(path: str) -> bytes:
    with open(path, "rb") as raw:
        magic = raw.read(2)
    opener = gzip.open if magic == b"\x1f\x8b" else open
    try:
        with opener(path, "rb") as handle:
            for line in handle:
                stripped = line.strip()
                if stripped:
                    return stripped[:1]
    except (OSError, EOFError) as exc:
        raise MaroseError(f"{path}: cannot be read ({exc})") from None
    return b""


def read_fasta(path: str) -> Reference:
    """Read a FASTA or FASTA.gz reference, checking what would make a bad index."""
    if not os.path.isfile(path):
        raise MaroseError(f"{path}: no such file")
    first = _first_byte(path)
    if first == b"":
        raise MaroseError(f"{path}: the file is empty")
    if first != b">":
        raise MaroseError(f"{path}: not a FASTA file (it should start with '>')")
    names: list[str] = []
    parts: list[np.ndarray] = []
    seen: set[str] = set()
    try:
        import pysam  # here, so that loading an index does not import it

        with pysam.FastxFile(path) as fasta:
            for record in fasta:
                name, sequence = record.name, record.sequence or ""
                if name in seen:
                    raise MaroseError(f"{path}: contig name '{name}' occurs twice")
                seen.add(name)
                codes = encode(sequence)
                if codes.size == 0:
                    raise MaroseError(f"{path}: contig '{name}' has no sequence")
                if not np.any(codes < N_CODE):
                    raise MaroseError(f"{path}: contig '{name}' holds only N")
                names.append(name)
                parts.append(codes)
    except (OSError, ValueError) as exc:
        raise MaroseError(f"{path}: not a readable FASTA file ({exc})") from None
    if not parts:
        raise MaroseError(f"{path}: no contigs found")
    lengths = np.array([p.size for p in parts], dtype=np.int64)
    if lengths.sum() > MAX_GENOME_LENGTH:
        raise MaroseError(f"{path}: {lengths.sum()} bases; marose indexes at most {MAX_GENOME_LENGTH}")
    return Reference(names, lengths, np.concatenate(parts))


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


def n_runs(codes: np.ndarray) -> np.ndarray:
    """Runs of code 4 as an (n, 2) int64 array of [start, end)."""
    is_n = np.concatenate(([False], codes == N_CODE, [False]))
    edges = np.flatnonzero(is_n[1:] != is_n[:-1])
    return edges.reshape(-1, 2).astype(np.int64)


def apply_n_runs(codes: np.ndarray, runs: np.ndarray) -> np.ndarray:
    """Put the N runs back into unpacked codes (in place) and return them."""
    runs = np.asarray(runs, dtype=np.int64).reshape(-1, 2)
    lengths = runs[:, 1] - runs[:, 0]
    before = np.cumsum(lengths) - lengths
    codes[np.arange(int(lengths.sum())) + np.repeat(runs[:, 0] - before, lengths)] = N_CODE
    return codes
