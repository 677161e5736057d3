"""On-disk index: a directory of raw little-endian arrays and a versioned manifest.

    GENOME.marose/
      manifest.json          format, version, parameters, contigs, segments, files
      genome.2bit            uint8, four bases per byte (first base in the low bits)
      genome.nruns           int64 (n, 2), [start, end) of each run of N
      genome.iupac           int64 (n, 2), position and letter (upper-case ASCII) of each base
                             other than ACGTN (held as N in the bases, U as T), which MD shows;
                             an index written before it has none, and reads as such
      segNNN.hash_seed       uint32 per seed of the segment: J of its BDZ hash
      segNNN.vertex_offset   uint32 per seed + 1
      segNNN.g               uint32 pairs, one per 16 vertices and one more: their 2-bit g values
                             (3 on a vertex that holds no key), and the keys held before them
      segNNN.slot_key        uint16 per key, in the order of its vertex: its low 16 bits (build.FINGERPRINT)
      segNNN.slot_start      uint32 per key + 1: start of its positions
      segNNN.positions       uint32: genome positions, grouped by slot

Segment NNN holds the seeds [seed_lo, seed_hi) that the manifest gives it. Every file's size
and CRC-32 are in the manifest. The directory is written under a temporary name and renamed
when complete.
"""

from __future__ import annotations

import json
import os
import shutil
import zlib
from dataclasses import dataclass

import numpy as np

from marose.errors import MaroseError
from marose.reference import Reference

from . import SUFFIX
from .build import IndexParams, Segment, SegmentSink
from .verified import VerifiedFiles, remember_written

FORMAT = "marose-index"
VERSION = 3  # 2: slots were per vertex; 1: segments were ranges of the genome
MANIFEST = "manifest.json"
SEGMENT_ARRAYS = {
    "hash_seed": "<u4",
    "vertex_offset": "<u4",
    "g": "<u4",
    "slot_key": "<u2",
    "slot_start": "<u4",
    "positions": "<u4",
}


@dataclass
class Index:
    """A loaded index: parameters, reference and segments (arrays memory-mapped)."""

    path: str
    params: IndexParams
    reference: Reference
    segments: list[Segment]
    manifest: dict


def default_path(fasta: str) -> str:
    return fasta + SUFFIX


def _crc32(path: str) -> int:
    if os.path.getsize(path) == 0:
        return 0
    data = np.memmap(path, dtype=np.uint8, mode="r")
    crc = 0
    for begin in range(0, data.size, 1 << 26):
        crc = zlib.crc32(data[begin : begin + (1 << 26)], crc)
    return crc


def _write_array(directory: str, name: str, array: np.ndarray, dtype: str, files: dict) -> None:
    with ArrayFile(directory, name, dtype, files) as out:
        out.write(array)


class ArrayFile:
    """An index file written in pieces, its size and CRC-32 kept as they are written; its
    manifest entry goes into files when it closes."""

    def __init__(self, directory: str, name: str, dtype: str, files: dict):
        self.name, self.dtype, self.files = name, dtype, files
        self.handle = open(os.path.join(directory, name), "wb")
        self.crc = self.count = 0

    def write(self, array: np.ndarray) -> None:
        data = np.ascontiguousarray(array, dtype=np.dtype(self.dtype)).reshape(-1)
        self.handle.write(memoryview(data).cast("B"))
        self.crc = zlib.crc32(memoryview(data).cast("B"), self.crc)
        self.count += data.size

    def __enter__(self) -> "ArrayFile":
        return self

    def __exit__(self, *exc) -> None:
        self.handle.close()
        itemsize = np.dtype(self.dtype).itemsize
        self.files[self.name] = {"dtype": self.dtype, "shape": [self.count], "bytes": self.count * itemsize,
                                 "crc32": self.crc}


def _write_packed_genome(directory: str, ref: Reference, files: dict, chunk: int = 1 << 26) -> None:
    """genome.2bit, packed a chunk at a time (a multiple of 4 bases)."""
    from marose.reference import pack_2bit

    if "packed" in ref.__dict__:
        _write_array(directory, "genome.2bit", ref.packed, "<u1", files)
        return
    with ArrayFile(directory, "genome.2bit", "<u1", files) as out:
        for start in range(0, ref.total_length, chunk):
            out.write(pack_2bit(ref.codes[start:start + chunk]))


class DiskSegment(SegmentSink):
    """A segment written to the index directory piece by piece (build.Assembler): its vertex and
    position numbers carried on, g packed sixteen to a word, with the keys before them, as the
    vertices come."""

    def __init__(self, writer: "IndexWriter", seed_lo: int):
        self.writer, self.seed_lo = writer, seed_lo
        self.number = len(writer.segments)
        self.out = {name: ArrayFile(writer.tmp, f"seg{self.number:03d}.{name}", dtype, writer.files)
                    for name, dtype in SEGMENT_ARRAYS.items()}
        self.n_vertices = self.n_positions = self.count_sq = 0
        self.g_left = np.empty(0, np.uint8)  # g of the vertices past the last multiple of 16
        self.keys_packed = 0  # keys held by the vertices before them

    def append(self, hash_seed, vertex_offset, g, slot_key, slot_start, positions, count_sq: int) -> None:
        from .bdz import UNUSED, pack_g

        out = self.out
        out["hash_seed"].write(hash_seed)
        out["vertex_offset"].write(np.asarray(vertex_offset, np.uint64) + np.uint64(self.n_vertices))
        self.n_vertices += int(np.asarray(g).size)
        g = np.concatenate((self.g_left, g))
        whole = g.size - g.size % 16
        out["g"].write(pack_g(g[:whole], self.keys_packed))
        self.keys_packed += int(np.count_nonzero(g[:whole] != UNUSED))
        self.g_left = g[whole:]
        out["slot_key"].write(slot_key)
        out["slot_start"].write(np.asarray(slot_start, np.uint64) + np.uint64(self.n_positions))
        out["positions"].write(positions)
        self.n_positions += int(np.asarray(positions).size)
        self.count_sq += count_sq

    def close(self, seed_hi: int) -> None:
        from .bdz import UNUSED, pack_g

        out = self.out
        out["vertex_offset"].write(np.array([self.n_vertices]))
        out["slot_start"].write(np.array([self.n_positions]))
        out["g"].write(pack_g(np.append(self.g_left, UNUSED), self.keys_packed))
        for array in out.values():
            array.__exit__()
        self.writer.segments.append({"seed_lo": self.seed_lo, "seed_hi": seed_hi, "n_positions": self.n_positions,
                                     "n_vertices": self.n_vertices, "sum_count_sq": self.count_sq})


class IndexWriter:
    """Writes an index into a temporary directory; commit() renames it into place."""

    def __init__(self, path: str, params: IndexParams, ref: Reference, source: str):
        self.path = path
        self.tmp = f"{path}.tmp-{os.getpid()}"
        shutil.rmtree(self.tmp, ignore_errors=True)
        self.files: dict = {}
        self.segments: list[dict] = []
        self.manifest = {
            "format": FORMAT,
            "version": VERSION,
            "params": {"mask": params.mask, "ln": params.ln, "segment_size": params.segment_size},
            "reference": {
                "source": os.path.basename(source),
                "length": ref.total_length,
                "contigs": [{"name": n, "length": int(l)} for n, l in zip(ref.names, ref.lengths)],
            },
            "segments": self.segments,
            "files": self.files,
        }
        try:  # seconds for a large genome: Ctrl-C or SIGTERM meanwhile leaves no directory
            os.makedirs(self.tmp)
            _write_packed_genome(self.tmp, ref, self.files)
            _write_array(self.tmp, "genome.nruns", ref.runs, "<i8", self.files)
            _write_array(self.tmp, "genome.iupac", ref.iupac, "<i8", self.files)
        except BaseException:
            self.abort()
            raise

    def open_segment(self, seed_lo: int) -> DiskSegment:
        """The next segment, to be written piece by piece (build.Assembler)."""
        return DiskSegment(self, seed_lo)

    def add_segment(self, segment: Segment) -> None:
        """The next segment, whole (as build.build_segments makes them)."""
        number = len(self.segments)
        for name, dtype in SEGMENT_ARRAYS.items():
            _write_array(self.tmp, f"seg{number:03d}.{name}", getattr(segment, name), dtype, self.files)
        self.segments.append({
            "seed_lo": segment.seed_lo,
            "seed_hi": segment.seed_hi,
            "n_positions": int(segment.positions.size),
            "n_vertices": segment.n_vertices,
            "sum_count_sq": segment.sum_count_sq,
        })

    def commit(self) -> None:
        with open(os.path.join(self.tmp, MANIFEST), "w") as handle:
            json.dump(self.manifest, handle, indent=1)
        old = f"{self.path}.old-{os.getpid()}"
        if os.path.exists(self.path):
            os.rename(self.path, old)
        os.rename(self.tmp, self.path)
        shutil.rmtree(old, ignore_errors=True)
        remember_written(self.path, self.files)

    def abort(self) -> None:
        shutil.rmtree(self.tmp, ignore_errors=True)


def _read_manifest(path: str) -> dict:
    manifest_path = os.path.join(path, MANIFEST)
    if not os.path.isfile(manifest_path):
        raise MaroseError(f"{path}: not a marose index (no {MANIFEST}); build one with marose-index")
    try:
        with open(manifest_path) as handle:
            manifest = json.load(handle)
    except (ValueError, OSError) as exc:
        raise MaroseError(f"{manifest_path}: unreadable index manifest ({exc}); rebuild the index") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise MaroseError(f"{manifest_path}: not a marose index manifest")
    if manifest.get("version") != VERSION:
        raise MaroseError(f"{manifest_path}: index format version {manifest.get('version')}, but this "
                          f"marose reads version {VERSION}; rebuild the index with marose-index")
    return manifest


def _map_array(path: str, name: str, spec: dict, verify: bool) -> np.ndarray:
    file_path = os.path.join(path, name)
    if not os.path.isfile(file_path):
        raise MaroseError(f"{file_path}: missing index file; rebuild the index")
    size = os.path.getsize(file_path)
    if size != spec["bytes"]:
        raise MaroseError(f"{file_path}: {size} bytes where the manifest says {spec['bytes']} "
                          "(truncated or damaged); rebuild the index")
    kind = name.split(".", 1)[-1]
    if name.startswith("seg") and kind in SEGMENT_ARRAYS and np.dtype(spec["dtype"]) != np.dtype(SEGMENT_ARRAYS[kind]):
        raise MaroseError(f"{file_path}: {spec['dtype']} values where this marose reads {SEGMENT_ARRAYS[kind]} "
                          "(an index from an older marose); rebuild the index with marose-index")
    if verify:
        _check_crc32(file_path, spec)
    if spec["bytes"] == 0:
        return np.zeros(spec["shape"], dtype=spec["dtype"])
    return np.memmap(file_path, dtype=spec["dtype"], mode="r", shape=tuple(spec["shape"]))


def _check_crc32(file_path: str, spec: dict) -> None:
    if _crc32(file_path) != spec["crc32"]:
        raise MaroseError(f"{file_path}: checksum mismatch (corrupted); rebuild the index")


def check_checksums(index: Index) -> None:
    """Check the checksums of an index loaded without them (MaroseError on a mismatch), but
    not of files that passed before and are unchanged since (see verified.py)."""
    verified = VerifiedFiles()
    for name, spec in index.manifest["files"].items():
        file_path = os.path.join(index.path, name)
        if not verified.passed(file_path, spec["crc32"]):
            _check_crc32(file_path, spec)
            verified.add(file_path, spec["crc32"])
    verified.save()


def load(path: str, verify: bool = True) -> Index:
    """Open an index directory, checking its version, file sizes and (with verify) checksums."""
    manifest = _read_manifest(path)
    try:
        files = manifest["files"]
        arrays = {name: _map_array(path, name, spec, verify) for name, spec in files.items()}
        p = manifest["params"]
        params = IndexParams(p["mask"], int(p["ln"]), int(p["segment_size"]))
        ref_info = manifest["reference"]
        names = [c["name"] for c in ref_info["contigs"]]
        lengths = np.array([c["length"] for c in ref_info["contigs"]], dtype=np.int64)
        if lengths.sum() != ref_info["length"] or 4 * arrays["genome.2bit"].size < ref_info["length"]:
            raise MaroseError(f"{os.path.join(path, MANIFEST)}: the contig lengths and the packed genome do not "
                              "match the reference length; rebuild the index")
        iupac = arrays.get("genome.iupac")
        reference = Reference(names, lengths, packed=arrays["genome.2bit"],
                              runs=np.asarray(arrays["genome.nruns"]).reshape(-1, 2),
                              iupac=None if iupac is None else np.asarray(iupac).reshape(-1, 2))
        segments = []
        for number, info in enumerate(manifest["segments"]):
            seg = {name: arrays[f"seg{number:03d}.{name}"] for name in SEGMENT_ARRAYS}
            segments.append(Segment(int(info["seed_lo"]), int(info["seed_hi"]),
                                    sum_count_sq=int(info["sum_count_sq"]), **seg))
    except (KeyError, TypeError) as exc:
        raise MaroseError(f"{os.path.join(path, MANIFEST)}: incomplete manifest ({exc}); rebuild the index") from None
    return Index(path, params, reference, segments, manifest)
