"""Copies between host arrays and the buffers of a device with memory of its own, through a few
pinned host buffers in turn: from pageable memory a discrete GPU copies several times slower (on
the H100 machine a 40 MB read of SAM text took 17 ms, 2.4 GB/s). Threads fill and empty the
pinned buffers (numpy lets go of the interpreter lock) while the device copies the others."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np

SLOTS = 4  # pinned buffers, and threads to fill and empty them
THREAD_PREFIX = "marose-staging"  # the names of those threads, which live as long as their device


class Staging:
    """SLOTS pinned buffers of slot_bytes each, mapped into host memory for as long as this
    lives, and the last queued copy to or from each."""

    def __init__(self, cl, context, queue, slot_bytes: int, calls):
        """calls: the lock held for each OpenCL call but waits (Device.calls)."""
        mf = cl.mem_flags
        self.cl, self.queue, self.slot_bytes, self.calls = cl, queue, slot_bytes, calls
        with self.calls:
            pinned = [cl.Buffer(context, mf.ALLOC_HOST_PTR | mf.READ_WRITE, size=slot_bytes) for _ in range(SLOTS)]
            flags = cl.map_flags.READ | cl.map_flags.WRITE
            self.views = [cl.enqueue_map_buffer(queue, b, flags, 0, slot_bytes, np.uint8)[0] for b in pinned]
        self.last_copy: list = [None] * SLOTS
        self.threads = ThreadPoolExecutor(SLOTS, thread_name_prefix=THREAD_PREFIX)

    def write(self, parts: list[tuple[object, int, list[np.ndarray]]]) -> None:
        """Queues a copy of each (buffer, offset, pieces) to the device: the pieces (uint8, at
        most slot_bytes together) end to end from the offset. Returns once every part is in a
        pinned buffer: the caller may then drop its arrays, and commands it queues after run
        after the copies."""

        def fill(number: int, after) -> None:
            if after is not None:  # the device is done with this slot's last copy
                after.wait()
            view, at = self.views[number % SLOTS], 0
            for piece in parts[number][2]:
                np.copyto(view[at:at + piece.nbytes], piece)
                at += piece.nbytes

        filled = {n: self.threads.submit(fill, n, self.last_copy[n % SLOTS]) for n in range(min(SLOTS, len(parts)))}
        for number, (buffer, at, pieces) in enumerate(parts):
            filled.pop(number).result()
            slot = number % SLOTS
            nbytes = sum(piece.nbytes for piece in pieces)
            with self.calls:
                self.last_copy[slot] = self.cl.enqueue_copy(self.queue, buffer, self.views[slot][:nbytes],
                                                            dst_offset=at, is_blocking=False)
            if number + SLOTS < len(parts):
                filled[number + SLOTS] = self.threads.submit(fill, number + SLOTS, self.last_copy[slot])

    def read(self, buffer, out: np.ndarray) -> None:
        """Copies the first out.nbytes bytes of buffer into out (uint8), once every command
        queued before is done."""

        def empty(slot: int, copied, at: int, n: int) -> None:
            copied.wait()
            np.copyto(out[at:at + n], self.views[slot][:n])

        emptied: list = [None] * SLOTS
        for number, at in enumerate(range(0, out.nbytes, self.slot_bytes)):
            slot = number % SLOTS
            if emptied[slot] is not None:  # the slot's last part is out before the next comes in
                emptied[slot].result()
            n = min(self.slot_bytes, out.nbytes - at)
            with self.calls:
                self.last_copy[slot] = self.cl.enqueue_copy(self.queue, self.views[slot][:n], buffer, src_offset=at,
                                                            is_blocking=False)
            emptied[slot] = self.threads.submit(empty, slot, self.last_copy[slot], at, n)
        for done in emptied:
            if done is not None:
                done.result()
