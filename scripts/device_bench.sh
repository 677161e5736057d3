#!/usr/bin/env bash
# The GPU benchmark run, made on a machine with an NVIDIA GPU and no network: index builds of
# A. thaliana chr1 (30 Mbp) and of three Arabidopsis species (121 Mbp), then `marose map` of the
# simulated chr1 reads. Markdown sections go to $OUT (default /tmp/marose-out).
#
#   scripts/device_bench.sh DATA_DIR
#
# DATA_DIR holds arabidopsis_3sp.fa.gz (scripts/fetch_genomes.sh --big) and the reads
# chr1_h3_100k.fq.gz and chr1_100bp_100k.fq.gz (scripts/simulate_reads.py, gzipped).
set -euo pipefail
data=${1:?data directory}
out=${OUT:-/tmp/marose-out}
work=/tmp/marose-bench
mkdir -p "$out" "$work"
python3 -m marose.cli devices | tee "$out/devices.txt"
zcat "$data/arabidopsis_3sp.fa.gz" > "$work/arabidopsis_3sp.fa"
awk '/^>/ {n++} n == 1' "$work/arabidopsis_3sp.fa" > "$work/athal_chr1.fa"
python3 scripts/bench_index.py "$work/athal_chr1.fa" "$work/arabidopsis_3sp.fa" --tools marose \
    --workdir "$work/index" --keep | tee "$out/index.md"
chr1="$work/index/athal_chr1/marose/athal_chr1.fa.marose"
python3 scripts/bench_map.py "$chr1" "$data/chr1_h3_100k.fq.gz" -k 3 \
    --label "H3: 100k reads of 40 bp with 3 substitutions, A. thaliana chr1" | tee "$out/map.md"
python3 scripts/bench_map.py "$chr1" "$data/chr1_100bp_100k.fq.gz" -k 4 \
    --label "100k reads of 100 bp with up to 4 edits, A. thaliana chr1" | tee -a "$out/map.md"
