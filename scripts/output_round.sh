#!/usr/bin/env bash
# One GPU call for the BAM and gzip-input figures (BENCHMARKS.md, "BAM compressed by a process of
# its own" and "Gzip input"): whole `marose map` runs of this checkout against BEFORE (a tree of
# another commit, e.g. `git archive C marose indexer cl | tar -x -C BEFORE`), in turn, each output
# removed and synced before its run; A. thaliana chr1, k = 5, reads of simulate_reads.py.
#
# Usage, from the repository root:  scripts/output_round.sh BEFORE
# Needs: bench/gpu/athal_chr1.fa.gz (or bench/data/athal_chr1.fa), and what device_env.sh sets up.
set -uo pipefail
before=$(cd "$1" && pwd)
repo=$PWD
. scripts/device_env.sh athal_chr1 >/dev/null 2>&1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1
w=/tmp/output-round; mkdir -p $w /tmp/run
cp bench/data/athal_chr1.fa $w/a.fa
python3 -m indexer.cli $w/a.fa -q &
for s in 1 2 3 4 5 6 7 8 9 10; do
  python3 scripts/simulate_reads.py $w/a.fa $w/r$s.fq --n 1000000 --length 100 --max-edits 4 --seed $((20 + s)) &
done
wait
cat $w/r{1,2,3,4,5,6,7,8,9,10}.fq > $w/r10m.fq
gzip -6 -c $w/r1.fq > $w/r1.fq.gz
python3 -m compileall -q "$before"
cd /tmp/run
run() { # label root reads output
  rm -f "$4"; sync
  /usr/bin/time -o /tmp/t.txt -f "$1: %e s wall, %U user %S sys" env PYTHONPATH="${PYTHONPATH:+$PYTHONPATH:}$2" \
    python3 -m marose.cli map -q -x $w/a.fa "$3" -k 5 -o "$4"
  cat /tmp/t.txt
}
for root in "$before" "$repo"; do run "warm $root" "$root" $w/r1.fq /tmp/run/w.bam; done
for reads in r1 r10m; do
  for i in 1 2 3; do
    run "$reads BAM before $i" "$before" $w/$reads.fq /tmp/run/o.bam
    run "$reads BAM now $i" "$repo" $w/$reads.fq /tmp/run/o.bam
    run "$reads SAM $i" "$repo" $w/$reads.fq /tmp/run/o.sam
  done
done
for i in 1 2 3; do
  run "gzip input, before $i" "$before" $w/r1.fq.gz /tmp/run/o.sam
  run "gzip input, now $i" "$repo" $w/r1.fq.gz /tmp/run/o.sam
  run "plain input $i" "$repo" $w/r1.fq /tmp/run/o.sam
done
