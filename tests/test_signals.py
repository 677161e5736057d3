"""SIGTERM (kill, a batch scheduler) ends `marose map` and `marose-index` like Ctrl-C: one line
on stderr, exit status 143 and nothing left behind, neither output nor temporary files."""

import contextlib
import gzip
import os
import signal
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

from conftest import DATA, ROOT, command_env

ENV = command_env()
WAIT_SECONDS = 60  # for the run to get under way; it is ended well before



def start(module: str, *args) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", module, *map(str, args)], stdin=subprocess.PIPE,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=ROOT, env=ENV)


def wait_for(proc: subprocess.Popen, ready) -> None:
    """Polls ready() until it holds; fails if the process ends first or it takes too long."""
    deadline = time.monotonic() + WAIT_SECONDS
    while not ready():
        assert proc.poll() is None, proc.stderr.read().decode()
        assert time.monotonic() < deadline, "the run did not get under way"
        time.sleep(0.05)


def feed_forever(proc: subprocess.Popen) -> threading.Thread:
    """Writes the bundled reads to the process's stdin over and over, so that the run cannot
    finish, until the process ends."""
    block = gzip.open(os.path.join(DATA, "lambda_reads.fq.gz")).read()

    def feed() -> None:
        try:
            while True:
                proc.stdin.write(block)
        except (OSError, ValueError):  # the process ended
            pass

    thread = threading.Thread(target=feed, daemon=True)
    thread.start()
    return thread


def terminate(proc: subprocess.Popen) -> tuple[int, str]:
    """Sends SIGTERM; the exit status and stderr."""
    proc.send_signal(signal.SIGTERM)
    try:
        status = proc.wait(timeout=30)
    finally:
        proc.kill()
    return status, proc.stderr.read().decode()


@pytest.mark.parametrize("name", ["out.sam", "out.bam"])
def test_sigterm_ends_a_map_and_leaves_no_output(lambda_index, tmp_path, name):
    folder = tmp_path / "out"
    folder.mkdir()
    proc = start("marose.cli", "map", "-q", "-x", lambda_index, "-", "-k", "3", "--batch-size", "2000",
                 "-o", folder / name)
    feeder = feed_forever(proc)
    try:
        # records reached the temporary file: the run is mapping and writing
        wait_for(proc, lambda: any(p.name.endswith(".tmp") and p.stat().st_size > 0 for p in folder.iterdir()))
        status, stderr = terminate(proc)
    finally:
        proc.kill()
        with contextlib.suppress(OSError):  # reads left in its buffer, the process gone
            proc.stdin.close()
        feeder.join(timeout=10)
    assert status == 128 + signal.SIGTERM, stderr
    assert "marose: terminated; no output written" in stderr and "Traceback" not in stderr
    assert list(folder.iterdir()) == []


def test_sigterm_ends_an_index_build_and_leaves_no_index(tmp_path):
    # 12 contigs of 512 kbp, one segment each: about 4 s to build on 2 cores, the segments' files
    # written in the last half second
    rng = np.random.default_rng(5)
    fasta = tmp_path / "g.fa"
    with open(fasta, "wb") as handle:
        for number in range(12):
            handle.write(b">c%d\n" % number + np.frombuffer(b"ACGT", np.uint8)[rng.integers(0, 4, 1 << 19)].tobytes()
                         + b"\n")
    proc = start("indexer.cli", fasta, "--segment-size", 1 << 19, "-q")
    try:
        # the genome is written and the patterns are being bucketed: the build is under way
        wait_for(proc, lambda: any((d / "scratch").exists() for d in tmp_path.glob("g.fa.marose.tmp*")))
        status, stderr = terminate(proc)
    finally:
        proc.kill()
        proc.stdin.close()
    assert status == 128 + signal.SIGTERM, stderr
    assert "marose-index: terminated; no index written" in stderr and "Traceback" not in stderr
    assert [p.name for p in tmp_path.iterdir()] == ["g.fa"]


# An action that sends itself SIGTERM, then waits (boundedly) for it to be raised.
SELF_TERM = """
import os, signal, sys, time
from marose.errors import Terminated, run_command

def sigterm():
    os.kill(os.getpid(), signal.SIGTERM)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        time.sleep(0.01)
    print("not raised")
"""


def run_script(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", SELF_TERM + code], capture_output=True, text=True, cwd=ROOT,
                          env=ENV, timeout=60)


def test_a_second_sigterm_does_not_cut_the_cleanup_short():
    result = run_script("""
def action(log):
    try:
        sigterm()
    finally:
        os.kill(os.getpid(), signal.SIGTERM)  # delivered here, while the first one's cleanup runs
        time.sleep(0.05)
        print("cleaned up")

status = run_command("prog", action, True, "nothing left")
print("handler restored", signal.getsignal(signal.SIGTERM) is signal.SIG_DFL)
sys.exit(status)
""")
    assert result.returncode == 143, result.stderr
    assert result.stdout.split("\n") == ["cleaned up", "handler restored True", ""]
    assert result.stderr == "prog: terminated; nothing left\n"


def test_a_sigterm_after_one_that_was_swallowed_still_ends_the_run():
    """A C extension may clear the exception of a signal handler that ran in its call back into
    Python: the next SIGTERM raises again."""
    result = run_script("""
def action(log):
    try:
        sigterm()
    except Terminated:  # as a C extension may do
        print("swallowed")
    sigterm()

sys.exit(run_command("prog", action, True, "nothing left"))
""")
    assert result.returncode == 143, result.stderr
    assert result.stdout == "swallowed\n"
    assert result.stderr == "prog: terminated; nothing left\n"


def test_a_sigterm_held_while_workers_start_ends_the_run_after_the_block():
    """signals_held: the block runs to its end (the index build starts its worker processes in
    one), then the SIGTERM that came meanwhile ends the run as usual."""
    result = run_script("""
from marose.errors import signals_held

def action(log):
    with signals_held():
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(0.05)
        print("block done")
    time.sleep(10)
    print("not raised")

sys.exit(run_command("prog", action, True, "nothing left"))
""")
    assert result.returncode == 143, result.stderr
    assert result.stdout == "block done\n"
    assert result.stderr == "prog: terminated; nothing left\n"
