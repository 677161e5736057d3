#!/usr/bin/env bash
# The GPU benchmark run, made on a machine with an NVIDIA GPU and no network: index builds of
# A. thaliana chr1 (30 Mbp) and of three Arabidopsis species (121 Mbp), `marose map` of the
# simulated chr1 reads, the paper's Table II setting (460,544 H3 reads against the 121 Mbp
# reference) and the roofline. A few reads of each set are mapped first, so that the timed runs
# find the kernels built.
# Markdown sections go to $OUT (default /tmp/marose-out).
#
#   scripts/device_bench.sh DATA_DIR
#
# DATA_DIR holds arabidopsis_3sp.fa.gz (scripts/fetch_genomes.sh --big) and the reads
# chr1_h3_100k.fq.gz, chr1_100bp_100k.fq.gz and a3sp_h3_460544.fq.gz, made by
#   scripts/simulate_reads.py athal_chr1.fa chr1_h3_100k.fq --n 100000 --length 40 --subs 3 --seed 1
#   scripts/simulate_reads.py athal_chr1.fa chr1_100bp_100k.fq --n 100000 --length 100 --max-edits 4 --seed 2
#   scripts/simulate_reads.py arabidopsis_3sp.fa a3sp_h3_460544.fq --n 460544 --length 40 --subs 3 --seed 1
# and gzipped.
set -euo pipefail
data=${1:?data directory}
out=${OUT:-/tmp/marose-out}
work=/tmp/marose-bench
mkdir -p "$out" "$work"
# byte-compiled, as installed packages are, whether or not this environment writes bytecode
python3 scripts/byte_compile.py
python3 -m marose.cli devices | tee "$out/devices.txt"
zcat "$data/arabidopsis_3sp.fa.gz" > "$work/arabidopsis_3sp.fa"
awk '/^>/ {n++} n == 1' "$work/arabidopsis_3sp.fa" > "$work/athal_chr1.fa"
python3 scripts/bench_index.py "$work/athal_chr1.fa" "$work/arabidopsis_3sp.fa" --tools marose \
    --workdir "$work/index" --keep | tee "$out/index.md"
chr1="$work/index/athal_chr1/marose/athal_chr1.fa.marose"
a3sp="$work/index/arabidopsis_3sp/marose/arabidopsis_3sp.fa.marose"
for set in "$chr1 chr1_h3_100k 3" "$chr1 chr1_100bp_100k 4" "$a3sp a3sp_h3_460544 3"; do
    read -r index reads k <<< "$set"
    zcat "$data/$reads.fq.gz" | head -n 8000 > "$work/warm.fq" || true  # head closes the pipe early
    python3 -m marose.cli map -q -x "$index" "$work/warm.fq" -k "$k" -o /dev/null
done
python3 scripts/bench_map.py "$chr1" "$data/chr1_h3_100k.fq.gz" -k 3 --stats-out "$out/chr1_h3.json" \
    --label "H3: 100k reads of 40 bp with 3 substitutions, A. thaliana chr1" | tee "$out/map.md"
python3 scripts/bench_map.py "$chr1" "$data/chr1_100bp_100k.fq.gz" -k 4 --stats-out "$out/chr1_100bp.json" \
    --label "100k reads of 100 bp with up to 4 edits, A. thaliana chr1" | tee -a "$out/map.md"
python3 scripts/bench_map.py "$a3sp" "$data/a3sp_h3_460544.fq.gz" -k 3 --stats-out "$out/a3sp_h3.json" \
    --label "Table II setting: 460,544 H3 reads, 121 Mbp Arabidopsis reference" | tee -a "$out/map.md"
python3 scripts/roofline.py "$out"/chr1_h3.json "$out"/chr1_100bp.json "$out"/a3sp_h3.json | tee "$out/roofline.md"
