#!/usr/bin/env bash
# The filter's index (marose/qmer_table.py) on a GPU machine: READS reads of 100 bp with 0..4 edits
# (scripts/simulate_reads.py, seed 1) at k = 5 on human chrX and A. thaliana chr1, mapped with
# --filter-index phf and qmer, two rounds each: wall seconds, the filter's kernel seconds
# (filter_count, filter_emit), the q-mer tables' build (table_seconds, and its kernels qmer_clear and
# qmer_insert) from --stats, and each qmer SAM compared with phf's (the @PG line aside). Then what
# --filter-index auto picks, from --explain.
#
# Usage, from the repository root:  scripts/filter_index_round.sh [READS]   (default 1000000)
# Needs bench/data/{hs37_chrX,athal_chr1}.fa (or their .fa.gz in bench/gpu/), pyopencl, mmh3 and
# pysam importable (or the wheels in .whl/). Works in /tmp/filter_index_GENOME.
set -uo pipefail
reads=${1:-1000000}
. scripts/device_env.sh athal_chr1 hs37_chrX
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
for g in hs37_chrX athal_chr1; do
    work=/tmp/filter_index_$g
    mkdir -p "$work"
    [ -e "$work/reads.fq" ] || python3 scripts/simulate_reads.py "bench/data/$g.fa" "$work/reads.fq" --n "$reads" \
        --length 100 --max-edits 4
    [ -e "$work/$g.fa.marose/manifest.json" ] || python3 -m indexer.cli "bench/data/$g.fa" -o "$work/$g.fa.marose" -q
    for round in 1 2; do
        for index in phf qmer; do
            started=$(date +%s.%N)
            python3 -m marose.cli map -x "$work/$g.fa.marose" "$work/reads.fq" -k 5 -q --filter-index $index \
                --stats "$work/$index.json" -o "$work/$index.sam" || exit 1
            python3 - "$g" "$round" "$index" "$started" "$(date +%s.%N)" "$work/$index.json" <<'EOF'
import json, sys
g, rnd, index, started, ended, path = sys.argv[1:]
s = json.load(open(path))
k = s["kernel_seconds"]
print(f"{g} round {rnd} {index}: wall {float(ended) - float(started):.2f} s, mapping {s['seconds']['total']:.2f} s, "
      f"setup {s['seconds']['setup']:.2f} s; filter_count {k.get('filter_count', 0):.3f} s, filter_emit "
      f"{k.get('filter_emit', 0):.3f} s; tables {s['filter_index']['table_seconds']:.3f} s (qmer_clear "
      f"{k.get('qmer_clear', 0):.3f} s, qmer_insert {k.get('qmer_insert', 0):.3f} s)")
EOF
        done
        cmp -s <(grep -v '^@PG' "$work/phf.sam") <(grep -v '^@PG' "$work/qmer.sam") &&
            echo "$g round $round: SAM identical" || echo "$g round $round: SAM DIFFERS"
    done
    head -1000 "$work/reads.fq" > "$work/few.fq"
    python3 -m marose.cli map -x "$work/$g.fa.marose" "$work/few.fq" -k 5 -q --explain -o /dev/null 2>&1 |
        grep "^filter index"
done
