#!/usr/bin/env bash
# One GPU call for the latest Table II and issue 26 figures of BENCHMARKS.md: the Table II setting
# (460,544 H3 reads of the 121 Mbp three-Arabidopsis reference, k = 3), five whole runs and one
# with --stats; 1,000,000 Mason reads of issue 26's higher-error profile against A. thaliana chr1
# (k = 5) against minimap2 -t 16 -ax sr and its -N 100, three rounds in turn. Each output is removed
# and synced before its run (scripts/versus.py); the programs are built by an untimed run first.
#
# Usage, from the repository root:  scripts/table2_round.sh
# Needs: bench/h/arabidopsis_3sp.fa.gz and bench/b1/athal_chr1.fa.gz, the peers' .deb files in
# bench/peers (mason_simulator, minimap2), and what scripts/device_env.sh sets up.
set -uo pipefail
. scripts/device_env.sh >/dev/null
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1
w=/tmp/table2-round; mkdir -p $w
SECONDS=0
gunzip -c bench/h/arabidopsis_3sp.fa.gz > $w/t.fa
gunzip -c bench/b1/athal_chr1.fa.gz > $w/a.fa
python3 -m indexer.cli $w/t.fa -q &
python3 -m indexer.cli $w/a.fa -q &
python3 scripts/simulate_reads.py $w/t.fa $w/h3.fq --n 460544 --length 40 --subs 3 --seed 11 &
mason_simulator -q --seed 7 -ir $w/a.fa -n 1000000 --illumina-read-length 100 --illumina-prob-mismatch-scale 3 \
  --illumina-prob-insert 0.0008 --illumina-prob-deletion 0.0008 -o $w/r.fq >/dev/null 2>&1 &
minimap2 -t 8 -x sr -d $w/a.mmi $w/a.fa 2>/dev/null &
wait
echo "data in $SECONDS s"
stats() { python3 -c "
import json,sys; s=json.load(open(sys.argv[1])); k=s['kernel_seconds']
print(sys.argv[2], {a: round(b,3) for a,b in s['seconds'].items() if b > 0.01}); print('  kernels', round(sum(k.values()),3), {a: round(b,3) for a,b in sorted(k.items(), key=lambda kv:-kv[1])[:8]})" "$@"; }
python3 -m marose.cli map -q -x $w/t.fa $w/h3.fq -k 3 -o $w/o.sam
python3 -m marose.cli map -q -x $w/t.fa $w/h3.fq -k 3 -o $w/o.sam --stats $w/s.json; stats $w/s.json "table II"
python3 scripts/versus.py --rounds 5 --output $w/o1.sam "python3 -m marose.cli map -q -x $w/t.fa $w/h3.fq -k 3 -o $w/o1.sam" 2>&1 | grep round
python3 -m marose.cli map -q -x $w/a.fa $w/r.fq -k 5 -o $w/o.sam
python3 -m marose.cli map -q -x $w/a.fa $w/r.fq -k 5 -o $w/o.sam --stats $w/s.json; stats $w/s.json "mason 1M"
python3 scripts/versus.py --rounds 3 --output $w/o2.sam "python3 -m marose.cli map -q -x $w/a.fa $w/r.fq -k 5 -o $w/o2.sam" \
  --output $w/m.sam "minimap2 -t 16 -ax sr $w/a.mmi $w/r.fq -o $w/m.sam" \
  --output $w/mn.sam "minimap2 -t 16 -ax sr -N 100 $w/a.mmi $w/r.fq -o $w/mn.sam" 2>&1 | grep round
echo "elapsed $SECONDS s"
