"""Scoring for scripts/bench: true-locus sensitivity and Rabema's all-locus recall.

Every tool's SAM is first brought to one shape (`normalize`): one record per reported locus
(bwa's XA:Z alternatives become secondary records; Yara's CIGAR-less secondary records get a
span from their XP:i end position), supplementary records dropped, and soft
clips turned back into aligned bases so that a local aligner's record spans the whole read
(Rabema matches a record by the end of its alignment, which a clip would move). The result
is sorted by read name in samtools' natural order, which is the order Rabema requires.

Rabema gold standard (rabema_build_gold_standard needs a perfect all-mapping sorted by
coordinate, with the read sequence on every record):

    razers3 -rr 100 -i I -m 10000000 -ds -tc T -o gold.sam GENOME READS
    rabema_prepare_sam -i gold.sam -o gold.prep.sam
    samtools sort -o gold.bam gold.prep.sam
    rabema_build_gold_standard --distance-metric edit -e P -o gold.gsi -r GENOME -b gold.bam

and each tool is scored with

    rabema_evaluate -c all --distance-metric edit -e P -r GENOME -g gold.gsi -b TOOL.byname.sam --DONT-PANIC

where P is the integer percent error rate that admits exactly k edits for the read length
(Rabema rounds a read's distance up to a whole percent) and I the RazerS 3 identity that
allows exactly k errors.
"""

from __future__ import annotations

import os
import re

import pysam

from bench_reads import ReadSet, true_origin
from bench_tools import Context, Runner, Step, razers3_argv

GOLD_MAX_HITS = 10_000_000
SOFT_CLIP, MATCH = 4, 0
REF_OPS = (0, 2, 3, 7, 8)  # M D N = X consume the reference


def _unclip(rec: pysam.AlignedSegment, contig_length: int) -> None:
    """Soft clips become aligned bases, the alignment start moving left by the leading clip."""
    cigar = rec.cigartuples
    if not cigar or not any(op == SOFT_CLIP for op, _ in cigar):
        return
    lead = cigar[0][1] if cigar[0][0] == SOFT_CLIP else 0
    merged: list[list[int]] = []
    for op, n in cigar:
        op = MATCH if op == SOFT_CLIP else op
        if merged and merged[-1][0] == op:
            merged[-1][1] += n
        else:
            merged.append([op, n])
    start = rec.reference_start - lead
    if start < 0:  # the read overhangs the contig start: keep that part clipped
        merged[0][1] += start
        merged.insert(0, [SOFT_CLIP, -start])
        start = 0
    overhang = start + sum(n for op, n in merged if op in REF_OPS) - contig_length
    if overhang > 0:  # likewise at the contig end
        merged[-1][1] -= overhang
        merged.append([SOFT_CLIP, overhang])
    rec.reference_start = start
    rec.cigartuples = [tuple(x) for x in merged if x[1] > 0]


def _xa_records(rec: pysam.AlignedSegment, header: pysam.AlignmentHeader) -> list[pysam.AlignedSegment]:
    out = []
    for alt in rec.get_tag("XA").rstrip(";").split(";"):
        contig, pos, cigar, nm = alt.split(",")[:4]
        sec = pysam.AlignedSegment(header)
        sec.query_name = rec.query_name
        sec.flag = 256 | (16 if pos.startswith("-") else 0)
        sec.reference_name = contig
        sec.reference_start = abs(int(pos)) - 1
        sec.cigarstring = cigar
        sec.mapping_quality = 0
        sec.set_tag("NM", int(nm))
        _unclip(sec, header.get_reference_length(contig))
        out.append(sec)
    return out


def span_cigars(sam_in: str, sam_out: str) -> bool:
    """Copy sam_in, giving each mapped record without a CIGAR (Yara's secondary records) the
    CIGAR `<span>M` from its POS and XP:i, the end just past the alignment (1-based, as Rabema's
    --extra-pos-tag reads it: span = XP - POS); SEQ is `*` there, so the
    CIGAR need not match the read, and Rabema uses only the begin and end. htslib would
    otherwise read those records as unmapped. Returns whether any record was changed."""
    changed = False
    with open(sam_in) as src, open(sam_out, "w") as dst:
        for line in src:
            if not line.startswith("@"):
                fields = line.split("\t")
                if fields[5] == "*" and not int(fields[1]) & 4:
                    end = next((int(t[5:]) for t in fields[11:] if t.startswith("XP:i:")), None)
                    if end is not None:
                        fields[5] = f"{end - int(fields[3])}M"
                        line = "\t".join(fields)
                        changed = True
            dst.write(line)
    return changed


def normalize(sam_in: str, sam_out: str) -> None:
    """One record per locus, no clips, sorted by read name (see the module's docstring)."""
    unsorted = sam_out + ".unsorted.sam"
    spans = sam_out + ".spans.sam"
    if span_cigars(sam_in, spans):
        sam_in = spans
    with pysam.AlignmentFile(sam_in, "r") as src, pysam.AlignmentFile(unsorted, "w", template=src) as dst:
        for rec in src:
            if rec.is_supplementary:
                continue
            alternatives = []
            if rec.has_tag("XA"):
                alternatives = _xa_records(rec, src.header)
                rec.set_tag("XA", None)
            if not rec.is_unmapped:
                _unclip(rec, src.header.get_reference_length(rec.reference_name))
            dst.write(rec)
            for sec in alternatives:
                dst.write(sec)
    pysam.sort("-n", "-o", sam_out, "-O", "SAM", unsorted)
    os.remove(unsorted)
    if os.path.exists(spans):
        os.remove(spans)


def true_locus(sam_by_name: str, n_reads: int, k: int) -> dict:
    """Reads whose true origin (from the read name) is among the reported loci, within k + 5 bp."""
    slack = k + 5
    found: set[str] = set()
    mapped: set[str] = set()
    loci = 0
    with pysam.AlignmentFile(sam_by_name, "r") as sam:
        for rec in sam:
            if rec.is_unmapped:
                continue
            loci += 1
            name = rec.query_name
            mapped.add(name)
            if name in found:
                continue
            truth = true_origin(name)
            if truth and rec.reference_name == truth[0] and rec.is_reverse == truth[2] and \
                    abs(rec.reference_start + 1 - truth[1]) <= slack:
                found.add(name)
    return {"reads": n_reads, "mapped": len(mapped), "loci": loci, "true_found": len(found),
            "sensitivity": len(found) / n_reads if n_reads else float("nan")}


def gold_standard_steps(ctx: Context, read_set: ReadSet, reads: str, gsi: str) -> tuple[list[Step], list[Step]]:
    """The RazerS 3 all-mapping and the rabema steps that turn it into gold.gsi; the sort runs
    between the two lists (pysam's samtools, `samtools sort`)."""
    base = gsi[: -len(".gsi")]
    first = [Step(razers3_argv(ctx, read_set, reads, base + ".sam", GOLD_MAX_HITS, gold=True)),
             Step(["rabema_prepare_sam", "-i", base + ".sam", "-o", base + ".prep.sam"])]
    second = [Step(["rabema_build_gold_standard", "--distance-metric", "edit", "-e", str(read_set.rabema_percent),
                    "-o", gsi, "-r", ctx.genome, "-b", base + ".bam"])]
    return first, second


def loci_per_read(sam_path: str) -> dict[str, int]:
    """Mapped records per read name in a SAM file (the gold all-mapping: one per locus)."""
    counts: dict[str, int] = {}
    with open(sam_path) as sam:
        for line in sam:
            if line.startswith("@"):
                continue
            name, flag = line.split("\t", 2)[:2]
            if not int(flag) & 4:
                counts[name] = counts.get(name, 0) + 1
    return counts


def build_gold_standard(runner: Runner, ctx: Context, read_set: ReadSet, reads: str, gsi: str, log: str,
                        max_hits: int) -> dict:
    """Build gsi (unless present); returns the RazerS 3 run's measurement, the commands, and how
    many reads have more loci than a tool capped at max_hits reports."""
    base = gsi[: -len(".gsi")]
    first, second = gold_standard_steps(ctx, read_set, reads, gsi)
    sort_text = f"samtools sort -o {base}.bam {base}.prep.sam"
    commands = [s.text() for s in first] + [sort_text] + [s.text() for s in second]
    info: dict = {"commands": commands, "reused": os.path.exists(gsi)}
    if not info["reused"]:
        info.update(_build(runner, first, second, base, gsi, log))
    if os.path.exists(base + ".sam"):
        counts = loci_per_read(base + ".sam")
        info.update(loci=sum(counts.values()), reads=len(counts),
                    over_cap=sum(1 for n in counts.values() if n > max_hits), max_hits=max_hits)
    return info


def _build(runner: Runner, first: list[Step], second: list[Step], base: str, gsi: str, log: str) -> dict:
    razers = runner.run(first[:1], log)
    if not razers.ok:
        raise RuntimeError(f"RazerS 3 gold mapping failed; see {log}")
    if not runner.run(first[1:], log).ok:
        raise RuntimeError(f"rabema_prepare_sam failed; see {log}")
    pysam.sort("-o", base + ".bam", base + ".prep.sam")
    if not runner.run(second, log).ok or not os.path.exists(gsi):
        raise RuntimeError(f"rabema_build_gold_standard failed; see {log}")
    for suffix in (".prep.sam", ".bam"):
        os.remove(base + suffix)
    return {"wall": razers.wall, "peak_mib": razers.peak_mib}


RABEMA_FIELDS = {
    "intervals_to_find": r"Intervals to find:\s+(\S+)",
    "intervals_found": r"Intervals found:\s+(\S+)",
    "intervals_pct": r"Intervals found \[%\]\s+(\S+)",
    "invalid": r"Invalid alignments:\s+(\S+)",
    "additional": r"Additional Hits:\s+(\S+)",
    "normalized_pct": r"Normalized intervals found \[%\]:\s+(\S+)",
}


def rabema_evaluate(runner: Runner, ctx: Context, read_set: ReadSet, gsi: str, sam_by_name: str, log: str) -> dict:
    """Rabema's category `all` on a name-sorted SAM: parsed report and the command."""
    report = sam_by_name + ".rabema.txt"
    step = Step(["rabema_evaluate", "-c", "all", "--distance-metric", "edit", "-e", str(read_set.rabema_percent),
                 "-r", ctx.genome, "-g", gsi, "-b", sam_by_name, "--DONT-PANIC"], report)
    done = runner.run([step], log)
    text = open(report).read() if os.path.exists(report) else ""
    result = {"command": step.text(), "ok": done.ok}
    for key, pattern in RABEMA_FIELDS.items():
        match = re.search(pattern, text)
        result[key] = float(match.group(1)) if match else float("nan")
    return result
