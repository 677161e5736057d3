"""Device buffers: uploads through the pinned staging buffers, the genome unpacked there, and
the buffers of queued commands kept until a read has waited for them; compiler messages."""

import sys

import numpy as np
import pytest

import marose.device
from conftest import LAMBDA
from marose.dna import encode
from marose.lookup import RUN_PIECE, run_pieces, unpack_genome
from marose.reference import Reference, read_fasta


def test_upload_round_trip(device, monkeypatch):
    monkeypatch.setattr(marose.device, "STAGING_BYTES", 4096)  # many turns of both staging buffers
    rng = np.random.default_rng(5)
    arrays = [rng.integers(0, 2**32, 10_000, dtype=np.uint32),  # 40 kB: ten parts
              rng.integers(0, 4, 4097, dtype=np.uint8),  # one byte into a second part
              np.arange(7, dtype=np.int64),  # below the staging threshold: copied directly
              np.zeros(0, dtype=np.uint32),
              rng.integers(0, 2**16, (300, 7), dtype=np.uint16)]
    buffers = device.upload(arrays, staged=True)
    assert len(buffers) == len(arrays)
    for array, buffer in zip(arrays, buffers):
        assert np.array_equal(device.read(buffer, array.dtype, array.size), array.reshape(-1))


def test_copies_both_ways_through_the_staging_buffers(device, monkeypatch):
    monkeypatch.setattr(marose.device, "STAGING_BYTES", 4096)  # parts over several turns of the slots
    monkeypatch.setattr(device, "staged", True)
    monkeypatch.setattr(device, "_staging", None)
    rng = np.random.default_rng(6)
    arrays = [rng.integers(0, 2**32, 10_000, dtype=np.uint32),  # 40 kB: ten parts
              rng.integers(0, 256, 4097, dtype=np.uint8),  # one byte into a second part
              rng.integers(0, 2**16, (300, 7), dtype=np.uint16),
              np.arange(7, dtype=np.int64)]  # below the threshold: copied directly
    buffers = [device.to_device(a) for a in arrays]
    joined = device.join([(b, a.nbytes) for a, b in zip(arrays, buffers)])  # a device copy the reads wait for
    assert device._staging.slot_bytes == 4096
    for array, buffer in zip(arrays, buffers):
        assert np.array_equal(device.read(buffer, array.dtype, array.size), array.reshape(-1))
    whole = np.concatenate([a.reshape(-1).view(np.uint8) for a in arrays])
    assert np.array_equal(device.read(joined, np.uint8, whole.size), whole)
    again = device.to_device(arrays[0][::-1].copy())  # the slots again, after the reads
    assert np.array_equal(device.read(again, np.uint32, 10_000), arrays[0][::-1])


@pytest.mark.parametrize("staged", [True, False])
def test_arrays_joined_on_the_device(device, monkeypatch, staged):
    monkeypatch.setattr(marose.device, "STAGING_BYTES", 4096)
    monkeypatch.setattr(device, "staged", staged)
    monkeypatch.setattr(device, "_staging", None)
    rng = np.random.default_rng(8)
    # pieces smaller than a slot, one of several slots, empty ones, ends on and off a slot's end
    sizes = [1000, 1000, 0, 2096, 9000, 1, 4096, 3, 0, 5000]
    arrays = [rng.integers(0, 256, n, dtype=np.uint8) for n in sizes]
    copies = []
    monkeypatch.setattr(device.cl, "enqueue_copy", _counting(device.cl.enqueue_copy, copies))
    joined = device.to_device_joined(arrays)
    whole = np.concatenate(arrays)
    if staged:  # the pieces packed into the slots: one copy for each 4096 bytes
        assert len(copies) == -(-whole.size // 4096) == 6
    assert np.array_equal(device.read(joined, np.uint8, whole.size), whole)
    assert np.array_equal(device.read(device.to_device_joined([arrays[0]]), np.uint8, 1000), arrays[0])


def test_a_deferred_read_in_another_thread(device):
    import threading

    data = np.random.default_rng(9).integers(0, 256, 5000, dtype=np.uint8)
    buffer = device.to_device(data)
    later = device.read_later(buffer, 3000)
    got = {}
    scratch = np.zeros(4000, np.uint8)
    reader = threading.Thread(target=lambda: got.update(small=later.into(scratch)))
    reader.start()
    reader.join()
    assert np.shares_memory(got["small"], scratch) and np.array_equal(got["small"], data[:3000])
    assert later.buffer is None and device._read_elsewhere[-1] is buffer  # released by the queueing thread
    del buffer
    big = device.read_later(device.to_device(data), 5000).into(scratch)  # scratch too small: a new array
    assert not np.shares_memory(big, scratch) and np.array_equal(big, data)
    device.read(device.to_device(data), np.uint8, 1)
    assert device._read_elsewhere == []


def _counting(function, calls: list):
    def counted(*args, **kwargs):
        calls.append(args)
        return function(*args, **kwargs)
    return counted


@pytest.mark.parametrize("staged", [True, False, None])
def test_upload_of_small_arrays_or_unstaged(device, staged):
    arrays = [np.arange(100, dtype=np.uint32), np.ones(3, dtype=np.uint8), np.arange(2**20, dtype=np.uint32)]
    got = [device.read(b, a.dtype, a.size) for a, b in zip(arrays, device.upload(arrays, staged))]
    assert all(np.array_equal(g, a) for g, a in zip(got, arrays))


@pytest.mark.parametrize("sequence", [
    "NNNACGTACGTTN",  # N runs at both ends, a length that is not a multiple of 4
    "ACGTRYACGGNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNTTGCA",  # IUPAC codes and a long run
    "GATTACA",
    "AC" + "N" * 1000 + "GT" + "N" * 257,  # runs of several pieces
])
@pytest.mark.parametrize("words", [None, 1, 3])  # the device's own, a GPU's, one that cuts words apart
def test_genome_unpacked_on_the_device(device, sequence, words):
    codes = encode(sequence)
    packed = Reference(["c"], np.array([codes.size]), codes)
    stored = Reference(["c"], np.array([codes.size]), packed=packed.packed, runs=packed.runs)
    got = device.read(unpack_genome(device, stored, *device.upload([stored.packed]), words), np.uint8, codes.size)
    assert np.array_equal(got, codes) and np.array_equal(stored.codes, codes)


def test_genome_packed_off_a_word_boundary_is_unpacked_a_byte_at_a_time(device):
    ref = read_fasta(LAMBDA)
    shifted = np.frombuffer(b"\0" + ref.packed.tobytes(), np.uint8)[1:]  # the host's copy one byte in
    stored = Reference(ref.names, ref.lengths, packed=shifted, runs=ref.runs)
    genome = unpack_genome(device, stored, *device.upload([shifted], staged=False))
    assert np.array_equal(device.read(genome, np.uint8, ref.total_length), ref.codes)


def test_genome_of_lambda_unpacked_on_the_device(device):
    ref = read_fasta(LAMBDA)
    stored = Reference(ref.names, ref.lengths, packed=ref.packed, runs=ref.runs)
    genome = unpack_genome(device, stored, *device.upload([stored.packed]))
    assert np.array_equal(device.read(genome, np.uint8, ref.total_length), ref.codes)


def test_buffers_of_queued_commands_are_kept_until_a_blocking_read(device):
    """Releasing a buffer that a queued kernel uses makes NVIDIA's driver wait for the kernel, so
    the device holds the buffers of its queued commands until a blocking read has waited for them."""
    buffer = device.to_device(np.arange(64, dtype=np.uint32))
    before = sys.getrefcount(buffer)
    device.launch(device.kernel(("probe.cl",), "spin"), (64,), None, buffer, np.uint32(64), np.uint32(3))
    assert sys.getrefcount(buffer) == before + 1
    values = device.read(buffer, np.uint32, 64)
    assert sys.getrefcount(buffer) == before
    expected = np.arange(64, dtype=np.uint64)
    for _ in range(3):
        expected = (expected * 1664525 + 1013904223) % 2**32
    assert np.array_equal(values, expected)


@pytest.mark.parametrize("verbose", [False, True])
def test_compiler_messages_only_with_verbose(monkeypatch, capfd, verbose):
    from marose import device as device_module

    real = device_module._source
    monkeypatch.setattr(device_module, "_source", lambda name: "#warning a message from the compiler\n" + real(name))
    opened = device_module.Device(verbose=verbose)
    opened.program(("genome.cl",), {"UNUSED": 1})
    err = capfd.readouterr().err
    assert ("warning" in err.lower()) == verbose
    if not verbose or device_module.pocl_major(opened.device.platform.version) is not None:
        # PoCL repeats the #warning; NVIDIA's compiler leaves it out and warns of its own
        assert ("a message from the compiler" in err) == verbose


def test_a_failed_build_shows_the_compiler_messages(monkeypatch, capfd):
    from marose import device as device_module
    from marose.errors import MaroseError

    real = device_module._source
    monkeypatch.setattr(device_module, "_source", lambda name: real(name) + "\nthis is not OpenCL C\n")
    with pytest.raises(MaroseError, match="genome.cl failed") as failure:
        device_module.Device().program(("genome.cl",), {"UNUSED": 2})
    assert "error" in str(failure.value).lower()
    assert capfd.readouterr().err == ""


def test_programs_prepared_in_the_background_are_the_ones_kernels_get(monkeypatch, capfd):
    """...built once each, in the builder's thread, with the compiler's warnings off."""
    import threading
    import time

    from marose import device as device_module

    built = []
    real_build, real_source = device_module.Device._build, device_module._source

    def recorded(self, files, defines, in_background=False):
        built.append((files, threading.current_thread().name))
        return real_build(self, files, defines, in_background)

    monkeypatch.setattr(device_module.Device, "_build", recorded)
    warned = "#warning a message from the compiler\n"
    monkeypatch.setattr(device_module, "_source", lambda name: warned + real_source(name))
    opened = device_module.Device()
    fresh = {"PREPARED": 1, "FRESH": time.time_ns()}  # compiled, not taken from the cache
    programs = [(("genome.cl",), fresh), (("scan.cl",), {"PREPARED": 2})]
    opened.prepare(programs)
    opened.prepare(programs)  # asked for again: built once
    first = opened.program(("genome.cl",), fresh)
    assert opened.program(("genome.cl",), fresh) is first
    opened.program(("scan.cl",), {"PREPARED": 2})
    assert [files for files, _ in built] == [("genome.cl",), ("scan.cl",)]
    assert all(thread.startswith("marose-build") for _, thread in built)
    log = first.get_build_info(opened.device, opened.cl.program_build_info.LOG)
    assert "a message from the compiler" not in log + capfd.readouterr().err


def test_a_failed_background_build_fails_the_kernel_that_asks_for_it(monkeypatch, capfd):
    from marose import device as device_module
    from marose.errors import MaroseError

    real = device_module._source
    monkeypatch.setattr(device_module, "_source", lambda name: real(name) + "\nthis is not OpenCL C\n")
    opened = device_module.Device()
    opened.prepare([(("genome.cl",), {"UNUSED": 3})])
    with pytest.raises(MaroseError, match="genome.cl failed"):
        opened.kernel(("genome.cl",), "unpack_genome", {"UNUSED": 3})


def test_n_runs_are_cut_into_pieces_that_cover_them_exactly():
    runs = np.array([[0, 3], [10, 10 + 3 * RUN_PIECE], [5000, 5000 + RUN_PIECE + 1]])
    pieces = run_pieces(runs)
    assert np.all(pieces[:, 1] - pieces[:, 0] <= RUN_PIECE) and np.all(pieces[:, 1] > pieces[:, 0])
    covered = np.zeros(6000, bool)
    for start, end in pieces:
        assert not covered[start:end].any()
        covered[start:end] = True
    expected = np.zeros(6000, bool)
    for start, end in runs:
        expected[start:end] = True
    assert np.array_equal(covered, expected) and len(pieces) == 1 + 3 + 2
    assert run_pieces(np.zeros((0, 2))).shape == (0, 2)
