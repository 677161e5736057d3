"""`marose map --scheduler ADDRESS`: reads mapped by the workers of a Dask cluster. The client cuts
the input into chunks of reads (the records as read, or, when every worker sees the plain input
file as the client does, where they lie in it: after the first chunk, byte ranges of a FASTQ file
that start at records, read_ranges.py, which the client does not read), each one Dask task; a
worker maps a chunk with a mapping session (session.py) that it keeps open between chunks, the
index resident on its devices. The output has the chunks' SAM records in input order: into a SAM
file that every worker sees as the client does, the worker that holds a chunk's records writes
them at the place the client gives once the chunks before have told their size, and only sizes
and counts reach the client; else the records come to the client, which writes them. Dask runs
the tasks of a worker that is lost again on another: each chunk is written at its one place,
whoever mapped it. Needs the `dask` extra (`pip install 'marose[dask]'`)."""

from __future__ import annotations

import collections
import contextlib
import hashlib
import itertools
import os
import shlex
import sys
import threading
import time
import uuid
from dataclasses import dataclass

from . import read_ranges
from .errors import MaroseError, RecordError

CONNECT_SECONDS = 30  # for the scheduler to answer
WORKERS_SECONDS = 60  # for a first worker to join the scheduler
CHUNKS_PER_THREAD = 2  # chunks submitted and not yet written, per worker thread


@dataclass
class Chunk:
    """Consecutive reads of the input, as a task carries them to a worker: FASTQ records as read
    (fastq), or where they lie in the input file at path, for the worker to read there (places,
    reads.piece_places; or the byte range `span`, whose records are numbered from 0), or FASTA
    reads as parsed (packed, a reads.PackedReads)."""

    first_index: int  # reads of the input before these
    count: int  # 0 for a byte range, whose reads are counted as it is read
    label: str  # the input, as errors name it
    fastq: bytes | None = None
    packed: object = None
    places: list | None = None
    path: str | None = None
    span: tuple[int, int] | None = None  # (where, bytes)

    @classmethod
    def of(cls, batch, path: str | None = None) -> "Chunk":
        """The reads of a reads.ReadBatch; with path (the input file, which every worker reads as
        the client does), FASTQ text that lies as it is there goes as where it lies."""
        from .reads import piece_places

        if batch.pieces is None:
            return cls(batch.first_index, len(batch), "", packed=batch.packed)
        label, places = batch.pieces[0].label, piece_places(batch)
        if path is not None and all(at is not None for *_, at in places):
            return cls(batch.first_index, len(batch), label, places=places, path=path)
        return cls(batch.first_index, len(batch), label, fastq=b"".join(piece.text.data for piece in batch.pieces))

    @classmethod
    def of_range(cls, part, label: str) -> "Chunk":
        """The reads of a read_ranges.ByteRange of the input file (which every worker reads as the
        client does), label naming the input as errors name it."""
        return cls(0, 0, label, path=part.path, span=(part.at, part.size))

    def batch(self):
        """The reads as a reads.ReadBatch."""
        import numpy as np

        from .reads import FastqText, ReadBatch, batch_of_pieces, batch_of_range

        if self.span is not None:
            return batch_of_range(self._texts([self.span])[0], self.label, self.span[0])
        if self.places is not None:
            texts = self._texts([(at, size) for *_, size, at in self.places])
            return batch_of_pieces(self.places, texts, self.first_index)
        if self.fastq is None:
            return ReadBatch.from_packed(self.packed, self.first_index)
        text = FastqText(np.frombuffer(self.fastq, np.uint8), self.count, self.first_index, self.label)
        return ReadBatch.from_fastq([text], self.first_index)

    def _texts(self, where: list[tuple[int, int]]) -> list[bytes]:
        """The bytes of the input file at each (offset, size)."""
        from .reads import InputFiles

        try:
            with InputFiles() as files:
                return [files.read(self.path, at, size) for at, size in where]
        except OSError as e:
            raise MaroseError(f"{_worker_name()} cannot read {self.path} ({e.strerror}), which the workers "
                              "read as the client did at the start") from None


def map_on_cluster(args, log) -> None:
    """Maps args.reads (map's options, one read file) on the workers of the Dask scheduler at
    args.scheduler into args.output; --stats counts the workers' seconds, without kernel seconds."""
    setup_started = time.time()
    from . import __version__
    from .cli import CHUNK_READS, check_map_options, find_index, summary, write_stats
    from .params import default_max_errors
    from .progress import Progress
    from .reads import BytesRead, read_batches
    from .sam import sam_header
    from .sam_file import SamWriter, output_threads

    check_map_options(args)
    if len(args.reads) != 1 or args.interleaved:
        raise MaroseError("--scheduler maps single-end reads: give one read file, without --interleaved")
    if args.explain or args.server:
        raise MaroseError(f"{'--explain' if args.explain else '--server'} is not available with --scheduler")
    distributed = _dask()
    index_asked = os.path.abspath(args.index or find_index(None))
    command_line = " ".join(shlex.quote(a) for a in ["marose", *sys.argv[1:]])
    bytes_read = BytesRead()
    batches = read_batches(args.reads[0], args.batch_size or CHUNK_READS, bytes_read)
    first = next(batches)
    k = args.max_errors if args.max_errors is not None else default_max_errors(first.first_length())
    options = _worker_options(args, k)
    with _connected(distributed, args.scheduler) as client:
        run = uuid.uuid4().hex[:12]
        index = client.submit(describe_index, index_asked, key=f"marose-index-{run}", pure=False).result()
        log(f"index {index.path} ({sum(index.lengths):,} bases) on the workers of {args.scheduler}; k={k}")
        header = sam_header(list(zip(index.names, index.lengths)), args.read_group, command_line, __version__)
        in_place = _read_in_place(client, args.reads[0]) if bytes_read.verbatim else None
        chunks, in_ranges = _chunks(first, batches, bytes_read, in_place, args.batch_size or CHUNK_READS)
        progress = Progress(log, sys.stderr if not args.quiet and sys.stderr.isatty() else None, bytes_read)
        started = time.time()
        submitted = ((number, client.submit(map_chunk, index.path, index.fingerprint, options, chunk,
                                            key=f"marose-map-{run}-{number}", pure=False))
                     for number, chunk in enumerate(chunks))
        with SamWriter(args.output, header, threads=output_threads(args.threads)) as out:
            try:
                in_place = _written_in_place(client, out)
                if in_place:
                    stats = _placed(client, submitted, in_place, run, progress)
                else:
                    stats = _written(_in_order((mapped for _, mapped in submitted), lambda: _window(client)), out,
                                     progress)
            except RecordError as error:
                if not in_ranges:
                    raise
                # numbered within its byte range: named as a local run names it
                raise read_ranges.first_bad_record(args.reads[0]) or error from None
    elapsed = time.time() - started
    summary(stats, elapsed, log)
    if args.stats:
        write_stats(args.stats, stats, elapsed, started - setup_started, [], f"Dask workers of {args.scheduler}")


def _chunks(first, batches, bytes_read, in_place: str | None, reads_each: int) -> tuple:
    """The chunks of the input, first (a reads.ReadBatch) then the batches; and whether those after
    the first are byte ranges: of a plain FASTQ file that every worker reads (in_place, its path
    there), about reads_each reads each, which the client then does not read."""
    head = Chunk.of(first, in_place)
    parts = read_ranges.after(first, in_place, bytes_read.total, reads_each) if in_place else None
    if parts is None:
        return itertools.chain([head], (Chunk.of(batch, in_place) for batch in batches)), False
    batches.close()
    return itertools.chain([head], (Chunk.of_range(part, first.pieces[0].label) for part in parts)), True


def _read_in_place(client, path: str) -> str | None:
    """The input file's absolute path when every worker sees it as the client does (its size and
    modification time), so that a chunk goes as where its reads lie there and each worker reads
    them itself (the client's FASTQ no longer crosses the scheduler); else None."""
    path = os.path.abspath(path)
    return path if _every_worker_sees(client, path) else None


def _every_worker_sees(client, path: str) -> bool:
    """Whether every worker sees the file at path as the client does: its size and modification time."""
    seen = client.run(_file_key, path)
    return bool(seen) and all(key == _file_key(path) for key in seen.values())


def _file_key(path: str) -> tuple[int, int] | None:
    try:
        info = os.stat(path)
    except OSError:
        return None
    return info.st_size, info.st_mtime_ns


def _worker_options(args, k: int) -> dict:
    """What a worker needs of map's options: its devices' and the mapping's, with k fixed for
    every chunk, whether the records are written as BAM records, and whether --stats wants the
    counts only it reports."""
    from .cli import device_memory

    from .sam_file import is_bam_path

    return {"device": args.device, "max_device_bytes": device_memory(args), "threads": args.threads,
            "verbose": args.verbose, "max_errors": k, "max_hits": args.max_hits, "xa": args.xa,
            "read_group": args.read_group, "bam": is_bam_path(args.output), "stats": bool(args.stats)}


def _written(results, out, progress):
    """Writes each (records, counts) of results into out; returns the counts summed (mapper.Stats)."""

    def write(parts) -> None:
        for records in parts:
            out.write(records)

    return _counted(results, progress, write)


def _counted(results, progress, take):
    """Hands the first of each (records or their size, counts) of results to take, in order, and
    returns the counts summed (mapper.Stats)."""
    from .mapper import Stats

    stats = Stats()
    try:
        for taken, counts in results:
            take(taken)
            stats.add(counts)
            progress.update(stats.reads)
    finally:
        progress.clear()
    stats.list_lengths_once()  # each chunk's mapper lists the lengths again
    return stats


def _written_in_place(client, out) -> tuple[str, int] | None:
    """For SAM into a regular file that every worker sees as the client does (its size and
    modification time), the file's temporary name and where the records start there
    (SamWriter.shared): each chunk's records are then written by the worker that holds them, and
    do not cross to the client. Else None."""
    shared = out.shared()
    return shared if shared is not None and _every_worker_sees(client, shared[0]) else None


def _placed(client, submitted, in_place: tuple[str, int], run: str, progress):
    """Writes each chunk's records (the futures of submitted, numbered) into the output file at
    their place (in_place: its temporary name and where the records start), each by the worker
    that holds them, once the chunks before have told their size; returns the counts summed. A
    write that Dask runs again, on the records mapped again elsewhere, writes the same bytes at
    the same place."""
    path, at = in_place
    mapped, writes = collections.deque(), collections.deque()

    def sizes():
        for number, future in submitted:
            mapped.append((number, future))
            yield client.submit(_size_and_counts, future, key=f"marose-size-{run}-{number}", pure=False)

    def write(size: int) -> None:
        nonlocal at
        number, future = mapped.popleft()
        writes.append(client.submit(_write_records, future, path, at, key=f"marose-write-{run}-{number}",
                                    pure=False))
        at += size
        while writes and (writes[0].done() or len(writes) > _window(client)):
            _result(writes.popleft())

    try:
        stats = _counted(_in_order(sizes(), lambda: _window(client)), progress, write)
        while writes:
            _result(writes.popleft())
    finally:
        for future in writes:
            future.cancel()
    return stats


def _in_order(submitted, window):
    """The results of the futures that submitted makes, in its order, with up to window() of them
    submitted and not yet handed out; the others are cancelled when the caller stops early."""
    waiting: collections.deque = collections.deque()
    try:
        while True:
            while len(waiting) < window() and (future := next(submitted, None)) is not None:
                waiting.append(future)
            if not waiting:
                return
            yield _result(waiting.popleft())
    finally:
        for future in waiting:
            future.cancel()


def _result(future):
    """A task's result; MaroseError when Dask gave up on it, or lost it with the scheduler."""
    from distributed.client import FutureCancelledError
    from distributed.scheduler import KilledWorker

    try:
        return future.result()
    except KilledWorker as e:
        raise MaroseError(f"Dask gave up on a chunk of reads: the workers that ran it died ({e})") from None
    except FutureCancelledError as e:
        raise MaroseError(f"Dask cancelled a chunk of reads: {e}") from None


def _window(client) -> int:
    """Chunks to keep submitted: CHUNKS_PER_THREAD for each thread of the workers there are."""
    return CHUNKS_PER_THREAD * max(1, sum(client.nthreads().values()))


@contextlib.contextmanager
def _connected(distributed, address: str):
    """A Dask client of the scheduler at address, once a worker has joined; closed at the end.
    Each task carries its chunk of reads (tens of MB), which Dask would warn about: a lost
    worker's chunk is mapped again from that copy."""
    import dask

    try:
        client = distributed.Client(address, timeout=CONNECT_SECONDS, set_as_default=False)
    except (OSError, TimeoutError) as e:
        raise MaroseError(f"--scheduler {address}: no Dask scheduler answered ({e})") from None
    with client, dask.config.set({"distributed.admin.large-graph-warning-threshold": "64GB"}):
        try:
            client.wait_for_workers(1, timeout=WORKERS_SECONDS)
        except (OSError, TimeoutError):
            raise MaroseError(f"--scheduler {address}: no worker joined within {WORKERS_SECONDS} s; start them "
                              f"with `dask worker {address} --nthreads 1`") from None
        yield client


def _dask():
    """The distributed package; MaroseError when it is not installed."""
    try:
        import distributed
    except ImportError:
        raise MaroseError("--scheduler needs Dask: pip install 'marose[dask]'") from None
    return distributed


# --- on the workers ------------------------------------------------------------------------------

@dataclass
class IndexOnWorker:
    """What the client needs of the index that a worker found: where it is, its contigs, and a
    fingerprint of its manifest (which holds every file's checksum) that the others check theirs
    against."""

    path: str
    names: list
    lengths: list
    fingerprint: str


def describe_index(asked: str) -> IndexOnWorker:
    """The index at asked (a FASTA that marose-index indexed, or its .marose folder), on this worker."""
    from indexer import store

    path = _found_index(asked)
    reference = store.load(path, False).reference
    return IndexOnWorker(path, list(reference.names), [int(n) for n in reference.lengths], _fingerprint(path))


_resident: dict = {}  # the mapping session this worker process keeps, under its index and device options
_mapping = threading.Lock()  # one chunk at a time uses the session


def map_chunk(index_path: str, fingerprint: str, options: dict, chunk: Chunk):
    """Maps a chunk with the session kept in this process (opened at the first chunk): its SAM
    records (a list of bytes, a batch's each) and counts (mapper.Stats)."""
    from .cli import default_batch_size, parser
    from .reads import BytesRead, rebatched
    from .session import map_reads

    with _mapping:
        session = _session(index_path, fingerprint, options)
        args = parser().parse_args(["map", "-q", "-"])
        args.max_errors, args.max_hits, args.xa, args.read_group, args.stats_details = \
            options["max_errors"], options["max_hits"], options["xa"], options["read_group"], options["stats"]
        batch = chunk.batch()
        # in the device's own batches, as a local run maps: a GPU worker mapped a million reads in
        # chunks of 100,000 in 0.93 s, in 1.28-1.35 s when it cut each chunk into four batches
        batches = rebatched(batch, default_batch_size(session.device.device))
        records = _Records(options["bam"])
        stats = map_reads(session, args, next(batches), batches, BytesRead(), lambda header: records, "",
                          lambda message: None, time.time())
        return records.parts, stats


def _size_and_counts(mapped) -> tuple[int, object]:
    """The byte size of a chunk's records (map_chunk's result) and its counts."""
    parts, counts = mapped
    return sum(map(len, parts)), counts


def _write_records(mapped, path: str, at: int) -> int:
    """Writes a chunk's records (map_chunk's result) into the output file at path, from offset
    at; returns their size."""
    from .bgzf import write_at
    from .sam_file import allocate

    size = _size_and_counts(mapped)[0]
    try:
        fd = os.open(path, os.O_WRONLY)
    except OSError as e:
        raise MaroseError(f"{_worker_name()} cannot write the output {path} ({e.strerror}), which the workers "
                          "saw as the client did at the start") from None
    try:
        allocate(fd, at, size)
        for records in mapped[0]:
            write_at(fd, records, at)
            at += len(records)
    except OSError as e:
        raise MaroseError(f"{_worker_name()}: the output {path}: write error ({e.strerror})") from None
    finally:
        os.close(fd)
    return size


def _session(index_path: str, fingerprint: str, options: dict):
    """The session of the index on the devices that options name, opened once: a session of
    another index or device is closed first."""
    from indexer import store

    from .cli import _in_background, use_cpu_threads
    from .session import open_session

    key = (index_path, fingerprint, options["device"], options["max_device_bytes"], options["threads"])
    if key not in _resident:
        _resident.clear()
        _found_index(index_path)
        if _fingerprint(index_path) != fingerprint:
            raise MaroseError(f"{index_path} on {_worker_name()} is another index than the one the first worker "
                              "read at this path; give every worker the same copy")
        use_cpu_threads(options["threads"])
        loading = _in_background(store.load, index_path, False)
        _resident[key] = open_session(loading, options["device"], False, options["verbose"], _worker_log,
                                      options["max_device_bytes"])
    return _resident[key]


def _found_index(asked: str) -> str:
    """The index folder of asked on this worker; MaroseError naming the worker when it has none."""
    from .cli import find_index

    try:
        return os.path.abspath(find_index(asked))
    except MaroseError as e:
        raise MaroseError(f"{_worker_name()}: {e}. Every worker reads the index at the path the client gives: put "
                          "it on a file system they share, or a copy at that path on each") from None


def _fingerprint(path: str) -> str:
    with open(os.path.join(path, "manifest.json"), "rb") as manifest:
        return hashlib.sha256(manifest.read()).hexdigest()


def _worker_name() -> str:
    try:
        from distributed import get_worker

        return f"the Dask worker {get_worker().address}"
    except (ImportError, ValueError):  # not in a worker
        return "this process"


def _worker_log(message: str) -> None:
    print(f"[marose worker] {message}", file=sys.stderr, flush=True)


class _Records:
    """A chunk's SAM records, collected batch by batch in parts (session.OpenOutput; the header is
    the client's): BAM records when is_bam (the client's output is a BAM file). The parts are not
    joined: a million reads' 430 MB took a worker on the H200 machine 0.27 s to join."""

    def __init__(self, is_bam: bool):
        self.is_bam = is_bam
        self.parts: list[bytes] = []

    def write(self, records) -> None:
        self.parts.append(bytes(records))  # records may be a view of memory reused for the next batch

    def close(self) -> None:
        pass

    def __enter__(self) -> "_Records":
        return self

    def __exit__(self, *exc) -> None:
        pass
