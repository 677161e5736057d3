"""`marose map` on several devices, a process for each. In one process every device's mapping
lanes, and the reading and writing of their batches, share one interpreter lock: four H200s mapped
at most 1.2x the reads a second of one. Here the main process reads the input in batches and deals
them to the device processes in turn; each maps its batches with a session of its own device
(session.map_reads) and hands back each batch's records in batch order. A batch of a plain input
file goes as where it lies there, for its process to read (after the first, single reads of a
plain FASTQ file go as byte ranges that start at records, read_ranges.py, so that the main process
does not read them at all); other input (gzip, stdin) goes through a pipe. Into a regular SAM
file the device processes write their records themselves, each batch at the offset the main
process gives it once the batches before it have told their sizes (its blocks allocated first).
A BAM file is cut into the BGZF blocks of one stream: each process compresses and writes the
blocks that lie within a batch's records, and the main process those that straddle batches
(bgzf.BlockPlacer). SAM for stdout, a device or a pipe comes back through a pipe.
Pairs: every process learns the insert size from the same first pairs, sent to each. The output
is the one a single device writes."""

from __future__ import annotations

import collections
import itertools
import os
import signal
import sys
import threading
import time
import traceback
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from . import read_ranges, reads
from .errors import MaroseError, RecordError, out_of_memory
from .reads import piece_places

# Batches of half a device's default spread the reads more evenly over the devices, and the first
# batches reach every device sooner (four H200s, 1,000,000 reads of 100 bp: 0.31 s of mapping
# against 0.46 s with batches of 100,000)
DEALT_BATCH_SHARE = 2


def wanted(specs: list[str]) -> bool:
    """Whether map maps with a process for each device: when there are several."""
    return len(specs) > 1


def map_on_devices(args, specs: list[str], loading, reading, batches, bytes_read, layout, device_batch_size: list,
                   command_line: str, log, setup_started: float) -> None:
    """Maps the reads (map's options in args, checked) with a process on each device of specs
    into args.output, as session.map_reads does on one device: the index that loading loads, the
    batches that reading (the first) and batches give in their layout (session.SingleEnd or
    pair_driver.PairedEnd), bytes_read telling progress how far the input has been read; the
    devices' batch size is asked of device_batch_size[0] once they are open. Pairs: every process
    learns the insert size from the same first pairs."""
    from . import __version__
    from .cli import summary, write_stats
    from .params import default_max_errors
    from .progress import Progress
    from .sam import sam_header
    from .sam_file import SamWriter, output_threads

    index = loading.result()
    processes = [DeviceProcess(spec, index.path, _worker_args(args, number == 0, len(specs))) for number, spec in
                 enumerate(specs)]
    dealing = None
    try:
        ready = threading.Event()
        sizes: list[int] = []  # the batch size, once the device processes are ready
        device_batch_size.append(lambda: ready.wait() and sizes[0])
        first = reading.result()
        first_length = first.first_length()
        k = args.max_errors if args.max_errors is not None else default_max_errors(first_length)
        for process in processes:
            process.send_first_read(k, first_length)
        reference = index.reference
        described = [process.ready() for process in processes]
        sizes.append(max(1, min(size for _, _, size, _ in described) // DEALT_BATCH_SHARE))
        ready.set()
        log(f"index {index.path} ({reference.total_length:,} bases, {described[0][3]}); k={k}; {len(specs)} devices, "
            "a process each: " + "; ".join(description for description, *_ in described) + layout.describe(k))
        learning = _learning_batches(layout, first, batches, log)
        for process in processes:
            process.send_learning(learning)
        later, in_ranges = _later_batches(args, layout, first, batches, bytes_read, args.batch_size or sizes[0])
        header = sam_header(list(zip(reference.names, map(int, reference.lengths))), args.read_group, command_line,
                            __version__)
        progress = Progress(log, sys.stderr if not args.quiet and sys.stderr.isatty() else None, bytes_read,
                            unit=layout.unit)
        started = time.time()
        with SamWriter(args.output, header, threads=output_threads(args.threads), spread=True) as out:
            dealing = Dealing(itertools.chain(learning or [first], later), processes)
            try:
                results = _written(processes, out, progress)
            except RecordError as error:
                if not in_ranges:
                    raise
                dealing.stop()  # nothing more is mapped while the input is read again
                for process in processes:
                    process.stop()
                # numbered within its byte range: named as one device names it
                raise read_ranges.first_bad_record(args.reads[0]) or error from None
            finally:
                progress.clear()
            dealing.raise_failure()
    finally:
        if dealing is not None:
            dealing.stop()
        for process in processes:
            process.stop()
    stats, kernel_seconds, layout.counts = results
    elapsed = time.time() - started
    summary(stats, elapsed, log)
    layout.report(elapsed, log)
    if args.stats:
        write_stats(args.stats, stats, elapsed, started - setup_started, [],
                    ", ".join(name for _, name, *_ in described), kernel_seconds)


def _learning_batches(layout, first, batches, log) -> list:
    """Pairs whose insert size is to be learned: the first batches, up to pairs.LEARN_PAIRS pairs,
    which every device process maps to learn it (and the one dealt each maps again); else none.
    A given insert size is described here, once."""
    from . import pairs

    if layout.unit != "pairs":
        return []
    if layout.insert is not None:
        log(layout.insert.describe())
        return []
    learning = [first]
    while sum(map(len, learning)) < pairs.LEARN_PAIRS and (batch := next(batches, None)) is not None:
        learning.append(batch)
    return learning


def _later_batches(args, layout, first, batches, bytes_read, reads_each: int) -> tuple:
    """The batches after the first, and whether they are byte ranges: of a plain FASTQ file of
    single reads, about reads_each reads each (read_ranges), for the processes to read themselves;
    else the batches as read."""
    parts = read_ranges.after(first, args.reads[0], bytes_read.total, reads_each) \
        if layout.unit == "reads" and bytes_read.verbatim else None
    if parts is None:
        return batches, False
    batches.close()
    return parts, True


def _worker_args(args, first: bool, n_devices: int):
    """map's options as a device process maps with them: quiet (the main process reports),
    --explain by the first process only, kernel seconds measured for --stats but no file, and
    its share of the threads that compress BAM."""
    import argparse

    from .bgzf import compressing_threads
    from .sam_file import output_threads

    options = argparse.Namespace(**vars(args))
    options.compressing_threads = compressing_threads(output_threads(args.threads) // n_devices)
    options.stats_details, options.stats = bool(args.stats), None  # the main process writes --stats
    options.explain = args.explain and first
    options.first_process = first  # which alone warns of read lengths without a guarantee
    options.progress_log = not args.quiet  # the processes' own messages (a batch mapped in parts)
    options.quiet = True
    return options


def _written(processes: list, out, progress) -> tuple:
    """Writes the records of each batch in turn into out (or has its process write them, or
    their BAM blocks, into out's file at their place), counting the reads (or pairs) they were
    of; the counts of every process summed (mapper.Stats), the kernel seconds of each and their
    pairs' counts (pairs.PairCounts, of each mapping lane)."""
    from .mapper import Stats

    done = _placed_bam(processes, out.placer, progress) if out.placer else _placed(processes, out, progress)
    for number, process in enumerate(processes):
        if number not in done:
            message = process.receive()
            if message[0] != "done":
                raise MaroseError(f"device {process.spec} sent records for a batch that was not dealt to it")
            done[number] = message[1:]
    stats, kernel_seconds, pair_counts = Stats(), [], []
    for part, seconds, counts in done.values():
        stats.add(part)
        kernel_seconds.append(seconds)
        pair_counts.extend(counts)
    stats.list_lengths_once()  # each process lists the lengths it saw
    return stats, kernel_seconds, pair_counts


def _told(processes: list, done: dict):
    """(process, size, count) of each batch's records in turn, as its process tells them, until a
    process says it is done: its message then goes into done, by the process's number."""
    for number in itertools.count():
        process = processes[number % len(processes)]
        message = process.receive()
        if message[0] == "done":
            done[number % len(processes)] = message[1:]
            return
        yield process, message[1], message[2]


def _placed(processes: list, out, progress) -> dict[int, tuple]:
    """Writes each batch's records in turn into out, or has its process write them into out's
    file at their place; the "done" message of the process that ended the batches, by number."""
    shared = out.shared()
    at = shared[1] if shared else 0
    done: dict[int, tuple] = {}
    reads = 0
    for process, size, count in _told(processes, done):
        if shared is None:
            out.write(process.records(size))
        else:
            process.write_at(shared[0], at)
            at += size
        reads += count
        progress.update(reads)
    return done


def _placed_bam(processes: list, placer, progress) -> dict[int, tuple]:
    """BAM into a file (placer, a bgzf.BlockPlacer): each batch's process compresses the whole
    blocks within its records and writes them where the placer says, once it has the head and tail
    of them, which the placer compresses and writes with their neighbours' bytes. A batch is given
    its place in the stream as soon as the batch before has told its size, and its blocks' place
    in the file a turn of the processes later, so that the processes compress side by side; the
    "done" message of the process that ended the batches, by number."""
    given = collections.deque()  # batches given their place in the stream, not yet in the file
    done: dict[int, tuple] = {}
    reads = 0
    for process, size, count in _told(processes, done):
        process.compress_at(placer.path, placer.start(size))
        given.append((process, count))
        if len(given) == len(processes):
            reads += _place_blocks(placer, *given.popleft())
            progress.update(reads)
    while given:
        reads += _place_blocks(placer, *given.popleft())
        progress.update(reads)
    return done


def _place_blocks(placer, process, count: int) -> int:
    """Places the blocks of process's oldest batch given its place in the stream; its reads."""
    head, tail, compressed = process.receive_pieces()
    process.write_at(placer.path, placer.place(head, tail, compressed))
    return count


class Dealing:
    """A thread dealing the batches to the device processes in turn: the i-th to process i modulo
    their number; then each is told that the input has ended. A failure to read the input stops
    the dealing (raise_failure raises it)."""

    def __init__(self, batches, processes: list):
        self._failure: list[BaseException] = []
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._deal, args=(batches, processes), daemon=True,
                                        name="marose-deal")
        self._thread.start()

    def _deal(self, batches, processes: list) -> None:
        try:
            for number, batch in enumerate(batches):
                if self._stopped.is_set():
                    return
                processes[number % len(processes)].send_batch(batch)
        except OSError:  # a process ended: the main thread hears why from it when its batch's turn comes
            return
        except BaseException as error:  # raised by the main thread once the processes have ended
            self._failure.append(error)
        for process in processes:
            try:
                process.send_end()
            except OSError:
                pass

    def raise_failure(self) -> None:
        self._thread.join()
        if self._failure:
            raise self._failure[0]

    def stop(self) -> None:
        self._stopped.set()


def _send_batch(connection, batch) -> None:
    """A batch of reads or of pairs (mates.PairBatch: where its mates lie, then its reads) through
    connection: packed reads as they are, FASTQ text piece by piece, a piece that lies as it is in
    its input file (whose path is its label) as where it lies there, another as its bytes; a byte
    range (read_ranges.ByteRange) as where it lies."""
    if isinstance(batch, read_ranges.ByteRange):
        connection.send(("range", batch.path, batch.at, batch.size))
        return
    if hasattr(batch, "mate1"):
        connection.send(("pairs", batch.first_pair, batch.labels, batch.mate1, batch.mate2))
        batch = batch.reads
    if batch.pieces is None:
        connection.send(("packed", batch.first_index, batch.packed))
        return
    connection.send(("fastq", batch.first_index, piece_places(batch)))
    for piece in batch.pieces:
        if piece.at is None:
            connection.send_bytes(piece.text)


class DeviceProcess:
    """A process mapping on one device, and the main process's ends of its two pipes: batches go
    out through one; through the other come its messages (ready, a batch's records' size, done,
    or an error) and go the answers (where to write the records, or to send them)."""

    def __init__(self, spec: str, index_path: str, args):
        import multiprocessing

        context = multiprocessing.get_context("spawn")  # a fork would share the parent's driver state
        self.spec = spec
        theirs_in, self._batches = context.Pipe(duplex=False)
        self._messages, theirs = context.Pipe()
        self.process = context.Process(target=run_device, args=(spec, index_path, args, theirs_in, theirs),
                                       daemon=True, name=f"marose-device-{spec}")
        self.process.start()
        theirs_in.close()
        theirs.close()

    def ready(self) -> tuple[str, str, int, str]:
        """The device's description (device.describe), name and batch size, and how the index lies
        there (cli.index_layout), once its session is open."""
        message = self.receive()
        if message[0] != "ready":
            raise MaroseError(f"device {self.spec}: the mapping process said {message[0]!r} before it was ready")
        return message[1:]

    def send_first_read(self, k: int, length: int) -> None:
        """The edit budget and the first read's length, which the main process knows once it has
        read the first read."""
        self._send(self._batches.send, ("first read", k, length))

    def send_batch(self, batch) -> None:
        """Sends a batch (from Dealing's thread: OSError when the process has ended, which the main
        thread hears from its messages)."""
        _send_batch(self._batches, batch)

    def send_learning(self, learning: list) -> None:
        """Sends the batches whose pairs every process learns the insert size from (none: nothing
        to learn), and how many pairs it learns from."""
        from . import pairs

        self._send(self._batches.send, ("learning", pairs.LEARN_PAIRS, len(learning)))
        for batch in learning:
            self._send(lambda b: _send_batch(self._batches, b), batch)

    def send_end(self) -> None:
        """Says that the input has ended (from Dealing's thread, as send_batch)."""
        self._batches.send(("end",))

    def receive(self) -> tuple:
        """The process's next message; MaroseError for an error it reports, or when it died."""
        try:
            message = self._messages.recv()
        except (EOFError, OSError):
            self.process.join(1)
            raise MaroseError(f"the mapping process of device {self.spec} died (exit status "
                              f"{self.process.exitcode})") from None
        if message[0] == "error":
            kind, text = message[1:]
            if kind in ("marose", "record"):
                raise (RecordError if kind == "record" else MaroseError)(text)
            raise RuntimeError(f"the mapping process of device {self.spec} failed:\n{text}")
        return message

    def records(self, size: int) -> bytes:
        """A batch's records, of the size the process told, sent through the pipe."""
        self._send(self._messages.send, ("send",))
        records = self.receive_bytes()
        if len(records) != size:
            raise MaroseError(f"device {self.spec} sent {len(records):,} bytes of records for {size:,}")
        return records

    def receive_bytes(self) -> bytes:
        try:
            return self._messages.recv_bytes()
        except (EOFError, OSError):
            self._lost()

    def write_at(self, path: str, offset: int) -> None:
        """Tells the process to write its batch's records (or their BAM blocks) into the file at
        path, at offset."""
        self._send(self._messages.send, ("at", path, offset))

    def compress_at(self, path: str, stream_at: int) -> None:
        """Tells the process to compress its batch's BAM records, which lie at stream_at in the
        BAM stream of the file at path, and to send their head and tail (receive_pieces)."""
        self._send(self._messages.send, ("compress", path, stream_at))

    def receive_pieces(self) -> tuple[bytes, bytes, int]:
        """The head and tail of a batch's BAM records, and the size of its compressed blocks
        (bgzf.BlockPlacer.place)."""
        message = self.receive()
        if message[0] != "pieces":
            raise MaroseError(f"device {self.spec}: the mapping process said {message[0]!r} instead of its blocks")
        return message[1:]

    def _send(self, send, what) -> None:
        try:
            send(what)
        except OSError:
            self._lost()

    def _lost(self):
        """Raises the error the process reported before it ended, or says that it died."""
        while True:
            self.receive()  # raises at its error, or at the end of its messages

    def stop(self) -> None:
        """Ends the process, if it still runs, without waiting: one that said it was done is letting
        its device go (0.12-0.15 s on the H100, scripts/probes/timeline_probe.py), which map need
        not wait for."""
        if self.process.is_alive():
            self.process.terminate()  # first, so that a send to it under way fails
        for end in (self._batches, self._messages):
            end.close()


# --- in a device process -------------------------------------------------------------------------

def run_device(spec: str, index_path: str, args, batches, messages) -> None:
    """Opens a session on the device of spec and maps the batches that come through batches,
    reporting through messages (DeviceProcess says what). Ctrl-C is the main process's to handle."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        from .cli import _in_background, _load_opencl_drivers, default_batch_size, index_layout

        _in_background(_load_opencl_drivers)  # while the modules below are imported
        from .device import describe
        from .sam_file import kept_at_close

        session = _open(spec, index_path, args)
        args.max_errors, first_length = _first_read(batches)
        layout = _layout(args)
        mapper = _prepared(session, args, layout.max_hits, first_length)
        if not kept_at_close(args.output):  # output that cannot be taken back waits for the index's check
            session.checked.result()
        device = session.device.device
        messages.send(("ready", describe(device), device.name.strip(), default_batch_size(session.device.device),
                       index_layout(session.on_device)))
        counts = collections.deque()  # of the batches received and not yet written
        with reads.InputFiles() as files:
            _learn(layout, args, mapper, batches, files)
            stats, seconds = _map(session, mapper, layout, args, _received(batches, files, counts), messages, spec,
                                  counts)
        session.checked.result()  # a corrupted index is the error to report
        messages.send(("done", stats, seconds, getattr(layout, "counts", [])))
    except BaseException as error:
        kind = "record" if isinstance(error, RecordError) else "marose" if isinstance(error, MaroseError) else "other"
        text = str(error) if kind != "other" else "".join(traceback.format_exception(error))
        if out_of_memory(error):
            kind, text = "marose", f"device {spec}: out of memory ({error})"
        try:
            messages.send(("error", kind, text))
        except OSError:  # the main process has gone
            pass
    finally:
        sys.stderr.flush()
        os._exit(0)  # the device's buffers and context are let go with the process


def _open(spec: str, index_path: str, args):
    from indexer import store

    from .cli import _in_background, device_memory
    from .session import open_session

    loading = _in_background(store.load, index_path, False)
    # the first process checks the index files' checksums, and fails the run for a corrupted one
    return open_session(loading, spec, bool(args.stats_details), args.verbose, _log(args, spec), device_memory(args),
                        check=args.first_process)


def _log(args, spec: str | None = None):
    """A device process's log: its messages on stderr (naming the device of spec, if given), unless
    the run is quiet."""
    where = f"device {spec}: " if spec else ""

    def log(message: str) -> None:
        if args.progress_log:
            print(f"[marose] {where}{message}", file=sys.stderr, flush=True)

    return log


def _map(session, mapper, layout, args, batches, messages, spec: str, counts) -> tuple:
    """Maps the batches, in their layout, into the main process's output (counts: the reads or pairs
    of each batch received, for the main process's progress): the counts (mapper.Stats) and kernel
    seconds of the device."""
    from .mapper import Stats
    from .reads import BytesRead
    from .session import map_reads

    first = next(batches, None)
    if first is None:
        return Stats(), {}
    output = ToMain(messages, args.output, counts, args.compressing_threads)
    stats = map_reads(session, args, first, batches, BytesRead(), lambda header: output, "", _log(args, spec),
                      time.time(), layout, announce=False, mapper=mapper)
    return stats, session.device.collect_profile() if args.stats_details else {}


def _first_read(batches) -> tuple[int, int]:
    """The edit budget and the first read's length, from the main process."""
    message = batches.recv()
    if message[0] != "first read":
        raise MaroseError(f"the main process sent {message[0]!r} before the edit budget")
    return message[1], message[2]


def _prepared(session, args, max_hits: int | None, first_length: int):
    """The session's Mapper (keeping max_hits loci a read, all for None), building the programs
    that reads of first_length take while the other devices open and the batches are dealt. Only
    the first device process warns of a read length without a guarantee."""
    from .mapper import Mapper

    mapper = Mapper(session.index, session.device, args.max_errors, max_hits, text_on_device=True,
                    on_device=session.on_device)
    mapper.warns = args.first_process
    mapper.prepare(first_length)
    return mapper


def _layout(args):
    """The layout of the run: session.SingleEnd, or pair_driver.PairedEnd (whose mapper keeps every
    locus of each mate)."""
    from .pair_driver import PairedEnd
    from .session import SingleEnd

    return SingleEnd(args) if len(args.reads) == 1 and not args.interleaved else PairedEnd(args)


def _learn(layout, args, mapper, batches, files) -> None:
    """Pairs: the insert size learned from the batches the main process sends for it, as every
    process does (the first one describes it), or the one given (the main process described it)."""
    _, learn_pairs, n_learning = batches.recv()
    learning = [_received_batch(batches, batches.recv(), files) for _ in range(n_learning)]
    if layout.unit != "pairs":
        return
    if learning:
        layout.learn_ahead(mapper, learning, learn_pairs, _log(args) if args.first_process else lambda message: None)
    layout.settled = True


def _received(batches, files, counts):
    """The batches that the main process sends, until it says the input ended, each one's reads
    (or pairs) counted in counts."""
    while (message := batches.recv())[0] != "end":
        batch = _received_batch(batches, message, files)
        counts.append(len(batch))
        yield batch


def _received_batch(batches, message: tuple, files):
    """The batch (reads.ReadBatch or mates.PairBatch) that message begins (_send_batch)."""
    from .mates import PairBatch
    from .reads import ReadBatch, batch_of_pieces

    if message[0] == "pairs":
        _, first_pair, labels, mate1, mate2 = message
        return PairBatch(_received_batch(batches, batches.recv(), files), mate1, mate2, first_pair, labels)
    if message[0] == "packed":
        return ReadBatch.from_packed(message[2], message[1])
    if message[0] == "range":
        _, path, at, size = message
        return reads.batch_of_range(files.read(path, at, size), path, at)
    _, first_index, places = message
    texts = [batches.recv_bytes() if at is None else files.read(label, at, size) for _, _, label, size, at in places]
    return batch_of_pieces(places, texts, first_index)


@dataclass
class ToMain:
    """A device process's output (session.OpenOutput): each batch's records, in turn, written
    where the main process says: into the output file at an offset, or through the pipe."""

    messages: object
    path: str | None
    counts: collections.deque  # the reads (or pairs) of each batch to write, in turn
    compressing_threads: int = 1  # BAM's
    _file: int | None = None
    _allocating: bool = True  # whether each batch's blocks are allocated before it is written
    _compressing: ThreadPoolExecutor | None = None

    @property
    def is_bam(self) -> bool:
        from .sam_file import is_bam_path

        return is_bam_path(self.path)

    def write(self, records) -> None:
        with memoryview(records) as view:
            self.messages.send(("records", view.nbytes, self.counts.popleft()))
            answer = self.messages.recv()
            if answer[0] == "send":
                self.messages.send_bytes(view)
            elif answer[0] == "compress":
                self._compress_at(view, answer[1], answer[2])
            else:
                self._write_at(view, answer[1], answer[2])

    def _compress_at(self, view, path: str, stream_at: int) -> None:
        """BAM records at stream_at in the BAM stream: their whole blocks compressed here, written
        where the main process says once it has their head and tail (bgzf.BlockPlacer)."""
        from . import bgzf

        if self._compressing is None:
            self._compressing = ThreadPoolExecutor(self.compressing_threads, thread_name_prefix="marose-bgzf")
        head, tail, blocks = bgzf.compress_piece(view, stream_at, self._compressing)
        self.messages.send(("pieces", head, tail, len(blocks)))
        answer = self.messages.recv()
        self._write_at(memoryview(blocks), path, answer[2])

    def _write_at(self, view, path: str, offset: int) -> None:
        from .bgzf import write_at
        from .sam_file import allocate

        if self._file is None:
            self._file = os.open(path, os.O_WRONLY)
        if self._allocating and view.nbytes:
            self._allocating = allocate(self._file, offset, view.nbytes)
        write_at(self._file, view, offset)

    def close(self) -> None:
        if self._file is not None:
            os.close(self._file)
        if self._compressing is not None:
            self._compressing.shutdown(cancel_futures=True)

    def abort(self) -> None:
        self.close()

    def __enter__(self) -> "ToMain":
        return self

    def __exit__(self, *exc) -> None:
        pass
