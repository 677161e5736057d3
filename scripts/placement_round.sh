#!/usr/bin/env bash
# Patterns placed where the read is rare, on a GPU machine: this checkout against BASE (a checkout
# of the commit before placement, df4ccaf), 1,000,000 reads of 100 bp with 0..4 edits at k = 5
# on human chrX and on A. thaliana chr1, minimap2 -x sr beside (scripts/bench_repeats.py: wall
# seconds, candidates and windows aligned a locus, stage and row_loci seconds, and the loci that
# differ, by distance and indel). Two rounds, then --explain on chrX.
#
# Usage, from the repository root:  scripts/placement_round.sh BASE [READS]
#   e.g.  git worktree add /tmp/base df4ccaf && scripts/placement_round.sh /tmp/base
# Needs what scripts/gpu_round.sh needs: bench/data/{hs37_chrX,athal_chr1}.fa (or their .fa.gz
# in bench/gpu/), minimap2 in bench/peers (scripts/fetch_peers.sh bench/peers), and pyopencl,
# mmh3 and pysam importable (or the wheels in .whl/).
set -uo pipefail
base=${1:?usage: scripts/placement_round.sh BASE [READS]}
reads=${2:-1000000}
. scripts/device_env.sh athal_chr1 hs37_chrX
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
for round in 1 2; do
    for g in hs37_chrX athal_chr1; do
        echo "== $g, round $round"
        python3 scripts/bench_repeats.py --genome bench/data/$g.fa --reads "$reads" --threads 16 \
            --root "$base" --root . --workdir /tmp/placement_$g
    done
done
echo "== --explain, chrX"
head -4000 /tmp/placement_hs37_chrX/reads_$reads.fq > /tmp/placement_explain.fq
python3 -m marose.cli map -x bench/data/hs37_chrX.fa /tmp/placement_explain.fq -k 5 --explain -o /dev/null 2>&1 \
    | grep -v '^\[marose\]'
