#!/usr/bin/env bash
# Download the peer mappers of scripts/bench as x86-64 Debian packages, with the libraries
# they need beyond a bare Debian/Ubuntu, for a machine that has no network.
#
# Usage: scripts/fetch_peers.sh [--full] DIR        (e.g. bench/peers, which git ignores)
#
# Packages: bwa bowtie2 minimap2 seqan-apps (RazerS 3, Yara, Mason, Rabema) time, mummer,
# e-mem and pbsim (scripts/bench_mems.py), and the
# dependencies that `apt-cache depends` names, recursively, except those on every bare
# Debian/Ubuntu (libc6, libstdc++6, zlib1g, ...) and the Python and Perl that run marose and
# bowtie2's wrappers. seqan-apps (12 MB, 50 programs) is repacked to the seven that the
# benchmark runs (razers3, yara_indexer, yara_mapper, mason_simulator, rabema_*), unless --full.
# Sorting uses pysam's samtools, so samtools is not needed.
#
# On the machine without network, unpack and use them:
#   for f in DIR/*.deb; do dpkg -x "$f" PREFIX; done
#   export PATH=PREFIX/usr/bin:PREFIX/usr/lib/seqan/bin:$PATH
#   export LD_LIBRARY_PATH=PREFIX/usr/lib/x86_64-linux-gnu:PREFIX/lib/x86_64-linux-gnu
# or let scripts/bench --peers-from DIR do it.
set -euo pipefail
shopt -s inherit_errexit

full=0
dir=
for arg in "$@"; do
    case "$arg" in
        --full) full=1 ;;
        -h|--help) awk 'NR > 1 && !/^#/ {exit} NR > 1 {sub(/^# ?/, ""); print}' "$0"; exit 0 ;;
        -*) echo "unknown option: $arg" >&2; exit 2 ;;
        *) dir=$arg ;;
    esac
done
[ -n "$dir" ] || { echo "usage: $0 [--full] DIR" >&2; exit 2; }
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)

peers="bwa bowtie2 minimap2 seqan-apps time mummer e-mem pbsim"
seqan_keep="razers3 yara_indexer yara_mapper mason_simulator rabema_build_gold_standard rabema_evaluate rabema_prepare_sam"

# On every bare Debian/Ubuntu (apt and dpkg need them), or the interpreters the GPU image has.
base_re='^(libc6|libgcc-s1|libstdc\+\+6|zlib1g|libbz2-1\.0|liblzma5|libzstd1|libcrypt1|libtinfo6|libncursesw6|libselinux1|libpcre2-8-0|libacl1|libattr1|libaudit1|libcap-ng0|libmd0|libudev1|gcc-[0-9]+-base|debconf|dpkg|tar|install-info|perl-base|perl|perl-modules-.*|libperl.*|python3|python3\..*|python3-minimal|libpython3.*|mime-support|media-types|mailcap|readline-common)$'

apt_opts=()
if [ "$(dpkg --print-architecture)" != amd64 ]; then
    lists=$(mktemp -d)
    apt_opts=(-o APT::Architecture=amd64 -o APT::Architectures=amd64 -o "Dir::State::Lists=$lists")
    apt-get "${apt_opts[@]}" update -qq
fi

# direct_depends PKG: the first alternative of each Depends/PreDepends of PKG.
direct_depends() {
    apt-cache "${apt_opts[@]}" depends --no-recommends --no-suggests --no-conflicts --no-breaks \
        --no-replaces --no-enhances "$1" \
        | awk '/^ *\|?(Pre)?Depends:/ { if (!alt) print $2; alt = ($1 ~ /^\|/) }' \
        | sed -e 's/^<\(.*\)>$/\1/' -e 's/:any$//'
}

declare -A seen=()
queue=($peers)
wanted=()
while [ ${#queue[@]} -gt 0 ]; do
    pkg=${queue[0]}
    queue=("${queue[@]:1}")
    [ -z "${seen[$pkg]:-}" ] || continue
    seen[$pkg]=1
    if [[ $pkg =~ $base_re ]]; then
        continue
    fi
    wanted+=("$pkg")
    while read -r dep; do
        [ -n "$dep" ] && queue+=("$dep")
    done < <(direct_depends "$pkg")
done

echo "downloading: ${wanted[*]}" >&2
rm -f "$dir"/*.deb
(cd "$dir" && apt-get "${apt_opts[@]}" download "${wanted[@]/%/:amd64}") >&2

if [ "$full" = 0 ]; then
    deb=$(compgen -G "$dir/seqan-apps_*.deb" | head -n 1)
    work=$(mktemp -d)
    dpkg-deb -R "$deb" "$work/pkg"
    for f in "$work"/pkg/usr/lib/seqan/bin/*; do
        case " $seqan_keep " in *" $(basename "$f") "*) ;; *) rm -f "$f" ;; esac
    done
    find "$work/pkg/usr/bin" -xtype l -delete
    rm -rf "$work/pkg/usr/share" "$work/pkg/DEBIAN/md5sums"
    sed -i -e 's/^Package: seqan-apps$/Package: seqan-apps-slim/' "$work/pkg/DEBIAN/control"
    slim=$dir/$(basename "${deb/seqan-apps_/seqan-apps-slim_}")
    dpkg-deb -Zxz --root-owner-group -b "$work/pkg" "$slim" > /dev/null
    rm -rf "$work" "$deb"
fi

echo
ls -l "$dir"/*.deb | awk '{printf "%10d  %s\n", $5, $NF}'
echo "total: $(du -sh "$dir" | cut -f1) in $dir"
cat <<TXT

To use them on a machine without network (x86-64 Debian or Ubuntu):
  prefix=/tmp/peers; mkdir -p \$prefix
  for f in $dir/*.deb; do dpkg -x "\$f" \$prefix; done
  export PATH=\$prefix/usr/bin:\$prefix/usr/lib/seqan/bin:\$PATH
  export LD_LIBRARY_PATH=\$prefix/usr/lib/x86_64-linux-gnu:\$prefix/lib/x86_64-linux-gnu\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}
or pass the folder to the benchmark, which unpacks it under its work folder and sets both paths:
  scripts/bench --peers-from $dir ...      (or --peers-from \$prefix once unpacked)
TXT
