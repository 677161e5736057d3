"""Mapping on several devices (--device P:D,P:D, all, and the default): which devices a spec
names, and the SAM and counts of two devices, each holding a copy of the index, byte-identical
to one device's."""

import contextlib
import gzip
import io
import json
import os
import re
import signal
import subprocess
import sys
import time

import numpy as np
import pysam
import pytest

from conftest import LAMBDA
from marose import cli, device as device_module
from marose.bgzf import BgzfWriter
from marose.errors import MaroseError
from marose.reference import read_fasta
from test_map import ROOT, build_index, map_subprocess, run_map, simulate, write_reads
from test_pairs import simulate_pairs, write_mates


class FakePlatform:
    def __init__(self, name, version="OpenCL 3.0"):
        self.name, self.version = name, version


class FakeDevice:
    def __init__(self, name, kind, platform):
        self.name, self.type, self.platform = name, kind, platform


@pytest.fixture
def table(monkeypatch):
    """Two GPU platforms (two GPUs and a CPU on the first, one GPU on the second), then Oclgrind."""
    cl = device_module._cl()
    gpu, cpu = cl.device_type.GPU, cl.device_type.CPU
    first, second, simulator = FakePlatform("First"), FakePlatform("Second"), FakePlatform("Oclgrind")
    devices = ((0, 0, FakeDevice("gpu a", gpu, first)), (0, 1, FakeDevice("gpu b", gpu, first)),
               (0, 2, FakeDevice("cpu", cpu, first)), (1, 0, FakeDevice("gpu c", gpu, second)),
               (2, 0, FakeDevice("Oclgrind Simulator", gpu | cpu, simulator)))
    monkeypatch.setattr(device_module, "all_devices", lambda: devices)
    monkeypatch.delenv("PYOPENCL_CTX", raising=False)
    return devices


def test_the_default_is_every_gpu_of_the_platform(table):
    assert device_module.choose_devices(None) == ["0:0", "0:1"]
    assert device_module.choose_devices("all") == ["0:0", "0:1"]


def test_a_list_names_devices_by_number_or_name_and_each_once(table, monkeypatch):
    assert device_module.choose_devices("1:0, gpu b") == ["1:0", "0:1"]
    assert device_module.choose_devices("0:2") == ["0:2"]
    with pytest.raises(MaroseError, match="0:1 is named more than once"):
        device_module.choose_devices("0:1,gpu b")
    with pytest.raises(MaroseError, match="no OpenCL device matches 'gpu z'"):
        device_module.choose_devices("0:0,gpu z")
    monkeypatch.setenv("PYOPENCL_CTX", "1:0")  # one device named in the environment: that one alone
    assert device_module.choose_devices(None) == ["1:0"]


def test_without_a_gpu_the_default_is_the_one_cpu_device(table, monkeypatch):
    cpu_only = tuple(entry for entry in table if entry[2].name in ("cpu", "Oclgrind Simulator"))
    monkeypatch.setattr(device_module, "all_devices", lambda: cpu_only)
    assert device_module.choose_devices(None) == ["0:2"]
    assert device_module.choose_devices("all") == ["0:2"]


def test_without_a_gpu_pocl_3_is_preferred_over_other_pocls(monkeypatch):
    """PyPI's PoCL 3.0 mapped faster than the system's PoCL 5.0 (BENCHMARKS.md), whichever the
    ICD loader lists first; a runtime of another vendor keeps its place."""
    cpu = device_module._cl().device_type.CPU
    pocl5 = FakePlatform("Portable Computing Language", "OpenCL 3.0 PoCL 5.0+debian  Linux, LLVM 16.0.6")
    pocl3 = FakePlatform("Portable Computing Language", "OpenCL 3.0 PoCL 3.0-rc2  Linux, LLVM 14.0.6")
    other = FakePlatform("Another CPU runtime", "OpenCL 3.0 (Build 0)")
    monkeypatch.delenv("PYOPENCL_CTX", raising=False)

    def listing(*devices):
        listed = tuple((p, 0, device) for p, device in enumerate(devices))
        monkeypatch.setattr(device_module, "all_devices", lambda: listed)

    listing(FakeDevice("cpu-skylake", cpu, pocl5), FakeDevice("pthread", cpu, pocl3))
    assert device_module.choose_devices(None) == ["1:0"]
    assert device_module.choose_devices("cpu-skylake") == ["0:0"]  # named, it is taken
    listing(FakeDevice("pthread", cpu, pocl3), FakeDevice("cpu-skylake", cpu, pocl5))
    assert device_module.choose_devices(None) == ["0:0"]
    listing(FakeDevice("cpu", cpu, other), FakeDevice("pthread", cpu, pocl3))
    assert device_module.choose_devices(None) == ["0:0"]



def two_devices() -> str:
    """Two devices other than Oclgrind as 'P:D,P:D' (PyPI's and Debian's PoCL side by side), the
    one the tests use (PYOPENCL_CTX, or the default) first; the test is skipped without them."""
    import os

    real = [f"{p}:{d}" for p, d, found in device_module.all_devices() if not device_module.is_oclgrind(found)]
    if len(real) < 2:
        pytest.skip("fewer than two OpenCL devices besides Oclgrind")
    first = device_module.choose_devices(os.environ.get("PYOPENCL_CTX"))[0]
    return ",".join([first, next(number for number in real if number != first)])


def mapped(index, reads, out, stats, *args):
    assert run_map("-x", index, *reads, "-o", out, "-k", 3, "--stats", stats, *args) == 0
    record = json.load(open(stats))
    counts = {key: record[key] for key in ("reads", "mapped", "unique", "loci", "candidates", "cells", "lookups")}
    return [line for line in open(out) if not line.startswith("@PG")], counts, record["device"]


@pytest.mark.parametrize("xa", [False, True])
def test_two_devices_write_the_sam_and_counts_of_one(lambda_index, tmp_path, xa):
    devices = two_devices()
    ref = read_fasta(LAMBDA)
    fq = write_reads(tmp_path / "r.fq", simulate(ref, 90, 80, 3, np.random.default_rng(12)))
    index = lambda_index
    options = ["--batch-size", 7, *(["--xa"] if xa else [])]
    one = mapped(index, [fq], tmp_path / "one.sam", tmp_path / "one.json", "--device", devices.split(",")[0], *options)
    two = mapped(index, [fq], tmp_path / "two.sam", tmp_path / "two.json", "--device", devices, *options)
    assert two[0] == one[0] and len(one[0]) > 90
    assert two[1] == one[1] and one[1]["reads"] == 90
    assert two[2].count(",") == 1  # both devices named in the stats


def test_pairs_on_two_devices_are_the_pairs_of_one(lambda_index, tmp_path, monkeypatch):
    from marose import pairs

    devices = two_devices()
    monkeypatch.setattr(pairs, "LEARN_PAIRS", 40)  # the batches after them go to both devices
    first, second = simulate_pairs(read_fasta(LAMBDA), 120, np.random.default_rng(13))
    names = [f"p{i}" for i in range(len(first))]
    reads = [write_mates(tmp_path / "r1.fq", first, names, "/1"), write_mates(tmp_path / "r2.fq", second, names, "/2")]
    index = lambda_index
    one = mapped(index, reads, tmp_path / "one.sam", tmp_path / "one.json", "--device", devices.split(",")[0],
                 "--batch-size", 9)
    two = mapped(index, reads, tmp_path / "two.sam", tmp_path / "two.json", "--device", devices, "--batch-size", 9)
    assert two[:2] == one[:2] and len(one[0]) > 240


def test_devices_of_a_session_and_their_lanes_alternate(lambda_index, monkeypatch):
    """Consecutive batches go to different devices: the lanes of each device are dealt in turn."""
    from concurrent.futures import Future

    from indexer import store
    from marose.mapper import Mapper
    from marose.session import lane_mappers, open_session

    devices = two_devices()
    loading = Future()
    loading.set_result(store.load(lambda_index, False))
    session = open_session(loading, devices, False, False, lambda message: None)
    monkeypatch.setattr(cli, "mapping_lanes",
                        lambda device, on_device: 2 if on_device is session.copies[0] else 1)
    mapper = Mapper(session.index, session.device, 3, on_device=session.on_device)
    lanes = lane_mappers(session, mapper)
    assert [lane.on_device for lane in lanes] == [session.copies[0], session.copies[1], session.copies[0]]
    assert lanes[0] is mapper and lanes[1].device is session.copies[1].device
    assert lanes[1].genome is session.copies[1].genome and lanes[2].device is not mapper.device  # a lane's queue


# --- a process a device (marose/device_processes.py) -------------------------------------------------

def pocl_twice() -> dict:
    """The environment in which `--device all` is PoCL's CPU device twice; the test is skipped
    where the default device is a GPU, whose kind `--device all` takes instead."""
    if device_module.choose_device().type & device_module._cl().device_type.GPU:
        pytest.skip("--device all takes this machine's GPUs, not PoCL's CPU device twice")
    return dict(os.environ, POCL_DEVICES="pthread pthread")


def map_on_two(*args, stdin=None):
    """`marose map --device all` in a process of its own that sees two devices: PoCL's CPU device
    twice (POCL_DEVICES), each then mapped on by a process of its own (skipped where pocl_twice
    says)."""
    env = pocl_twice()
    return subprocess.run([sys.executable, "-m", "marose.cli", "map", "--device", "all", *map(str, args)],
                          env=env, input=stdin, capture_output=True, cwd=ROOT)


def records(path) -> list[str]:
    """The records of a SAM or BAM file as SAM lines, the header's @PG aside."""
    with pysam.AlignmentFile(str(path), check_sq=False) as sam:
        header = [line for line in str(sam.header).splitlines() if not line.startswith("@PG")]
        return header + [record.to_string() for record in sam]


@pytest.fixture(scope="module")
def lambda_reads(tmp_path_factory):
    return write_reads(tmp_path_factory.mktemp("reads") / "r.fq",
                       simulate(read_fasta(LAMBDA), 300, 80, 3, np.random.default_rng(21)))


@pytest.mark.parametrize("output, gz", [("two.sam", False), ("two.bam", False), ("-", False), ("two.sam", True)])
def test_a_process_a_device_writes_the_output_of_one_device(lambda_index, lambda_reads, tmp_path, output, gz):
    """Into a SAM file the processes write, BAM and stdout go through the main process; the
    processes read a plain file, gzip input comes through the main process."""
    options = ["-k", 3, "--batch-size", 7]
    suffix = ".bam" if output.endswith(".bam") else ".sam"
    assert run_map("-x", lambda_index, lambda_reads, "-o", tmp_path / f"one{suffix}", "--stats",
                   tmp_path / "one.json", *options) == 0
    out = tmp_path / output if output != "-" else "-"
    reads = lambda_reads
    if gz:
        reads = tmp_path / "r.fq.gz"
        reads.write_bytes(gzip.compress(open(lambda_reads, "rb").read()))
    result = map_on_two("-x", lambda_index, reads, "-o", out, "--stats", tmp_path / "two.json", *options)
    assert result.returncode == 0, result.stderr
    assert b"2 devices, a process each" in result.stderr
    if output == "-":
        out = tmp_path / "stdout.sam"
        out.write_bytes(result.stdout)
    assert records(out) == records(tmp_path / f"one{suffix}") and len(records(out)) > 300
    if suffix == ".bam":
        assert_blocks_of_one_stream(out.read_bytes())
    one, two = (json.load(open(tmp_path / f"{name}.json")) for name in ("one", "two"))
    assert {key: two[key] for key in one if not isinstance(one[key], (dict, str))} == \
        {key: one[key] for key in one if not isinstance(one[key], (dict, str))}
    assert two["reads"] == 300 and two["device"].count("pthread") == 2
    left = [p.name for p in tmp_path.iterdir() if not p.name.startswith(("one", "two.json", "stdout", "r.fq"))]
    assert left == ([] if output == "-" else [output])


def assert_blocks_of_one_stream(bam: bytes) -> None:
    """The BAM is cut into the BGZF blocks of its whole stream compressed in one go."""
    again = io.BytesIO()
    with contextlib.closing(BgzfWriter(again)) as writer:
        writer.write(gzip.decompress(bam))
    assert bam == again.getvalue()


def test_bam_blocks_compressed_by_the_processes_are_the_blocks_of_one_device(lambda_index, tmp_path):
    """Batches of many blocks each, compressed by the processes, and blocks that straddle the
    batches, compressed by the main process (bgzf.BlockPlacer)."""
    reads = write_reads(tmp_path / "r.fq", simulate(read_fasta(LAMBDA), 4000, 100, 3, np.random.default_rng(8)))
    options = ["-k", 3, "--batch-size", 900]
    assert run_map("-x", lambda_index, reads, "-o", tmp_path / "one.bam", *options) == 0
    result = map_on_two("-x", lambda_index, reads, "-o", tmp_path / "two.bam", *options)
    assert result.returncode == 0, result.stderr
    assert records(tmp_path / "two.bam") == records(tmp_path / "one.bam")
    bam = (tmp_path / "two.bam").read_bytes()
    assert_blocks_of_one_stream(bam)
    assert len(gzip.decompress(bam)) > 8 * 65280


@pytest.mark.parametrize("interleaved", [False, True])
def test_pairs_on_a_process_a_device_are_the_pairs_of_one_device(lambda_index, tmp_path, interleaved):
    """Every process learns the insert size from the same first pairs, sent to each, and pairs its
    own batches with it (interleaved: into BAM)."""
    first, second = simulate_pairs(read_fasta(LAMBDA), 150, np.random.default_rng(23))
    names = [f"p{i}" for i in range(len(first))]
    reads = [write_mates(tmp_path / "r1.fq", first, names, "/1"), write_mates(tmp_path / "r2.fq", second, names, "/2")]
    if interleaved:
        lines = [open(path).read().splitlines() for path in reads]
        both = [line for i in range(0, len(lines[0]), 4) for mate in lines for line in mate[i:i + 4]]
        (tmp_path / "r12.fq").write_text("\n".join(both) + "\n")
        reads = ["--interleaved", tmp_path / "r12.fq"]
    options = ["-k", 3, "--batch-size", 11, "--stats"]
    one_out, two_out = (tmp_path / f"{name}.{'bam' if interleaved else 'sam'}" for name in ("one", "two"))
    assert run_map("-x", lambda_index, *reads, "-o", one_out, *options, tmp_path / "one.json") == 0
    result = map_on_two("-x", lambda_index, *reads, "-o", two_out, *options, tmp_path / "two.json")
    assert result.returncode == 0, result.stderr
    assert b"a process each" in result.stderr and result.stderr.count(b"insert size from") == 1
    assert records(two_out) == records(one_out) and len(records(one_out)) > 300
    one, two = (json.load(open(tmp_path / f"{name}.json")) for name in ("one", "two"))
    assert [two[key] for key in ("reads", "mapped", "loci", "candidates")] == \
        [one[key] for key in ("reads", "mapped", "loci", "candidates")] and one["reads"] == 300


def test_pairs_in_repeats_on_a_process_a_device_keep_every_locus_of_each_mate(tmp_path):
    """Mates in a tandem repeat have more loci than --max-hits, and pairs of them other proper
    combinations: each process pairs from all of them, as one device does."""
    from conftest import mutate, write_fasta
    from marose.dna import decode
    from marose.reference import Reference

    rng = np.random.default_rng(24)
    codes = read_fasta(LAMBDA).codes
    unit = codes[20_000:20_150]
    tandem = np.concatenate([codes[:4_000], *(mutate(rng, unit, 2) for _ in range(12)), codes[4_000:8_000]])
    fasta = write_fasta(tmp_path / "g.fa", {"tandem": decode(tandem)})
    index = build_index(fasta)
    first, second = simulate_pairs(Reference(["tandem"], np.array([tandem.size]), tandem), 120, rng)
    names = [f"p{i}" for i in range(len(first))]
    reads = [write_mates(tmp_path / "r1.fq", first, names, "/1"), write_mates(tmp_path / "r2.fq", second, names, "/2")]
    options = ["-k", 3, "--max-hits", 1, "--batch-size", 9]
    assert run_map("-x", index, *reads, "-o", tmp_path / "one.sam", *options) == 0
    result = map_on_two("-q", "-x", index, *reads, "-o", tmp_path / "two.sam", *options)
    assert result.returncode == 0, result.stderr
    one = records(tmp_path / "one.sam")
    loci = [int(found.group(1)) for line in one if (found := re.search(r"\tHN:i:(\d+)", line))]
    assert records(tmp_path / "two.sam") == one and sum(n > 1 for n in loci) > 10


def test_byte_ranges_whose_qualities_start_like_records_map_as_on_one_device(lambda_index, lambda_reads, tmp_path):
    """The processes read a plain file in byte ranges that start at records: quality lines that
    start with '@' or '+' do not start one, and the last record may lack its newline."""
    lines = open(lambda_reads).read().splitlines()
    rng = np.random.default_rng(4)
    for i in range(0, len(lines), 4):  # records of many sizes, so that ranges end anywhere in one
        length = int(rng.integers(50, 81))
        lines[i + 1], lines[i + 3] = lines[i + 1][:length], "@+"[i % 8 // 4] + lines[i + 3][1:length]
    tricky = tmp_path / "tricky.fq"
    tricky.write_text("\n".join(lines))
    one = map_subprocess(["-x", lambda_index, tricky, "-o", tmp_path / "one.sam", "-k", 3])
    two = map_on_two("-q", "-x", lambda_index, tricky, "-o", tmp_path / "two.sam", "-k", 3, "--batch-size", 5)
    assert one.returncode == two.returncode == 0, two.stderr
    assert records(tmp_path / "two.sam") == records(tmp_path / "one.sam") and len(records(tmp_path / "one.sam")) > 300


def test_blank_lines_after_the_first_batch_are_no_range(lambda_index, lambda_reads, tmp_path):
    lines = open(lambda_reads).read().splitlines(keepends=True)
    short = tmp_path / "short.fq"
    short.write_text("".join(lines[:20]) + "\n\n\n")
    two = map_on_two("-q", "-x", lambda_index, short, "-o", tmp_path / "two.sam", "-k", 3, "--batch-size", 5,
                     "--stats", tmp_path / "two.json")
    assert two.returncode == 0, two.stderr
    assert json.load(open(tmp_path / "two.json"))["reads"] == 5


def test_a_bad_record_on_a_device_process_is_the_error_of_one_device(lambda_index, lambda_reads, tmp_path):
    lines = open(lambda_reads).read().splitlines(keepends=True)
    lines[4 * 150 + 3] = "II\n"  # record 151's qualities cut short, in a batch of the second process
    bad = tmp_path / "bad.fq"
    bad.write_text("".join(lines))
    one = map_subprocess(["-x", lambda_index, bad, "-o", tmp_path / "one.sam", "--batch-size", 7])
    two = map_on_two("-q", "-x", lambda_index, bad, "-o", tmp_path / "two.sam", "--batch-size", 7)
    assert one.returncode == two.returncode == 1
    assert b"record 151" in two.stderr and two.stderr == one.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.fq"]


def test_a_corrupted_index_on_a_process_a_device_fails_the_run(lambda_index, lambda_reads, tmp_path):
    """The first process checks the index files' checksums, for all of them."""
    import shutil

    index = tmp_path / "copy.marose"
    shutil.copytree(lambda_index, index)
    largest = max(index.iterdir(), key=lambda p: p.stat().st_size)
    data = bytearray(largest.read_bytes())
    data[len(data) // 2] ^= 1
    largest.write_bytes(bytes(data))
    out = tmp_path / "out"
    out.mkdir()
    result = map_on_two("-q", "-x", index, lambda_reads, "-o", out / "two.sam", "-k", 3, "--batch-size", 7)
    assert result.returncode == 1 and b"checksum mismatch" in result.stderr
    assert list(out.iterdir()) == []


@pytest.mark.parametrize("output", ["out.sam", "out.bam"])
def test_a_device_process_that_dies_fails_the_run_and_leaves_no_output(lambda_index, tmp_path, output):
    env = pocl_twice()
    reads = write_reads(tmp_path / "r.fq", simulate(read_fasta(LAMBDA), 20000, 80, 3, np.random.default_rng(22)))
    run = subprocess.Popen([sys.executable, "-m", "marose.cli", "map", "-q", "--device", "all", "-x", lambda_index,
                            reads, "-o", tmp_path / output, "--batch-size", "20"], env=env, cwd=ROOT,
                           stderr=subprocess.PIPE)
    deadline = time.time() + 60
    while not any(p.name.endswith(".tmp") for p in tmp_path.iterdir()):  # mapping has started
        assert run.poll() is None and time.time() < deadline
        time.sleep(0.05)
    os.kill(device_processes(run.pid)[-1], signal.SIGKILL)
    assert run.wait(60) == 1
    assert b"died (exit status -9)" in run.stderr.read()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.fq"]


def device_processes(pid: int) -> list[int]:
    """The processes that multiprocessing spawned for pid (Linux's /proc), its resource tracker aside."""
    found = []
    for entry in filter(str.isdigit, os.listdir("/proc")):
        try:
            stat, command = open(f"/proc/{entry}/stat").read(), open(f"/proc/{entry}/cmdline", "rb").read()
        except OSError:
            continue
        if int(stat.rsplit(")", 1)[1].split()[1]) == pid and b"spawn_main" in command:
            found.append(int(entry))
    return sorted(found)
