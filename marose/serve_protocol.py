"""The wire between `marose map --server` and `marose serve`: where the socket lives, and the
frames the two exchange over it.

A frame is one kind byte, the payload's length (8 bytes, big-endian) and the payload. The client
sends one REQUEST (JSON) with its output's file descriptor attached (sam_file.OutputFile: a
temporary file, a device or pipe, or stdout), and its stdin's after it when the reads come from
stdin. The server writes the SAM or BAM into that output itself, and answers with STDERR text
for the client's stderr and DONE (JSON: {"error": message or null}) when the request is over;
the client then keeps the output, or drops it.
"""

from __future__ import annotations

import json
import os
import socket
import stat
import struct
from typing import BinaryIO, Iterator

from .errors import MaroseError

PROTOCOL = 2  # raised when the frames change; a client and a server of two versions refuse each other
REQUEST, STDERR, DONE = b"R", b"E", b"X"
_HEAD = struct.Struct(">cQ")
MAX_REQUEST_BYTES = 1 << 20
MAX_FDS = 2  # a request's output and stdin
SOCKET_SUFFIX = ".sock"
MAX_SOCKET_PATH = 107  # bytes of a Unix socket's path that Linux takes


def default_socket(index_path: str) -> str:
    """The socket of a server of this index when --socket is not given:
    $XDG_RUNTIME_DIR/marose/<index folder name>.sock, or /tmp/marose-<uid>/<index folder name>.sock
    when XDG_RUNTIME_DIR is not set."""
    return os.path.join(socket_folder(), os.path.basename(os.path.normpath(index_path)) + SOCKET_SUFFIX)


def socket_folder() -> str:
    """The folder of the default sockets (see default_socket)."""
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    return os.path.join(runtime, "marose") if runtime else f"/tmp/marose-{os.getuid()}"


def make_private_folder(folder: str) -> None:
    """Makes the folder (mode 0700) if it is missing; MaroseError when it is not this user's
    alone (another user could then replace the socket in it)."""
    try:
        os.makedirs(folder, mode=0o700, exist_ok=True)
        info = os.lstat(folder)
    except OSError as e:
        raise MaroseError(f"{folder}: cannot make the socket's folder ({e.strerror}); give --socket") from None
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid() or info.st_mode & 0o077:
        raise MaroseError(f"{folder}: the socket's folder must be a folder of this user's that no one else may "
                          f"enter (mode {stat.filemode(info.st_mode)}); remove it, or give --socket")


def check_socket_path(path: str) -> None:
    """MaroseError for a path too long to be a Unix socket's."""
    if len(os.fsencode(path)) > MAX_SOCKET_PATH:
        raise MaroseError(f"{path}: a socket's path may hold at most {MAX_SOCKET_PATH} bytes; give a shorter --socket")


def socket_state(path: str) -> str:
    """'none' (no file at path), 'live' (a server answers there), 'stale' (a socket file that no
    server listens on) or 'other' (a file that is not a socket, or a socket that cannot be tried)."""
    try:
        if not stat.S_ISSOCK(os.lstat(path).st_mode):
            return "other"
    except FileNotFoundError:
        return "none"
    except OSError:
        return "other"
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
        try:
            probe.connect(path)
        except ConnectionRefusedError:
            return "stale"
        except OSError:
            return "other"
    return "live"


def send_frame(sock: socket.socket, kind: bytes, payload) -> None:
    """One frame; payload is bytes or any contiguous buffer (a numpy array of bytes)."""
    data = memoryview(payload).cast("B")
    sock.sendall(_HEAD.pack(kind, data.nbytes))
    if data.nbytes:
        sock.sendall(data)


def send_request(sock: socket.socket, request: dict, fds: list[int]) -> None:
    """The REQUEST frame, with the file descriptors attached to its first byte."""
    payload = json.dumps({"protocol": PROTOCOL, **request}).encode()
    socket.send_fds(sock, [_HEAD.pack(REQUEST, len(payload)) + payload], fds)


def receive_request(sock: socket.socket) -> tuple[dict, list[int]]:
    """The REQUEST frame's JSON and the descriptors that came with it; MaroseError for anything
    else (the caller's socket timeout bounds the wait)."""
    data, fds, _, _ = socket.recv_fds(sock, 1 << 16, MAX_FDS)
    try:
        while len(data) < _HEAD.size or len(data) < _HEAD.size + _HEAD.unpack_from(data)[1]:
            if len(data) >= _HEAD.size and _HEAD.unpack_from(data)[1] > MAX_REQUEST_BYTES:
                raise MaroseError("request too large")
            more = sock.recv(1 << 16)
            if not more:
                raise MaroseError("the client left before its request was complete")
            data += more
        kind, size = _HEAD.unpack_from(data)
        request = json.loads(data[_HEAD.size:_HEAD.size + size]) if kind == REQUEST else None
        if not isinstance(request, dict) or request.get("protocol") != PROTOCOL:
            raise MaroseError("not a request of this version of marose")
    except BaseException:
        for fd in fds:
            os.close(fd)
        raise
    return request, fds


def frames(stream: BinaryIO) -> Iterator[tuple[bytes, bytes]]:
    """(kind, payload) of each frame read from stream, until it ends; a frame cut short ends it."""
    while True:
        head = stream.read(_HEAD.size)
        if len(head) < _HEAD.size:
            return
        kind, size = _HEAD.unpack(head)
        payload = stream.read(size)
        if len(payload) < size:
            return
        yield kind, payload
