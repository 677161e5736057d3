"""Progress of `marose map`: the line texts, the bytes of the input counted as read, the live line."""

from __future__ import annotations

import gzip
import io
import os
import random

import pytest

from marose.progress import LINE_SECONDS, Progress, duration, eta_seconds, final_text, progress_text
from marose.reads import BytesRead, read_batches


def fastq(n: int, length: int = 50, seed: int = 1) -> bytes:
    rng = random.Random(seed)
    records = []
    for i in range(n):
        seq = "".join(rng.choice("ACGT") for _ in range(length))
        records.append(f"@read{i}\n{seq}\n+\n{'I' * length}\n")
    return "".join(records).encode()


class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.mark.parametrize("seconds, text", [(0, "0:00"), (59.4, "0:59"), (61, "1:01"), (3600, "1:00:00"),
                                           (3725, "1:02:05"), (-3, "0:00")])
def test_durations_read_as_minutes_and_seconds_then_hours(seconds, text):
    assert duration(seconds) == text


def test_a_progress_line_gives_the_share_read_and_the_time_left_when_the_size_is_known():
    assert progress_text(250_000, 2.0, 0.25, 6.0) == " 25.0% 250,000 reads, 125,000 reads/s, ETA 0:06"
    assert progress_text(10, 1.0, 0.001, None) == "  0.1% 10 reads, 10 reads/s, ETA --:--"
    assert progress_text(1_500, 3.0, None, None) == "1,500 reads, 500 reads/s"


def test_the_final_text_gives_reads_per_second_and_the_elapsed_time():
    assert final_text(1_000_000, 4.0) == "250,000 reads/s, 4.0 s"
    assert final_text(0, 0.0) == "0 reads/s, 0.0 s"


def test_the_time_left_follows_the_rate_so_far():
    assert eta_seconds(0.25, 2.0) == pytest.approx(6.0)
    assert eta_seconds(1.0, 5.0) == 0
    assert eta_seconds(None, 2.0) is None and eta_seconds(0.0, 2.0) is None


def test_the_share_of_the_input_is_estimated_from_the_bytes_a_parsed_read_took():
    seen = BytesRead(done=600, reads=300, total=1000)  # 2 bytes a read so far: 500 reads in all
    assert seen.share(100) == pytest.approx(0.2)
    assert seen.share(300) == pytest.approx(0.6)
    assert seen.share(900) == 1.0
    assert BytesRead(done=600, reads=300, total=None).share(100) is None
    assert BytesRead(done=0, reads=0, total=1000).share(0) is None


@pytest.mark.parametrize("compress", [False, True])
def test_the_bytes_read_are_the_file_bytes_compressed_or_not(tmp_path, compress):
    text = fastq(3000)
    path = tmp_path / ("r.fq.gz" if compress else "r.fq")
    path.write_bytes(gzip.compress(text, compresslevel=1) if compress else text)
    seen = BytesRead()
    batches = read_batches(str(path), 1000, seen)
    first = next(batches)
    assert seen.total == os.path.getsize(path)
    assert 0 < seen.done <= seen.total and len(first) == 1000 and seen.reads >= 1000
    rest = list(batches)
    assert sum(map(len, rest)) == 2000
    assert seen.done == seen.total == os.path.getsize(path) and seen.reads == 3000
    assert seen.share(3000) == 1.0 and seen.share(1500) == pytest.approx(0.5)
    if compress:
        assert seen.total < len(text)  # counted in compressed bytes


def test_a_long_gzip_input_is_counted_as_it_is_parsed(tmp_path, monkeypatch):
    """With small blocks the count grows batch by batch, in step with the reads parsed, and
    never passes the file's size. (ISA-L's inflater takes up to about 12 KB of input ahead of
    what it has given out: the file is large beside that.)"""
    from marose import reads

    monkeypatch.setattr(reads, "CHUNK_BYTES", 4096)
    monkeypatch.setattr(reads, "GZIP_OUT_BYTES", 4096)
    text = fastq(20000, seed=5)
    path = tmp_path / "r.fq.gz"
    path.write_bytes(gzip.compress(text, compresslevel=1))
    seen = BytesRead()
    seen_at = [(seen.done, seen.reads, len(batch)) for batch in read_batches(str(path), 1000, seen)]
    done = [d for d, _, _ in seen_at]
    assert done == sorted(done) and done[0] < seen.total // 4 and seen.done == seen.total
    mapped = 0
    for _, parsed, n in seen_at:
        mapped += n
        assert parsed - mapped < 1000  # the reader parses less than a batch ahead of this one
    # the share a batch's reads take follows the compressed bytes behind them
    halfway = BytesRead(done=seen_at[9][0], reads=seen_at[9][1], total=seen.total)
    assert halfway.share(10000) == pytest.approx(0.5, abs=0.05)


def test_stdin_has_no_known_size(monkeypatch):
    import sys

    r, w = os.pipe()
    os.write(w, fastq(10))
    os.close(w)
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.FileIO(r, "rb")))
    seen = BytesRead()
    assert len(next(read_batches("-", 100, seen))) == 10
    assert seen.total is None and seen.share(10) is None and seen.done > 0 and seen.reads == 10


def test_on_a_terminal_one_line_is_redrawn_with_the_percentage_and_eta():
    clock, screen, logged = Clock(), io.StringIO(), []
    seen = BytesRead(done=500, reads=100_000, total=1000)  # 200,000 reads in all
    progress = Progress(logged.append, screen, seen, clock)
    clock.now += 0.1
    progress.update(10)  # too soon after the start
    assert screen.getvalue() == ""
    clock.now += 1.9
    progress.update(50_000)
    assert screen.getvalue() == "\r[marose]  25.0% 50,000 reads, 25,000 reads/s, ETA 0:06"
    seen.done, seen.reads, clock.now = 1000, 200_000, clock.now + 6.0
    progress.update(200_000)
    last = screen.getvalue().split("\r")[-1]
    assert last == "[marose] 100.0% 200,000 reads, 25,000 reads/s, ETA 0:00"
    progress.clear()
    assert screen.getvalue().endswith("\r" + " " * len(last) + "\r")
    assert logged == []


def test_a_shorter_live_line_blanks_the_end_of_the_longer_one():
    clock, screen = Clock(), io.StringIO()
    progress = Progress(print, screen, BytesRead(), clock)  # stdin: no size, no percentage
    clock.now += 1
    progress.update(1_000_000)
    clock.now += 1_000_000
    progress.update(1_000_001)
    first, second = screen.getvalue().split("\r")[1:]
    assert first == "[marose] 1,000,000 reads, 1,000,000 reads/s"
    assert second == "[marose] 1,000,001 reads, 1 reads/s".ljust(len(first))


def test_off_a_terminal_a_plain_line_is_logged_every_ten_seconds():
    clock, logged = Clock(), []
    progress = Progress(logged.append, None, BytesRead(done=0, total=100), clock)
    clock.now += LINE_SECONDS - 1
    progress.update(100)
    clock.now += 2
    progress.update(2_000)
    clock.now += 1
    progress.update(3_000)
    assert logged == [f"2,000 reads, {2_000 / (LINE_SECONDS + 1):,.0f} reads/s"]
    progress.clear()
    assert len(logged) == 1
