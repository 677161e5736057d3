#!/usr/bin/env bash
# Repeated whole runs of one `marose map` command, each with its wall seconds and the --stats
# stage seconds (and the CPU seconds of its threads): the quick series behind before/after
# comparisons on one machine.
#
#   scripts/map_series.sh RUNS LABEL COMMAND...
#
# COMMAND is the map command without --stats (added here; with STATS_COPY set, the last run's
# --stats file is copied there), e.g.
#   scripts/map_series.sh 3 default python3 -m marose.cli map -q -x INDEX READS.fq.gz -k 3 -o /tmp/o.bam
set -euo pipefail
runs=${1:?runs}; label=${2:?label}; shift 2
stats=$(mktemp); trap 'rm -f "$stats"' EXIT
# The output the last run wrote is removed before each run, outside the timing: replacing a file
# written a moment ago waits for its writeback (0.35-0.39 s for 200-355 MB on the H100 machine).
output=$(python3 - "$@" <<'PY'
import sys
args = sys.argv[1:]
print(args[args.index("-o") + 1] if "-o" in args else "")
PY
)
for _ in $(seq "$runs"); do
    if [ -n "$output" ] && [ -f "$output" ]; then rm -f "$output"; sync; fi
    started=$(date +%s.%N)
    "$@" --stats "$stats"
    ended=$(date +%s.%N)
    python3 - "$label" "$started" "$ended" "$stats" <<'PY'
import json, sys
label, started, ended, path = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
record = json.load(open(path))
s, cpu = record["seconds"], record["cpu_seconds"]
stages = " ".join(f"{k} {s[k]:.2f}" for k in ("parse", "encode", "filter", "extend", "format", "write"))
mapping = ("encode", "filter", "extend", "traceback", "strings", "format")
print(f"{label}: whole {ended - started:.2f} setup {s['setup']:.2f} map {s['total']:.2f} {stages}; CPU s: "
      f"mapping thread {sum(cpu[k] for k in mapping):.2f} parse {cpu['parse']:.2f} write {cpu['write']:.2f}")
PY
done
if [ -n "${STATS_COPY:-}" ]; then cp "$stats" "$STATS_COPY"; fi
