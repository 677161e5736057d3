"""Overlapping the stages of a run: batches are read ahead in one thread and written behind in
another while the main thread maps, so input parsing and output formatting overlap the device
work. Mapping may also be shared by several threads (lanes), batch by batch in turn, so that
one lane's waits for the device overlap another's host work. Order is kept; the first error
of any stage stops the others and is raised."""

from __future__ import annotations

import queue
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Callable, Iterable, Iterator, Sequence

_END = object()
_POLL_SECONDS = 0.1


class _Failed:
    def __init__(self, error: BaseException):
        self.error = error


def _put(q: queue.Queue, item, stop: threading.Event) -> None:
    while not stop.is_set():
        try:
            q.put(item, timeout=_POLL_SECONDS)
            return
        except queue.Full:
            continue


def _get(q: queue.Queue, stop: threading.Event):
    while not stop.is_set():
        try:
            return q.get(timeout=_POLL_SECONDS)
        except queue.Empty:
            continue
    return _END


def _feed(items: Iterable, q: queue.Queue, stop: threading.Event) -> None:
    try:
        for item in items:
            if stop.is_set():
                return
            _put(q, item, stop)
        _put(q, _END, stop)
    except BaseException as error:  # handed to the main thread
        _put(q, _Failed(error), stop)


class ReadAhead:
    """The items of an iterator, read up to depth ahead in a thread of their own from the start,
    so that reading them overlaps what the caller does before it asks for them (after: a read of
    the same iterator under way, which this one waits for). An error comes where it happened;
    leaving the ``with`` block stops the reading."""

    def __init__(self, items: Iterator, after: Future | None = None, depth: int = 2):
        self._stop = threading.Event()
        self._queue: queue.Queue = queue.Queue(depth)
        self._done = False
        threading.Thread(target=self._read, args=(items, after), daemon=True).start()

    def _read(self, items: Iterator, after: Future | None) -> None:
        if after is not None:
            after.exception()  # its error, if any, is the caller's to raise
        _feed(items, self._queue, self._stop)

    def __iter__(self) -> "ReadAhead":
        return self

    def __next__(self):
        item = _END if self._done else _get(self._queue, self._stop)
        if item is _END:
            self._done = True
            raise StopIteration
        if isinstance(item, _Failed):
            self._done = True
            raise item.error
        return item

    def __enter__(self) -> "ReadAhead":
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()


def _drain(q: queue.Queue, consume: Callable, stop: threading.Event, failure: list) -> None:
    try:
        while (item := _get(q, stop)) is not _END:
            batch, result = item
            consume(batch, result.result() if isinstance(result, Future) else result)
    except BaseException as error:  # handed to the main thread
        failure.append(error)
        stop.set()


def run(batches: Iterator, work: Callable | Sequence[Callable], consume: Callable, depth: int = 2) -> None:
    """consume(batch, work(batch)) for every batch, in order. work may be a list of lanes: the
    i-th batch then goes to work[i % len(work)], each lane in a thread of its own, taking its
    batches one at a time; up to depth batches, and at least one a lane, wait to be written."""
    lanes = list(work) if isinstance(work, Sequence) else [work]
    threads = [ThreadPoolExecutor(1, thread_name_prefix=f"marose-lane{i}") for i in range(len(lanes))] \
        if len(lanes) > 1 else []
    stop = threading.Event()
    inbox: queue.Queue = queue.Queue(depth)
    outbox: queue.Queue = queue.Queue(max(depth, len(lanes)))
    failure: list = []
    reader = threading.Thread(target=_feed, args=(batches, inbox, stop), daemon=True)
    writer = threading.Thread(target=_drain, args=(outbox, consume, stop, failure), daemon=True)
    reader.start()
    writer.start()
    try:
        number = 0
        while (batch := _get(inbox, stop)) is not _END:
            if isinstance(batch, _Failed):
                raise batch.error
            lane = number % len(lanes)
            result = threads[lane].submit(lanes[lane], batch) if threads else lanes[lane](batch)
            _put(outbox, (batch, result), stop)
            number += 1
        _put(outbox, _END, stop)
        writer.join()
    except BaseException:
        stop.set()
        raise
    finally:
        stop.set()
        for thread in threads:  # no lane goes on using the device after the run
            thread.shutdown(wait=True, cancel_futures=True)
    if failure:
        raise failure[0]
