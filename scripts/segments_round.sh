#!/usr/bin/env bash
# Eight index segments against one on a GPU machine, with this tree and an earlier one: A.
# thaliana chr1 indexed whole and in eight segments, 1,000,000 Mason reads of issue 26's profile,
# then scripts/versus.py --rounds R of `marose map -q -x INDEX m.fq -k 5 -o OUT` for each index and
# tree, the SAMs compared, and a --stats run of each (to $OUT, or /tmp/segments). BENCHMARKS.md's
# "Segments joined on a GPU" comes from it.
#
# Usage, from the repository root:  scripts/segments_round.sh BEFORE [ROUNDS]
# BEFORE: a tree of the earlier code (git archive COMMIT marose indexer cl scripts | tar -x -C BEFORE).
# Needs: bench/a1/athal_chr1.fa.xz, mason_simulator on PATH (the peers of scripts/fetch_peers.sh in
# bench/peers), pyopencl, mmh3 and pysam importable (scripts/device_env.sh).
set -uo pipefail
before=$(realpath "$1"); rounds=${2:-6}
set --  # device_env.sh takes genomes as its arguments: none here
. scripts/device_env.sh > /dev/null
repo=$PWD; w=/tmp/segments_round; out=${OUT:-/tmp/segments}; mkdir -p $w $out
python3 -m compileall -q $before
xz -dc bench/a1/athal_chr1.fa.xz > $w/a.fa
python3 -m indexer.cli $w/a.fa -q &
python3 -m indexer.cli $w/a.fa -o $w/a8.marose --segment-size 3803459 -q &
mason_simulator -q --seed 7 -ir $w/a.fa -n 1000000 --illumina-read-length 100 --illumina-prob-mismatch-scale 3 \
  --illumina-prob-insert 0.0008 --illumina-prob-deletion 0.0008 -o $w/m.fq > /dev/null 2>&1 &
wait
cd $w
map() { local root=$1 index=$2; shift 2; PYTHONPATH=$root${PYTHONPATH:+:$PYTHONPATH} python3 -m marose.cli map -q -x $index m.fq -k 5 "$@"; }
for root in $before $repo; do for index in a.fa.marose a8.marose; do map $root $index -o s.sam; done; done
for index in a.fa.marose a8.marose; do
    map $repo $index -o s.sam --stats $out/now_$index.json
    map $before $index -o s.sam --stats $out/before_$index.json
done
PYTHONPATH=$repo${PYTHONPATH:+:$PYTHONPATH} python3 -m marose.cli map -x a8.marose m.fq -k 5 -o s.sam 2>&1 | grep -i segment
V() { echo "PYTHONPATH=$1${PYTHONPATH:+:$PYTHONPATH} python3 -m marose.cli map -q -x $2 m.fq -k 5 -o $3"; }
python3 $repo/scripts/versus.py --rounds $rounds \
    --output n1.sam "$(V $repo a.fa.marose n1.sam)" --output n8.sam "$(V $repo a8.marose n8.sam)" \
    --output b1.sam "$(V $before a.fa.marose b1.sam)" --output b8.sam "$(V $before a8.marose b8.sam)" 2>&1 | grep round
for f in n8 b1 b8; do
    cmp -s <(grep -v '^@PG' n1.sam) <(grep -v '^@PG' $f.sam) && echo "n1 and $f: same SAM" || echo "n1 and $f: SAM DIFFERS"
done
