"""scripts/peak_memory.py: wall time and the peak memory of a command's whole process tree."""

from __future__ import annotations

import json
import os
import subprocess
import sys

SCRIPT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "scripts",
                      "peak_memory.py")
HOLD_200MB = "import time; x = b'\\x01' * (200 << 20); time.sleep(0.6)"
HOLD_100MB = "import time; x = b'\\x01' * (100 << 20); time.sleep(1.0)"


def measure(*command: str) -> tuple[subprocess.CompletedProcess, dict]:
    done = subprocess.run([sys.executable, SCRIPT, "--", *command], capture_output=True, text=True)
    return done, json.loads(done.stderr.strip().splitlines()[-1])


def test_a_child_holding_200_mb_peaks_near_200_mb():
    done, result = measure(sys.executable, "-c", HOLD_200MB)
    assert done.returncode == 0 and result["returncode"] == 0
    assert 180 <= result["peak_pss_mb"] <= 400
    assert 180 <= result["max_rss_mb"] <= 400
    assert 0.6 <= result["wall_s"] < 10
    assert result["samples"] >= 3


def test_the_peak_sums_the_processes_of_the_tree():
    script = f'{sys.executable} -c "{HOLD_100MB}" & {sys.executable} -c "{HOLD_100MB}"; wait'
    _, result = measure("sh", "-c", script)
    assert 180 <= result["peak_pss_mb"] <= 400  # both at once
    assert 90 <= result["max_rss_mb"] <= 180  # the largest one alone


def test_the_exit_status_is_the_commands_and_the_line_goes_to_a_file_too(tmp_path):
    out = tmp_path / "peaks.jsonl"
    done = subprocess.run([sys.executable, SCRIPT, "-o", str(out), "--", sys.executable, "-c",
                           "raise SystemExit(3)"], capture_output=True, text=True)
    assert done.returncode == 3
    assert json.loads(out.read_text())["returncode"] == 3
