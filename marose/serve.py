"""`marose serve`: an index kept on a device between runs. The server opens a mapping session once
(index loaded and checked, device checked, index uploaded, kernels built) and maps the requests
of `marose map --server` one after another, on a Unix domain socket that only its owner can use:
the socket file has mode 0600, the default one lies in a folder only the owner can enter, and a
connection from another user is closed unanswered."""

from __future__ import annotations

import argparse
import contextlib
import gc
import io
import json
import os
import select
import socket
import stat
import struct
import sys
import threading
import time
import traceback

from .errors import MaroseError
from .sam_file import HandedOutput, SamWriter, output_threads
from .serve_protocol import (DONE, STDERR, check_socket_path, default_socket, make_private_folder, receive_request,
                             send_frame, socket_folder, socket_state)

REQUEST_SECONDS = 10.0  # for a client to send its request once connected
THREADS_SECONDS = 60.0  # for a request's reading threads to end after it
WARM_UP_LENGTHS = (100, 150)  # read lengths whose kernels are built before the first request
WARM_UP_READS = 8
BACKLOG = 16  # clients that wait for the request being mapped


class _OtherUser(MaroseError):
    """A connection from another user: closed unanswered."""


class ClientGone(Exception):
    """The client of the request closed its connection: it ended, or was killed."""

    MESSAGE = "the client left"


def socket_path(args, for_server: bool) -> str:
    """--socket, or the default socket of the index (-x, or the one in the current directory),
    whose folder a server makes."""
    from .cli import find_index

    path = args.socket or default_socket(find_index(args.index))
    if for_server and not args.socket:
        make_private_folder(socket_folder())
    check_socket_path(path)
    return path


def run_serve(args, log) -> None:
    """`marose serve`: serves until asked to stop (or, with args.stop, asks the server to stop)."""
    if args.stop:
        from .serve_client import stop_server

        stop_server(socket_path(args, False), log)
        return
    from indexer import store

    from .cli import _in_background, device_memory, find_index, index_layout, use_cpu_threads
    from .session import describe_devices, open_session

    index_path = os.path.abspath(find_index(args.index))
    path = socket_path(args, True)
    _check_free(path)
    use_cpu_threads(args.threads)
    session = open_session(_in_background(store.load, index_path, False), args.device, False, args.verbose, log,
                           device_memory(args))
    session.checked.result()
    started = time.time()
    warm_up(session)
    ref = session.index.reference
    log(f"index {index_path} ({ref.total_length:,} bases, {index_layout(session.on_device)}) on "
        f"{describe_devices(session)}; kernels built in {time.time() - started:.1f} s")
    with _listening(path) as listener:
        log(f"serving on {path}: `marose map --server {path} reads.fq` maps through it, "
            f"`marose serve --stop --socket {path}` ends it")
        stopping = _serve(session, listener, log)
    with stopping, contextlib.suppress(OSError):  # answered once the socket is gone: a new server may start
        send_frame(stopping, DONE, json.dumps({"error": None}).encode())
    log("stopped")


def warm_up(session) -> None:
    """Maps a few reads cut from the reference, of each of WARM_UP_LENGTHS, and drops their SAM,
    so that the kernels a request of such reads needs are built before it comes."""
    import numpy as np

    from .cli import parser
    from .dna import decode
    from .reads import BytesRead, ReadBatch
    from .reference import unpack_2bit
    from .session import map_reads

    ref = session.index.reference
    contig = int(np.argmax(ref.lengths))
    start, size = int(ref.offsets[contig]), int(ref.lengths[contig])
    args = parser().parse_args(["map", "-q", "-"])
    for length in WARM_UP_LENGTHS:
        if size < length:
            continue
        seqs = []
        for i in range(WARM_UP_READS):
            at = start + i * (size - length) // WARM_UP_READS
            lead = at % 4
            codes = unpack_2bit(ref.packed[at // 4:(at + length + 3) // 4 + 1], lead + length)[lead:]
            seqs.append(decode(codes).encode())
        batch = ReadBatch([f"r{i}" for i in range(len(seqs))], seqs, None, 0)
        with contextlib.redirect_stderr(io.StringIO()):  # warnings about these reads are no one's concern
            map_reads(session, args, batch, iter(()), BytesRead(), lambda header: _Dropped(), "", lambda m: None,
                      time.time())


def _serve(session, listener: socket.socket, log) -> socket.socket:
    """Answers requests one after another until one asks to stop; returns that one's connection."""
    number = 0
    while True:
        conn, _ = listener.accept()
        number += 1
        try:
            request, fds = _request(conn)
        except (MaroseError, OSError, ValueError) as e:
            log(f"request {number}: refused ({e})")
            with conn, contextlib.suppress(OSError):
                if not isinstance(e, _OtherUser):
                    send_frame(conn, DONE, json.dumps({"error": f"the server refused the request: {e}"}).encode())
            continue
        if request.get("command") == "stop":
            _close_all(fds)
            log(f"request {number}: stop")
            return conn
        with conn:
            _answer_map(session, conn, request, fds, number, log)


def _request(conn: socket.socket) -> tuple[dict, list[int]]:
    """The request of a connection from this user (MaroseError for another's), read within
    REQUEST_SECONDS."""
    if not _same_user(conn):
        raise _OtherUser("a connection from another user")
    conn.settimeout(REQUEST_SECONDS)
    request, fds = receive_request(conn)
    conn.settimeout(None)
    if request.get("command") not in ("map", "stop"):
        _close_all(fds)
        raise MaroseError(f"no such request: {request.get('command')!r}")
    return request, fds


def _answer_map(session, conn: socket.socket, request: dict, fds: list[int], number: int, log) -> None:
    """Maps the request's reads with the session into the output its client handed over (the
    first descriptor; the client's stdin is the second, when it sent one), sending its messages
    to the client, and at the end DONE with the error that stopped it, if one did. (Ctrl-C or
    SIGTERM ends the server: they are raised on at once.)"""
    client = _Client(conn, bool(request.get("stderr_tty")))
    output = HandedOutput(fds[0]) if fds else None
    stdin = _Stdin(fds[1]) if len(fds) > 1 else None
    _close_all(fds[2:])
    threads = set(threading.enumerate())
    started = time.time()
    error = _mapped(session, client, request, output, stdin, number, log)
    if output is not None:
        output.abort()  # closed, if the request did not get as far as writing
    _release(stdin, threads, log)
    if error != ClientGone.MESSAGE:
        try:
            client.send(DONE, json.dumps({"error": error}).encode())
        except ClientGone:
            error = ClientGone.MESSAGE
    log(f"request {number}: {error or 'done'} ({time.time() - started:.1f} s)")


def _mapped(session, client: _Client, request: dict, output, stdin: _Stdin | None, number: int,
            log) -> str | None:
    """Maps a request as its client; the error that stopped it, or None."""
    from .session import map_request

    try:
        if output is None:
            raise MaroseError("the client sent no output to write into")
        with _as_client(client, request.get("cwd", "/"), stdin):
            args = _map_args(session, request, stdin)
            map_request(session, args, lambda header: _ClientOutput(client, output, args, header),
                        request.get("command_line", "marose map"), _client_log(args.quiet))
    except ClientGone:
        return ClientGone.MESSAGE
    except MaroseError as e:
        return str(e)
    except Exception as e:  # the client learns of it; the server goes on with the next request
        log(f"request {number}: failed:\n{traceback.format_exc().rstrip()}")
        return f"the server failed: {type(e).__name__}: {e} (its log has the details)"
    return None


def _map_args(session, request: dict, stdin: _Stdin | None) -> argparse.Namespace:
    """The request's map options, checked; MaroseError for those that would need another index
    or device than the served ones."""
    from .cli import check_map_options
    from .session import describe_devices

    args = argparse.Namespace(**request["args"])
    if args.device:
        raise MaroseError(f"--device: the server maps on {describe_devices(session)}, which `marose serve` "
                          "opened; leave --device out, or start a server with --device")
    if args.max_device_memory:
        raise MaroseError("--max-device-memory: the server's index is on its device already; give it to "
                          "`marose serve` instead")
    served = os.path.realpath(session.index.path)
    if request.get("index") and request["index"] != served:
        raise MaroseError(f"-x: the server at {args.server} serves {served}, not {request['index']}; leave -x out, "
                          "or start a server of that index")
    if "-" in args.reads and stdin is None:
        raise MaroseError("stdin: the client sent no stdin to read the reads from")
    check_map_options(args)
    return args


def _client_log(quiet: bool):
    """The progress log of a request: on the client's stderr (sys.stderr while the request runs)."""

    def log(message: str) -> None:
        if not quiet:
            print(f"[marose] {message}", file=sys.stderr, flush=True)

    return log


class _Client:
    """The connection of the request being answered: frames sent one at a time (several threads
    write), and a text stream that writes on the client's stderr."""

    def __init__(self, conn: socket.socket, tty: bool):
        self.conn, self.tty = conn, tty
        self.lock = threading.Lock()

    def send(self, kind: bytes, payload) -> None:
        with self.lock:
            try:
                send_frame(self.conn, kind, payload)
            except OSError:  # a broken pipe or a reset: the client is gone
                raise ClientGone() from None

    def check(self) -> None:
        """ClientGone if the client has closed its end (it sends nothing after its request)."""
        if select.select([self.conn], [], [], 0)[0]:
            try:
                still = self.conn.recv(1, socket.MSG_PEEK)
            except OSError:
                raise ClientGone() from None
            if not still:
                raise ClientGone()

    def write(self, text: str) -> int:
        self.send(STDERR, text.encode("utf-8", "replace"))
        return len(text)

    def flush(self) -> None:
        pass

    def isatty(self) -> bool:
        return self.tty


class _ClientOutput(SamWriter):
    """A request's SAM or BAM, written into the output its client handed over
    (session.OpenOutput; the client keeps it when DONE comes without an error). Each write first
    makes sure that the client is still there, so that a request no one waits for ends
    (ClientGone)."""

    def __init__(self, client: _Client, output: HandedOutput, args, header: str):
        self.client = client
        super().__init__(args.output, header, output_threads(args.threads), place=output)

    def write(self, records) -> None:
        self.client.check()
        super().write(records)


class _Dropped:
    """SAM that goes nowhere (the warm-up's), as session.OpenOutput makes it."""

    is_bam = False

    def write(self, records) -> None:
        pass

    def close(self) -> None:
        pass

    def __enter__(self) -> "_Dropped":
        return self

    def __exit__(self, *exc) -> None:
        pass


class _Stdin:
    """Stands for sys.stdin while a request runs: the client's stdin, as reads.py reads stdin."""

    def __init__(self, fd: int):
        self.buffer = open(fd, "rb", closefd=True)


@contextlib.contextmanager
def _as_client(client: _Client, cwd: str, stdin: _Stdin | None):
    """While a request runs, the process works as its client would: in its folder (relative
    paths), with its stderr and stdin."""
    home, own_stdin = os.getcwd(), sys.stdin
    try:
        os.chdir(cwd)
    except OSError as e:
        raise MaroseError(f"{cwd}: the server cannot work in the client's folder ({e.strerror})") from None
    try:
        with contextlib.redirect_stderr(client):
            if stdin is not None:
                sys.stdin = stdin
            yield
    finally:
        sys.stdin = own_stdin
        os.chdir(home)


def _release(stdin: _Stdin | None, threads: set, log) -> None:
    """Ends what a request left: a thread still reading the client's stdin (a socket that the
    client fills: shut down here, the read ends) and any other thread the request started,
    which are waited for, so that none still uses the device when the next request starts;
    then closes the stdin. The threads of a device's staging pool live as long as the device: a
    request may start one (the pool grows as it is used), and it is not waited for."""
    from .staging import THREAD_PREFIX

    if stdin is not None:
        with contextlib.suppress(OSError, ValueError):
            if stat.S_ISSOCK(os.fstat(stdin.buffer.fileno()).st_mode):
                with socket.socket(fileno=os.dup(stdin.buffer.fileno())) as reads:
                    reads.shutdown(socket.SHUT_RDWR)
    started = {thread for thread in set(threading.enumerate()) - threads if not thread.name.startswith(THREAD_PREFIX)}
    if any(thread.is_alive() for thread in started):
        # a failed request's generators may be held in reference cycles (its error's traceback):
        # collected, they end the threads they started (reads.py's gunzip)
        gc.collect()
    deadline = time.monotonic() + THREADS_SECONDS
    left = []
    for thread in started:
        thread.join(max(0.0, deadline - time.monotonic()))
        if thread.is_alive():
            left.append(thread.name)
    if left:
        log(f"warning: threads of the last request still run: {', '.join(left)}")
    elif stdin is not None:
        stdin.buffer.close()


def _same_user(conn: socket.socket) -> bool:
    """Whether the process at the other end runs as this user (Linux tells; elsewhere the
    socket's mode alone keeps others out)."""
    if not hasattr(socket, "SO_PEERCRED"):
        return True
    credentials = struct.Struct("3i")
    _, uid, _ = credentials.unpack(conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, credentials.size))
    return uid == os.getuid()


def _check_free(path: str) -> None:
    """MaroseError when a server listens at path or something else than a socket is there."""
    state = socket_state(path)
    if state == "live":
        raise MaroseError(f"a server already listens on {path}; stop it with `marose serve --stop --socket {path}`, "
                          "or give another --socket")
    if state == "other":
        raise MaroseError(f"{path} exists and is not a socket this user can replace; give another --socket")


@contextlib.contextmanager
def _listening(path: str):
    """A socket listening at path, mode 0600, removed at the end. It is bound and listening
    under a temporary name first, then renamed into place (over a stale socket file, left by a
    server that ended), so that a client never finds it there before it answers."""
    _check_free(path)
    temporary = os.path.join(os.path.dirname(path), f".marose-serve-{os.getpid()}")
    check_socket_path(temporary)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        mask = os.umask(0o177)
        try:
            listener.bind(temporary)
        finally:
            os.umask(mask)
        os.chmod(temporary, 0o600)
        listener.listen(BACKLOG)
        os.replace(temporary, path)
        bound = os.stat(path).st_ino
    except OSError as e:
        listener.close()
        with contextlib.suppress(OSError):
            os.remove(temporary)
        raise MaroseError(f"{path}: cannot listen there ({e.strerror})") from None
    try:
        yield listener
    finally:
        listener.close()
        with contextlib.suppress(OSError):
            if os.stat(path).st_ino == bound:  # not a later server's
                os.remove(path)


def _close_all(fds: list[int]) -> None:
    for fd in fds:
        with contextlib.suppress(OSError):
            os.close(fd)
