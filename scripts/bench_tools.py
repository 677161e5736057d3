"""The mappers scripts/bench compares: how each builds its index and maps a read set, how it
is timed, and which version ran.

Every tool gets the same thread count and the same cap on reported loci (`max_hits`). Each
command is run under GNU time -v for its peak resident memory; a tool whose mapping takes
two commands (bwa aln + samse) is charged the sum of their wall times and the larger peak.
"""

from __future__ import annotations

import glob
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field

from bench_reads import ReadSet

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Used when GNU time is missing: a fresh interpreter runs the command and writes the peak
# RSS (KiB) of its largest child.
RUSAGE_CHILD = (
    "import resource, subprocess, sys\n"
    "rc = subprocess.call(sys.argv[2:])\n"
    "open(sys.argv[1], 'w').write(str(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss))\n"
    "sys.exit(rc)\n"
)


@dataclass
class Step:
    argv: list[str]
    stdout: str | None = None  # file that receives the command's standard output
    writes: str | None = None  # a file the command writes itself (its -o or -S)

    def text(self) -> str:
        return " ".join(_quote(a) for a in self.argv) + (f" > {self.stdout}" if self.stdout else "")

    def clear_outputs(self) -> None:
        """Removes what an earlier run of the step wrote, and syncs, before the step is timed: a
        command writing over a file pays for freeing the old one's pages (0.6 s for 880 MB of SAM
        on the H100 machine), at its rename or, through a shell's `>`, at the truncating open, which
        would fall before the timer for some tools and inside it for others."""
        removed = False
        for path in (self.stdout, self.writes):
            if path and os.path.isfile(path):
                os.remove(path)
                removed = True
        if removed:
            os.sync()


@dataclass
class Measured:
    wall: float = 0.0
    peak_mib: float = 0.0
    ok: bool = True
    size: int = 0  # bytes of the index a build wrote
    commands: list[str] = field(default_factory=list)
    reused: bool = False  # measured by an earlier run (scripts/bench --reuse-index)
    why: str = ""  # why it failed: the exit status and the last line the command wrote to the log
    cpu: float = float("nan")  # user + system seconds, where GNU time measured them


def _last_line(log_path: str, start: int) -> str:
    """': ' and the last non-empty line written to the log from byte start on, if any."""
    with open(log_path, "rb") as f:
        f.seek(start)
        lines = [line.strip() for line in f.read()[-4096:].decode(errors="replace").splitlines() if line.strip()]
    lines = [line for line in lines if not line.startswith(("Command exited with non-zero status", "\t"))]
    return f": {lines[-1][:200]}" if lines else ""


def _quote(arg: str) -> str:
    return arg if arg and all(c.isalnum() or c in "-_./:=,+%@" for c in arg) else repr(arg)


class Runner:
    """Runs steps with PATH/LD_LIBRARY_PATH of an optional unpacked peers prefix."""

    def __init__(self, peers_prefix: str | None = None):
        self.env = dict(os.environ)
        self.env["PYTHONPATH"] = os.pathsep.join(p for p in (ROOT, os.environ.get("PYTHONPATH")) if p)
        path = [os.environ.get("PATH", "/usr/bin:/bin"), "/usr/lib/seqan/bin"]
        if peers_prefix:
            prefix = os.path.abspath(peers_prefix)
            path = [f"{prefix}/usr/bin", f"{prefix}/usr/lib/seqan/bin"] + path
            libs = [f"{prefix}/usr/lib/x86_64-linux-gnu", f"{prefix}/lib/x86_64-linux-gnu"]
            self.env["LD_LIBRARY_PATH"] = os.pathsep.join(libs + [os.environ.get("LD_LIBRARY_PATH", "")]).rstrip(":")
        self.env["PATH"] = os.pathsep.join(path)
        self.gnu_time = self.which("time")
        if self.gnu_time and "GNU" not in self.output([self.gnu_time, "--version"]):
            self.gnu_time = None

    def which(self, program: str) -> str | None:
        return shutil.which(program, path=self.env["PATH"])

    def output(self, argv: list[str]) -> str:
        """Standard output and error of a short command, or '' if it cannot run."""
        try:
            done = subprocess.run(argv, capture_output=True, text=True, env=self.env, timeout=60)
        except (OSError, subprocess.TimeoutExpired):
            return ""
        return done.stdout + done.stderr

    def run(self, steps: list[Step], log_path: str) -> Measured:
        result = Measured()
        with open(log_path, "a") as log:
            for step in steps:
                result.commands.append(step.text())
                log.write(f"$ {step.text()}\n")
                log.flush()
                start = log.tell()
                wall, peak, rc, cpu = self._measure(step, log)
                result.wall += wall
                result.cpu = cpu if math.isnan(result.cpu) else result.cpu + cpu
                result.peak_mib = max(result.peak_mib, peak)
                if rc != 0:
                    result.ok = False
                    result.why = f"{os.path.basename(step.argv[0])}: exit status {rc}" + _last_line(log_path, start)
                    log.write(f"exit status {rc}\n")
                    break
        return result

    def _measure(self, step: Step, log) -> tuple[float, float, int, float]:
        with tempfile.NamedTemporaryFile("r", suffix=".rss") as rss:
            if self.gnu_time:
                argv = [self.gnu_time, "-v", "-o", rss.name, *step.argv]
            else:
                argv = [sys.executable, "-c", RUSAGE_CHILD, rss.name, *step.argv]
            step.clear_outputs()
            out = open(step.stdout, "w") if step.stdout else log
            try:
                start = time.perf_counter()
                rc = subprocess.call(argv, stdout=out, stderr=log, env=self.env)
                wall = time.perf_counter() - start
            finally:
                if step.stdout:
                    out.close()
            text = rss.read()
        cpu = float("nan")
        if self.gnu_time:
            seconds = [float(line.split(":")[1]) for line in text.splitlines()
                       if line.strip().startswith(("User time", "System time"))]
            cpu = sum(seconds) if len(seconds) == 2 else cpu
            kib = [line.split(":")[1] for line in text.splitlines() if "Maximum resident set size" in line]
            text = kib[0] if kib else ""
        peak = int(text) / 1024 if text.strip() else float("nan")
        return wall, peak, rc, cpu


@dataclass
class Context:
    """What a tool needs to build its index and map one read set."""
    genome: str
    index_dir: str  # the tool's own folder for its index
    threads: int
    max_hits: int
    device: str | None = None


class Tool:
    name = ""
    index_key = ""  # the tool whose index this one uses; itself when empty
    programs: tuple[str, ...] = ()  # executables that must be on PATH

    def applies(self, read_set: ReadSet) -> bool:
        return True

    def index(self, ctx: Context) -> list[Step]:
        return []

    def map(self, ctx: Context, read_set: ReadSet, reads: str, out_sam: str) -> list[Step]:
        raise NotImplementedError

    def warmup(self, ctx: Context, read_set: ReadSet, reads: str, out_sam: str) -> list[Step]:
        """An untimed run before the timed one (marose: builds and caches its OpenCL kernels)."""
        return []

    def version(self, runner: Runner) -> str:
        return "?"

    def prefix(self, ctx: Context) -> str:
        return os.path.join(ctx.index_dir, os.path.splitext(os.path.basename(ctx.genome))[0])


def _first_line(text: str, pattern: str = "") -> str:
    return next((line.strip() for line in text.splitlines() if pattern in line and line.strip()), "?")


def seqan_version(runner: Runner, program: str) -> str:
    """'razers3 3.5.8' from `razers3 --version` ('razers3 version: 3.5.8 [tarball]')."""
    match = re.search(rf"{program} version: (\S+)", runner.output([program, "--version"]))
    return f"{program} {match.group(1) if match else '?'}"


def warmup_sam(out_sam: str) -> str:
    return out_sam + ".warmup.sam"


def stats_path(out_sam: str) -> str:
    return out_sam + ".stats.json"


class Marose(Tool):
    name = "marose"

    def index(self, ctx):
        return [Step([sys.executable, "-m", "indexer.cli", ctx.genome, "-o", self.index_path(ctx)])]

    def index_path(self, ctx):
        return os.path.join(ctx.index_dir, os.path.basename(ctx.genome) + ".marose")

    def map(self, ctx, read_set, reads, out_sam, stats: bool = False):
        argv = [sys.executable, "-m", "marose.cli", "map", "-x", self.index_path(ctx), reads,
                "-k", str(read_set.k), "--max-hits", str(ctx.max_hits), "-t", str(ctx.threads), "-o", out_sam, "-q"]
        if stats:
            argv += ["--stats", stats_path(out_sam)]
        if ctx.device:
            argv += ["--device", ctx.device]
        return [Step(argv, writes=out_sam)]

    def warmup(self, ctx, read_set, reads, out_sam):
        # The imports byte-compiled, as an install leaves them. The same reads: a smaller run
        # leaves kernels that only long candidate rows need, and on PoCL the launches it has
        # not met, to be compiled in the timed run. The warm-up writes --stats (the device's
        # name, the stage and kernel seconds); the timed run does not, as the peers' runs are
        # not profiled either (profiling each kernel cost 0.05-0.15 s of a 1.5 s run on the
        # H100 machine).
        return [Step([sys.executable, os.path.join(ROOT, "scripts", "byte_compile.py")]),
                *self.map(ctx, read_set, reads, warmup_sam(out_sam), stats=True)]

    def version(self, runner):
        done = subprocess.run(["git", "-C", ROOT, "describe", "--always", "--dirty"], capture_output=True, text=True)
        git = done.stdout.strip() if done.returncode == 0 else "unknown"
        return f"marose from source (git {git})"


class BwaAln(Tool):
    """bwa aln -n k -o 0 (the MAROSE paper's peer) for the H3 set; bwa mem -a otherwise."""
    name = "bwa"
    programs = ("bwa",)
    extra_aln: tuple[str, ...] = ()

    def index(self, ctx):
        return [Step(["bwa", "index", "-p", self.prefix(ctx), ctx.genome])]

    def map(self, ctx, read_set, reads, out_sam):
        prefix = self.prefix(ctx)
        if read_set.simulator != "h3":
            return [Step(["bwa", "mem", "-a", "-t", str(ctx.threads), prefix, reads], out_sam)]
        sai = out_sam + ".sai"
        return [Step(["bwa", "aln", "-n", str(read_set.k), "-o", "0", *self.extra_aln, "-t", str(ctx.threads),
                      prefix, reads], sai),
                Step(["bwa", "samse", "-n", str(ctx.max_hits), prefix, sai, reads], out_sam)]

    def version(self, runner):
        return "bwa " + _first_line(runner.output(["bwa"]), "Version").replace("Version: ", "")


class BwaAlnAll(BwaAln):
    """bwa aln with seeding off (-l beyond the read) and non-iterative search (-N): every hit
    within -n mismatches. H3 only."""
    name = "bwa-all"
    index_key = "bwa"
    extra_aln = ("-l", "1000", "-N")

    def applies(self, read_set):
        return read_set.simulator == "h3"

    def index(self, ctx):
        return []


class Bowtie2(Tool):
    name = "bowtie2"
    programs = ("bowtie2", "bowtie2-build")

    def index(self, ctx):
        return [Step(["bowtie2-build", "--threads", str(ctx.threads), ctx.genome, self.prefix(ctx)])]

    def map(self, ctx, read_set, reads, out_sam):
        return [Step(["bowtie2", "-p", str(ctx.threads), "-k", str(ctx.max_hits), "-x", self.prefix(ctx),
                      "-U", reads, "-S", out_sam], writes=out_sam)]

    def version(self, runner):
        return "bowtie2 " + _first_line(runner.output(["bowtie2", "--version"]), "version").split()[-1]


class Minimap2(Tool):
    name = "minimap2"
    programs = ("minimap2",)

    def index(self, ctx):
        return [Step(["minimap2", "-x", "sr", "-t", str(ctx.threads), "-d", self.prefix(ctx) + ".mmi", ctx.genome])]

    def map(self, ctx, read_set, reads, out_sam):
        return [Step(["minimap2", "-a", "-x", "sr", "-t", str(ctx.threads), "-N", str(ctx.max_hits),
                      self.prefix(ctx) + ".mmi", reads], out_sam)]

    def version(self, runner):
        return "minimap2 " + _first_line(runner.output(["minimap2", "--version"]))


class Razers3(Tool):
    """RazerS 3 at 100% recognition rate: every locus within the identity threshold."""
    name = "razers3"
    programs = ("razers3",)

    def map(self, ctx, read_set, reads, out_sam):
        return [Step(razers3_argv(ctx, read_set, reads, out_sam, ctx.max_hits), writes=out_sam)]

    def version(self, runner):
        return seqan_version(runner, "razers3")


def razers3_argv(ctx: Context, read_set: ReadSet, reads: str, out_sam: str, max_hits: int,
                 gold: bool = False) -> list[str]:
    argv = ["razers3", "-rr", "100", "-i", f"{read_set.razers_identity:g}", "-m", str(max_hits),
            "-tc", str(ctx.threads)]
    if gold:
        argv.append("-ds")  # unshrunk alignments, as Rabema's gold standard needs
    return argv + ["-o", out_sam, ctx.genome, reads]


class Yara(Tool):
    """Yara with full sensitivity, every stratum up to the error rate, one record per locus."""
    name = "yara"
    programs = ("yara_mapper", "yara_indexer")

    def index(self, ctx):
        return [Step(["yara_indexer", "-o", self.prefix(ctx), ctx.genome])]

    def map(self, ctx, read_set, reads, out_sam):
        rate = str(read_set.rabema_percent)
        return [Step(["yara_mapper", "-e", rate, "-s", rate, "-y", "full", "-sa", "record", "-ra",
                      "-t", str(ctx.threads), "-o", out_sam, self.prefix(ctx), reads], writes=out_sam)]

    def version(self, runner):
        return seqan_version(runner, "yara_mapper")


TOOLS = {tool.name: tool for tool in (Marose(), BwaAln(), BwaAlnAll(), Bowtie2(), Minimap2(), Razers3(), Yara())}


def genome_summary(path: str) -> tuple[int, int, bool]:
    """(sequences, bases, whether every peer can read it as is): SeqAn's tools need a FASTA
    index (in each record every line but the last has one length, none longer, none empty)
    and only A, C, G, T and N (RazerS 3 stops at IUPAC codes)."""
    count = bases = 0
    readable = True
    width = last = None
    with open(path, "rb") as f:
        for line in f:
            if line.startswith(b">"):
                count += 1
                width = last = None
                continue
            seq = line.rstrip(b"\r\n")
            n = len(seq)
            bases += n
            if n == 0 or (last is not None and last != width) or (width is not None and n > width) or \
                    seq.translate(None, b"ACGTNacgtn"):
                readable = False
            width = n if width is None else width
            last = n
    return count, bases, readable


def sanitize(src: str, dst: str, width: int = 60) -> None:
    """src with IUPAC codes as N and every sequence line `width` long (a record's last shorter)."""
    other = re.compile(r"[^ACGTNacgtn]")
    with open(src) as f, open(dst + ".tmp", "w") as out:
        seq: list[str] = []

        def flush():
            text = other.sub("N", "".join(seq))
            out.writelines(text[i:i + width] + "\n" for i in range(0, len(text), width))
            seq.clear()
        for line in f:
            if line.startswith(">"):
                flush()
                out.write(line)
            else:
                seq.append(line.strip())
        flush()
    os.replace(dst + ".tmp", dst)


def unpack_debs(deb_dir: str, prefix: str) -> str:
    """Unpack every .deb of deb_dir into prefix (once); return prefix."""
    debs = sorted(glob.glob(os.path.join(deb_dir, "*.deb")))
    stamp = os.path.join(prefix, ".unpacked")
    if os.path.exists(stamp) and open(stamp).read().split() == [os.path.basename(d) for d in debs]:
        return prefix
    os.makedirs(prefix, exist_ok=True)
    for deb in debs:
        subprocess.run(["dpkg-deb", "-x", deb, prefix], check=True)
    with open(stamp, "w") as f:
        f.write("\n".join(os.path.basename(d) for d in debs))
    return prefix
