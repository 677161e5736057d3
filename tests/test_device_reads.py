"""Reads packed on the device (marose/device_reads.py, cl/fastq.cl) against the host's packing,
and bad bytes found there reported as the host reports them."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from marose import device_reads, reads
from marose.errors import MaroseError
from marose.reads import ReadBatch, read_batches
from test_reads import FASTQ, RECORD_53_ERRORS, random_fastq, varied_fastq, write


def on_host(device, packed: device_reads.PackedOnDevice) -> reads.PackedReads:
    name_offset = device.read(packed.name_offset, np.uint32, len(packed) + 1)
    seq_offset = device.read(packed.seq_offset, np.uint32, len(packed) + 1)
    seqs = device.read(packed.seqs, np.uint8, int(seq_offset[-1]))
    quals = device.read(packed.quals, np.uint8, int(seq_offset[-1])) if packed.has_quals else None
    return reads.PackedReads(device.read(packed.names, np.uint8, int(name_offset[-1])), name_offset, seqs,
                             seq_offset, quals)


def assert_same(got: reads.PackedReads, want: reads.PackedReads) -> None:
    for field in ("names", "name_offset", "seqs", "seq_offset"):
        assert np.array_equal(getattr(got, field), getattr(want, field)), field
    assert (got.quals is None) == (want.quals is None)
    if want.quals is not None:
        assert np.array_equal(got.quals, want.quals)


@pytest.mark.parametrize("join", [16, 1 << 13])
@pytest.mark.parametrize("chunk", [1, 50, 333, 1 << 20])
def test_fastq_text_packed_on_the_device_as_on_the_host(device, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                        chunk: int, join: int) -> None:
    data = varied_fastq(300, seed=chunk)  # comments after spaces, tabs, \v and \f; lower case; IUPAC
    monkeypatch.setattr(reads, "CHUNK_BYTES", chunk)  # a batch's text in many pieces, cut between batches
    monkeypatch.setattr(reads, "JOIN_BYTES", join)  # and the records across two blocks apart where they can
    for path in (write(tmp_path / "r.fq", data), write(tmp_path / "crlf.fq", data.replace(b"\n", b"\r\n"))):
        batches = list(read_batches(path, 37))
        assert [len(b) for b in batches] == [37] * 8 + [4]
        assert all(b.pieces is not None for b in batches)
        if chunk < 1000:
            assert max(len(b.pieces) for b in batches) > 1
        for batch in batches:
            packed = device_reads.to_device(device, batch)
            assert packed.has_quals and np.array_equal(packed.lengths, batch.lengths())
            assert_same(on_host(device, packed), batch.packed)
            assert packed.n_count.tolist() == [sum(c not in b"ACGT" for c in seq) for seq in batch.seqs]


def test_a_dot_reads_as_n_on_the_device_as_on_the_host(device, tmp_path: Path) -> None:
    """'.' for N, as older Illumina files write it: packed as N and counted among the N."""
    lines = varied_fastq(300, seed=9).split(b"\n")
    plain = b"\n".join(lines)
    lines[1::4] = [seq.replace(b"N", b".").replace(b"n", b".") for seq in lines[1::4]]
    dotted = b"\n".join(lines)
    assert dotted.count(b".") > 300
    batch, = read_batches(write(tmp_path / "dots.fq", dotted), 300)
    want, = read_batches(write(tmp_path / "n.fq", plain), 300)
    assert batch.pieces is not None
    packed = device_reads.to_device(device, batch)
    assert_same(on_host(device, packed), want.packed)
    assert packed.n_count.tolist() == [sum(c not in b"ACGT" for c in seq) for seq in want.seqs]


def test_a_batch_of_many_chunks(device, tmp_path: Path) -> None:
    """Over 256 chunks of text (cl/fastq.cl's scan_chunks then sums several a work-item)."""
    data = random_fastq(10_000, seed=7)[0]
    batch, = read_batches(write(tmp_path / "r.fq", data), 10_000)
    assert len(data) > 300 * device_reads.NEWLINE_CHUNK and len(data) % 16
    packed = device_reads.to_device(device, batch)
    assert_same(on_host(device, packed), batch.packed)
    assert np.array_equal(packed.lengths, batch.lengths())


def test_text_copied_ahead_in_the_upload_lane(device, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The reading thread queues the text's copy in a queue of its own (as on a GPU); the mapping
    thread's kernels wait for it."""
    import marose.device

    monkeypatch.setattr(marose.device, "STAGING_BYTES", 4096)  # many turns of the lane's slots
    for name, value in (("staged", True), ("_staging", None), ("_lane", None)):
        monkeypatch.setattr(device, name, value)
    assert device.has_upload_lane
    monkeypatch.setattr(reads, "CHUNK_BYTES", 1000)
    batches = list(read_batches(write(tmp_path / "r.fq", varied_fastq(300, seed=5)), 120))
    for batch in batches:
        device_reads.queue_text_upload(device, batch)
    assert all(batch.text_on_device is not None for batch in batches)
    for batch in batches:
        packed = device_reads.to_device(device, batch)
        assert batch.text_on_device is None
        assert_same(on_host(device, packed), batch.packed)
    assert device._lane.queue is not device.queue


def test_packed_batches_are_uploaded_as_they_are(device, tmp_path: Path) -> None:
    fasta = ReadBatch(["a", "bb"], [b"ACGT", b"NRYAC"], None, 0)
    packed = device_reads.to_device(device, fasta)
    assert not packed.has_quals and packed.lengths.tolist() == [4, 5]
    assert_same(on_host(device, packed), fasta.packed)
    listed = ReadBatch(["a", "bb"], [b"ACGT", b"NRYAC"], [b"IIII", b"!!~~#"], 5)
    assert_same(on_host(device, device_reads.to_device(device, listed)), listed.packed)


@pytest.mark.parametrize("change, message", RECORD_53_ERRORS + [
    ((b"GATTRYKM", b"GATTRYK\xc1"), "FASTQ record 53 (line 210): sequence holds a byte that is not a letter: "
                                    "b'\\xc1' at position 8"),
    ((b"!!~~ABCD", b"!!~~ABC\x80"), "FASTQ record 53 (line 212): quality holds a byte outside '!'..'~'"),
    ((b"@r2/2\t", b"@" + b"x" * 255 + b"\t"), "record 53: read name longer than 254 characters, the most SAM allows"),
    ((b"@r2/2\t", b"r2/2\t"), "FASTQ record 53 (line 209): expected a header line starting with '@', got "
                              "b'r2/2\\tcomment'"),
    ((b"+r2/2\n", b"-r2/2\n"), "FASTQ record 53 (line 211): expected a '+' line, got b'-r2/2' (multi-line FASTQ "
                               "is not supported)"),
    ((b"+r2/2\n", b"\n"), "FASTQ record 53 (line 211): expected a '+' line, got b'' (multi-line FASTQ "
                          "is not supported)"),
])
def test_bad_records_found_on_the_device_are_reported_as_the_host_reports_them(
        device, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, change: tuple[bytes, bytes], message: str) -> None:
    data = FASTQ * 17 + FASTQ.replace(*change) + FASTQ  # the second record of the 18th copy: record 53
    path = write(tmp_path / "bad.fq", data)
    monkeypatch.setattr(reads, "CHUNK_BYTES", 100)
    first, second = read_batches(path, 40)  # read without complaint: the records are checked when packed
    device_reads.to_device(device, first)
    with pytest.raises(MaroseError) as caught:
        device_reads.to_device(device, second)
    assert str(caught.value) == f"{path}: {message}"


def test_a_name_of_254_characters_is_taken(device, tmp_path: Path) -> None:
    name = b"x" * 254
    batch, = read_batches(write(tmp_path / "r.fq", FASTQ.replace(b"@r3\n", b"@" + name + b" c\n")), 10)
    assert_same(on_host(device, device_reads.to_device(device, batch)), batch.packed)
    assert batch.names[2] == name.decode()


@pytest.mark.parametrize("later", [FASTQ.replace(b"+r2/2\n", b"-r2/2\n"), b"@r4\nACGT\n"])
def test_the_first_bad_record_is_the_error_reported(device, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                     later: bytes) -> None:
    """Bad bytes in an earlier piece of a batch than a bad layout, or than a record cut short at
    the end of the input (which the reading finds), are the error reported."""
    data = FASTQ.replace(b"GATTRYKM", b"GATT-YKM") + FASTQ * 20 + later
    path = write(tmp_path / "bad.fq", data)
    monkeypatch.setattr(reads, "CHUNK_BYTES", 100)
    with pytest.raises(MaroseError) as caught:
        for batch in read_batches(path, 1000):
            device_reads.to_device(device, batch)
    assert str(caught.value) == (f"{path}: FASTQ record 2 (line 6): sequence holds a byte that is not a letter: "
                                 "b'-' at position 5")
