"""``ballast simulate`` end to end: outputs written, strategies compared, bad input refused,
and the same seed giving the same bytes in every file (across processes, whatever Python's
hash seed)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import typer

from ballast.cli.simulate import CHECKOUT_LIBRARY, find_scenario
from ballast.file_lock import hold_exclusive

TINY = """
name = "tiny"
duration = "4m"
step = "20s"
seed = 11

[cluster]
brokers = 2

[[namespaces]]
name = "ns"
bundles = 8
topics = 200
rate = 200
popularity = 1.0
processes = [{ kind = "random_walk", sigma = 0.5 }]

[[events]]
at = "1m"
add_brokers = 1

[expect]
moves_max = 1000
"""

Run = Callable[..., subprocess.CompletedProcess[str]]


def write(tmp_path: Path) -> Path:
    path = tmp_path / "tiny.toml"
    path.write_text(TINY, encoding="utf-8")
    return path


def test_compare_writes_every_output(ballast: Run, tmp_path: Path) -> None:
    scenario = write(tmp_path)
    out = tmp_path / "out"
    done = ballast(
        "simulate",
        str(scenario),
        "--compare",
        "threshold,transfer",
        "--out",
        str(out),
        "--check-invariants",
        "--json",
        "--check-expectations",
    )
    assert done.returncode == 0, done.stderr
    summaries = json.loads(done.stdout)
    assert [s["strategy"] for s in summaries] == ["threshold", "transfer"]
    for summary in summaries:
        assert summary["scenario"] == "tiny" and summary["seed"] == 11
        assert summary["invariantChecks"] == 13  # every step, 0..4 min by 20 s
        assert summary["final"]["brokers"] == 3
        assert summary["expectations"]["movesMax"]["ok"]
        assert summary["newBrokers"][0]["broker"] == "broker-002:8080"
    for strategy in ("threshold", "transfer"):
        folder = out / strategy
        assert {p.name for p in folder.iterdir()} == {
            "summary.json",
            "timeline.parquet",
            "brokers.parquet",
            "decisions.parquet",
            "cycles.parquet",
            "loads.png",
        }
        timeline = pq.read_table(folder / "timeline.parquet")
        assert timeline.num_rows == 13 and "std" in timeline.column_names
        decisions = pq.read_table(folder / "decisions.parquet").to_pydict()
        assert "lookup" in decisions["origin"]
        # every shedding cycle (one a minute), with why it moved nothing where it did not
        cycles = pq.read_table(folder / "cycles.parquet").to_pylist()
        assert [c["t_s"] for c in cycles] == [60.0, 120.0, 180.0, 240.0]
        assert all(c["leader"] == "broker-000:8080" for c in cycles)
        assert {c["outcome"] for c in cycles} <= {"Success", "Skip"}
        assert all(c["reason"] and c["detail"] for c in cycles if c["outcome"] == "Skip")
        shedding = sum(1 for o in decisions["origin"] if o == "shedding")
        assert sum(c["moves"] for c in cycles) >= shedding
    assert (out / "comparison.png").exists()
    assert len(json.loads((out / "comparison.json").read_text())) == 2


def test_same_seed_same_bytes(tmp_path: Path) -> None:
    scenario = write(tmp_path)
    outputs = []
    for hash_seed in ("1", "2"):
        out = tmp_path / f"out-{hash_seed}"
        env = {**os.environ, "PYTHONHASHSEED": hash_seed}
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "ballast",
                "simulate",
                str(scenario),
                "--strategy",
                "uniform",
                "--out",
                str(out),
                "--format",
                "csv",
            ],
            capture_output=True,
            text=True,
            env=env,
            check=False,
            timeout=300,
            cwd=Path(__file__).resolve().parents[2],
        )
        assert done.returncode == 0, done.stderr
        outputs.append({p.name: p.read_bytes() for p in sorted((out / "uniform").iterdir())})
    assert outputs[0].keys() == outputs[1].keys()
    for name in outputs[0]:
        assert outputs[0][name] == outputs[1][name], name


def test_bad_input_exits_2(ballast: Run, tmp_path: Path) -> None:
    scenario = write(tmp_path)
    both = ballast("simulate", str(scenario), "--strategy", "uniform", "--compare", "threshold")
    assert both.returncode == 2 and "not both" in both.stderr
    unknown = ballast("simulate", str(scenario), "--strategy", "nope")
    assert unknown.returncode == 2 and "valid:" in unknown.stderr
    missing = ballast("simulate", str(tmp_path / "none.toml"))
    assert missing.returncode == 2 and "not found" in missing.stderr
    broken = tmp_path / "broken.toml"
    broken.write_text('duration = "1m"\n[cluster]\nbrokers = 0\n', encoding="utf-8")
    bad = ballast("simulate", str(broken))
    assert bad.returncode == 2 and "cluster.brokers: must be at least 1" in bad.stderr
    latin = tmp_path / "latin.toml"
    latin.write_bytes(b'# caf\xe9\nduration = "1m"\n[cluster]\nbrokers = 1\n')
    undecodable = ballast("simulate", str(latin))
    assert undecodable.returncode == 2
    assert "latin.toml: not UTF-8 text (byte 0xe9 at offset 5)" in undecodable.stderr
    setting = ballast("simulate", str(scenario), "--set", "loadBalancerSheddingIntervalMinutes=x")
    assert setting.returncode == 2 and "loadBalancerSheddingIntervalMinutes" in setting.stderr
    # A misspelt key would silently simulate the default: an error, not a warning.
    typo = ballast("simulate", str(scenario), "--set", "loadBalancerSheddingIntervalMinute=3")
    assert typo.returncode == 2
    assert "did you mean loadBalancerSheddingIntervalMinutes?" in typo.stderr
    # the run would carry one strategy's name and another's moves
    mislabelled = ballast(
        "simulate", str(scenario), "--strategy", "threshold",
        "--set", "loadBalancerLoadSheddingStrategy=ballast",
    )  # fmt: skip
    assert mislabelled.returncode == 2
    assert "contradicts the strategy threshold, which sheds with threshold" in mislabelled.stderr
    twice = ballast("simulate", str(scenario), "--compare", "uniform,ballast,uniform")
    assert twice.returncode == 2 and "names uniform more than once" in twice.stderr
    negative = ballast("simulate", str(scenario), "--seed", "-1")
    assert negative.returncode == 2 and "--seed" in negative.stderr
    assert "internal error" not in negative.stderr
    a_file = tmp_path / "a-file"
    a_file.write_text("", encoding="utf-8")
    for out, said in ((a_file, "is a file"), (a_file / "sub", "cannot create --out")):
        unwritable = ballast("simulate", str(scenario), "--out", str(out))
        assert unwritable.returncode == 2 and said in unwritable.stderr
        assert "internal error" not in unwritable.stderr


def test_a_later_strategy_contradicting_set_fails_before_any_run(
    ballast: Run, tmp_path: Path
) -> None:
    """uniform's profile contradicts the --set: found before threshold's run, no --out made."""
    out = tmp_path / "out"
    late = ballast(
        "simulate", str(write(tmp_path)), "--compare", "threshold,uniform",
        "--set", "loadBalancerLoadSheddingStrategy=threshold", "--out", str(out),
    )  # fmt: skip
    assert late.returncode == 2 and "contradicts the strategy uniform" in late.stderr
    assert not out.exists()
    assert late.stdout == ""  # no run printed a row


def test_compare_of_one_strategy_still_writes_the_comparison(ballast: Run, tmp_path: Path) -> None:
    out = tmp_path / "out"
    done = ballast(
        "simulate", str(write(tmp_path)), "--compare", "ballast", "--out", str(out), "--json"
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert [s["strategy"] for s in json.loads((out / "comparison.json").read_text())] == ["ballast"]
    assert (out / "comparison.png").stat().st_size > 0
    assert done.stderr == ""  # off a terminal: no progress bar, not even its blank line


def test_a_failed_write_keeps_the_summaries(ballast: Run, tmp_path: Path) -> None:
    out = tmp_path / "out"
    (out / "threshold").mkdir(parents=True)
    # a link to nowhere passes the checks made before the run and fails the writing after
    (out / "threshold" / "timeline.parquet").symlink_to(tmp_path / "gone" / "timeline.parquet")
    done = ballast(
        "simulate", str(write(tmp_path)), "--strategy", "threshold", "--no-plots", "--out", str(out)
    )
    assert done.returncode == 1, done.stderr
    assert "cannot write to --out" in done.stderr and "internal error" not in done.stderr
    (summary,) = json.loads(done.stdout)
    assert summary["strategy"] == "threshold" and summary["final"]["std"] >= 0


def test_outputs_that_cannot_be_written_are_refused_before_any_run(
    ballast: Run, tmp_path: Path
) -> None:
    """A file where a run's directory goes, or a directory where a file goes, failed the
    writing after the whole simulation (exit 1, part of the outputs written); an empty --out
    wrote into the current directory."""
    scenario = str(write(tmp_path))
    out = tmp_path / "out"
    out.mkdir()
    (out / "threshold").write_text("", encoding="utf-8")
    filed = ballast("simulate", scenario, "--strategy", "threshold", "--out", str(out))
    assert filed.returncode == 2 and filed.stdout == ""  # no run
    assert f"{out / 'threshold'} is a file, not a directory" in filed.stderr
    (out / "threshold").unlink()
    (out / "comparison.json").mkdir()
    comparing = ballast("simulate", scenario, "--compare", "threshold,ballast", "--out", str(out))
    assert comparing.returncode == 2 and comparing.stdout == ""
    assert f"{out / 'comparison.json'} is a directory, not a file" in comparing.stderr
    assert sorted(p.name for p in out.iterdir()) == ["comparison.json"]  # nothing written
    empty = ballast("simulate", scenario, "--out", " ")  # refused before anything is written
    assert empty.returncode == 2 and "--out is empty" in empty.stderr
    for compare, said in (
        ("threshold,,ballast", "has an empty name between its commas"),
        ("all,ballast", "--compare all runs every profile: give it alone"),
    ):
        refused = ballast("simulate", scenario, "--compare", compare)
        assert refused.returncode == 2 and said in refused.stderr, compare


def test_directories_named_like_outputs_this_run_does_not_write_are_left_alone(
    ballast: Run, tmp_path: Path
) -> None:
    """A directory named as the other format's table was "removed" as a stale file, which
    failed the writing after the run (exit 1); a directory where the manifest goes failed
    the same way; a manifest edited into another shape was an internal error."""
    scenario, out = str(write(tmp_path)), tmp_path / "out"
    (out / "threshold" / "timeline.csv").mkdir(parents=True)
    done = ballast("simulate", scenario, "--strategy", "threshold", "--no-plots",
                   "--out", str(out))  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert (out / "threshold" / "timeline.csv").is_dir()
    assert (out / "threshold" / "timeline.parquet").is_file()
    (out / ".ballast-simulate.json").write_text('{"runs": 5}', encoding="utf-8")
    edited = ballast("simulate", scenario, "--strategy", "threshold", "--no-plots",
                     "--out", str(out))  # fmt: skip
    assert edited.returncode == 0, edited.stderr
    (out / ".ballast-simulate.json").unlink()
    (out / ".ballast-simulate.json").mkdir()
    refused = ballast("simulate", scenario, "--strategy", "threshold", "--out", str(out))
    assert refused.returncode == 2 and refused.stdout == ""  # no run
    assert "/.ballast-simulate.json is a directory, not a file" in refused.stderr


def test_a_second_run_into_an_out_in_use_is_refused(ballast: Run, tmp_path: Path) -> None:
    """Two runs writing to one --out at once mixed their files (one's summary beside the
    other's charts); the directory is locked while a run writes there."""
    scenario = str(write(tmp_path))
    out = tmp_path / "out"
    out.mkdir()
    held = hold_exclusive(out)  # as a run under way holds it
    assert held is not None
    try:
        busy = ballast("simulate", scenario, "--out", str(out), "--no-plots")
        assert busy.returncode == 2 and busy.stdout == ""
        assert f"another ballast simulate is writing to --out {out}" in busy.stderr
    finally:
        os.close(held)
    assert list(out.iterdir()) == []  # the lock leaves nothing behind
    free = ballast("simulate", scenario, "--out", str(out), "--no-plots")
    assert free.returncode == 0, free.stderr
    again = hold_exclusive(out)  # released when the command ended
    assert again is not None
    os.close(again)


def test_a_run_written_over_an_earlier_one_leaves_none_of_its_files(
    ballast: Run, tmp_path: Path
) -> None:
    """The CSV tables and chart of a first run stayed beside the second run's Parquet."""
    scenario, out = str(write(tmp_path)), tmp_path / "out"
    first = ballast("simulate", scenario, "--strategy", "threshold", "--format", "csv",
                    "--out", str(out))  # fmt: skip
    assert first.returncode == 0, first.stderr
    assert (out / "threshold" / "loads.png").exists()
    second = ballast("simulate", scenario, "--strategy", "threshold", "--no-plots",
                     "--out", str(out))  # fmt: skip
    assert second.returncode == 0, second.stderr
    assert sorted(p.name for p in (out / "threshold").iterdir()) == [
        "brokers.parquet",
        "cycles.parquet",
        "decisions.parquet",
        "summary.json",
        "timeline.parquet",
    ]


def test_a_run_removes_what_earlier_runs_left_in_out(ballast: Run, tmp_path: Path) -> None:
    """A single run over a comparison kept the comparison files, saying another run's seed,
    and the other strategies' folders; a folder that is not a run's is never touched."""
    scenario, out = str(write(tmp_path)), tmp_path / "out"
    compared = ballast("simulate", scenario, "--compare", "threshold,ballast", "--out", str(out))
    assert compared.returncode == 0, compared.stderr
    assert (out / "comparison.png").exists()
    mine = out / "mine"
    mine.mkdir()
    (mine / "summary.json").write_text("{}", encoding="utf-8")
    (mine / "notes.txt").write_text("keep", encoding="utf-8")
    unplotted = ballast("simulate", scenario, "--compare", "threshold,ballast", "--no-plots",
                        "--out", str(out))  # fmt: skip
    assert unplotted.returncode == 0, unplotted.stderr
    assert sorted(p.name for p in out.iterdir()) == [
        ".ballast-simulate.json", "ballast", "comparison.json", "mine", "threshold",
    ]  # fmt: skip
    kept = out / "threshold-seed-11"  # a copy of a run's folder, under another name
    kept.mkdir()
    for result in (out / "threshold").iterdir():
        (kept / result.name).write_bytes(result.read_bytes())
    single = ballast("simulate", scenario, "--strategy", "ballast", "--seed", "2",
                     "--out", str(out))  # fmt: skip
    assert single.returncode == 0, single.stderr
    assert sorted(p.name for p in out.iterdir() if p.name != ".ballast-simulate.json") == [
        "ballast", "mine", "threshold-seed-11",
    ]  # fmt: skip
    assert sorted(p.name for p in mine.iterdir()) == ["notes.txt", "summary.json"]
    summary = json.loads((out / "ballast" / "summary.json").read_text(encoding="utf-8"))
    assert summary["seed"] == 2


def test_a_broken_link_for_a_run_directory_is_refused_before_the_run(
    ballast: Run, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "threshold").symlink_to(tmp_path / "nowhere")
    done = ballast("simulate", str(write(tmp_path)), "--strategy", "threshold", "--out", str(out))
    assert done.returncode == 2 and done.stdout == ""  # no run
    assert f"{out / 'threshold'} is a broken symbolic link" in done.stderr


def test_duration_cuts_a_run_short(ballast: Run, tmp_path: Path) -> None:
    """--duration replaces the scenario's; the event at 1 min is left out with a note."""
    out = tmp_path / "out"
    done = ballast("simulate", str(write(tmp_path)), "--duration", "1m", "--json", "--no-plots",
                   "--out", str(out))  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "note: --duration 60 s leaves out 1 event(s) at or after it" in done.stderr
    summary = json.loads(done.stdout)
    assert summary["durationS"] == 60 and summary["final"]["brokers"] == 2
    assert pq.read_table(out / "threshold" / "timeline.parquet").num_rows == 4  # 0..60 s by 20
    for bad, said in (("70", "not a whole number of 20 s steps"), ("0", "must be above 0"),
                      ("soon", '"soon" is not a duration')):  # fmt: skip
        refused = ballast("simulate", str(write(tmp_path)), "--duration", bad)
        assert refused.returncode == 2 and "error: --duration: " in refused.stderr, bad
        assert said in refused.stderr, refused.stderr


def test_a_run_labelled_by_its_settings_is_not_named_for_a_profile_it_is_not(
    ballast: Run, tmp_path: Path
) -> None:
    """ballast's shedding with the default placement was labelled "ballast", like the
    profile, with other figures on the same seed."""
    scenario = str(write(tmp_path))
    shedding_only = ballast("simulate", scenario, "--json", "--no-plots",
                            "--set", "loadBalancerLoadSheddingStrategy=ballast")  # fmt: skip
    assert shedding_only.returncode == 0, shedding_only.stderr
    assert json.loads(shedding_only.stdout)["strategy"] == "ballast+least_long_term_message_rate"
    profiled = ballast("simulate", scenario, "--json", "--no-plots",
                       "--set", "loadBalancerLoadSheddingStrategy=ballast",
                       "--set", "loadBalancerLoadPlacementStrategy=ballast",
                       "--set", "loadBalancerDistributeBundlesEvenlyEnabled=false")  # fmt: skip
    assert json.loads(profiled.stdout)["strategy"] == "ballast"
    evenly = ballast("simulate", scenario, "--json", "--no-plots", "--strategy", "ballast",
                     "--set", "loadBalancerDistributeBundlesEvenlyEnabled=true")  # fmt: skip
    assert json.loads(evenly.stdout)["strategy"] == "ballast+evenly"
    # nor is a profile given by name whose placement --set replaces
    other_placement = "loadBalancerLoadPlacementStrategy=least_resource_usage_with_weight"
    placed = ballast("simulate", scenario, "--json", "--no-plots", "--strategy", "threshold",
                     "--set", other_placement)  # fmt: skip
    assert placed.returncode == 0, placed.stderr
    assert json.loads(placed.stdout)["strategy"] == "threshold+least_resource_usage_with_weight"


def test_a_setting_that_does_nothing_is_warned_about(ballast: Run, tmp_path: Path) -> None:
    """The memory weight is ignored, as in Pulsar 3.0 on: a run that sets it says so."""
    done = ballast("simulate", str(write(tmp_path)), "--duration", "20", "--json",
                   "--set", "loadBalancerMemoryResourceWeight=1")  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "warning: loadBalancerMemoryResourceWeight is deprecated: ignored" in done.stderr


def test_loads_that_overflow_fail_the_run(ballast: Run, tmp_path: Path) -> None:
    """A factor of 1e308 made infinite loads: NaN and Infinity in summary.json, exit 0. Such a
    number is refused now; factors that compound past a double's range fail the run."""
    huge = tmp_path / "huge.toml"
    huge.write_text(
        TINY.replace("add_brokers = 1", "scale_rates = { factor = 1e308 }"), encoding="utf-8"
    )
    refused = ballast("simulate", str(huge), "--no-plots")
    assert refused.returncode == 2
    assert "events[0].scale_rates.factor: must be at most 1e+15" in refused.stderr
    compounding = "\n".join(
        f"[[events]]\nat = {10 + i}\nscale_rates = {{ factor = 1e15 }}" for i in range(25)
    )
    scenario = tmp_path / "compounding.toml"
    scenario.write_text(TINY.split("[[events]]", maxsplit=1)[0] + compounding, encoding="utf-8")
    done = ballast("simulate", str(scenario), "--no-plots", "--out", str(tmp_path / "out"))
    assert done.returncode == 1, done.stderr
    assert "loads at 40 s are not finite numbers" in done.stderr
    assert "RuntimeWarning" not in done.stderr
    assert not (tmp_path / "out" / "threshold").exists()


def test_an_interrupted_run_says_so(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from ballast.cli import simulate as command

    def interrupted(*_args: object, **_kwargs: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(command, "simulate", interrupted)
    try:
        command.simulate_command(str(write(tmp_path)), plots=False)
    except KeyboardInterrupt:  # escaping, it would stop the test session itself
        pytest.fail("the interrupt escaped as a traceback")
    except typer.Exit as stopped:
        assert stopped.exit_code == 130
    else:
        pytest.fail("an interrupted run exited normally")
    assert capsys.readouterr().err == (
        "error: interrupted before the runs ended: nothing written of the results\n"
    )


def test_library_names_resolve_from_any_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    assert find_scenario("hot-broker") == CHECKOUT_LIBRARY / "hot-broker.toml"
    assert find_scenario("hot-broker.toml") == CHECKOUT_LIBRARY / "hot-broker.toml"
    for given, said in (("", "the scenario is empty"), (".", "is a directory, not a")):
        with pytest.raises(typer.Exit):
            find_scenario(given)
        assert said in capsys.readouterr().err
    (tmp_path / "scenarios").mkdir()
    local = tmp_path / "scenarios" / "hot-broker.toml"
    local.write_text('duration = "1m"\n', encoding="utf-8")
    assert find_scenario("hot-broker").resolve() == local  # the current directory comes first
    with pytest.raises(typer.Exit):
        find_scenario("no-such-scenario")
    assert "scale-up-5-to-10" in capsys.readouterr().err


def test_the_table_is_whole_when_piped(ballast: Run, tmp_path: Path) -> None:
    done = ballast(
        "simulate", str(write(tmp_path)), "--compare", "threshold,transfer", "--no-plots",
        "--out", str(tmp_path / "out"),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    header = next(line for line in done.stdout.splitlines() if "strategy" in line)
    for column in ("final std", "max/bound", "converged", "unowned topic-s", "lookups"):
        assert column in header
    assert "threshold" in done.stdout and "transfer" in done.stdout


def test_a_copied_cluster_is_simulated(ballast: Run, tmp_path: Path) -> None:
    example = Path(__file__).resolve().parents[2] / "examples" / "cluster-snapshot.json"
    scenario = tmp_path / "copied.toml"
    scenario.write_text(
        f'duration = "3m"\nstep = "15s"\n[copy]\nsource = "{example}"\n', encoding="utf-8"
    )
    done = ballast("simulate", str(scenario), "--strategy", "ballast", "--json")
    assert done.returncode == 0, done.stderr
    assert f"note: copied 7 bundles on 3 brokers from {example}" in done.stderr
    summary = json.loads(done.stdout)  # one strategy: one summary
    assert summary["final"]["brokers"] == 3
    assert summary["notes"] == [f"copied 7 bundles on 3 brokers from {example}"]
    assert summary["lookups"]["clientFailures"] == 0
    missing = tmp_path / "missing.toml"
    missing.write_text('duration = "1m"\n[copy]\nsource = "nowhere.json"\n', encoding="utf-8")
    bad = ballast("simulate", str(missing))
    assert bad.returncode == 2 and "copy.source:" in bad.stderr and "nowhere.json" in bad.stderr


def test_a_simulated_leader_writes_a_history_that_replays(ballast: Run, tmp_path: Path) -> None:
    """With loadBalancerHistoryPath the simulated leader keeps the load history a running
    cluster keeps: the same seed writes the same files, compared runs keep theirs apart, and
    the history replays as another scenario's [copy] source."""
    scenario = write(tmp_path)
    histories = [tmp_path / "h1", tmp_path / "h2"]
    for history in histories:
        done = ballast(
            "simulate", str(scenario), "--strategy", "threshold", "--no-plots",
            "--set", f"loadBalancerHistoryPath={history}",
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
    files = [sorted(p.relative_to(h) for p in h.rglob("*.parquet")) for h in histories]
    assert files[0] == files[1] and any(p.parts[0] == "bundles" for p in files[0])
    for relative in files[0]:
        assert (histories[0] / relative).read_bytes() == (histories[1] / relative).read_bytes()
    compared = tmp_path / "compared"
    done = ballast(
        "simulate", str(scenario), "--compare", "threshold,ballast", "--no-plots",
        "--set", f"loadBalancerHistoryPath={compared}",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in compared.iterdir()) == ["ballast", "threshold"]
    replay = tmp_path / "replay.toml"
    replay.write_text(
        f'duration = "4m"\nstep = "20s"\n[copy]\nsource = "{histories[0]}"\n', encoding="utf-8"
    )
    done = ballast("simulate", str(replay), "--strategy", "ballast", "--no-plots")
    assert done.returncode == 0, done.stderr
    assert "note: replaying 4 snapshots of cluster standalone" in done.stderr
    unwritable = tmp_path / "a-file"
    unwritable.write_text("", encoding="utf-8")
    bad = ballast("simulate", str(scenario), "--set", f"loadBalancerHistoryPath={unwritable / 'h'}")
    assert bad.returncode == 2 and "loadBalancerHistoryPath" in bad.stderr


def test_a_run_that_ends_without_brokers_says_so(ballast: Run, tmp_path: Path) -> None:
    scenario = tmp_path / "all-stop.toml"
    scenario.write_text(
        TINY.replace("add_brokers = 1", "stop_brokers = 2").replace(
            "moves_max = 1000", "final_std_max = 0.05"
        ),
        encoding="utf-8",
    )
    out = tmp_path / "out"
    done = ballast(
        "simulate", str(scenario), "--no-plots", "--check-expectations", "--out", str(out)
    )  # fmt: skip
    assert done.returncode == 1
    assert "final_std_max (finalStdMax): expected at most 0.05, got no brokers" in done.stderr
    assert "no brokers" in done.stdout  # the table's final std, not a perfect 0.000
    summary = json.loads((out / "threshold" / "summary.json").read_text(encoding="utf-8"))
    assert summary["final"]["brokers"] == 0
    assert summary["final"]["std"] is None and summary["final"]["ratio"] is None
    assert summary["convergenceS"] is None  # an empty cluster is not a balanced one
    # nor in the timeline: figures an empty cluster has not are null there, not 0 and 1
    timeline = pq.read_table(out / "threshold" / "timeline.parquet").to_pylist()
    empty = [row for row in timeline if row["brokers"] == 0]
    assert empty and all(row["std"] is None and row["ratio"] is None for row in empty)
    assert all(row["std"] is not None for row in timeline if row["brokers"] > 0)
    # without --check-expectations the miss is told all the same, and the exit is 0
    told = ballast("simulate", str(scenario), "--no-plots")
    assert told.returncode == 0
    assert "final_std_max (finalStdMax): expected at most 0.05, got no brokers" in told.stderr


def test_brokers_without_load_are_not_said_to_be_no_brokers(ballast: Run, tmp_path: Path) -> None:
    """The mean std-dev after the last event has no value when no broker carried load; the
    table said "no brokers" of a cluster running two."""
    idle = tmp_path / "idle.toml"
    idle.write_text('duration = "1m"\nstep = "20s"\n[cluster]\nbrokers = 2\n', "utf-8")
    done = ballast("simulate", str(idle), "--strategy", "threshold")
    assert done.returncode == 0, done.stderr
    assert "no load" in done.stdout and "no brokers" not in done.stdout


def test_a_scenarios_strategy_setting_the_strategy_replaces_is_warned_about(
    ballast: Run, tmp_path: Path
) -> None:
    """The run is the strategy's, silently, where the same contradiction given by --set is
    an error: a scenario written for one strategy and run with another says so."""
    scenario = tmp_path / "mine.toml"
    scenario.write_text(
        TINY + '\n[settings]\nloadBalancerLoadSheddingStrategy = "ballast"\n', "utf-8"
    )
    done = ballast("simulate", str(scenario), "--compare", "threshold,ballast", "--no-plots")
    assert done.returncode == 0, done.stderr
    assert done.stderr.count("warning:") == 1
    assert (
        "warning: the scenario's loadBalancerLoadSheddingStrategy=ballast is replaced by the "
        "strategy threshold's threshold"
    ) in done.stderr
