#!/usr/bin/env bash
# One call on a GPU machine for the CPU-device figures of BENCHMARKS.md, each CPU runtime alone, as
# on a CPU server (OCL_ICD_VENDORS names a folder holding only that runtime's ICD file): PyPI's PoCL
# (the pocl extra, found beside pyopencl: `--device pthread`) and the machine's own PoCL
# (/etc/OpenCL/vendors/pocl.icd: `--device cpu-`), -t 16. Three --stats runs of this checkout and
# of BEFORE (a tree of another commit: `git archive C marose indexer cl | tar -x -C BEFORE`) on
# PyPI's PoCL; then `scripts/versus.py --rounds 4` of this checkout on each runtime, minimap2 -t 16
# -ax sr and its -N 100. Reads: 200,000 Mason reads of issue 26's profile against A. thaliana chr1
# and 100,000 of `simulate_reads.py --max-edits 4 --seed 1` against GRCh37 chrX, k = 5.
#
# Usage, from the repository root:  scripts/cpu16_round.sh BEFORE [POCL_ARCHIVE]
# POCL_ARCHIVE: PyPI's PoCL where pyopencl's site lacks it (the cp312 pyopencl wheel bundles an ICD
# loader, not PoCL): a .tar.xz, made in a local install's site-packages, of
# pyopencl/.libs/libpocl-*.so, pyopencl/.libs/pocl.icd and pocl_binary_distribution/, unpacked into
# /tmp/site (where scripts/device_env.sh installs the wheels). pocl_binary_distribution alone (its
# wheel) leaves that loader without PoCL.
# Needs: bench/data/{athal_chr1,hs37_chrX}.fa, or .fa.gz or .fa.xz of them under bench/; the peers'
# .deb files in bench/peers (minimap2, and seqan-apps for mason_simulator).
set -uo pipefail
repo=$PWD
before=$(cd "${1:?BEFORE}" && pwd)
archive=${2:-}
set --
. scripts/device_env.sh >/dev/null
case "$archive" in
    *.whl) python3 -m zipfile -e "$archive" /tmp/site ;;
    *.tar.xz) tar -xJf "$archive" -C /tmp/site ;;
esac
python3 -m compileall -q "$before"
mkdir -p /tmp/v-pypi /tmp/v-own && cp /etc/OpenCL/vendors/pocl.icd /tmp/v-own/
w=/tmp/cpu16-round; mkdir -p $w /tmp/run
genome() {  # bench/data/NAME.fa, else the first bench/*/NAME.fa.gz or .fa.xz
    local found
    if [ -e bench/data/$1.fa ]; then cp bench/data/$1.fa $2; return; fi
    found=$(ls bench/*/$1.fa.gz bench/*/$1.fa.xz 2>/dev/null | head -1)
    case "$found" in *.gz) gunzip -c "$found" > $2 ;; *.xz) xz -dc "$found" > $2 ;; *) echo "no $1" >&2; exit 1 ;; esac
}
SECONDS=0
genome athal_chr1 $w/a.fa; genome hs37_chrX $w/x.fa
python3 -m indexer.cli $w/a.fa -q &
python3 -m indexer.cli $w/x.fa -q &
mason_simulator -q --seed 7 -ir $w/a.fa -n 200000 --illumina-read-length 100 --illumina-prob-mismatch-scale 3 \
  --illumina-prob-insert 0.0008 --illumina-prob-deletion 0.0008 -o $w/a.fq >/dev/null 2>&1 &
python3 scripts/simulate_reads.py $w/x.fa $w/x.fq --n 100000 --length 100 --max-edits 4 --seed 1 &
minimap2 -t 8 -x sr -d $w/a.mmi $w/a.fa 2>/dev/null &
minimap2 -t 8 -x sr -d $w/x.mmi $w/x.fa 2>/dev/null &
wait
echo "data in $SECONDS s"
for v in /tmp/v-pypi /tmp/v-own; do OCL_ICD_VENDORS=$v python3 -c "
import pyopencl as cl; print('$v', [(p.version, [d.name for d in p.get_devices()]) for p in cl.get_platforms()])"; done
cd /tmp/run  # python -m imports the checkout on PYTHONPATH, not the current folder's
deps=$([ -d /tmp/site ] && echo /tmp/site:)
M() { local v=$1 dev=$2 root=$3; shift 3
      OCL_ICD_VENDORS=$v PYTHONPATH=$deps$root python3 -m marose.cli map -q -k 5 -t 16 --device $dev "$@"; }
for g in a x; do
  for root in "$before" "$repo"; do
    M /tmp/v-pypi pthread $root -x $w/$g.fa $w/$g.fq -o $w/o.sam  # programs built
    for run in 1 2 3; do
      M /tmp/v-pypi pthread $root -x $w/$g.fa $w/$g.fq -o $w/o_$(basename $root).sam --stats $w/s.json
      python3 -c "
import json,sys; s=json.load(open(sys.argv[1])); k=s['kernel_seconds']
print(sys.argv[2], 'map', round(s['seconds']['total'],2), 'setup', round(s['seconds']['setup'],3), 'kernels',
      round(sum(k.values()),3), {a: round(b,3) for a,b in sorted(k.items(), key=lambda kv:-kv[1])[:7]})" $w/s.json \
        "$g $(basename $root)"
    done
  done
  cmp -s <(grep -v '^@PG' $w/o_$(basename $before).sam) <(grep -v '^@PG' $w/o_$(basename $repo).sam) \
    && echo "$g: same SAM" || echo "$g: SAM DIFFERS"
  M /tmp/v-own cpu- $repo -x $w/$g.fa $w/$g.fq -o $w/o.sam  # programs built
  run="python3 -m marose.cli map -q -x $w/$g.fa $w/$g.fq -k 5 -t 16"
  python3 $repo/scripts/versus.py --rounds 4 \
    --output $w/n1.sam "OCL_ICD_VENDORS=/tmp/v-pypi PYTHONPATH=$deps$repo $run --device pthread -o $w/n1.sam" \
    --output $w/n2.sam "OCL_ICD_VENDORS=/tmp/v-own PYTHONPATH=$deps$repo $run --device cpu- -o $w/n2.sam" \
    --output $w/m.sam "minimap2 -t 16 -ax sr $w/$g.mmi $w/$g.fq -o $w/m.sam" \
    --output $w/mn.sam "minimap2 -t 16 -ax sr -N 100 $w/$g.mmi $w/$g.fq -o $w/mn.sam" 2>&1 | grep round
  cmp -s <(grep -v '^@PG' $w/n1.sam) <(grep -v '^@PG' $w/n2.sam) && echo "$g: same SAM on both runtimes" \
    || echo "$g: SAM DIFFERS between the runtimes"
  echo "elapsed $SECONDS s"
done
