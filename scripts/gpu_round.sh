#!/usr/bin/env bash
# One call on a GPU machine without network: the known-answer check's cost, human chrX against
# minimap2, --xa and BAM against SAM, marose mems against mummer and E-MEM, and the CPU device's
# filter with four against eight keys hashed at once. BENCHMARKS.md's "Human repeats", "Output
# paths", "MEMs" (H100 rows) and "Trust" figures of 2026-11-25 come from it.
#
# Usage, from the repository root:  scripts/gpu_round.sh
# Needs: bench/data/{athal_chr1,hs37_chrX,ecoli,ecoli_dh1}.fa (scripts/fetch_genomes.sh; or
# their .fa.gz in bench/gpu/, unpacked here), the peers' .deb files in bench/peers
# (scripts/fetch_peers.sh bench/peers), pyopencl, mmh3 and pysam importable (for the device
# machine: ../shared/tools/gpu-wheels.sh's wheels in .whl/). Optional: bench/gpu/uint8.patch,
# `git diff b4dbd5d^ b4dbd5d -- cl/filter.cl cl/murmur3.cl cl/phf.cl`, for the last comparison.
set -uo pipefail
. scripts/device_env.sh athal_chr1 hs37_chrX ecoli ecoli_dh1
T() { local label=$1; shift; /usr/bin/time -o /tmp/t.txt -f "$label: %e s wall, %M KiB" "$@"; local rc=$?; cat /tmp/t.txt; return $rc; }
M() { python3 -m marose.cli map -q "$@"; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
echo "== check"
T "devices --check, first" python3 -m marose.cli devices --check
rm -rf /tmp/mc; T "devices --check, programs in the driver's cache" python3 -m marose.cli devices --check
echo "== chrX"
T "index chrX" python3 -m indexer.cli bench/data/hs37_chrX.fa -q
T "simulate" python3 scripts/simulate_reads.py bench/data/hs37_chrX.fa /tmp/x.fq --n 1000000 --length 100 --max-edits 4 --seed 11
M -x bench/data/hs37_chrX.fa /tmp/x.fq -k 5 -o /tmp/x0.sam --explain 2>&1 | tail -4
for r in 1 2; do
  T "marose chrX $r" python3 -m marose.cli map -q -x bench/data/hs37_chrX.fa /tmp/x.fq -k 5 -o /tmp/x.sam --stats /tmp/xs$r.json
  T "minimap2 chrX $r" minimap2 -t 16 -ax sr -N 100 bench/data/hs37_chrX.fa /tmp/x.fq -o /tmp/xm.sam 2>/tmp/mm.log
done
python3 -c "
import json; s=json.load(open('/tmp/xs2.json'))
print({k: s[k] for k in ('reads','mapped','loci','candidates','lookups')}, 'aligned', s.get('aligned'))
print('seconds', {k: round(v, 3) for k, v in s['seconds'].items()}); print('kernels', {k: round(v, 3) for k, v in sorted(s['kernel_seconds'].items(), key=lambda x: -x[1])[:6]})"
python3 - <<'PY'
import re
def true_locus(path):
    hit=set(); names=set()
    for line in open(path):
        if line[0]=='@': continue
        f=line.split('\t'); names.add(f[0])
        if int(f[1]) & 4: continue
        m=re.match(r'sim\d+_(.+)_(\d+)_([+-])_\d+', f[0])
        if m and f[2]==m.group(1) and abs(int(f[3])-int(m.group(2)))<=10: hit.add(f[0])
    return len(hit)/max(1,len(names))
print('true locus marose %.4f minimap2 %.4f' % (true_locus('/tmp/x.sam'), true_locus('/tmp/xm.sam')))
PY
echo "== athal sam/xa/bam"
T "index athal" python3 -m indexer.cli bench/data/athal_chr1.fa -q
T mason mason_simulator -q --seed 7 -ir bench/data/athal_chr1.fa -n 1000000 --illumina-read-length 100 \
   --illumina-prob-mismatch-scale 3 --illumina-prob-insert 0.0008 --illumina-prob-deletion 0.0008 -o /tmp/r.fq >/dev/null 2>&1
M -x bench/data/athal_chr1.fa /tmp/r.fq -k 5 -o /tmp/m0.sam
for r in 1 2 3; do
  T "sam $r" python3 -m marose.cli map -q -x bench/data/athal_chr1.fa /tmp/r.fq -k 5 -o /tmp/m.sam
  T "xa $r" python3 -m marose.cli map -q -x bench/data/athal_chr1.fa /tmp/r.fq -k 5 --xa -o /tmp/mx.sam
  T "bam $r" python3 -m marose.cli map -q -x bench/data/athal_chr1.fa /tmp/r.fq -k 5 -o /tmp/m.bam
  T "minimap2 $r" minimap2 -t 16 -ax sr -N 100 bench/data/athal_chr1.fa /tmp/r.fq -o /tmp/mm.sam 2>/dev/null
done
echo "== mems"
timeout 200 python3 scripts/bench_mems.py -l 20 -l 50 -l 100 --threads 16 --device 0:0 --peers-from bench/peers --repeat 2 2>&1 | tail -16
echo "== CPU device: uint4 (now) against uint8 hashing"
head -800000 /tmp/r.fq > /tmp/r200k.fq
cpu=$(python3 -c "from marose.device import all_devices; print(next(f'{p}:{d}' for p, d, x in all_devices() if x.type & 2))")
echo "cpu device $cpu"
M -x bench/data/athal_chr1.fa /tmp/r200k.fq -k 5 -o /tmp/c0.sam --device "$cpu"
for r in 1 2; do T "cpu uint4 $r" python3 -m marose.cli map -q -x bench/data/athal_chr1.fa /tmp/r200k.fq -k 5 -o /tmp/c4.sam --device "$cpu" --stats /tmp/c4.json; done
[ -f bench/gpu/uint8.patch ] || exit 0
patch -s -R -p1 < bench/gpu/uint8.patch && grep -c uint8 cl/phf.cl
M -x bench/data/athal_chr1.fa /tmp/r200k.fq -k 5 -o /tmp/c0.sam --device "$cpu"
for r in 1 2; do T "cpu uint8 $r" python3 -m marose.cli map -q -x bench/data/athal_chr1.fa /tmp/r200k.fq -k 5 -o /tmp/c8.sam --device "$cpu" --stats /tmp/c8.json; done
python3 -c "
import json
for v in ('c4','c8'):
    s=json.load(open(f'/tmp/{v}.json')); print(v, {k: round(x,3) for k,x in s['kernel_seconds'].items() if k.startswith('filter')})"
grep -v '^@PG' /tmp/c4.sam | md5sum; grep -v '^@PG' /tmp/c8.sam | md5sum
patch -s -p1 < bench/gpu/uint8.patch  # back to four keys at once
