#!/usr/bin/env python3
"""What a Dask worker's mapping of chunks costs without Dask: `cluster.map_chunk` called in one
process, chunk after chunk, as a worker calls it (its session kept open between chunks).

    scripts/probes/worker_chunks.py -x INDEX READS.fq [-k K] [--chunk-reads N] [--batch-reads B]
                                    [--rounds R] [--device P:D]

Prints each round's seconds and each chunk's. Compare with `marose map` of the same reads (its
--stats mapping seconds) to tell what the chunks cost from what Dask adds.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

from marose import cli, cluster  # noqa: E402
from marose.reads import read_batches  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-x", "--index", required=True)
    parser.add_argument("reads")
    parser.add_argument("-k", type=int, default=5)
    parser.add_argument("--chunk-reads", type=int, default=100_000)
    parser.add_argument("--batch-reads", type=int, help="a worker's batches (default: the device's)")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--device")
    args = parser.parse_args()
    if args.batch_reads:
        cli.default_batch_size = lambda device: args.batch_reads
    index = cluster.describe_index(args.index)
    options = {"device": args.device, "max_device_bytes": None, "threads": None, "verbose": False,
               "max_errors": args.k, "max_hits": 100, "xa": False, "read_group": None, "bam": False}
    chunks = [cluster.Chunk.of(batch) for batch in read_batches(args.reads, args.chunk_reads)]
    for round_number in range(1, args.rounds + 1):
        started, each = time.perf_counter(), []
        for chunk in chunks:
            at = time.perf_counter()
            cluster.map_chunk(index.path, index.fingerprint, options, chunk)
            each.append(time.perf_counter() - at)
        print(f"round {round_number}: {time.perf_counter() - started:.2f} s; chunks "
              + " ".join(f"{s:.3f}" for s in each), flush=True)
    os._exit(0)


if __name__ == "__main__":
    main()
