"""scripts/bench's bookkeeping (no timing): the results file, why a failed command failed, the plots."""

from __future__ import annotations

import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "scripts"))

import bench_results  # noqa: E402
from bench_tools import Runner, Step  # noqa: E402


def entry(device="GPU", set_="h3", reads=1000, marose=100.0, rabema=None):
    return {"device": device, "genome": "g", "set": set_, "read_length": 40, "k": 3, "reads": reads,
            "threads": 2, "date": "2026-11-25 19:00 UTC", "commit": "abc1234", "command": "scripts/bench",
            "rows": [{"tool": "marose", "map_s": 1.0, "reads_per_s": marose, "true_locus_pct": 99.9,
                      "rabema_all_pct": rabema},
                     {"tool": "bwa", "map_s": 2.0, "reads_per_s": 50.0, "true_locus_pct": 52.0,
                      "rabema_all_pct": rabema}]}


def test_a_run_replaces_the_entries_it_measured_and_keeps_the_others(tmp_path):
    path = str(tmp_path / "results.json")
    bench_results.save([entry(), entry(set_="illumina100"), entry(device="CPU")], path)
    new = entry(marose=300.0)
    merged = bench_results.merge(bench_results.load(path), [new, entry(reads=5000)])
    bench_results.save(merged, path)
    kept = bench_results.load(path)
    assert len(kept) == 4
    h3 = [e for e in kept if (e["device"], e["set"], e["reads"]) == ("GPU", "h3", 1000)]
    assert len(h3) == 1 and h3[0]["rows"][0]["reads_per_s"] == 300.0
    assert {(e["device"], e["set"], e["reads"]) for e in kept} == {
        ("GPU", "h3", 1000), ("GPU", "h3", 5000), ("GPU", "illumina100", 1000), ("CPU", "h3", 1000)}
    assert bench_results.load(str(tmp_path / "none.json")) == []


def test_recall_is_rabema_only_when_every_tool_that_ran_has_it():
    assert bench_results.has_rabema(entry(rabema=99.0))
    assert not bench_results.has_rabema(entry())
    mixed = entry(rabema=99.0)
    mixed["rows"][1]["rabema_all_pct"] = None
    assert not bench_results.has_rabema(mixed)
    mixed["rows"][1]["map_s"] = None  # a tool that failed does not count
    assert bench_results.has_rabema(mixed)
    assert bench_results.recall(entry(rabema=98.0)["rows"][0], True) == 98.0
    assert bench_results.recall(entry(rabema=98.0)["rows"][0], False) == 99.9


def test_a_failed_command_says_its_exit_status_and_last_message(tmp_path):
    log = str(tmp_path / "bench.log")
    runner = Runner()
    ok = runner.run([Step([sys.executable, "-c", "print('fine')"])], log)
    assert ok.ok and ok.why == ""
    script = "import sys; print('reading index', file=sys.stderr); print('no such index: x', file=sys.stderr); " \
             "sys.exit(3)"
    bad = runner.run([Step([sys.executable, "-c", script]), Step([sys.executable, "-c", "pass"])], log)
    assert not bad.ok and len(bad.commands) == 1  # the step after the failure is not run
    assert bad.why == f"{os.path.basename(sys.executable)}: exit status 3: no such index: x"
    silent = runner.run([Step([sys.executable, "-c", "raise SystemExit(2)"])], log)
    assert silent.why == f"{os.path.basename(sys.executable)}: exit status 2"


def test_a_plot_per_entry_in_which_a_tool_ran(tmp_path):
    pytest.importorskip("matplotlib")
    from bench_plot import device_tag, plot_all

    failed = entry(set_="illumina100")
    for row in failed["rows"]:
        row["map_s"] = row["reads_per_s"] = None
    paths = plot_all([entry(rabema=99.5), failed], str(tmp_path))
    assert [os.path.basename(p) for p in paths] == ["gpu_g_h3_1000.png"]
    assert open(paths[0], "rb").read(8) == b"\x89PNG\r\n\x1a\n"
    assert device_tag("pthread-Intel(R) Xeon(R) Processor") == "pthread-intel-xeon"
    assert device_tag("NVIDIA H100 80GB HBM3") == "nvidia-h100-80gb-hbm3"


def test_a_step_starts_with_no_output_of_an_earlier_run(tmp_path):
    """What a timed step writes is removed before it runs, whether it writes the file itself or
    through its standard output, so that no tool pays for freeing an earlier run's file."""
    own, piped = tmp_path / "own.sam", tmp_path / "piped.sam"
    own.write_text("an earlier run\n")
    piped.write_text("an earlier run\n")
    steps = [Step(["sh", "-c", f"test ! -e {own} && test ! -s {piped} && echo new > {own} && echo piped"],
                  stdout=str(piped), writes=str(own))]
    assert Runner().run(steps, str(tmp_path / "log.txt")).ok
    assert own.read_text() == "new\n" and piped.read_text() == "piped\n"
