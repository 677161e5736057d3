"""Byte ranges of a plain FASTQ file that start at records (marose/read_ranges.py), checked against
where the records really start (maps that read them: test_many_devices.py, test_cluster.py)."""

import numpy as np
import pytest

from marose import read_ranges, reads
from marose.errors import RecordError


def tricky_fastq(rng, n: int, tail: str = "\n") -> tuple[bytes, list[int]]:
    """n records whose quality lines often start with '@' or '+' (which a record's header and
    third line start with), of lengths 1 to 120; and where each record starts."""
    text, starts = b"", []
    for i in range(n):
        length = int(rng.integers(1, 121))
        seq = "".join(rng.choice(list("ACGTN"), length))
        qual = "".join(rng.choice(list("@+I#5"), length))
        starts.append(len(text))
        text += f"@r{i} x\n{seq}\n+{'' if i % 2 else f'r{i}'}\n{qual}\n".encode()
    return text[:-1] + tail.encode(), starts


@pytest.mark.parametrize("probe", [read_ranges.PROBE_BYTES, 8])
@pytest.mark.parametrize("tail", ["\n", "", "\n\n\n"])
def test_the_record_start_after_every_offset_is_the_next_real_one(tmp_path, monkeypatch, probe, tail):
    """Small probes read more text, again and again, where a record's lines run past them."""
    monkeypatch.setattr(read_ranges, "PROBE_BYTES", probe)
    text, starts = tricky_fastq(np.random.default_rng(3), 60, tail)
    path = tmp_path / "r.fq"
    path.write_bytes(text)
    assert sum(line.startswith(b"@") for line in text.split(b"\n")) > 60  # qualities that start with '@'
    with reads.InputFiles() as files:
        for offset in range(len(text) + 1):
            want = next((s for s in starts if s >= offset), len(text))
            assert read_ranges.record_start(files, str(path), offset, len(text)) == want, offset


@pytest.mark.parametrize("size", [1, 150, 1000, 10**6])
def test_ranges_cover_the_file_and_hold_its_records(tmp_path, size):
    text, starts = tricky_fastq(np.random.default_rng(5), 80, "\n\n")
    path = tmp_path / "r.fq"
    path.write_bytes(text)
    ranges = list(read_ranges.ranges(str(path), starts[3], len(text), size))
    assert ranges[0].at == starts[3] and ranges[-1].at + ranges[-1].size == len(text)
    assert all(a.at + a.size == b.at and b.at in starts for a, b in zip(ranges, ranges[1:]))
    got = []
    with reads.InputFiles() as files:
        for part in ranges:
            batch = reads.batch_of_range(files.read(str(path), part.at, part.size), str(path), part.at)
            got += list(zip(batch.names, batch.seqs, batch.quals))
    whole = next(reads.read_batches(str(path), 1000))
    assert got == list(zip(whole.names, whole.seqs, whole.quals))[3:]
    last_record_end = len(text.rstrip(b"\n")) + 1
    assert list(read_ranges.ranges(str(path), last_record_end, len(text), size)) == []  # blank lines only


def test_a_bad_record_is_named_by_its_number_in_the_whole_input(tmp_path):
    text, starts = tricky_fastq(np.random.default_rng(7), 50)
    bad = text[:starts[31]] + b"@r31\nACGT\n+\nII\n" + text[starts[32]:]
    path = tmp_path / "bad.fq"
    path.write_bytes(bad)
    with pytest.raises(RecordError, match="FASTQ record 2 "):  # numbered within its range
        reads.batch_of_range(bad[starts[30]:], str(path), starts[30]).packed
    error = read_ranges.first_bad_record(str(path))
    assert "FASTQ record 32 (line 128): quality length 2 differs" in str(error)
    path.write_bytes(text)
    assert read_ranges.first_bad_record(str(path)) is None
