"""The known-answer check: a device whose kernels miscompute is caught before any output is
written, a pass is remembered per device and kernel source, and `marose devices --check`."""

import os
import shutil

import pytest

from conftest import LAMBDA
from indexer import cli as index_cli
from marose import cli, device as device_module, known_answer

READS = os.path.join(os.path.dirname(LAMBDA), "lambda_reads.fq.gz")


@pytest.fixture
def fresh_cache(tmp_path, monkeypatch):
    """A cache directory in which no device has passed yet."""
    monkeypatch.setenv("MAROSE_CACHE_DIR", str(tmp_path / "cache"))


def break_kernel(monkeypatch, file_name: str, old: str, new: str) -> None:
    """The kernel source of file_name with old replaced by new, as a miscompiling runtime would run it."""
    source = device_module._source(file_name)
    assert old in source
    real = device_module._source
    monkeypatch.setattr(device_module, "_source", lambda name: source.replace(old, new) if name == file_name
                        else real(name))


@pytest.fixture(scope="module")
def lambda_copy(tmp_path_factory):
    folder = tmp_path_factory.mktemp("known")
    fasta = folder / "lambda.fa.gz"
    shutil.copy(LAMBDA, fasta)
    assert index_cli.main([str(fasta), "-q"]) == 0
    return str(fasta)


def test_the_check_takes_the_alignment_programs_of_reads_up_to_512_bases():
    """Every (words a read, MAX_K) that a map of 36 to 512 bases takes with its default k, or with
    k of 8 or less, and that mate rescue takes for the common pairs, is built by the check, so
    that a first map after it compiles none."""
    from marose.extend import max_k, max_words
    from marose.params import default_max_errors

    checked = {(max_words(n), max_k(k)) for n, k in (*known_answer.READ_LENGTHS, (90, known_answer.K))}
    taken = {(max_words(n), max_k(k)) for n in range(36, 513) for k in (default_max_errors(n), *range(9))}
    assert taken <= checked
    # mate rescue's budget (2k) for pairs of up to 212 bases at the default k, and of 65-128 at k up to 8
    rescued = {(max_words(n), max_k(2 * default_max_errors(n))) for n in range(36, 213)}
    rescued |= {(max_words(n), max_k(2 * k)) for n in range(65, 129) for k in range(9)}
    assert rescued <= checked
    assert len(checked) == 8


def test_every_check_passes_on_the_cpu_device(device):
    for command in known_answer.COMMANDS:
        assert known_answer.run(device, command) == []


def test_a_wrong_genome_kernel_stops_the_map_before_any_output(lambda_copy, tmp_path, monkeypatch, capsys,
                                                              fresh_cache):
    break_kernel(monkeypatch, "genome.cl", "return (b & 3u) |", "return (b & 1u) |")
    out = tmp_path / "out" / "lambda.sam"
    out.parent.mkdir()
    assert cli.main(["map", "-x", lambda_copy, READS, "-o", str(out)]) == 1
    err = capsys.readouterr().err
    assert "unpack_genome" in err and "wrong results" in err and "Traceback" not in err
    assert device_module.choose_device().name.strip() in err
    assert list(out.parent.iterdir()) == []
    assert known_answer._passed() == set()


def test_a_wrong_alignment_kernel_is_named(device, monkeypatch):
    break_kernel(monkeypatch, "extend.cl", "return (int)hp - (int)hm;", "return (int)hp - (int)hm + 1;")
    fresh = device_module.Device()
    wrong = known_answer.run(fresh, "map")
    assert wrong and all("unpack_genome" not in kernels for kernels in wrong)
    assert any("row_loci" in kernels for kernels in wrong)


def test_a_wrong_heavy_loci_kernel_is_named(device, monkeypatch):
    break_kernel(monkeypatch, "loci.cl", "slot[d] = at + mine[d];", "slot[d] = at;")
    wrong = known_answer.run(device_module.Device(), "map")
    assert len(wrong) == 1 and wrong[0].startswith("best_loci_heavy (the loci of reads in repeats, in order)")


def test_a_wrong_segment_join_is_named(device, monkeypatch):
    """A miscomputed join of the segments (which only a GPU runs in a map) is caught on any device."""
    break_kernel(monkeypatch, "segments.cl", "keys = keys_before[s] + rank_in(word, at);", "keys = rank_in(word, at);")
    wrong = known_answer.run(device_module.Device(), "map")
    assert wrong == ["add_to_every, join_g (an index's segments joined into one)"]


def test_a_filter_kernel_wrong_only_in_a_wide_grid_is_named(device, monkeypatch):
    """A runtime that miscompiles filter_emit only for grids as wide as a map's (PoCL compiles them
    apart) fails the check too."""
    line = "uint start = read_start(positions[i], o, contig_start, n_contigs);"
    break_kernel(monkeypatch, "filter.cl", line, line.replace(";", " + (get_num_groups(0) >= 4096u);"))
    fresh = device_module.Device()
    if not fresh.widens_grids:
        pytest.skip("only a device that compiles kernels apart for wide grids runs the wide check")
    wrong = known_answer.run(fresh, "map")
    assert len(wrong) == 1 and wrong[0].endswith("(the filter's pattern offsets and candidates)")


def test_a_wrong_heavy_pairing_kernel_is_named(device, monkeypatch):
    """pair_heavy, which only pairs whose mates repeats give many loci reach in a map, is checked on
    the known case's pairs."""
    break_kernel(monkeypatch, "pairing.cl", "if (proper_pair(x, place_of(h,", "if (!proper_pair(x, place_of(h,")
    wrong = known_answer.run(device_module.Device(), "map")
    assert wrong == ["pair_loci, pair_heavy, pair_table, place_records, place_uints, pair_hits (pairing)"]


@pytest.mark.parametrize("old, new", [('"\\tXR:i:1"', '"\\tXR:i:2"'), ("same = one[j] == two[j];", "same = true;")])
def test_a_wrong_paired_end_kernel_is_named(device, monkeypatch, old, new):
    break_kernel(monkeypatch, "pair_records.cl", old, new)
    wrong = known_answer.run(device_module.Device(), "map")
    assert wrong == ["mate_names, pair_records (paired-end SAM text)"]


def test_a_wrong_hash_kernel_stops_the_index_build(tmp_path, monkeypatch, capsys, fresh_cache):
    break_kernel(monkeypatch, "bdz.cl", "for (uint J = 0;", "for (uint J = 1;")
    fasta = tmp_path / "lambda.fa.gz"
    shutil.copy(LAMBDA, fasta)
    assert index_cli.main([str(fasta)]) == 1
    assert "bdz_build" in capsys.readouterr().err
    assert [p.name for p in tmp_path.iterdir()] == ["lambda.fa.gz"]


def test_a_pass_is_remembered_until_the_kernel_sources_change(device, tmp_path, monkeypatch, fresh_cache):
    known_answer.ensure(device, ("map",))
    assert len(known_answer._passed()) == 1

    def must_not_run(*args):
        raise AssertionError("the check ran again")

    monkeypatch.setattr(known_answer, "run", must_not_run)
    known_answer.ensure(device, ("map",))  # remembered: nothing runs
    sources = tmp_path / "cl"
    shutil.copytree(device_module.kernel_dir(), sources)
    with open(sources / "genome.cl", "a") as handle:
        handle.write("\n/* changed */\n")
    monkeypatch.setattr(device_module, "kernel_dir", lambda: sources)
    with pytest.raises(AssertionError, match="ran again"):
        known_answer.ensure(device, ("map",))


def test_a_pass_is_remembered_until_the_check_changes(device, tmp_path, monkeypatch, fresh_cache):
    """A new version of the check (more programs, more kernels) runs again where the old one passed."""
    known_answer.ensure(device, ("map",))
    monkeypatch.setattr(known_answer, "run", lambda *args: pytest.fail("the check ran again"))
    known_answer.ensure(device, ("map",))  # remembered: nothing runs
    changed = tmp_path / "known_answer.py"
    changed.write_text(open(known_answer.__file__).read() + "\n# changed\n")
    monkeypatch.setattr(known_answer, "__file__", str(changed))
    monkeypatch.setattr(known_answer, "run", lambda *args: ["ran again"])
    with pytest.raises(known_answer.DeviceMiscomputes, match="ran again"):
        known_answer.ensure(device, ("map",))


def test_devices_check_prints_a_verdict_for_each_device(monkeypatch, capsys, fresh_cache):
    real = [entry for entry in device_module.all_devices() if not device_module.is_oclgrind(entry[2])]
    monkeypatch.setattr(device_module, "all_devices", lambda: tuple(real))
    assert cli.main(["devices", "--check"]) == 0
    out = capsys.readouterr().out
    assert out.count("pass: every kernel matched") == len(real) >= 1
    assert len(known_answer._passed()) == len(real) * len(known_answer.COMMANDS)


def test_a_wrong_mems_kernel_stops_mems_before_any_output(tmp_path, monkeypatch, capsys, fresh_cache):
    break_kernel(monkeypatch, "mems.cl", "keep[h] = left < STEP", "keep[h] = left <= STEP")
    out = tmp_path / "out" / "mems.txt"
    out.parent.mkdir()
    assert cli.main(["mems", LAMBDA, READS, "-l", "20", "-o", str(out)]) == 1
    err = capsys.readouterr().err
    assert "extend_hits" in err and "wrong results" in err and "sample_seeds" not in err
    assert list(out.parent.iterdir()) == []
