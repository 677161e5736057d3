"""`marose map --server PATH`: the reads mapped by a running `marose serve` into the output opened
here (-o under a temporary name, renamed when the server says the mapping is done), and
`marose serve --stop`."""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import socket
import stat
import sys
import threading

from .errors import MaroseError
from .serve_protocol import DONE, STDERR, frames, send_request, socket_state

READ_BUFFER = 1 << 20


def connect(path: str) -> socket.socket:
    """A connection to the server at path; MaroseError saying why there is none."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.connect(path)
    except FileNotFoundError:
        sock.close()
        raise MaroseError(f"no server at {path} (no such socket); start one with `marose serve -x INDEX "
                          f"--socket {path}`") from None
    except ConnectionRefusedError:
        sock.close()
        raise MaroseError(f"no server at {path}: the socket was left by a server that ended; start one with "
                          f"`marose serve -x INDEX --socket {path}`, which replaces it") from None
    except OSError as e:
        sock.close()
        raise MaroseError(f"{path}: cannot connect to a server ({e.strerror})") from None
    return sock


def map_through_server(args, log) -> None:
    """Maps args.reads (map's options) through the server at args.server into args.output."""
    from .cli import check_map_options, find_index
    from .sam_file import OutputFile

    check_map_options(args)
    for reads in args.reads:  # the server opens them: a pipe of the client's would be its own, or wait on the client
        if reads != "-" and not os.path.isfile(reads):
            raise MaroseError(f"{reads}: reads mapped through a server are regular files, or stdin ('-')")
    request = {"command": "map", "args": vars(args), "cwd": os.getcwd(),
               "command_line": " ".join(shlex.quote(a) for a in ["marose", *sys.argv[1:]]),
               "index": os.path.realpath(find_index(args.index)) if args.index else None,
               "stderr_tty": not args.quiet and sys.stderr.isatty()}
    with connect(args.server) as sock:
        output = OutputFile(args.output)
        try:
            with _stdin_for_server("-" in args.reads) as stdin:
                try:
                    send_request(sock, request, [output.stream.fileno(), *stdin])
                except OSError as e:
                    raise MaroseError(f"{args.server}: the server did not take the request ({e.strerror})") from None
            _wait_until_done(sock, args.server)
        except BaseException:
            output.abort()
            raise
        output.keep()


@contextlib.contextmanager
def _stdin_for_server(needed: bool):
    """The descriptors to send with the request: none when the reads are not on stdin; stdin
    itself when it is a regular file; else one end of a socket pair that a thread fills from
    stdin, so that the server never waits on a pipe or terminal of the client's (it shuts the
    socket down when the request ends, and the client's end goes when the client does)."""
    if not needed:
        yield []
        return
    fd = sys.stdin.fileno()
    if stat.S_ISREG(os.fstat(fd).st_mode):
        yield [fd]
        return
    ours, theirs = socket.socketpair()
    threading.Thread(target=_relay, args=(fd, ours), name="marose-stdin", daemon=True).start()
    with theirs:  # the server holds its own copy once the request is sent
        yield [theirs.fileno()]


def _relay(fd: int, sock: socket.socket) -> None:
    """Copies what fd holds into sock, then closes it (the server reads the end of the input)."""
    with sock:
        try:
            while block := os.read(fd, READ_BUFFER):
                sock.sendall(block)
        except OSError:  # the server shut the socket down: the request is over
            pass


def _wait_until_done(sock: socket.socket, server: str) -> None:
    """Writes the server's messages on stderr until it says the mapping is done; MaroseError
    when it failed or ended first."""
    for kind, payload in _answer(sock, server):
        if kind == STDERR:
            sys.stderr.write(payload.decode("utf-8", "replace"))
            sys.stderr.flush()
        elif kind == DONE:
            error = json.loads(payload)["error"]
            if error:
                raise MaroseError(error)
            return
    raise MaroseError(f"the server at {server} ended before the mapping was done; no output written")


def _answer(sock: socket.socket, path: str):
    """The server's frames; a connection reset (the server killed) ends them as its end would."""
    with sock.makefile("rb", buffering=READ_BUFFER) as stream:
        try:
            yield from frames(stream)
        except ConnectionResetError:
            return


def stop_server(path: str, log) -> None:
    """Asks the server at path to end, and waits until it has (its socket removed)."""
    try:
        sock = connect(path)
    except MaroseError:
        if socket_state(path) == "stale":
            os.remove(path)
            raise MaroseError(f"no server at {path}: its socket was left by a server that ended, and is "
                              "removed now") from None
        raise
    with sock:
        send_request(sock, {"command": "stop"}, [])
        for kind, payload in _answer(sock, path):
            if kind == DONE:
                log(f"stopped the server at {path}")
                return
    raise MaroseError(f"the server at {path} ended without saying it stopped")

