"""Nucleotide codes: A=0, C=1, G=2, T=3; anything else (N, IUPAC) is 4."""

import numpy as np

N_CODE = 4
_ENCODE = np.full(256, N_CODE, dtype=np.uint8)
for _i, _b in enumerate(b"ACGT"):
    _ENCODE[_b] = _i
    _ENCODE[ord(chr(_b).lower())] = _i
_DECODE = np.frombuffer(b"ACGTN", dtype=np.uint8)
_COMPLEMENT = np.array([3, 2, 1, 0, N_CODE], dtype=np.uint8)


def encode(seq) -> np.ndarray:
    """Bytes or str of bases to codes (uint8); case-insensitive."""
    if isinstance(seq, str):
        seq = seq.encode("ascii", "replace")
    return _ENCODE[np.frombuffer(seq, dtype=np.uint8)]


def decode(codes: np.ndarray) -> str:
    """Codes back to an upper-case string (4 becomes N)."""
    return _DECODE[np.asarray(codes, dtype=np.uint8)].tobytes().decode("ascii")


def complement(codes: np.ndarray) -> np.ndarray:
    """Complement of each code (N stays N)."""
    return _COMPLEMENT[np.asarray(codes)]


def reverse_complement(codes: np.ndarray) -> np.ndarray:
    """Reverse complement of codes along the last axis (N stays N)."""
    return _COMPLEMENT[np.asarray(codes)[..., ::-1]]
