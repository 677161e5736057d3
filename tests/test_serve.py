"""`marose serve` and `marose map --server`: the served SAM/BAM is the standalone one (the @PG line
aside); requests run one after another; a client that dies leaves the server healthy; a server
that dies leaves the client with an error and no output; --stop, the socket's mode, a stale socket."""

import contextlib
import gzip
import os
import signal
import socket
import stat
import subprocess
import sys
import threading
import time

import numpy as np
import pysam
import pytest

from conftest import DATA, LAMBDA, ROOT, command_env
from indexer import cli as index_cli
from marose import cli
from marose.reference import read_fasta
from test_pairs import simulate_pairs, write_mates

READS = os.path.join(DATA, "lambda_reads.fq.gz")
WAIT_SECONDS = 60  # for a server to listen, or a run to get under way; each happens well before
RUN_SECONDS = 120  # for a command to end


def environment(**extra) -> dict:
    return command_env(**extra)


def marose(*args, **options) -> subprocess.Popen:
    """`python -m marose.cli ARGS` in a process of its own."""
    options.setdefault("env", environment())
    options.setdefault("stderr", subprocess.PIPE)
    return subprocess.Popen([sys.executable, "-m", "marose.cli", *map(str, args)], cwd=ROOT, **options)


def finished(proc: subprocess.Popen) -> tuple[int, str]:
    """The exit status and stderr of a process, which must end within RUN_SECONDS."""
    try:
        _, err = proc.communicate(timeout=RUN_SECONDS)
    finally:
        proc.kill()
    return proc.returncode, err.decode() if err else ""


def wait_for(ready, proc: subprocess.Popen, what: str) -> None:
    """Polls ready() until it holds; fails if proc ends first or it takes WAIT_SECONDS."""
    deadline = time.monotonic() + WAIT_SECONDS
    while not ready():
        assert proc.poll() is None, f"{what}: the process ended ({proc.returncode})"
        assert time.monotonic() < deadline, f"{what}: not within {WAIT_SECONDS} s"
        time.sleep(0.02)


class Server:
    """A `marose serve` process listening at path (its messages in log)."""

    def __init__(self, index: str, path, folder, *args, env=None):
        self.path, self.log = str(path), folder / "serve.log"
        with open(self.log, "wb") as log:
            self.proc = marose("serve", "-x", index, *(["--socket", path] if path else []), *args,
                               stderr=log, env=env or environment())
        if path:
            wait_for(lambda: os.path.exists(self.path), self.proc, f"serve at {path}\n{self.messages()}")

    def messages(self) -> str:
        return self.log.read_text()

    def end(self) -> None:
        """Ends the process, at once if asking fails."""
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


@pytest.fixture
def short_folder(tmp_path_factory):
    """New folders with short paths, for sockets (whose paths may hold 107 bytes)."""
    return lambda: tmp_path_factory.mktemp("s")


@pytest.fixture
def start_server(short_folder):
    """Starts servers (index, socket path, serve's options) and ends them after the test."""
    servers = []

    def start(index, path, *args, env=None):
        server = Server(index, path, short_folder(), *args, env=env)
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.end()



@pytest.fixture(scope="module")
def served(lambda_index, tmp_path_factory):
    """A server of the lambda index shared by the module's tests."""
    folder = tmp_path_factory.mktemp("s")
    server = Server(lambda_index, folder / "s.sock", folder)
    yield server
    server.end()


@pytest.fixture(scope="module")
def many_reads(tmp_path_factory):
    """The bundled reads ten times over (20,000 reads), gzip: a run long enough to stop in the
    middle with small batches, whose reading takes a thread of its own."""
    path = tmp_path_factory.mktemp("reads") / "many.fq.gz"
    path.write_bytes(gzip.compress(gzip.open(READS).read() * 10, compresslevel=1))
    return str(path)


def map_alone(lambda_index, out, *args):
    assert cli.main(["map", "-q", "-x", lambda_index, *map(str, args), "-o", str(out)]) == 0


def map_served(socket_path, out, *args):
    assert cli.main(["map", "-q", "--server", socket_path, *map(str, args), "-o", str(out)]) == 0


def sam_text(path) -> list[str]:
    """The SAM lines of a SAM or BAM file but the @PG lines."""
    text = pysam.view("-h", str(path)) if str(path).endswith(".bam") else open(path).read()
    return [line for line in text.splitlines() if not line.startswith("@PG")]


def assert_same_as_alone(served_out, alone_out) -> None:
    served, alone = sam_text(served_out), sam_text(alone_out)
    assert served == alone and len(alone) > 2000


@pytest.mark.parametrize("name", ["out.sam", "out.bam"])
@pytest.mark.parametrize("options", [["-k", "5"],
                                     ["--xa", "--max-hits", "3", "-R", r"@RG\tID:r1\tSM:s1", "--batch-size", "300"]])
def test_served_output_is_the_standalone_output(lambda_index, served, tmp_path, name, options):
    map_alone(lambda_index, tmp_path / f"alone.{name}", READS, *options)
    map_served(served.path, tmp_path / name, READS, *options)
    assert_same_as_alone(tmp_path / name, tmp_path / f"alone.{name}")
    assert sorted(os.listdir(tmp_path)) == sorted([name, f"alone.{name}"])  # no temporary file left


def test_served_pairs_are_the_standalone_pairs(lambda_index, served, tmp_path):
    first, second = simulate_pairs(read_fasta(LAMBDA), 300, np.random.default_rng(5))
    names = [f"p{i}" for i in range(len(first))]
    r1, r2 = write_mates(tmp_path / "r1.fq", first, names, "/1"), write_mates(tmp_path / "r2.fq", second, names, "/2")
    map_alone(lambda_index, tmp_path / "alone.sam", r1, r2, "--batch-size", 100)
    map_served(served.path, tmp_path / "served.sam", r1, r2, "--batch-size", 100)
    served_lines, alone = sam_text(tmp_path / "served.sam"), sam_text(tmp_path / "alone.sam")
    assert served_lines == alone and len(alone) > 600


@pytest.mark.parametrize("how", ["pipe", "file"])
def test_reads_on_the_clients_stdin(lambda_index, served, tmp_path, how):
    """Reads on stdin: a pipe (copied by the client through a socket) or a file (its descriptor
    handed over), to stdout."""
    map_alone(lambda_index, tmp_path / "alone.sam", READS)
    command = [sys.executable, "-m", "marose.cli", "map", "-q", "--server", served.path, "-"]
    with open(READS, "rb") as reads:
        source = {"input": reads.read()} if how == "pipe" else {"stdin": reads}
        done = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT, env=environment(),
                              timeout=RUN_SECONDS, **source)
    assert done.returncode == 0, done.stderr.decode()
    (tmp_path / "served.sam").write_bytes(done.stdout)
    assert_same_as_alone(tmp_path / "served.sam", tmp_path / "alone.sam")


def test_reads_on_a_pipe_of_the_clients_are_refused(served, tmp_path, capsys):
    """The server opens the reads itself: a named pipe, or a process substitution's /dev/fd/N,
    would be another file there or keep it waiting on the client; stdin is the way for them."""
    fifo = tmp_path / "reads.fq"
    os.mkfifo(fifo)
    assert cli.main(["map", "-q", "--server", served.path, str(fifo), "-o", str(tmp_path / "out.sam")]) == 1
    assert f"{fifo}: reads mapped through a server are regular files, or stdin ('-')" in capsys.readouterr().err
    assert sorted(os.listdir(tmp_path)) == ["reads.fq"]


def test_two_clients_at_once_are_served_one_after_the_other(lambda_index, served, tmp_path):
    map_alone(lambda_index, tmp_path / "alone.sam", READS, "--batch-size", 500)
    clients = [marose("map", "-q", "--server", served.path, READS, "--batch-size", 500, "-o", tmp_path / f"{i}.sam")
               for i in range(2)]
    for client in clients:
        status, err = finished(client)
        assert status == 0, err
    for i in range(2):
        assert_same_as_alone(tmp_path / f"{i}.sam", tmp_path / "alone.sam")


def test_progress_and_summary_reach_the_client(lambda_index, served, tmp_path):
    def summary(*args) -> str:
        done = subprocess.run([sys.executable, "-m", "marose.cli", "map", *args, READS, "-k", "5", "-o",
                               str(tmp_path / "out.sam")], stderr=subprocess.PIPE, cwd=ROOT, env=environment(),
                              timeout=RUN_SECONDS)
        assert done.returncode == 0
        line = next(line for line in done.stderr.decode().splitlines() if line.startswith("[marose] 2,000 reads"))
        return line.split(" loci, ")[0]

    assert summary("--server", served.path) == summary("-x", lambda_index)


def feed(proc: subprocess.Popen, data: bytes) -> threading.Thread:
    """Writes data to the process's stdin from a thread, leaving the pipe open."""

    def write() -> None:
        with contextlib.suppress(OSError, ValueError):  # the process ended
            proc.stdin.write(data)
            proc.stdin.flush()

    thread = threading.Thread(target=write, daemon=True)
    thread.start()
    return thread


@pytest.mark.parametrize("reads_from", ["file", "stdin"])
def test_a_client_killed_mid_request_leaves_the_server_healthy(lambda_index, served, many_reads, tmp_path,
                                                               reads_from):
    folder = tmp_path / "killed"
    folder.mkdir()
    client = marose("map", "-q", "--server", served.path, many_reads if reads_from == "file" else "-",
                    "--batch-size", 100, "-o", folder / "out.sam", stdin=subprocess.PIPE)
    feeder = feed(client, open(many_reads, "rb").read() if reads_from == "stdin" else b"")
    try:
        wait_for(lambda: any(p.stat().st_size > 100_000 for p in folder.iterdir()), client, "records written")
        client.send_signal(signal.SIGKILL)
        client.wait(timeout=RUN_SECONDS)
    finally:
        client.kill()
        with contextlib.suppress(OSError):
            client.stdin.close()
        feeder.join(timeout=RUN_SECONDS)
    map_alone(lambda_index, tmp_path / "alone.sam", READS)
    map_served(served.path, tmp_path / "after.sam", READS)
    assert_same_as_alone(tmp_path / "after.sam", tmp_path / "alone.sam")
    requests = [line for line in served.messages().splitlines() if line.startswith("[marose] request ")]
    # the killed request ends when the server finds the client gone, or, on a loaded machine, had
    # sent its last records before the kill; either way the next request is served whole (above),
    # though on a loaded machine its log line may say the client left once it had its output
    assert all("the client left" in line or "done" in line for line in requests[-2:])
    assert "still run" not in served.messages()  # the killed request's threads ended with it


@pytest.mark.parametrize("name", ["out.sam", "out.bam"])
def test_a_server_killed_mid_request_fails_the_client_and_leaves_no_output(lambda_index, many_reads, start_server,
                                                                           short_folder, tmp_path, name):
    server = start_server(lambda_index, short_folder() / "s.sock")
    folder = tmp_path / "out"
    folder.mkdir()
    client = marose("map", "-q", "--server", server.path, many_reads, "--batch-size", 100, "-o", folder / name)
    try:
        wait_for(lambda: any(p.stat().st_size > 20_000 for p in folder.iterdir()), client, "records written")
        server.proc.send_signal(signal.SIGKILL)
        status, err = finished(client)
    finally:
        client.kill()
    assert status == 1
    assert f"marose: error: the server at {server.path} ended before the mapping was done; no output written" in err
    assert "Traceback" not in err
    assert list(folder.iterdir()) == []


def test_stop_ends_the_server_and_removes_its_socket(lambda_index, start_server, short_folder):
    server = start_server(lambda_index, short_folder() / "s.sock")
    assert stat.S_IMODE(os.stat(server.path).st_mode) == 0o600
    status, err = finished(marose("serve", "--stop", "--socket", server.path))
    assert status == 0, err
    assert f"stopped the server at {server.path}" in err
    assert server.proc.wait(timeout=RUN_SECONDS) == 0
    assert not os.path.exists(server.path)
    status, err = finished(marose("map", "--server", server.path, READS))
    assert status == 1 and f"no server at {server.path} (no such socket)" in err


def test_the_default_socket_is_private_to_its_user(lambda_index, start_server, short_folder, tmp_path):
    runtime = short_folder()
    env = environment(XDG_RUNTIME_DIR=str(runtime))
    server = start_server(lambda_index, None, env=env)
    path = runtime / "marose" / "lambda.fa.gz.marose.sock"
    wait_for(path.exists, server.proc, "the default socket")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    map_served(str(path), tmp_path / "out.sam", READS)
    status, err = finished(marose("serve", "--stop", "-x", lambda_index, env=env))
    assert status == 0, err
    assert server.proc.wait(timeout=RUN_SECONDS) == 0 and not path.exists()

    path.parent.chmod(0o755)  # a folder others may enter is refused
    status, err = finished(marose("serve", "-x", lambda_index, env=env))
    assert status == 1 and "the socket's folder must be a folder of this user's that no one else may enter" in err


def test_a_stale_socket_is_reported_then_replaced(lambda_index, start_server, short_folder, tmp_path):
    path = str(short_folder() / "s.sock")
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as gone:  # bound, then closed: no one listens
        gone.bind(path)
    status, err = finished(marose("map", "--server", path, READS))
    assert status == 1 and f"no server at {path}: the socket was left by a server that ended" in err
    server = start_server(lambda_index, path)
    wait_for(lambda: "serving on" in server.messages(), server.proc, "serving")
    map_alone(lambda_index, tmp_path / "alone.sam", READS)
    map_served(path, tmp_path / "served.sam", READS)
    assert_same_as_alone(tmp_path / "served.sam", tmp_path / "alone.sam")
    status, err = finished(marose("serve", "-x", lambda_index, "--socket", path))
    assert status == 1 and f"a server already listens on {path}" in err


def test_options_that_need_another_index_or_device_are_refused(lambda_index, served, tmp_path, capsys):
    assert cli.main(["map", "--server", served.path, READS, "--device", "0:0", "-o", str(tmp_path / "a.sam")]) == 1
    assert "--device: the server maps on" in capsys.readouterr().err
    other = tmp_path / "other.fa"
    other.write_text(">c\n" + "ACGTTGCAAGTCCGATAGGCTTAACG" * 20 + "\n")
    assert index_cli.main([str(other), "-q"]) == 0
    assert cli.main(["map", "--server", served.path, "-x", str(other), READS, "-o", str(tmp_path / "b.sam")]) == 1
    assert f"not {os.path.realpath(str(other) + '.marose')}" in capsys.readouterr().err
    assert not list(tmp_path.glob("*.sam"))


def test_a_request_ends_without_waiting_for_the_devices_staging_threads():
    """A thread that a request's copies add to a device's staging pool lives on with the device:
    the request is not held up for it, while any other thread it started is waited for."""
    from concurrent.futures import ThreadPoolExecutor

    from marose import serve
    from marose.staging import THREAD_PREFIX

    before = set(threading.enumerate())
    staging = ThreadPoolExecutor(1, thread_name_prefix=THREAD_PREFIX)
    staging.submit(lambda: None).result()  # its thread now idles until the pool is shut down
    other = threading.Thread(target=time.sleep, args=(0.3,))
    other.start()
    logged = []
    started = time.monotonic()
    serve._release(None, before, logged.append)
    assert 0.25 <= time.monotonic() - started < 5 and not other.is_alive() and logged == []
    staging.shutdown()


def test_a_write_finds_out_that_the_client_has_gone():
    """The server writes a request's output into the file its client handed over, so it sends
    the client nothing while it maps: each write looks at the connection first."""
    from marose import serve

    ours, theirs = socket.socketpair()
    with ours:
        client = serve._Client(ours, False)
        client.check()  # the client is there, and has sent nothing more
        theirs.close()
        with pytest.raises(serve.ClientGone):
            client.check()
