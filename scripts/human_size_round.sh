#!/usr/bin/env bash
# The human-size figures of BENCHMARKS.md, one stage per call (a GPU machine lends 10 minutes a
# command; the files stay in bench/h/ between calls):
#
#   scripts/human_size_round.sh make              # the 3.1 Gbp reference (scripts/human_size.py)
#   scripts/human_size_round.sh reads [N]         # 1M 100 bp reads and 460,544 H3 reads from it (N of each)
#   scripts/human_size_round.sh build BUDGET      # its index within --max-memory BUDGET (e.g. 64G)
#   scripts/human_size_round.sh map [N]           # 1M 100 bp reads (k 5) and 460,544 H3 reads (k 3), or N
#                                                 # of each, the index kept on the device and cut to 20G
#   scripts/human_size_round.sh segments          # 121 Mbp: 1 against 8 segments, map time and lookups
#   scripts/human_size_round.sh parts [N] [LIMIT] # 121 Mbp: N 100 bp reads (1M), the index kept on the device
#                                                 # and cut to LIMIT (700M: two parts) by --max-device-memory
#   scripts/human_size_round.sh serve             # 121 Mbp, Table II reads: served against standalone
#   scripts/human_size_round.sh peers [N]         # 3.1 Gbp: N 100 bp reads (1M), marose (k 5) against minimap2
#                                                 # -x sr (its index built first, once) and its -N 100; true locus
#   scripts/human_size_round.sh against DIR [N]   # 3.1 Gbp: this checkout against the one in DIR (its marose/,
#                                                 # indexer/, cl/): --stats of the first 200,000 of N 100 bp reads
#                                                 # (1M) with each, then versus.py --rounds 2 on all N
#   scripts/human_size_round.sh pairs DIR [N]     # 3.1 Gbp: N pairs of 2 x 100 bp (20,000; fragments of 300,
#                                                 # -I 300,30), this checkout against DIR: --stats with each, then
#                                                 # versus.py --rounds 2
#
# Needs bench/h/arabidopsis_3sp.fa.gz (scripts/fetch_genomes.sh --big) and pyopencl, mmh3 and
# pysam importable (for the device machine: ../shared/tools/gpu-wheels.sh's wheels in .whl/).
# The files go to $H (default bench/h; on a device machine, a folder that is not copied over
# between calls, e.g. H=/tmp/h). Every timed command goes through scripts/peak_memory.py: wall
# seconds and the peak memory of its process tree, one JSON line each in $H/runs.jsonl.
set -euo pipefail
export MAROSE_CACHE_DIR=${MAROSE_CACHE_DIR:-$PWD/bench/h/cache}
device_env() { . scripts/device_env.sh; }  # in a function: sourced bare, it would take this script's arguments as genomes
device_env
h=${H:-bench/h}
mkdir -p $h
h=$(cd $h && pwd)
run() { python3 scripts/peak_memory.py -o $h/runs.jsonl -- "$@"; }
lookups() { python3 -c "import json,sys; s=json.load(open(sys.argv[1])); k=s['kernel_seconds']; print('lookups', s['lookups'], 'candidates', s['candidates'], 'loci', s['loci'], 'seconds', {k: round(v, 2) for k, v in s['seconds'].items()}, 'kernels', {n: round(k[n], 3) for n in sorted(k, key=k.get, reverse=True)[:8]})" "$1"; }
three=$h/arabidopsis_3sp.fa
make_reads() {  # [N]: N reads of each set (default 1M and 460,544) in $r100 and $h3, made once
    local n=${1:-}
    r100=$h/r100${n:+_$n}.fq h3=$h/h3${n:+_$n}.fq
    [ -e $r100 ] || python3 scripts/simulate_reads.py $h/human_size.fa $r100 --n ${n:-1000000} --length 100 \
        --max-edits 4 --seed 11 &
    [ -e $h3 ] || python3 scripts/simulate_reads.py $h/human_size.fa $h3 --n ${n:-460544} --length 40 --subs 3 --seed 11
    wait
}

against() {  # DIR TAG WARM STATS ALL: marose map's reads and options of each set, with the checkout in DIR
    # (its marose/, indexer/, cl/) and with this one: WARM untimed (the programs built), STATS with
    # --stats, then ALL by versus.py --rounds 2, and the two SAMs compared
    local other repo=$PWD root in_root
    other=$(cd "${1:?checkout}" && pwd)
    python3 -m compileall -q $other/marose $other/indexer  # as device_env.sh compiles this checkout's
    for root in $other $repo; do
        in_root="env PYTHONPATH=$root:${PYTHONPATH:-} python3 -m marose.cli map -q -x $h/human_size.fa"
        $in_root $3 -o /dev/null
        (cd $h && $in_root $4 -o $h/${2}s.sam --stats $h/${2}s.json)  # python -m would import the checkout of the current folder
        lookups $h/${2}s.json
    done
    (cd $h && python3 $repo/scripts/versus.py --rounds 2 \
        --output $h/${2}b.sam "env PYTHONPATH=$other:${PYTHONPATH:-} python3 -m marose.cli map -q -x $h/human_size.fa $5 -o $h/${2}b.sam" \
        --output $h/${2}a.sam "env PYTHONPATH=$repo:${PYTHONPATH:-} python3 -m marose.cli map -q -x $h/human_size.fa $5 -o $h/${2}a.sam")
    cmp <(grep -v '^@PG' $h/${2}b.sam) <(grep -v '^@PG' $h/${2}a.sam) && echo "the same SAM"
}

case ${1:?stage} in
make)
    run python3 scripts/human_size.py --source bench/h/arabidopsis_3sp.fa.gz $h/human_size.fa -q
    ;;
reads)
    make_reads "${2:-}"
    ;;
build)
    rm -rf $h/human_size.fa.marose
    run python3 -m indexer.cli $h/human_size.fa --max-memory "${2:?budget}"
    du -sb $h/human_size.fa.marose $h/human_size.fa
    ;;
map)
    make_reads "${2:-}"
    for limit in "" 20G; do
        extra=${limit:+--max-device-memory $limit}
        for r in 1 2; do
            run python3 -m marose.cli map -x $h/human_size.fa $r100 -k 5 -o $h/o100.sam --stats $h/s100.json $extra
            lookups $h/s100.json
            run python3 -m marose.cli map -x $h/human_size.fa $h3 -k 3 -o $h/oh3.sam --stats $h/sh3.json $extra
            lookups $h/sh3.json
        done
    done
    ;;
segments)
    [ -e $three ] || gunzip -c bench/h/arabidopsis_3sp.fa.gz > $three
    [ -e $h/a100.fq ] || python3 scripts/simulate_reads.py $three $h/a100.fq --n 1000000 --length 100 --max-edits 4 --seed 11
    patterns=$(python3 -c "import sys; print(sum(len(l) - 1 for l in open(sys.argv[1]) if l[0] != '>'))" $three)
    for n in 1 8; do
        run python3 -m indexer.cli $three -o $h/a$n.marose --segment-size $(( patterns / n + 1 )) -q
        for r in 1 2 3; do
            run python3 -m marose.cli map -x $h/a$n.marose $h/a100.fq -k 5 -o $h/oa$n.sam --stats $h/sa$n.json -q
            lookups $h/sa$n.json
        done
    done
    cmp <(grep -v '^@PG' $h/oa1.sam) <(grep -v '^@PG' $h/oa8.sam) && echo "1 and 8 segments: same SAM"
    ;;
parts)
    [ -e $three ] || gunzip -c bench/h/arabidopsis_3sp.fa.gz > $three
    reads=$h/a100${2:+_$2}.fq
    [ -e $reads ] || python3 scripts/simulate_reads.py $three $reads --n ${2:-1000000} --length 100 --max-edits 4 --seed 11
    [ -e $h/a1.marose ] || run python3 -m indexer.cli $three -o $h/a1.marose -q
    for r in 1 2; do
        for limit in "" ${3:-700M}; do
            run python3 -m marose.cli map -x $h/a1.marose $reads -k 5 -o $h/op$limit.sam --stats $h/sp.json -q \
                ${limit:+--max-device-memory $limit}
            lookups $h/sp.json
        done
    done
    cmp <(grep -v '^@PG' $h/op.sam) <(grep -v '^@PG' $h/op${3:-700M}.sam) && echo "whole and in parts: same SAM"
    ;;
serve)
    [ -e $three ] || gunzip -c bench/h/arabidopsis_3sp.fa.gz > $three
    [ -e $h/t2.fq ] || python3 scripts/simulate_reads.py $three $h/t2.fq --n 460544 --length 40 --subs 3 --seed 11
    python3 scripts/bench_serve.py -x $h/a1.marose $h/t2.fq -k 3 --repeats 5
    ;;
peers)
    make_reads "${2:-}"
    [ -e $h/human_size.mmi ] || run minimap2 -t 16 -x sr -d $h/human_size.mmi $h/human_size.fa
    head -n 4000 $r100 > $h/r1k.fq
    python3 -m marose.cli map -q -x $h/human_size.fa $h/r1k.fq -k 5 -o /dev/null  # programs built, untimed
    python3 scripts/versus.py --rounds 2 \
        --output $h/o100.sam "python3 -m marose.cli map -q -x $h/human_size.fa $r100 -k 5 -o $h/o100.sam" \
        --output $h/m100.sam "minimap2 -t 16 -ax sr $h/human_size.mmi $r100 -o $h/m100.sam 2>/dev/null" \
        --output $h/mn100.sam "minimap2 -t 16 -ax sr -N 100 $h/human_size.mmi $r100 -o $h/mn100.sam 2>/dev/null"
    for sam in o100 m100 mn100; do
        python3 -c "import sys; sys.path.insert(0, 'scripts'); from bench_score import true_locus
print(sys.argv[1], true_locus(sys.argv[2], int(sys.argv[3]), 5))" $sam $h/$sam.sam $(( $(wc -l < $r100) / 4 ))
    done
    ;;
against)
    make_reads "${3:-}"
    head -n 800000 $r100 > $h/r200k.fq
    head -n 4000 $r100 > $h/r1k.fq
    against "$2" o "$h/r1k.fq -k 5" "$h/r200k.fq -k 5" "$r100 -k 5"
    ;;
pairs)
    n=${3:-20000}
    p1=$h/p1_$n.fq p2=$h/p2_$n.fq
    [ -e $p2 ] || python3 scripts/simulate_reads.py $h/human_size.fa $p1 --mate2 $p2 --n $n --max-edits 4 --seed 12
    head -n 4000 $p1 > $h/p1_1k.fq
    head -n 4000 $p2 > $h/p2_1k.fq
    against "$2" p "$h/p1_1k.fq $h/p2_1k.fq -k 5 -I 300,30" "$p1 $p2 -k 5 -I 300,30" "$p1 $p2 -k 5 -I 300,30"
    ;;
*)
    echo "unknown stage $1" >&2
    exit 2
    ;;
esac
