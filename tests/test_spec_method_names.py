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


def test_a_trace_config_line_naming_one_is_refused_asking_for_mtp(tmp_path: Path) -> None:
    """A trace's config line is kvcli's record of the settings, not vLLM's flags: a deprecated
    name there is refused in one line naming the file, the line and the field."""
    lines = (DATA / "sched_spec_mtp" / "aseed90106.trace.jsonl").read_text().splitlines()
    head = json.loads(lines[0])
    head["config"]["spec_method"] = "deepseek_mtp"
    trace = tmp_path / "t.jsonl"
    trace.write_text("\n".join([json.dumps(head), *lines[1:]]) + "\n")
    r = CliRunner().invoke(app, ["replay", str(trace)])
    assert r.exit_code == 2
    assert r.stderr.strip() == (
        f"error: {trace}:1: field 'config.spec_method': deepseek_mtp is vLLM's deprecated name "
        "of mtp, which vLLM rewrites to mtp with a warning: give mtp")
