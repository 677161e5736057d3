#!/usr/bin/env bash
# One call on a GPU machine for the CPU-device figures of BENCHMARKS.md: the host's own OpenCL CPU
# device (--device 1:0, e.g. Debian's PoCL 5.0) with -t 16, this checkout against BEFORE (a tree of
# another commit: `git archive C marose indexer cl | tar -x -C BEFORE`), each with the filter over
# candidates at its default and forced on (MAROSE_PREFILTER), one --stats run each; then three rounds
# in turn of this checkout with the filter on, BEFORE at its default, minimap2 -t 16 -ax sr and its
# -N 100. Reads: 200,000 Mason reads of issue 26's profile against A. thaliana chr1 and 100,000 of
# `simulate_reads.py --max-edits 4 --seed 1` against GRCh37 chrX, k = 5.
#
# Usage, from the repository root:  scripts/cpu16_round.sh BEFORE
# Needs: bench/c5/{athal_chr1,hs37_chrX}.fa.gz, the peers' .deb files in bench/peers, and what
# scripts/device_env.sh sets up.
set -uo pipefail
repo=$PWD
before=$(cd "${1:?BEFORE}" && pwd)
. scripts/device_env.sh >/dev/null
deps=$([ -d /tmp/site ] && echo /tmp/site:)  # the wheels device_env.sh installed, without this checkout
python3 -m compileall -q "$before"
w=/tmp/cpu16-round; mkdir -p $w /tmp/run
SECONDS=0
gunzip -c bench/c5/athal_chr1.fa.gz > $w/a.fa; gunzip -c bench/c5/hs37_chrX.fa.gz > $w/x.fa
python3 -m indexer.cli $w/a.fa -q &
python3 -m indexer.cli $w/x.fa -q &
mason_simulator -q --seed 7 -ir $w/a.fa -n 200000 --illumina-read-length 100 --illumina-prob-mismatch-scale 3 \
  --illumina-prob-insert 0.0008 --illumina-prob-deletion 0.0008 -o $w/a.fq >/dev/null 2>&1 &
python3 scripts/simulate_reads.py $w/x.fa $w/x.fq --n 100000 --length 100 --max-edits 4 --seed 1 &
minimap2 -t 8 -x sr -d $w/a.mmi $w/a.fa 2>/dev/null &
minimap2 -t 8 -x sr -d $w/x.mmi $w/x.fa 2>/dev/null &
wait
echo "data in $SECONDS s"
python3 -c "import pyopencl as cl; print([(p.version, [d.name for d in p.get_devices()]) for p in cl.get_platforms()])"
cd /tmp/run  # python -m imports the checkout on PYTHONPATH, not the current folder's
M() { local root=$1; shift; PYTHONPATH=$deps$root python3 -m marose.cli map -q -k 5 -t 16 --device 1:0 "$@"; }
for g in a x; do
  for root in "$before" "$repo"; do
    for pf in off on; do
      MAROSE_PREFILTER=$pf M $root -x $w/$g.fa $w/$g.fq -o $w/o.sam  # programs built
      MAROSE_PREFILTER=$pf M $root -x $w/$g.fa $w/$g.fq -o $w/o_$(basename $root)_$pf.sam --stats $w/s.json
      python3 -c "
import json,sys; s=json.load(open(sys.argv[1])); k=s['kernel_seconds']
print(sys.argv[2], 'map', round(s['seconds']['total'],2), 'kernels', round(sum(k.values()),3), {a: round(b,3) for a,b in sorted(k.items(), key=lambda kv:-kv[1])[:5]})" $w/s.json "$g $(basename $root) prefilter $pf"
    done
  done
  python3 $repo/scripts/versus.py --rounds 3 \
    --output $w/n.sam "MAROSE_PREFILTER=on PYTHONPATH=$deps$repo python3 -m marose.cli map -q -x $w/$g.fa $w/$g.fq -k 5 -t 16 --device 1:0 -o $w/n.sam" \
    --output $w/b.sam "PYTHONPATH=$deps$before python3 -m marose.cli map -q -x $w/$g.fa $w/$g.fq -k 5 -t 16 --device 1:0 -o $w/b.sam" \
    --output $w/m.sam "minimap2 -t 16 -ax sr $w/$g.mmi $w/$g.fq -o $w/m.sam" \
    --output $w/mn.sam "minimap2 -t 16 -ax sr -N 100 $w/$g.mmi $w/$g.fq -o $w/mn.sam" 2>&1 | grep round
  cmp -s <(grep -v '^@PG' $w/n.sam) <(grep -v '^@PG' $w/b.sam) && echo "$g: same SAM" || echo "$g: SAM DIFFERS"
  echo "elapsed $SECONDS s"
done
