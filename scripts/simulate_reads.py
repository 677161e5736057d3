#!/usr/bin/env python3
"""Simulate reads from a reference, with their true origin in the read name.

    scripts/simulate_reads.py GENOME.fa OUT.fq --n 100000 --length 40 --subs 3        # the H3 protocol
    scripts/simulate_reads.py GENOME.fa OUT.fq --n 100000 --length 100 --max-edits 4  # subs and indels
    scripts/simulate_reads.py GENOME.fa R1.fq --mate2 R2.fq --fragment 300 --max-edits 4  # pairs, FR

Reads come from random positions of random contigs (weighted by length) on a
random strand; windows holding N are drawn again. --subs places exactly that many
substitutions; --max-edits places 0..N edits, each a substitution, insertion or
deletion. Names are `sim<i>_<contig>_<1-based pos>_<strand>_<edits>`.
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from marose.dna import N_CODE, decode, encode, reverse_complement  # noqa: E402
from marose.reference import read_fasta  # noqa: E402


def mutate(window: np.ndarray, length: int, subs: int, max_edits: int, rng) -> tuple[np.ndarray, int]:
    """The read from a window of at least length + max_edits bases."""
    read = window.copy()
    if subs:
        where = rng.choice(length, subs, replace=False)
        read[where] = (read[where] + rng.integers(1, 4, subs)) % 4
        return read[:length], subs
    bases = list(read)
    n_edits = int(rng.integers(0, max_edits + 1))
    for _ in range(n_edits):
        kind, at = rng.integers(3), int(rng.integers(1, length - 1))
        if kind == 0:
            bases[at] = (bases[at] + rng.integers(1, 4)) % 4
        elif kind == 1:
            bases.insert(at, int(rng.integers(4)))
        else:
            del bases[at]
    return np.array(bases[:length], dtype=np.uint8), n_edits


def simulate(ref, n: int, length: int, subs: int, max_edits: int, seed: int):
    rng = np.random.default_rng(seed)
    span = length + max_edits
    usable = np.maximum(ref.lengths - span, 0).astype(np.float64)
    weights = usable / usable.sum()
    for i in range(n):
        while True:
            contig = int(rng.choice(len(ref.names), p=weights))
            start = int(ref.offsets[contig] + rng.integers(0, usable[contig]))
            window = ref.codes[start : start + span]
            if not np.any(window == N_CODE):
                break
        read, edits = mutate(window, length, subs, max_edits, rng)
        strand = "-" if rng.integers(2) else "+"
        if strand == "-":
            read = reverse_complement(read)
        pos = start - int(ref.offsets[contig]) + 1
        yield f"sim{i}_{ref.names[contig]}_{pos}_{strand}_{edits}", decode(read)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("genome")
    parser.add_argument("out", help="FASTQ output")
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--length", type=int, default=100)
    parser.add_argument("--subs", type=int, default=0, help="exactly this many substitutions per read")
    parser.add_argument("--max-edits", type=int, default=0, help="0..N substitutions and indels per read")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--mate2", metavar="FQ", help="pairs: out gets mate 1 and FQ mate 2 (FR) of each fragment")
    parser.add_argument("--fragment", type=int, default=300, help="with --mate2, the fragments' length")
    args = parser.parse_args()
    if args.mate2 and args.fragment < args.length:
        parser.error(f"--fragment {args.fragment} is shorter than a mate (--length {args.length})")
    ref = read_fasta(args.genome)
    quality = "I" * args.length
    if args.mate2:
        write_pairs(ref, args, quality)
        return
    with open(args.out, "w") as out:
        for name, seq in simulate(ref, args.n, args.length, args.subs, args.max_edits, args.seed):
            out.write(f"@{name}\n{seq}\n+\n{quality}\n")


def write_pairs(ref, args, quality: str) -> None:
    """Fragments of args.fragment bases, their edits as single reads get them, each read from
    either strand: mate 1 its first args.length bases, mate 2 the reverse complement of its last."""
    with open(args.out, "w") as one, open(args.mate2, "w") as two:
        for name, seq in simulate(ref, args.n, args.fragment, args.subs, args.max_edits, args.seed):
            mate2 = decode(reverse_complement(encode(seq[-args.length:])))
            one.write(f"@{name}/1\n{seq[:args.length]}\n+\n{quality}\n")
            two.write(f"@{name}/2\n{mate2}\n+\n{quality}\n")


if __name__ == "__main__":
    main()
