"""`marose map --scheduler`: the reads mapped by the workers of a Dask cluster (a LocalCluster of two
worker processes on the loopback interface, each on the CPU device) make the SAM/BAM of a local
run, the @PG line aside, also when a worker is killed mid-run; a missing or different index on a
worker, no scheduler and no Dask are clear errors."""

import gzip
import importlib.util
import json
import os
import signal
import socket
import time

import numpy as np
import pytest

from conftest import DATA, LAMBDA
from marose import cli, cluster, read_ranges
from marose.errors import MaroseError
from marose.reads import read_batches, rebatched
from test_serve import assert_same_as_alone, sam_text

READS = os.path.join(DATA, "lambda_reads.fq.gz")
needs_dask = pytest.mark.skipif(importlib.util.find_spec("distributed") is None,
                                reason="Dask is not installed (pip install '.[dask]')")


def local_cluster():
    """Two worker processes of one thread each, on the loopback interface."""
    from distributed import LocalCluster

    return LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1", dashboard_address=":0")


@pytest.fixture(scope="module")
def scheduler():
    with local_cluster() as dask_cluster:
        yield dask_cluster.scheduler_address



def map_both(lambda_index, scheduler, folder, name, reads, *options):
    """The outputs of a run on the cluster (in chunks of 300 reads) and of a local run (paths),
    whose counts (--stats) must be the same."""
    alone, spread, stats = folder / f"alone.{name}", folder / name, folder / "stats.json"
    counts = []
    for command in (["-x", lambda_index], ["--scheduler", scheduler, "-x", lambda_index, "--batch-size", "300"]):
        out = spread if "--scheduler" in command else alone
        assert cli.main(["map", "-q", *command, reads, "-o", str(out), "--stats", str(stats), *map(str, options)]) == 0
        record = json.load(open(stats))
        counts.append({key: record[key] for key in ("reads", "mapped", "unique", "loci", "candidates", "cells", "lookups")})
    assert counts[1] == counts[0] and counts[0]["reads"] >= 2000
    return spread, alone


@needs_dask
@pytest.mark.parametrize("name, options", [("out.sam", ["-k", "5"]),
                                           ("out.bam", ["--xa", "--max-hits", "3", "-R", r"@RG\tID:r1\tSM:s1"])])
def test_the_cluster_writes_the_local_output(lambda_index, scheduler, tmp_path, name, options):
    spread, alone = map_both(lambda_index, scheduler, tmp_path, name, READS, *options)
    assert_same_as_alone(spread, alone)
    assert sorted(os.listdir(tmp_path)) == sorted([name, f"alone.{name}", "stats.json"])  # no temporary file left


@needs_dask
@pytest.mark.parametrize("workers_see_it", [True, False])
def test_the_workers_write_the_records_into_a_sam_file_they_see(lambda_index, scheduler, tmp_path, monkeypatch,
                                                                 workers_see_it):
    """Into a SAM file that every worker sees, each chunk's records are written by its worker and
    do not go through the client; else they do; the output is the local one either way."""
    through_client, written = [], cluster._written
    monkeypatch.setattr(cluster, "_written", lambda *a: through_client.append(1) or written(*a))
    if not workers_see_it:
        monkeypatch.setattr(cluster, "_written_in_place", lambda client, out: None)
    spread, alone = map_both(lambda_index, scheduler, tmp_path, "out.sam", READS, "-k", "5")
    assert_same_as_alone(spread, alone)
    assert bool(through_client) != workers_see_it


def test_a_worker_that_cannot_open_the_output_says_so(tmp_path):
    missing = str(tmp_path / "gone" / ".out.sam.tmp")
    with pytest.raises(MaroseError, match=f"this process cannot write the output {missing}"):
        cluster._write_records(([b"r\t4\n"], None), missing, 0)
    out = tmp_path / "out.sam"
    out.write_bytes(b"@HD\n")
    assert cluster._write_records(([b"r\t4\n", b"s\t4\n"], None), str(out), 4) == 8
    assert out.read_bytes() == b"@HD\nr\t4\ns\t4\n"


@needs_dask
def test_a_plain_file_s_chunks_go_as_where_their_reads_lie(lambda_index, scheduler, tmp_path, monkeypatch):
    """Every worker reads the plain file as the client does: the first chunk goes as where its
    pieces lie, the others as byte ranges that the client does not read; none carries text."""
    plain = tmp_path / "r.fq"
    plain.write_bytes(gzip.open(READS).read())
    made, of, of_range = [], cluster.Chunk.of, cluster.Chunk.of_range

    def recorded(make):
        def made_by(*args):
            made.append(make(*args))
            return made[-1]
        return made_by

    monkeypatch.setattr(cluster.Chunk, "of", recorded(of))
    monkeypatch.setattr(cluster.Chunk, "of_range", recorded(of_range))
    spread, alone = map_both(lambda_index, scheduler, tmp_path, "out.sam", str(plain), "-k", "5")
    assert_same_as_alone(spread, alone)
    assert len(made) >= 7 and all(chunk.fastq is None for chunk in made)
    assert made[0].places and all(chunk.span and not chunk.places for chunk in made[1:])


@needs_dask
def test_a_bad_record_in_a_byte_range_is_named_as_a_local_run_names_it(lambda_index, scheduler, tmp_path, capsys):
    lines = gzip.open(READS, "rt").read().splitlines(keepends=True)
    lines[4 * 1500 + 3] = "II\n"  # record 1501's qualities cut short, in a later chunk
    bad = tmp_path / "bad.fq"
    bad.write_text("".join(lines))
    messages = []
    for command in (["-x", lambda_index], ["--scheduler", scheduler, "-x", lambda_index, "--batch-size", "300"]):
        assert cli.main(["map", "-q", *command, str(bad), "-o", str(tmp_path / "out.sam")]) == 1
        messages.append(capsys.readouterr().err)
    assert "FASTQ record 1501 (line 6004)" in messages[0] and messages[1] == messages[0]
    assert sorted(os.listdir(tmp_path)) == ["bad.fq"]


@needs_dask
def test_fasta_reads_and_the_default_k(lambda_index, scheduler, tmp_path):
    """FASTA chunks travel parsed; k comes from the first read, the same for every chunk."""
    fasta = tmp_path / "r.fa"
    lines = gzip.open(READS, "rt").read().splitlines()
    fasta.write_text("".join(f">{lines[i][1:]}\n{lines[i + 1]}\n" for i in range(0, len(lines), 4)))
    spread, alone = map_both(lambda_index, scheduler, tmp_path, "out.sam", str(fasta))
    assert_same_as_alone(spread, alone)


@needs_dask
def test_a_worker_killed_mid_run_loses_and_repeats_nothing(lambda_index, tmp_path, monkeypatch):
    """After the first chunk is written, a worker that holds chunks is killed (SIGKILL); Dask maps
    them again on the other worker, and the output is the local one."""
    reads = tmp_path / "many.fq.gz"
    reads.write_bytes(gzip.compress(gzip.open(READS).read() * 3, compresslevel=1))
    killed = []
    result = cluster._result

    def result_then_kill(future):
        got = result(future)
        deadline = time.monotonic() + 10
        while not killed and time.monotonic() < deadline:
            busy = [w for w in list(dask_cluster.scheduler.workers.values()) if w.processing]
            if busy:
                killed.append((busy[0].address, len(busy[0].processing)))
                os.kill(busy[0].pid, signal.SIGKILL)
            time.sleep(0.01)
        return got

    monkeypatch.setattr(cluster, "_result", result_then_kill)
    with local_cluster() as dask_cluster:
        spread, alone = map_both(lambda_index, dask_cluster.scheduler_address, tmp_path, "out.sam", str(reads))
        assert killed and killed[0][1] >= 1  # the worker held a chunk when it died
        assert killed[0][0] not in dask_cluster.scheduler.workers
    assert_same_as_alone(spread, alone)
    primary = [line.split("\t")[0] for line in sam_text(spread) if not line.startswith("@")
               and not int(line.split("\t")[1]) & 256]
    assert len(primary) == 6000 and len(set(primary)) == 2000  # each read thrice, as in the input


@needs_dask
def test_an_index_missing_on_the_workers_is_a_clear_error(scheduler, tmp_path, capsys):
    out = tmp_path / "out.sam"
    assert cli.main(["map", "--scheduler", scheduler, "-x", str(tmp_path / "none.fa"), READS, "-o", str(out)]) == 1
    err = capsys.readouterr().err
    assert "the Dask worker tcp://127.0.0.1:" in err and "none.fa: no index found" in err
    assert "a copy at that path on each" in err and not os.listdir(tmp_path)


def test_a_worker_with_another_index_at_the_path_refuses_it(lambda_index):
    chunk = cluster.Chunk.of(next(read_batches(READS, 10)))
    with pytest.raises(MaroseError, match="another index than the one the first worker read"):
        cluster.map_chunk(lambda_index, "0" * 64, {"device": None, "max_device_bytes": None, "threads": None}, chunk)


@needs_dask
def test_no_scheduler_at_the_address_is_a_clear_error(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(cluster, "CONNECT_SECONDS", 1)
    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))
        address = f"tcp://127.0.0.1:{unused.getsockname()[1]}"
    assert cli.main(["map", "--scheduler", address, "-x", LAMBDA, READS, "-o", str(tmp_path / "o.sam")]) == 1
    assert f"--scheduler {address}: no Dask scheduler answered" in capsys.readouterr().err
    assert not os.listdir(tmp_path)


def test_without_dask_the_scheduler_option_says_what_to_install(tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(__import__("sys").modules, "distributed", None)  # as if not installed
    assert cli.main(["map", "--scheduler", "tcp://127.0.0.1:8786", READS, "-o", str(tmp_path / "o.sam")]) == 1
    assert "--scheduler needs Dask: pip install 'marose[dask]'" in capsys.readouterr().err


@pytest.mark.parametrize("options", [["--explain"], ["--server", "/tmp/s.sock"], ["--interleaved"], [READS]])
def test_options_a_cluster_run_does_not_take(tmp_path, capsys, options):
    assert cli.main(["map", "--scheduler", "tcp://127.0.0.1:8786", READS, *options]) == 1
    assert "--scheduler" in capsys.readouterr().err


@pytest.mark.parametrize("fasta", [False, True])
def test_chunks_carry_the_reads_and_cut_into_batches(tmp_path, fasta):
    """A chunk's reads, sent as FASTQ text or parsed FASTA, come back whole, and cut into batches in order."""
    path = READS
    if fasta:
        lines = gzip.open(READS, "rt").read().splitlines()
        path = tmp_path / "r.fa"
        path.write_text("".join(f">{lines[i][1:]}\n{lines[i + 1]}\n" for i in range(0, len(lines), 4)))
    batches = read_batches(str(path), 700)
    _, batch = next(batches), next(batches)
    chunk = cluster.Chunk.of(batch)
    assert (chunk.fastq is None) == fasta and chunk.first_index == 700
    back = chunk.batch()
    assert (back.names, back.seqs, back.quals) == (batch.names, batch.seqs, batch.quals)
    parts = list(rebatched(back, 300))
    assert [len(p) for p in parts] == [300, 300, 100] and [p.first_index for p in parts] == [700, 1000, 1300]
    assert sum((p.names for p in parts), []) == batch.names and sum((p.seqs for p in parts), []) == batch.seqs
    assert np.array_equal(np.concatenate([p.lengths() for p in parts]), batch.lengths())


def test_a_chunk_read_where_it_lies_in_its_file(tmp_path):
    """Chunk.of with the input's path: the worker reads the text there; a file gone is a clear error."""
    plain = tmp_path / "r.fq"
    plain.write_bytes(gzip.open(READS).read())
    batches = read_batches(str(plain), 700)
    _, batch = next(batches), next(batches)
    chunk = cluster.Chunk.of(batch, str(plain))
    assert chunk.fastq is None and chunk.places and cluster.Chunk.of(batch).places is None
    back = chunk.batch()
    assert (back.names, back.seqs, back.quals, back.first_index) == (batch.names, batch.seqs, batch.quals, 700)
    end = batch.pieces[-1].at + batch.pieces[-1].text.size
    part = next(read_ranges.ranges(str(plain), end, plain.stat().st_size, 100_000))
    ranged = cluster.Chunk.of_range(part, "r.fq").batch()  # numbered from 0 within the range
    rest = next(read_batches(str(plain), 1400 + len(ranged)))
    assert (ranged.names, ranged.seqs, ranged.first_index) == (rest.names[1400:], rest.seqs[1400:], 0)
    plain.unlink()
    for lost in (chunk, cluster.Chunk.of_range(part, "r.fq")):
        with pytest.raises(MaroseError, match="cannot read"):
            lost.batch()
