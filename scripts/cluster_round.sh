#!/usr/bin/env bash
# One call on a multi-GPU machine (nvidia-h200-x2 or -x4) without network: reads/s of
# `marose map` on 1, 2 and 4 GPUs (as many as there are) in the MAROSE paper's Table II setting
# (460,544 H3 reads of 40 bp against the 121 Mbp three-Arabidopsis reference, k = 3) and on
# 1,000,000 reads of 100 bp against A. thaliana chr1 (k = 5): first one process with --device
# lists, then, when Dask is importable, one Dask worker a GPU (scripts/bench_cluster.py scaling).
# BENCHMARKS.md's "Many devices and Dask" GPU figures come from it. `chrx` adds 1,000,000 reads
# of 100 bp against human chrX (k = 5); `human` maps 1,000,000 reads of 100 bp against the
# 3.1 Gbp human-size reference (scripts/human_size.py, indexed here: about 3 minutes on 64
# cores; a second call on the same machine finds it made), then times one GPU against
# `minimap2 -t 16 -x sr` and every GPU against minimap2 on every core, in turn (scripts/versus.py).
#
# Usage, from the repository root:  scripts/cluster_round.sh [local] [dask] [chrx] [human]
# (default: local and dask)
# The index and reads are made once in /tmp/cluster-round and reused by a later call on the
# same machine, so that `local` and `dask` may be two calls.
# Needs: bench/data/arabidopsis_3sp.fa, or bench/h/arabidopsis_3sp.fa.gz (scripts/fetch_genomes.sh
# --big); pyopencl, mmh3 and pysam importable, and for the Dask rows dask and distributed (for
# the device machine: ../shared/tools/gpu-wheels.sh's wheels in .whl/, with the extra packages
# the Dask rows need: dask distributed click cloudpickle fsspec importlib_metadata zipp
# lazy-importer packaging partd locket pyyaml toolz jinja2 markupsafe msgpack psutil
# sortedcontainers tblib tornado zict).
set -uo pipefail
. scripts/device_env.sh hs37_chrX
work=/tmp/cluster-round repo=$PWD
mkdir -p bench/data "$work"
[ -e bench/data/arabidopsis_3sp.fa ] || gunzip -c bench/h/arabidopsis_3sp.fa.gz > bench/data/arabidopsis_3sp.fa
[ -e "$work/athal_chr1.fa" ] || awk '/^>/ {n++} n == 1' bench/data/arabidopsis_3sp.fa > "$work/athal_chr1.fa"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
python3 -m marose.cli devices
gpus=($(python3 -c "from marose.device import choose_devices; print(' '.join(choose_devices(None)))"))
lists=("${gpus[0]}")
[ ${#gpus[@]} -ge 2 ] && lists+=("${gpus[0]},${gpus[1]}")
[ ${#gpus[@]} -ge 4 ] && lists+=("${gpus[0]},${gpus[1]},${gpus[2]},${gpus[3]}")
echo "device lists: ${lists[*]}"
T() { local label=$1; shift; /usr/bin/time -o /tmp/t.txt -f "$label: %e s wall, %M KiB" "$@"; local rc=$?; cat /tmp/t.txt; return $rc; }
[ -e "$work/a3sp.marose" ] || T "index a3sp" python3 -m indexer.cli bench/data/arabidopsis_3sp.fa -q -o "$work/a3sp.marose"
[ -e "$work/athal_chr1.fa.marose" ] || T "index chr1" python3 -m indexer.cli "$work/athal_chr1.fa" -q
[ -e "$work/h3.fq" ] || { T "reads h3" python3 scripts/simulate_reads.py bench/data/arabidopsis_3sp.fa \
    "$work/h3.tmp.fq" --n 460544 --length 40 --subs 3 --seed 1 && mv "$work/h3.tmp.fq" "$work/h3.fq"; }
[ -e "$work/r100.fq" ] || { T "reads 100" python3 scripts/simulate_reads.py "$work/athal_chr1.fa" \
    "$work/r100.tmp.fq" --n 1000000 --length 100 --max-edits 4 --seed 2 && mv "$work/r100.tmp.fq" "$work/r100.fq"; }
asked=" ${*:-local dask} "
if [[ $asked == *" chrx "* ]]; then
    [ -e "$work/x100.fq" ] || python3 scripts/simulate_reads.py bench/data/hs37_chrX.fa "$work/x100.fq" --n 1000000 \
        --length 100 --max-edits 4 --seed 1
    echo "== 1,000,000 x 100 bp, human chrX"
    python3 scripts/bench_cluster.py scaling -x bench/data/hs37_chrX.fa "$work/x100.fq" -k 5 --repeats 2 --devices "${lists[@]}"
fi
if [[ $asked == *" human "* ]]; then
    hs=$work/human_size.fa
    [ -e "$hs" ] || T "human_size.py" python3 scripts/human_size.py --source bench/h/arabidopsis_3sp.fa.gz "$hs" -q
    [ -e "$work/hs100.fq" ] || python3 scripts/simulate_reads.py "$hs" "$work/hs100.fq" --n 1000000 \
        --length 100 --max-edits 4 --seed 11 > /dev/null &
    [ -e "$work/h.mmi" ] || ! command -v minimap2 > /dev/null ||
        T "minimap2 index" minimap2 -t 16 -x sr -d "$work/h.mmi" "$hs" 2> /dev/null &
    [ -e "$hs.marose" ] || python3 scripts/peak_memory.py -o "$work/runs.jsonl" -- \
        python3 -m indexer.cli "$hs" --max-memory 200G -q
    wait
    echo "== 1,000,000 x 100 bp, 3.1 Gbp human-size reference"
    python3 scripts/bench_cluster.py scaling -x "$hs" "$work/hs100.fq" -k 5 --repeats 2 --devices "${lists[@]}"
    if [ -e "$work/h.mmi" ]; then
        m="python3 -m marose.cli map -q -x $hs $work/hs100.fq -k 5"
        (cd "$work" && python3 "$repo/scripts/versus.py" --rounds 2 \
            --output "$work/a.sam" "$m --device ${gpus[0]} -o $work/a.sam" \
            --output "$work/m16.sam" "minimap2 -t 16 -ax sr $work/h.mmi $work/hs100.fq -o $work/m16.sam" \
            --output "$work/b.sam" "$m -o $work/b.sam" \
            --output "$work/mall.sam" "minimap2 -t $(nproc) -ax sr $work/h.mmi $work/hs100.fq -o $work/mall.sam")
    fi
fi
modes=()
[[ $asked == *" local "* ]] && modes+=("")
if [[ $asked == *" dask "* ]]; then
    # chunks of 50,000 reads: 10 and 20 of them, dealt to up to 4 workers
    python3 -c "import distributed" 2>/dev/null && modes+=("--dask --batch-size 50000") ||
        echo "no Dask here: the Dask rows are left out"
fi
for mode in "${modes[@]}"; do
    echo "== Table II setting ${mode:-one process}"
    python3 scripts/bench_cluster.py scaling -x "$work/a3sp.marose" "$work/h3.fq" -k 3 --repeats 3 $mode --devices "${lists[@]}"
    echo "== 1,000,000 x 100 bp, chr1 ${mode:-one process}"
    python3 scripts/bench_cluster.py scaling -x "$work/athal_chr1.fa" "$work/r100.fq" -k 5 --repeats 3 $mode --devices "${lists[@]}"
done
