"""SAM records written on the device (marose/sam_records.py) == sam.format_batch, byte for byte."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from indexer import cli as index_cli
from indexer import store
from marose.extend import DeviceHits
from marose.mapper import Mapper
from marose.reads import read_batches
from marose.sam import format_batch
from marose.sam_records import DeviceSamFormatter

DATA = Path(__file__).parent / "data"


@pytest.fixture(scope="module")
def lambda_index(tmp_path_factory):
    fasta = tmp_path_factory.mktemp("lambda") / "lambda.fa.gz"
    fasta.write_bytes((DATA / "lambda_virus.fa.gz").read_bytes())
    assert index_cli.main([str(fasta), "-q"]) == 0
    return store.load(str(fasta) + ".marose")


def fasta_copy(fastq: Path, path: Path, rng: np.random.Generator) -> Path:
    """The reads as FASTA (no qualities), some with IUPAC codes other than N."""
    lines = []
    for batch in read_batches(str(fastq), 1000):
        for name, seq in zip(batch.names, batch.seqs):
            seq = bytearray(seq)
            if rng.random() < 0.2:
                seq[int(rng.integers(0, len(seq)))] = ord("RYKMSWBDHV"[int(rng.integers(0, 10))])
            lines.append(f">{name} description\n{seq.decode()}\n")
    path.write_text("".join(lines))
    return path


@pytest.mark.parametrize("fastq", [True, False])
@pytest.mark.parametrize("max_hits, read_group, xa", [(1, None, False), (3, "run1", False), (100, None, False),
                                                     (1, None, True), (3, "run1", True), (100, None, True)])
def test_device_records_equal_format_batch(device, lambda_index, tmp_path, fastq: bool, max_hits: int,
                                           read_group: str | None, xa: bool) -> None:
    reads = DATA / "lambda_reads.fq.gz"
    if not fastq:
        reads = fasta_copy(reads, tmp_path / "reads.fa", np.random.default_rng(3))
    batch = next(read_batches(str(reads), 400))
    names = lambda_index.reference.names
    on_host = Mapper(lambda_index, device, 6, max_hits)
    on_device = Mapper(lambda_index, device, 6, max_hits, text_on_device=True)
    hits, n_loci = on_host.map_batch(batch)
    device_hits, device_loci = on_device.map_batch(batch)
    assert isinstance(device_hits, DeviceHits) and np.array_equal(n_loci, device_loci)
    want = format_batch(batch, hits, n_loci, names, max_hits, xa, read_group)
    formatter = DeviceSamFormatter(device, on_device.genome, names, max_hits, read_group, xa)
    got = formatter.format(device_hits, device_loci).into()
    assert got.tobytes() == want
    records = want.decode().splitlines()
    assert sum(int(r.split("\t")[1]) & 16 != 0 for r in records) > 20  # reverse-strand records
    assert sum(int(r.split("\t")[1]) == 4 for r in records) > 20  # unmapped reads (N beyond k)
    assert (sum("XA:Z:" in r for r in records) > 0) == (xa and max_hits > 1)


@pytest.mark.parametrize("fastq", [True, False])
def test_device_records_of_reads_without_hits(device, lambda_index, tmp_path, fastq: bool) -> None:
    """N beyond k, too short, and empty: SEQ and QUAL of an empty read are '*', as SAM writes a
    sequence not stored."""
    reads = tmp_path / ("r.fq" if fastq else "r.fa")
    reads.write_text("@a\nACGTNNNNNNACGTNNNNNNACGT\n+\nIIIIIIIIIIIIIIIIIIIIIIII\n@b\nAC\n+\nII\n@c\n\n+\n\n" if fastq
                     else ">a\nACGTNNNNNNACGTNNNNNNACGT\n>b\nAC\n>c\n")
    batch = next(read_batches(str(reads), 10))
    names = lambda_index.reference.names
    mapper = Mapper(lambda_index, device, 2, 5, text_on_device=True)
    hits, n_loci = mapper.map_batch(batch)
    got = DeviceSamFormatter(device, mapper.genome, names, 5, None).format(hits, n_loci).into()
    quals = (b"IIIIIIIIIIIIIIIIIIIIIIII", b"II") if fastq else (b"*", b"*")
    assert got.tobytes() == (b"a\t4\t*\t0\t0\t*\t*\t0\t0\tACGTNNNNNNACGTNNNNNNACGT\t%s\tHN:i:0\n"
                             b"b\t4\t*\t0\t0\t*\t*\t0\t0\tAC\t%s\tHN:i:0\n"
                             b"c\t4\t*\t0\t0\t*\t*\t0\t0\t*\t*\tHN:i:0\n" % quals)
    host_hits, host_loci = Mapper(lambda_index, device, 2, 5).map_batch(batch)
    assert format_batch(batch, host_hits, host_loci, names, 5, False, None) == got.tobytes()
