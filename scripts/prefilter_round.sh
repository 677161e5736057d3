#!/usr/bin/env bash
# The filter over candidates (marose/prefilter.py) on a GPU machine: this checkout against BASE (a
# checkout of the commit it grew from), 1,000,000 reads of 100 bp with 0..4 edits at k = 5 on human
# chrX and on A. thaliana chr1, minimap2 -x sr beside (scripts/bench_repeats.py: wall seconds,
# candidates, those the filter keeps and windows aligned a locus, stage, prefilter and row_loci
# seconds, the SAM records compared). Each round maps with the filter as the device has it (off on a
# GPU) and then with MAROSE_PREFILTER=on (BASE does not know the variable); two rounds.
#
# Usage, from the repository root:  scripts/prefilter_round.sh BASE [READS]
#   e.g.  git worktree add /tmp/base main && scripts/prefilter_round.sh /tmp/base
# Needs what scripts/placement_round.sh needs: bench/data/{hs37_chrX,athal_chr1}.fa (or their
# .fa.gz in bench/gpu/), minimap2 in bench/peers, pyopencl, mmh3 and pysam importable (or the
# wheels in .whl/).
set -uo pipefail
base=${1:?usage: scripts/prefilter_round.sh BASE [READS]}
reads=${2:-1000000}
. scripts/device_env.sh athal_chr1 hs37_chrX
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
for round in 1 2; do
    for g in hs37_chrX athal_chr1; do
        echo "== $g, round $round, the filter over candidates as the device has it"
        python3 scripts/bench_repeats.py --genome bench/data/$g.fa --reads "$reads" --threads 16 \
            --root "$base" --root . --workdir /tmp/prefilter_$g
        echo "== $g, round $round, MAROSE_PREFILTER=on"
        MAROSE_PREFILTER=on python3 scripts/bench_repeats.py --genome bench/data/$g.fa --reads "$reads" \
            --threads 16 --root "$base" --root . --workdir /tmp/prefilter_$g --no-minimap2
    done
done
