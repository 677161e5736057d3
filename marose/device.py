"""OpenCL device choice, and building (and caching) programs from the kernels in cl/."""

from __future__ import annotations

import contextlib
import copy
import math
import os
import re
import sys
import tempfile
import threading
import warnings
from concurrent.futures import Future, ThreadPoolExecutor
from functools import lru_cache
from pathlib import Path

import numpy as np

from .errors import MaroseError
from .staging import Staging

STAGING_BYTES = 8 << 20  # each pinned buffer large copies go through (staging.py)
OUR_MESSAGES = ("[marose", "marose")  # how the lines marose prints on stderr begin
LOCAL_SIZE = 64  # work-items a group of kernels launched without a work-group size (see launch)
# PoCL's CPU devices compile each kernel once for grids narrower than 65,535 work-items and once
# for wider ones; launches without a work-group size are at least this wide there (see launch)
POCL_WIDE_GRID = 1 << 16


def kernel_dir() -> Path:
    """cl/ inside the installed package, or beside it in a source checkout."""
    here = Path(__file__).resolve().parent
    for candidate in (here / "cl", here.parent / "cl"):
        if (candidate / "murmur3.cl").is_file():
            return candidate
    raise MaroseError(f"OpenCL kernels not found next to {here}; reinstall marose")


def _cl():
    try:
        import pyopencl
    except ImportError as exc:  # pragma: no cover - a broken install
        raise MaroseError(f"pyopencl cannot be imported ({exc}); install marose with its dependencies") from None
    return pyopencl


@lru_cache(maxsize=None)
def all_devices() -> tuple[tuple[int, int, object], ...]:
    """(platform number, device number, device) for every OpenCL device."""
    cl = _cl()
    try:
        platforms = cl.get_platforms()
    except cl.Error:
        return ()
    found = []
    for p, platform in enumerate(platforms):
        try:
            devices = platform.get_devices()
        except cl.Error:
            continue
        found.extend((p, d, device) for d, device in enumerate(devices))
    return tuple(found)


def describe(device) -> str:
    cl = _cl()
    kind = cl.device_type.to_string(device.type)
    return (f"{device.name.strip()} [{kind}] on {device.platform.name.strip()}, "
            f"{device.global_mem_size / 2**30:.1f} GiB, {device.max_compute_units} compute units")


# PoCL major versions preferred over other PoCLs for a default CPU device: PyPI's PoCL 3.0 mapped
# 1.1-1.4x as fast as PoCL 5.0 on 16 cores (two lanes, the filter over candidates as vector code)
PREFERRED_POCLS = (3,)


def pocl_major(platform_version: str) -> int | None:
    """The major version of a PoCL platform (from its version string), None for another runtime."""
    found = re.search(r"PoCL (\d+)\.", platform_version)
    return int(found.group(1)) if found else None


def is_cpu(device) -> bool:
    """Whether an OpenCL device is a CPU."""
    return bool(device.type & _cl().device_type.CPU)


def is_oclgrind(device) -> bool:
    """Whether an OpenCL device is Oclgrind's simulator (an interpreter that checks kernels)."""
    return "oclgrind" in device.platform.name.lower()


def choose_device(spec: str | None = None):
    """The device named by spec ('P:D' numbers or part of its name), PYOPENCL_CTX, or the best one.

    Without either, a GPU is preferred over other devices, and a PoCL of PREFERRED_POCLS over
    other PoCLs.
    """
    devices = all_devices()
    if not devices:
        raise MaroseError("no OpenCL device found; install a driver, or `pip install marose[pocl]` "
                          "for the CPU runtime")
    spec = spec or os.environ.get("PYOPENCL_CTX")
    if spec:
        for p, d, device in devices:
            numbers = spec.split(":")
            if numbers[0] == str(p) and (len(numbers) == 1 or numbers[1] in ("", str(d))):
                return device
        for _, _, device in devices:
            if spec.lower() in device.name.lower():
                return device
        raise MaroseError(f"no OpenCL device matches '{spec}'; `marose devices` lists them")
    cl = _cl()
    real = [device for _, _, device in devices if not is_oclgrind(device)] or \
        [devices[0][2]]  # a simulator only when named
    gpus = [device for device in real if device.type & cl.device_type.GPU]
    return (gpus or sorted(real, key=_other_pocl))[0]


def _other_pocl(device) -> bool:
    """Whether a device is of a PoCL not in PREFERRED_POCLS (sorted after the others)."""
    pocl = pocl_major(device.platform.version)
    return pocl is not None and pocl not in PREFERRED_POCLS


def choose_devices(spec: str | None = None) -> list[str]:
    """The devices to map on, as 'P:D': for spec 'all', every device of the default device's
    platform and kind (Oclgrind aside); for a comma-separated list, each device it names (as
    choose_device reads a spec); for one spec or PYOPENCL_CTX, that device; by default, every
    GPU of the platform of the GPU choose_device prefers, or else the one device it chooses."""
    spec = spec or os.environ.get("PYOPENCL_CTX")
    if spec and spec.strip().lower() != "all":
        chosen = [_numbered(choose_device(part.strip())) for part in spec.split(",")]
        twice = sorted({number for number in chosen if chosen.count(number) > 1})
        if twice:
            raise MaroseError(f"--device {spec}: device {', '.join(twice)} is named more than once")
        return chosen
    first = choose_device(None)
    if not spec and not first.type & _cl().device_type.GPU:
        return [_numbered(first)]
    return [f"{p}:{d}" for p, d, device in all_devices()
            if device.platform == first.platform and device.type == first.type and not is_oclgrind(device)] \
        or [_numbered(first)]


def _numbered(device) -> str:
    """A device's 'P:D' (all_devices' numbers)."""
    return next(f"{p}:{d}" for p, d, found in all_devices() if found == device)


class Device:
    """A context and in-order queue on one device, with built programs cached by (files, defines)."""

    def __init__(self, spec: str | None = None, profile: bool = False, verbose: bool = False):
        """verbose: the compiler's messages of each program built are printed on stderr (they
        are otherwise shown only when a build fails)."""
        cl = _cl()
        self.cl = cl
        self.verbose = verbose
        self.device = choose_device(spec)
        self.context = cl.Context([self.device])
        self.profile = profile
        self.queue = self._new_queue()
        self.kernel_seconds: dict[str, float] = {}
        self._events: list = []
        # The arguments of the commands queued since the last blocking read, and the events of
        # queued copies (which hold their host arrays). Releasing a buffer
        # that a queued command uses makes NVIDIA's driver wait for that command, which would
        # stop the host from running ahead of the device; the buffers are kept until a
        # blocking read has waited for all of them. Oclgrind's uninitialized-value checker
        # loses track of buffers written by kernels when others are released, so there every
        # buffer a command used is kept until the device is gone; nor may two threads call it.
        self._in_use: list = []
        self.is_oclgrind = is_oclgrind(self.device)
        # Buffers a DeferredRead has read in another thread, released by this one at its next
        # blocking read (the memory pool is this thread's).
        self._read_elsewhere: list = []
        self._lane: UploadLane | None = None
        self._programs: dict = {}  # a program, or the Future of one being built
        self._building = threading.Lock()
        self._builder: ThreadPoolExecutor | None = None
        # Every OpenCL call but a wait is made holding this lock, which the mapping lanes share:
        # without it, two runs in 14 with two lanes crashed in NVIDIA's driver (H100), though
        # OpenCL allows calls from several threads at once.
        self.calls = threading.RLock()
        self._kernels: dict = {}
        self._pool = self._new_pool()
        # On a device with memory of its own, copies of a MB or more go through pinned buffers.
        self.staged = not self.device.host_unified_memory
        self._staging: Staging | None = None

    def _new_queue(self):
        properties = self.cl.command_queue_properties.PROFILING_ENABLE if self.profile else 0
        return self.cl.CommandQueue(self.context, properties=properties)

    def _new_pool(self):
        """Scratch buffers come from a pool: a batch's buffers are taken again by the next batch
        instead of being freed (on a GPU, freeing waits for the device) and allocated anew."""
        import pyopencl.tools

        return pyopencl.tools.MemoryPool(pyopencl.tools.ImmediateAllocator(self.queue))

    def mapping_lane(self) -> "Device":
        """This device with a queue of its own, for a second thread to map batches on while
        this one waits for the device (a GPU then runs one batch's kernels while the host
        prepares another's). The context, programs and kernel profile are shared; the memory
        pool, staging buffers, kernel objects (whose arguments each launch sets) and the
        buffers kept for queued commands are its own."""
        lane = copy.copy(self)
        with self.calls:
            lane.queue = self._new_queue()
            lane._pool = lane._new_pool()
        lane._kernels, lane._in_use, lane._read_elsewhere, lane._staging = {}, [], [], None
        return lane

    def __repr__(self) -> str:
        return f"Device({describe(self.device)})"

    @property
    def is_cpu(self) -> bool:
        return is_cpu(self.device)

    @property
    def widens_grids(self) -> bool:
        """Whether launches without a work-group size are made POCL_WIDE_GRID work-items wide at
        least: on PoCL's CPU devices, so that such a kernel is compiled once whatever the size of
        the batch, and the known-answer check compiles what mapping runs."""
        return self.is_cpu and "portable computing language" in self.device.platform.name.lower()

    @property
    def prefetches(self) -> bool:
        """Whether kernels ask for cache lines ahead of use: a CPU, not Oclgrind (an interpreter
        without the prefetch builtin)."""
        return self.is_cpu and not self.is_oclgrind

    def program(self, files: tuple[str, ...], defines: dict | None = None):
        key = _program_key(files, defines)
        with self._building:  # the mapping lanes share the programs
            if key not in self._programs:
                self._programs[key] = self._build(files, defines)
            program = self._programs[key]
        return program.result() if isinstance(program, Future) else program

    def prepare(self, programs: list[tuple[tuple[str, ...], dict | None]]) -> None:
        """Starts building programs (files, defines) that kernels will soon ask for, one after
        another in a thread of their own, so that the builds overlap the host's work and the
        device's until then; program() waits for a build under way. These builds leave the
        process's stderr alone, which the other threads write to meanwhile (_build). Not with
        verbose, whose builds show what the compiler says, nor on Oclgrind, which two threads
        may not call at once."""
        if self.is_oclgrind or self.verbose:
            return
        with self._building:
            for files, defines in programs:
                key = _program_key(files, defines)
                if key not in self._programs:
                    if self._builder is None:
                        self._builder = ThreadPoolExecutor(1, thread_name_prefix="marose-build")
                    self._programs[key] = self._builder.submit(self._build, files, defines, True)

    def _build(self, files: tuple[str, ...], defines: dict | None, in_background: bool = False):
        """The program built. Without verbose the compiler is asked for no warnings (-w), so that
        a build in the background need not hold the process's stderr (file descriptor 2) while
        other threads write there; a build in the foreground holds what the compiler says there
        anyway, to show it with verbose or a failure."""
        source = "\n".join(_source(name) for name in (PRELUDE, *files))
        defines = {**(defines or {}), **({"OCLGRIND": 1} if self.is_oclgrind else {})}  # see cl/ops.cl
        options = ["-cl-std=CL1.2"] + [f"-D{name}={value}" for name, value in sorted(defines.items())]
        options += [] if self.verbose else ["-w"]
        # the filter is the whole process's, as programs build in threads (warnings.catch_warnings
        # is not safe in threads)
        warnings.filterwarnings("ignore", category=self.cl.CompilerWarning)
        with contextlib.nullcontext(lambda: "") if in_background else _compiler_output() as said:
            try:
                program = self.cl.Program(self.context, source).build(options=options)
            except self.cl.Error as exc:
                failure = exc
            else:
                failure = None
        if failure is not None:
            raise MaroseError(f"OpenCL build of {', '.join(files)} failed on {self.device.name.strip()}: "
                              f"{failure}{_indented(said())}") from None
        if self.verbose:
            log = program.get_build_info(self.device, self.cl.program_build_info.LOG).strip()
            print(f"[marose] built {', '.join(files)} {' '.join(options)}{_indented(log or said())}",
                  file=sys.stderr)
        return program

    def kernel(self, files: tuple[str, ...], name: str, defines: dict | None = None):
        """A kernel of a cached program (retrieved once, then reused)."""
        key = (name, *_program_key(files, defines))
        if key not in self._kernels:
            self._kernels[key] = self.cl.Kernel(self.program(files, defines), name)
        return self._kernels[key]

    def launch(self, kernel, global_size, local_size, *args, wait_for: list | None = None) -> None:
        """Run a kernel, after the events of wait_for (of other queues) too; with profiling on,
        its device time is added to kernel_seconds.

        A kernel launched without a work-group size (local_size None) gets groups of
        LOCAL_SIZE items: left to the runtime, PoCL takes a size that follows the global size
        and compiles the kernel anew for each size it has not met, so that each new number of
        reads cost seconds of compiling. On PoCL's CPU devices its grid, when narrower, is
        widened to POCL_WIDE_GRID work-items (widens_grids): such a kernel takes an item a
        work-item and leaves the work-items past its items idle (idle work-groups cost PoCL next
        to nothing). Kernels of work-groups that meet at barriers are launched as asked."""
        if local_size is None:
            local_size = (math.gcd(global_size[0], LOCAL_SIZE),)
            if self.widens_grids and global_size[0] < POCL_WIDE_GRID:
                global_size = (POCL_WIDE_GRID,)
        with self.calls:
            event = kernel(self.queue, global_size, local_size, *args, wait_for=wait_for)
        self._in_use.append(args)
        if self.profile:
            self._events.append((kernel.function_name, event))

    def collect_profile(self) -> dict[str, float]:
        """Seconds each kernel ran on the device, over all launches so far."""
        for name, event in self._events:
            event.wait()
            seconds = (event.profile.end - event.profile.start) * 1e-9
            self.kernel_seconds[name] = self.kernel_seconds.get(name, 0.0) + seconds
        self._events.clear()
        return self.kernel_seconds

    def to_device(self, array: np.ndarray):
        """A buffer holding a copy of the array (one element if it is empty), written by a
        queued copy, through the pinned staging buffers when the array is large and the device
        has memory of its own. (A buffer made with COPY_HOST_PTR made NVIDIA's driver wait, at
        the first launch that used it, for the kernels queued before.) A direct copy's event,
        which holds the array, is kept until a blocking read has waited for it: pyopencl waits
        for such an event when it is dropped."""
        data = _at_least_one(array)
        buffer = self.empty(data.nbytes)
        if self._is_staged(data.nbytes):
            self._stager().write(_parts(buffer, [data.reshape(-1).view(np.uint8)]))
        else:
            with self.calls:
                self._in_use.append(self.cl.enqueue_copy(self.queue, buffer, data, is_blocking=False))
        return buffer

    def to_device_joined(self, arrays: list[np.ndarray]):
        """A buffer holding the arrays (uint8) end to end, written as to_device writes one; through
        the staging buffers, several arrays share a pinned buffer and its copy."""
        total = sum(a.nbytes for a in arrays)
        if len(arrays) == 1 or not total:
            return self.to_device(arrays[0] if arrays else np.zeros(0, np.uint8))
        buffer = self.empty(total)
        self._write_joined([(buffer, arrays)])
        return buffer

    def _read_only(self, array: np.ndarray):
        """A read-only buffer of the array's values (one element if it is empty), for upload: on
        a device that shares the host's memory, the array itself (the buffer keeps it; an index
        mapped from its files is then read in place, not copied); elsewhere a copy made at once
        (with queued copies of the index's arrays instead, a 20,000-read run on PoCL's CPU
        device took 0.3-0.5 s longer)."""
        mf = self.cl.mem_flags
        where = mf.USE_HOST_PTR if self.device.host_unified_memory else mf.COPY_HOST_PTR
        return self.cl.Buffer(self.context, mf.READ_ONLY | where, hostbuf=_at_least_one(array))

    def upload(self, arrays: list[np.ndarray], staged: bool | None = None) -> list:
        """Read-only buffers of the arrays' values, for large ones such as the index.

        On a device with memory of its own, large arrays go through the pinned staging buffers
        (staging.py): from pageable memory (an index mapped from its files) a discrete GPU copies
        several times slower, and filling them from an index mapped from its files touches every
        page, which one thread did at 4-6 GB/s. A device sharing the host's memory (a CPU) reads
        the arrays in place. staged: True or False overrides that choice."""
        flat = [np.ascontiguousarray(a).reshape(-1).view(np.uint8) for a in arrays]
        is_large = [self._is_staged(a.nbytes, staged) for a in flat]
        buffers = [self.cl.Buffer(self.context, self.cl.mem_flags.READ_ONLY, size=data.nbytes) if large
                   else self._read_only(array) for array, data, large in zip(arrays, flat, is_large)]
        parts = [part for i in np.flatnonzero(is_large) for part in _parts(buffers[i], [flat[i]])]
        if parts:
            self._stager().write(parts)
        return buffers

    def upload_joined(self, groups: list[list[np.ndarray]]) -> list:
        """A buffer for each group of arrays, holding them end to end (for kernels to finish, as
        lookup.join_on_device does), all written in one pass (_write_joined)."""
        flat = [[np.ascontiguousarray(a).reshape(-1).view(np.uint8) for a in group] for group in groups]
        buffers = [self.cl.Buffer(self.context, self.cl.mem_flags.READ_WRITE, size=max(1, sum(a.nbytes for a in g)))
                   for g in flat]
        self._write_joined(list(zip(buffers, flat)))
        return buffers

    def _write_joined(self, filled: list[tuple[object, list[np.ndarray]]]) -> None:
        """Each (buffer, arrays) of filled: the arrays (uint8) written end to end into the buffer.
        Through the staging buffers in one pass where they are large (as upload decides), several
        arrays sharing a pinned buffer and its copy; else by queued copies, on Oclgrind one copy of
        each buffer's arrays joined on the host (its uninitialized-value checker takes a buffer
        written in parts as unwritten)."""
        if self._is_staged(sum(a.nbytes for _, arrays in filled for a in arrays)):
            self._stager().write([part for buffer, arrays in filled for part in _parts(buffer, arrays)])
            return
        for buffer, arrays in filled:
            if self.is_oclgrind and arrays:
                arrays = [np.concatenate([a.reshape(-1).view(np.uint8) for a in arrays])]
            at = 0
            for data in arrays:
                if data.nbytes:
                    with self.calls:
                        self._in_use.append(self.cl.enqueue_copy(self.queue, buffer, np.ascontiguousarray(data),
                                                                 dst_offset=at, is_blocking=False))
                at += data.nbytes

    def _is_staged(self, nbytes: int, staged: bool | None = None) -> bool:
        """Whether a copy of nbytes goes through the staging buffers (staged: True or False
        overrides the device's choice)."""
        return (self.staged if staged is None else staged) and nbytes >= STAGING_BYTES // 8

    def _stager(self) -> Staging:
        """The pinned staging buffers, made at first use (and again if STAGING_BYTES grew)."""
        if self._staging is None or self._staging.slot_bytes < STAGING_BYTES:
            self._staging = Staging(self.cl, self.context, self.queue, STAGING_BYTES, self.calls)
        return self._staging

    def join(self, parts: list[tuple[object, int]], extra: int = 0):
        """One buffer holding the first nbytes of each (buffer, nbytes), end to end, and extra
        bytes of room after them."""
        out = self.empty(sum(nbytes for _, nbytes in parts) + extra)
        at = 0
        for buffer, nbytes in parts:
            if nbytes:
                with self.calls:
                    self.cl.enqueue_copy(self.queue, out, buffer, byte_count=nbytes, dst_offset=at)
            at += nbytes
        self._in_use.append(parts)
        return out

    def empty(self, nbytes: int):
        """A buffer of at least nbytes for the device to write, its contents undefined."""
        with self.calls:
            return self._pool.allocate(max(int(nbytes), 1))

    def recover(self) -> None:
        """After a batch failed for want of memory: once the queue is done, drops the buffers
        kept for its commands and gives the memory the pool holds back to the driver, for
        buffers made outside the pool too."""
        with self.calls:
            self.queue.finish()
            self._in_use.clear()
            self._pool.free_held()

    def zeros(self, nbytes: int):
        """A zero-filled buffer, filled by copy from the host (which every tool sees as initialized)."""
        return self.to_device(np.zeros(max(int(nbytes), 1), dtype=np.uint8))

    def read(self, buffer, dtype, count: int) -> np.ndarray:
        """The first count values of a buffer, once every command queued before is done."""
        out = np.empty(count, dtype=dtype)
        if count:
            if self._is_staged(out.nbytes):
                self._stager().read(buffer, out.view(np.uint8))
            else:
                self._copy_out(out, buffer)
            if not self.is_oclgrind:  # the queue is empty: releasing waits for nothing
                with self.calls:
                    self._in_use.clear()
                    del self._read_elsewhere[:len(self._read_elsewhere)]
        return out

    def _copy_out(self, out: np.ndarray, buffer) -> None:
        """Copies the first out.nbytes bytes of buffer into out, once every command queued
        before is done; the lock is held to queue the copy, not while it is waited for."""
        with self.calls:
            copied = self.cl.enqueue_copy(self.queue, out, buffer, is_blocking=False)
        copied.wait()

    @property
    def has_upload_lane(self) -> bool:
        """Whether another thread may queue copies to the device (upload_lane): a device with
        memory of its own, not Oclgrind, which no two threads may call."""
        return self.staged and not self.is_oclgrind

    def upload_lane(self) -> "UploadLane":
        """The UploadLane, made at first use, by the one thread that uses it."""
        if self._lane is None:
            self._lane = UploadLane(self)
        return self._lane

    def read_later(self, buffer, count: int) -> "DeferredRead":
        """The first count bytes of a buffer, read when DeferredRead.into is called, which may
        be in another thread: this one goes on queueing work meanwhile. (Oclgrind, which no two
        threads may call, reads them at once.)"""
        if self.is_oclgrind:
            return DeferredRead(self, None, count, self.read(buffer, np.uint8, count))
        return DeferredRead(self, buffer, count)


class UploadLane:
    """A second queue on a device, with pinned staging buffers of its own, for the copies that
    one other thread (the one that reads the input) queues while the device runs the mapping
    thread's commands. Its buffers are not the memory pool's, which is the mapping thread's."""

    def __init__(self, device: Device):
        self.cl, self.context, self.calls = device.cl, device.context, device.calls
        with self.calls:
            self.queue = device.cl.CommandQueue(device.context)
        self.staging = Staging(device.cl, device.context, self.queue, STAGING_BYTES, self.calls)

    def to_device_joined(self, arrays: list[np.ndarray]) -> tuple[object, object]:
        """A buffer that will hold the arrays (uint8) end to end, and the event of the copies
        (commands on the device's queue that read the buffer wait for it)."""
        total = sum(a.nbytes for a in arrays)
        with self.calls:
            buffer = self.cl.Buffer(self.context, self.cl.mem_flags.READ_ONLY, size=max(1, total))
        self.staging.write(_parts(buffer, arrays))
        with self.calls:
            copied = self.cl.enqueue_marker(self.queue)
            self.queue.flush()  # another queue may wait for an event of this one only once it is flushed
        return buffer, copied


class DeferredRead:
    """Bytes of a device buffer to be read once, from any thread (Device.read_later)."""

    def __init__(self, device: Device, buffer, nbytes: int, done: np.ndarray | None = None):
        self.device, self.buffer, self.nbytes, self.done = device, buffer, nbytes, done

    def into(self, scratch: np.ndarray | None = None) -> np.ndarray:
        """The bytes (uint8), once every command queued before this call is done: in the first
        nbytes of scratch when it is large enough (a reused array is faster to write into than
        fresh memory), else in a new array. The read is a plain copy: the staging buffers are
        the queueing thread's."""
        if self.done is not None:
            return self.done
        out = scratch[:self.nbytes] if scratch is not None and scratch.size >= self.nbytes \
            else np.empty(self.nbytes, np.uint8)
        if self.nbytes:
            self.device._copy_out(out, self.buffer)
        self.device._read_elsewhere.append(self.buffer)
        self.buffer = None
        return out


class JoinedReads:
    """DeferredReads (or JoinedReads) read one after the other, as one."""

    def __init__(self, parts: list):
        self.parts, self.nbytes = parts, sum(part.nbytes for part in parts)

    def into(self, scratch: np.ndarray | None = None) -> np.ndarray:
        """The parts' bytes end to end (see DeferredRead.into)."""
        out = scratch[:self.nbytes] if scratch is not None and scratch.size >= self.nbytes \
            else np.empty(self.nbytes, np.uint8)
        at = 0
        for part in self.parts:
            place = out[at:at + part.nbytes]
            got = part.into(place)
            if got.ctypes.data != place.ctypes.data:  # read elsewhere (Oclgrind's, read at once)
                place[:] = got
            at += part.nbytes
        return out


def _parts(buffer, arrays: list[np.ndarray]) -> list[tuple[object, int, list[np.ndarray]]]:
    """The arrays (uint8) end to end in buffer, cut into runs of STAGING_BYTES: (buffer, offset
    of the run, the pieces of the arrays that make it up) for each run in turn."""
    parts: list = []
    run: list[np.ndarray] = []
    filled = 0
    for data in arrays:
        at = 0
        while at < data.nbytes:
            piece = data[at:at + STAGING_BYTES - filled]
            run.append(piece)
            filled += piece.nbytes
            at += piece.nbytes
            if filled == STAGING_BYTES:
                parts.append((buffer, len(parts) * STAGING_BYTES, run))
                run, filled = [], 0
    if run:
        parts.append((buffer, len(parts) * STAGING_BYTES, run))
    return parts


def _at_least_one(array: np.ndarray) -> np.ndarray:
    """The array as a contiguous array, or one zero of its type if it is empty (OpenCL has no
    buffers of no bytes)."""
    data = np.ascontiguousarray(array)
    return data if data.nbytes else np.zeros(1, dtype=data.dtype)


def _program_key(files: tuple[str, ...], defines: dict | None) -> tuple:
    return files, tuple(sorted((defines or {}).items()))


# held by the build that holds file descriptor 2: the lanes of several devices build at once
_STDERR_HELD = threading.Lock()


@contextlib.contextmanager
def _compiler_output():
    """Holds what the OpenCL runtime's compiler prints on the process's stderr (file
    descriptor 2: PoCL's clang writes "1 warning generated." there) while a program builds;
    yields a function that returns it. Other threads' messages in that time are held too, and
    written out afterwards when they are not the compiler's."""
    with _STDERR_HELD, tempfile.TemporaryFile() as held:
        sys.stderr.flush()
        saved = os.dup(2)
        os.dup2(held.fileno(), 2)
        text: list[str] = []
        try:
            yield lambda: "".join(text)
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            held.seek(0)
            captured = held.read().decode(errors="replace")
            lines = captured.splitlines(keepends=True)
            text.append("".join(line for line in lines if not line.startswith(OUR_MESSAGES)))
            sys.stderr.write("".join(line for line in lines if line.startswith(OUR_MESSAGES)))


def _indented(text: str) -> str:
    """Compiler messages as an indented block after a line of our own (nothing when empty)."""
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return "".join("\n    " + line for line in lines)


@lru_cache(maxsize=None)
def _source(name: str) -> str:
    return (kernel_dir() / name).read_text()


PRELUDE = "ops.cl"  # prepended to every program

# The kernels that take no build options, in one program: each program is built (or loaded from
# the runtime's cache) once a run, which costs a CPU runtime tens of milliseconds.
PLAIN = ("search.cl", "genome.cl", "strands.cl", "scan.cl", "fastq.cl", "loci.cl", "sam_text.cl",
         "sam_records.cl", "pair_records.cl", "pairing.cl", "bam_records.cl")


def groups(n: int, size: int = 256) -> tuple[int]:
    """A global size covering n work-items, a multiple of size."""
    return (max(1, -(-n // size)) * size,)
