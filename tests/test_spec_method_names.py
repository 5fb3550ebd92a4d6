"""vLLM 0.33's deprecated method names of mtp (MTPModelTypes but "mtp", config/speculative.py):
SpeculativeConfig rewrites each to mtp with a warning, whatever the target, before it reads
anything else; the draft is then the target's own module (recorded beside a tiny DeepSeek-V3:
tests/data/weights_census/drafts2/method_names.json, every name kept as mtp and drafting with
DeepSeekMTPModel). Before, kvcli refused every one ("is vLLM's deprecated name of mtp: give
mtp"); now it takes each as mtp and says vLLM's warning on stderr."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kvcli.app import app
from kvcore.engine.spec_config import check_method, speculative_settings

DATA = Path(__file__).parent / "data"
RECORD = json.loads((DATA / "weights_census" / "drafts2" / "method_names.json").read_text())
NAMES = sorted(n for n in RECORD["names"] if n != "mtp")


def test_the_record_holds_27_deprecated_names_each_kept_as_mtp() -> None:
    assert len(NAMES) == 27
    assert RECORD["names"]["mtp"] == {"method": "mtp", "warnings": [],
                                      "draft_architectures": ["DeepSeekMTPModel"]}


@pytest.mark.parametrize("name", NAMES)
def test_a_deprecated_name_is_mtp_with_vllms_warning(name: str) -> None:
    rec = RECORD["names"][name]
    assert (rec["method"], rec["draft_architectures"]) == ("mtp", ["DeepSeekMTPModel"])
    said: list[str] = []
    got = speculative_settings(json.dumps({"method": name, "num_speculative_tokens": 2}),
                               warn=said.append)
    assert got == {"spec_method": "mtp", "num_speculative_tokens": 2}
    assert said == rec["warnings"] == [f"method `{name}` is deprecated and replaced with mtp."]
    said.clear()
    assert check_method(name, "spec_method", said.append) == "mtp"
    assert said == rec["warnings"]


def _steady(summary: str) -> list[str]:
    """The summary's lines but its wall time (the machine's)."""
    return [line for line in summary.splitlines() if "wall time" not in line]


def test_the_cli_replays_a_deprecated_name_as_mtp() -> None:
    """The same replay as with mtp, vLLM's warning first on stderr (flag and JSON)."""
    trace = str(DATA / "sched_spec_mtp" / "aseed90106.trace.jsonl")
    runner = CliRunner()
    plain = runner.invoke(app, ["replay", trace, "--spec-method", "mtp"])
    assert plain.exit_code == 0
    for args in (["--spec-method", "deepseek_mtp"],
                 ["--speculative-config", '{"method": "ernie_mtp", "num_speculative_tokens": 3}',
                  "--spec-acceptance-rate", "0.9"]):
        r = runner.invoke(app, ["replay", trace, *args])
        assert r.exit_code == 0, r.stderr
        assert _steady(r.stdout) == _steady(plain.stdout)
        first = r.stderr.splitlines()[0]
        assert first.startswith("warning: method `") and first.endswith(
            "` is deprecated and replaced with mtp.")


def _renamed_trace(tmp_path: Path, name: str) -> Path:
    """aseed90106's trace with its config line naming `name` for mtp."""
    lines = (DATA / "sched_spec_mtp" / "aseed90106.trace.jsonl").read_text().splitlines()
    head = json.loads(lines[0])
    head["config"]["spec_method"] = name
    trace = tmp_path / "t.jsonl"
    trace.write_text("\n".join([json.dumps(head), *lines[1:]]) + "\n")
    return trace


def test_a_trace_config_line_naming_one_is_mtp_with_vllms_warning(tmp_path: Path) -> None:
    """The config line is taken as the flags are (it was refused, "give mtp"): the same replay
    as with mtp, vLLM's warning first on stderr and in the summary's warnings."""
    trace = str(DATA / "sched_spec_mtp" / "aseed90106.trace.jsonl")
    plain = CliRunner().invoke(app, ["replay", trace, "--json"])
    renamed = str(_renamed_trace(tmp_path, "deepseek_mtp"))
    r = CliRunner().invoke(app, ["replay", renamed, "--json"])
    assert r.exit_code == 0, r.stderr
    said = "method `deepseek_mtp` is deprecated and replaced with mtp."
    assert r.stderr.splitlines()[0] == f"warning: {said}"
    ours, theirs = json.loads(r.stdout), json.loads(plain.stdout)
    assert [w.replace(renamed, trace) for w in ours["warnings"]] == [said, *theirs["warnings"]]
    assert ours["config"]["spec_method"] == "mtp"
    steady = ("trace", "warnings", "wall_time_s")
    assert {k: v for k, v in ours.items() if k not in steady} == {
        k: v for k, v in theirs.items() if k not in steady}


def test_a_sweeps_grid_naming_one_is_mtp_with_vllms_warning(tmp_path: Path) -> None:
    """A sweep's grid (it was refused before any job ran, "give mtp") runs each job as mtp;
    vLLM's warning said once for the jobs that gave it, on stderr."""
    trace = DATA / "sched_spec_mtp" / "aseed90106.trace.jsonl"
    results = tmp_path / "r.jsonl"
    r = CliRunner().invoke(app, ["sweep", "--trace", str(trace), "--set",
                                 "spec_method=mtp,step3p5_mtp", "--results", str(results)])
    assert r.exit_code == 0, r.stderr
    assert ("warning: job 1: method `step3p5_mtp` is deprecated and replaced with mtp."
            in r.stderr.splitlines())
    # (rows land as jobs finish: two workers may finish job 1 first)
    rows = sorted((json.loads(x) for x in results.read_text().splitlines()),
                  key=lambda row: row["index"])
    assert [row["config"]["spec_method"] for row in rows] == ["mtp", "step3p5_mtp"]
    a, b = (row["result"] for row in rows)
    assert (a["steps"], a["evictions"], a["hit_tokens"]) == (b["steps"], b["evictions"],
                                                            b["hit_tokens"])


def test_every_entry_point_asks_one_function() -> None:
    """`mtp_rename` decides it: the flags' and the JSON's `check_method`, `options.resolve` for a
    config line or a grid (mtp itself and an unknown name are not renamed)."""
    from kvcore.engine.options import ReplayOptions, resolve
    from kvcore.engine.spec_config import mtp_rename

    assert mtp_rename("mtp") is None and mtp_rename("deepseek") is None
    assert mtp_rename("glm5_next_mtp") == "method `glm5_next_mtp` is deprecated and replaced " \
        "with mtp."
    got = resolve(ReplayOptions(), {"spec_method": "ernie_mtp", "num_speculative_tokens": 1})
    assert (got.spec_method, got.spec_method_renamed) == ("mtp", "ernie_mtp")
    assert "spec_method_renamed" not in got.to_dict()
    kept = resolve(ReplayOptions(), {"spec_method": "medusa"})
    assert (kept.spec_method, kept.spec_method_renamed) == ("medusa", None)


@pytest.mark.parametrize("args", [
    ["--spec-method", "deepseek_mtp", "--spec-tokens", "2"],
    ["--speculative-config", '{"method": "deepseek_mtp", "num_speculative_tokens": 2}']])
def test_kvcli_config_sizes_it_as_mtp_with_vllms_warning_first(args: list[str]) -> None:
    """`kvcli config` took the name silently (its JSON reader was told no warn): vLLM's
    warning now first, before the module's reuse warning, as vLLM logs them; the same pool."""
    base = ["config", "deepseek-v3", "--gpu-memory-gib", "141", "--tp", "8", "--json"]
    plain = CliRunner().invoke(app, [*base, "--spec-method", "mtp", "--spec-tokens", "2"])
    r = CliRunner().invoke(app, [*base, *args])
    assert r.exit_code == 0, r.stderr
    ours, theirs = json.loads(r.stdout), json.loads(plain.stdout)
    said = "method `deepseek_mtp` is deprecated and replaced with mtp."
    assert ours["warnings"] == [said, *theirs["warnings"]]
    assert ours["warnings"][1].startswith("Enabling num_speculative_tokens > 1")
    assert r.stderr.splitlines()[0] == f"warning: {said}"
    assert (ours["num_blocks"], ours["draft"]) == (theirs["num_blocks"], theirs["draft"])


def test_a_sweep_spec_files_grid_naming_one_runs_as_mtp(tmp_path: Path) -> None:
    """The grid of a sweep's TOML file, as the --set form: each job run as mtp, the warning
    said for the job that gave it."""
    trace = DATA / "sched_spec_mtp" / "aseed90106.trace.jsonl"
    spec = tmp_path / "s.toml"
    spec.write_text(f'command = "replay"\ntraces = ["{trace}"]\n[grid]\n'
                    'spec_method = ["ernie_mtp", "mtp"]\n')
    r = CliRunner().invoke(app, ["sweep", str(spec)])
    assert r.exit_code == 0, r.stderr
    assert ("warning: job 0: method `ernie_mtp` is deprecated and replaced with mtp."
            in r.stderr.splitlines())
