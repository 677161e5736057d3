# Sourced by the GPU machine's round scripts, from the repository root:
#
#   . scripts/device_env.sh [GENOME ...]
#
# pyopencl, mmh3 and pysam from the wheels in .whl/ when there are some
# (../shared/tools/gpu-wheels.sh), NVIDIA's OpenCL registered, the peers unpacked from the
# .deb files of bench/peers (scripts/fetch_peers.sh) onto PATH, each GENOME's bench/data/GENOME.fa
# unpacked from bench/gpu/GENOME.fa.gz when missing, MAROSE_CACHE_DIR (default /tmp/mc), and the
# imported packages byte-compiled (scripts/byte_compile.py).
if [ -d .whl ]; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
    export PYTHONPATH=/tmp/site:$PWD
fi
[ -d /etc/OpenCL/vendors ] && command -v nvidia-smi >/dev/null && echo libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd
if [ -d bench/peers ]; then
    mkdir -p /tmp/peers && for f in bench/peers/*.deb; do [ -e "$f" ] && dpkg -x "$f" /tmp/peers; done
    export PATH=/tmp/peers/usr/bin:/tmp/peers/usr/lib/seqan/bin:$PATH
    export LD_LIBRARY_PATH=/tmp/peers/usr/lib/x86_64-linux-gnu:/tmp/peers/lib/x86_64-linux-gnu
fi
mkdir -p bench/data
for g in "$@"; do
    [ -e bench/data/$g.fa ] || gunzip -c bench/gpu/$g.fa.gz > bench/data/$g.fa
done
export MAROSE_CACHE_DIR=${MAROSE_CACHE_DIR:-/tmp/mc}
python3 scripts/byte_compile.py  # as an install leaves them: compiling from source costs each run 0.3 s there
