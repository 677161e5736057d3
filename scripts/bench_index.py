#!/usr/bin/env python3
"""Time index builds: marose-index against bwa index and bowtie2-build.

For each genome, runs the three builders one after another and measures wall
time, peak resident memory (host memory only) and the size of the files each
one wrote. Prints a markdown section with the machine, tool versions, a table
and the exact commands; --append FILE also appends that section to FILE.

    scripts/fetch_genomes.sh
    scripts/bench_index.py                      # bench/data/ecoli.fa, athal_chr1.fa
    scripts/bench_index.py bench/data/arabidopsis_3sp.fa --tools marose
    scripts/bench_index.py --append BENCHMARKS.md

Run it from the repository root on an otherwise idle machine: the section records the load average at
the start so a reader can tell.
"""

import argparse
import datetime
import os
import platform
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_GENOMES = ["bench/data/ecoli.fa", "bench/data/athal_chr1.fa"]
TOOLS = ("marose", "bwa", "bowtie2")
EXECUTABLES = {"bwa": "bwa", "bowtie2": "bowtie2-build"}  # peer tool -> program; Debian package = tool
GNU_TIME = "/usr/bin/time"
MIB = 1 << 20

# Used when GNU time is missing: runs a command in a fresh interpreter and writes
# the peak RSS (KiB) of its largest descendant, so earlier runs do not leak into
# the number. Linux charges the interpreter's own peak (about 13 MiB) to a child
# it execs, so small numbers are too high by up to that much.
RUSAGE_CHILD = (
    "import resource, subprocess, sys\n"
    "rc = subprocess.call(sys.argv[2:])\n"
    "with open(sys.argv[1], 'w') as f:\n"
    "    f.write(str(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss))\n"
    "sys.exit(rc)\n"
)


def rss_method():
    if os.access(GNU_TIME, os.X_OK):
        return "GNU time -v"
    return "getrusage in a fresh Python child (floor of about 13 MiB)"


def run_measured(cmd, log):
    """Run cmd; return (returncode, wall seconds, peak RSS in MiB)."""
    with tempfile.NamedTemporaryFile("r", suffix=".rss") as rss:
        if os.access(GNU_TIME, os.X_OK):
            wrapped = [GNU_TIME, "-v", "-o", rss.name] + cmd
        else:
            wrapped = [sys.executable, "-c", RUSAGE_CHILD, rss.name] + cmd
        start = time.perf_counter()
        rc = subprocess.call(wrapped, stdout=log, stderr=log)
        wall = time.perf_counter() - start
        text = rss.read()
    if wrapped[0] == GNU_TIME:
        kib = [line.split(":")[1] for line in text.splitlines()
               if "Maximum resident set size" in line]
        text = kib[0] if kib else ""
    peak = int(text) / 1024 if text.strip() else float("nan")
    return rc, wall, peak


def tree_size(path):
    """Total size in bytes of the files under path."""
    return sum(f.stat().st_size for f in Path(path).rglob("*") if f.is_file())


def fasta_stats(path):
    """(number of sequences, number of bases); reading it also warms the page cache."""
    count = bases = 0
    with open(path, "rb") as f:
        for line in f:
            if line.startswith(b">"):
                count += 1
            else:
                bases += len(line.rstrip())
    return count, bases


def marose_index_cmd():
    """The marose-index command as a list, or None when it is not available."""
    exe = shutil.which("marose-index")
    if exe:
        return [exe]
    if (ROOT / "indexer" / "cli.py").exists():
        code = f"import sys; sys.path.insert(0, {str(ROOT)!r}); from indexer.cli import main; sys.exit(main())"
        return [sys.executable, "-c", code]
    return None


def ensure_peers(tools):
    """Install missing peer tools (and GNU time) with apt-get when running as root."""
    missing = [t for t in tools if t in EXECUTABLES and not shutil.which(EXECUTABLES[t])]
    if not os.access(GNU_TIME, os.X_OK):
        missing.append("time")
    if not missing:
        return
    if os.geteuid() != 0:
        print(f"missing: {' '.join(missing)}; install with: sudo apt-get install -y {' '.join(missing)}",
              file=sys.stderr)
        return
    print(f"installing {' '.join(missing)} with apt-get", file=sys.stderr)
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    if subprocess.call(["apt-get", "update", "-qq"]) != 0 or \
            subprocess.call(["apt-get", "install", "-y", "-qq"] + missing, env=env) != 0:
        print(f"could not install {' '.join(missing)}; going on without", file=sys.stderr)


def first_line(cmd, pattern=""):
    """First line of cmd's combined output that contains pattern, or '?'."""
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return "?"
    for line in (out.stdout + out.stderr).splitlines():
        if pattern in line and line.strip():
            return line.strip()
    return "?"


def tool_versions(tools, marose_cmd):
    versions = {}
    if "marose" in tools:
        try:
            from importlib.metadata import version
            v = version("marose")
        except Exception:
            v = "from source"
        git = subprocess.run(["git", "-C", str(ROOT), "describe", "--always", "--dirty"],
                             capture_output=True, text=True)
        commit = git.stdout.strip() if git.returncode == 0 else "unknown"
        versions["marose"] = f"marose {v} (git {commit})" if marose_cmd else "marose-index: not available"
    if "bwa" in tools and shutil.which("bwa"):
        versions["bwa"] = "bwa " + first_line(["bwa"], "Version").replace("Version: ", "")
    if "bowtie2" in tools and shutil.which("bowtie2-build"):
        versions["bowtie2"] = "bowtie2-build " + first_line(["bowtie2-build", "--version"], "version").split()[-1]
    return versions


def machine():
    cpu = "?"
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    with open("/proc/meminfo") as f:
        mem_kib = int(next(line for line in f if line.startswith("MemTotal")).split()[1])
    gpu = "none"
    if shutil.which("nvidia-smi"):
        names = first_line(["nvidia-smi", "--query-gpu=name,memory.total", "--format=csv,noheader"])
        gpu = names if names != "?" else gpu
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "memory": f"{mem_kib / (1 << 20):.1f} GiB",
        "gpu": gpu,
        "os": f"{platform.system()} {platform.release()}",
        "load": "{:.2f} {:.2f} {:.2f}".format(*os.getloadavg()),
    }


def build_commands(tool, genome, outdir, threads, marose_cmd, marose_args):
    """The command that builds tool's index of genome inside outdir."""
    prefix = str(outdir / genome.stem)
    if tool == "marose":
        index = str(outdir / f"{genome.name}.marose")
        return marose_cmd + [str(genome), "-o", index] + marose_args
    if tool == "bwa":
        return ["bwa", "index", "-p", prefix, str(genome)]
    if tool == "bowtie2":
        return ["bowtie2-build", "--threads", str(threads), str(genome), prefix]
    raise ValueError(tool)


def fmt(x, digits=1):
    return "n/a" if x is None or x != x else f"{x:.{digits}f}"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("genomes", nargs="*", help="FASTA files (default: %s)" % " ".join(DEFAULT_GENOMES))
    ap.add_argument("--tools", default=",".join(TOOLS), help="comma-separated subset of %(default)s")
    ap.add_argument("-t", "--threads", type=int, default=os.cpu_count(), help="bowtie2-build --threads (default: cores)")
    ap.add_argument("--workdir", default="bench/index", help="where indexes are built (default: %(default)s)")
    ap.add_argument("--marose-args", default="", help="extra marose-index options, e.g. '--segment-size 500000000'")
    ap.add_argument("--keep", action="store_true", help="keep the indexes after measuring them")
    ap.add_argument("--append", metavar="FILE", help="also append the markdown section to FILE")
    args = ap.parse_args(argv)

    tools = [t for t in args.tools.split(",") if t]
    unknown = set(tools) - set(TOOLS)
    if unknown:
        ap.error(f"unknown tools: {', '.join(sorted(unknown))}")
    genomes = [Path(g) for g in (args.genomes or DEFAULT_GENOMES)]
    for g in genomes:
        if not g.is_file():
            ap.error(f"{g}: not found (scripts/fetch_genomes.sh fetches the defaults)")

    ensure_peers(tools)
    marose_cmd = marose_index_cmd()
    if "marose" in tools and marose_cmd is None:
        print("marose-index not found: install marose (pip install -e .) to time it; "
              "timing the peers only", file=sys.stderr)
    host = machine()
    versions = tool_versions(tools, marose_cmd)
    started = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    workdir = Path(args.workdir)

    rows, commands = [], []
    for genome in genomes:
        ncontigs, nbases = fasta_stats(genome)
        length = f"{nbases / 1e6:.1f} Mbp" if nbases >= 1e6 else f"{nbases / 1e3:.1f} kbp"
        label = f"{genome.stem} ({length}, {ncontigs} seq)"
        walls = {}
        for tool in tools:
            if tool == "marose" and marose_cmd is None:
                rows.append([label, tool, "not run: marose-index not found", "", "", ""])
                continue
            if tool != "marose" and not shutil.which(EXECUTABLES[tool]):
                rows.append([label, tool, "not run: not installed", "", "", ""])
                continue
            outdir = workdir / genome.stem / tool
            shutil.rmtree(outdir, ignore_errors=True)
            outdir.mkdir(parents=True)
            cmd = build_commands(tool, genome, outdir, args.threads, marose_cmd,
                                 shlex.split(args.marose_args))
            shown = ["marose-index"] + cmd[len(marose_cmd):] if tool == "marose" else cmd
            commands.append(shlex.join(shown))
            print(f"[{genome.stem}] {shlex.join(shown)}", file=sys.stderr)
            with open(workdir / genome.stem / f"{tool}.log", "w") as log:
                rc, wall, peak = run_measured(cmd, log)
            size = tree_size(outdir) / MIB
            if not args.keep:
                shutil.rmtree(outdir, ignore_errors=True)
            if rc != 0:
                rows.append([label, tool, f"failed (exit {rc}, see {log.name})", "", "", ""])
                continue
            walls[tool] = wall
            rows.append([label, tool, fmt(wall, 2), fmt(peak), fmt(size), None])
            print(f"  wall {wall:.2f} s, peak {peak:.1f} MiB, index {size:.1f} MiB", file=sys.stderr)
        for row in rows:
            if row[0] == label and row[5] is None:
                tool = row[1]
                ratio = walls["marose"] / walls[tool] if "marose" in walls and tool != "marose" else None
                row[5] = "—" if tool == "marose" else fmt(ratio, 2)

    section = render(started, host, versions, args.threads, rows, commands)
    print(section)
    if args.append:
        with open(args.append, "a") as f:
            f.write("\n" + section)
        print(f"appended to {args.append}", file=sys.stderr)
    return 0


def render(started, host, versions, threads, rows, commands):
    lines = [
        f"## Index build times ({started})",
        "",
        f"- Machine: {host['cpu']}, {host['cores']} cores, {host['memory']} RAM, GPU: {host['gpu']}; "
        f"{host['os']}; load average at start: {host['load']}",
        "- Tools: " + ", ".join(versions.values()),
        f"- Threads: bowtie2-build --threads {threads}; bwa index is single-threaded; "
        "marose-index uses its defaults",
        "- Wall s: elapsed time of one run. Peak MiB: peak resident set size of the largest "
        f"process, from {rss_method()} (host memory; GPU memory is not counted). "
        "Index MiB: files the tool wrote. "
        "marose ÷ peer: marose-index wall time divided by the peer's (below 1: marose is faster).",
        "",
        "| genome | tool | wall s | peak MiB | index MiB | marose ÷ peer (wall) |",
        "|---|---|---:|---:|---:|---:|",
    ]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    lines += ["", "Commands, in the order run:", ""]
    lines += [f"    {c}" for c in commands]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
