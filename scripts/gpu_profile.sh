#!/usr/bin/env bash
# Whole runs and py-spy profiles of `marose map` on many 100 bp reads, one or more checkouts
# side by side on one machine start (made for the H100 machine, which has no network).
#
#   scripts/gpu_profile.sh DATA READS.fq.gz COPIES RUNS [CHECKOUT ...]
#
# DATA holds athal_chr1.fa.gz; the index is built once (by this checkout). The reads file is
# written COPIES times over, each copy's names suffixed with its number, to $work/reads.fq.
# Each CHECKOUT (default: this one) maps it RUNS times with scripts/map_series.sh, in turn, keeping
# the last run's --stats as $OUT/stats_NAME.json (NAME: the checkout's folder name), then once
# under py-spy for each of SPY_MODES (unset: "idle gil", every thread, waits included; samples
# only while a thread holds the interpreter lock; empty: none); scripts/spy_summary.py
# summarizes each into $OUT. Needs py-spy on PATH for the profiles (skipped without it).
set -euo pipefail
data=${1:?data directory}; reads=${2:?reads.fq.gz}; copies=${3:?copies}; runs=${4:?runs}; shift 4
checkouts=("$@"); [ ${#checkouts[@]} -gt 0 ] || checkouts=("$PWD")
out=${OUT:-/tmp/marose-out}
work=/tmp/marose-profile
here=$PWD
mkdir -p "$out" "$work"
for c in "${checkouts[@]}"; do (cd "$c" && python3 "$here/scripts/byte_compile.py"); done
index=$work/athal_chr1.fa.marose
if [ ! -d "$index" ]; then
    zcat "$data/athal_chr1.fa.gz" > "$work/athal_chr1.fa"
    python3 -m indexer.cli "$work/athal_chr1.fa" -o "$index"
fi
fq=$work/reads.fq
zcat "$reads" > "$work/one.fq"
for i in $(seq "$copies"); do awk -v s="$i" 'NR % 4 == 1 {$1 = $1 "_" s} {print}' "$work/one.fq"; done > "$fq"
echo "reads: $(($(wc -l < "$fq") / 4))"
for c in "${checkouts[@]}"; do  # kernels built into the runtime's cache before the timed runs
    (cd "$c" && head -n 8000 "$fq" > "$work/warm.fq" && python3 -m marose.cli map -q -x "$index" "$work/warm.fq" -k 4 -o /dev/null)
done
for r in $(seq "$runs"); do
    for c in "${checkouts[@]}"; do
        (cd "$c" && STATS_COPY="$out/stats_$(basename "$c").json" "$here/scripts/map_series.sh" 1 "$(basename "$c")" \
            python3 -m marose.cli map -q -x "$index" "$fq" -k 4 -o "$work/out.sam")
    done
done
command -v py-spy > /dev/null || exit 0
for c in "${checkouts[@]}"; do
    name=$(basename "$c")
    for mode in ${SPY_MODES-idle gil}; do
        rm -f "$work/out.sam"; sync
        (cd "$c" && py-spy record --nonblocking --threads --"$mode" --rate 1000 --format raw -o "$work/spy.txt" -- \
            python3 -m marose.cli map -q -x "$index" "$fq" -k 4 -o "$work/out.sam") > /dev/null 2>&1
        python3 "$here/scripts/spy_summary.py" "$work/spy.txt" --rate 1000 --top 30 > "$out/spy_${name}_$mode.txt"
    done
done
