"""A sixth hostile campaign: random command lines (a command, a few options with drawn values,
small random traces with a drawn config line), each finding minimised to one command. Each
refusal is one line naming the option, or the trace's file:line and field, exit code 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_hostile_options import refused

ROOT = Path(__file__).resolve().parents[1]
SP = ROOT / "traces" / "shared-prefix.jsonl"


# -- a CPU tier of 10**17 chunks failed gib_of_chunks' assert (the float lost the count): a
# traceback; 10**18 was refused as 'option --kv-offloading-size', an option not given, even
# from a trace's config line ------------------------------------------------------------------

@pytest.mark.parametrize("n", [10**17 + 1, 2**63 - 1])
def test_a_cpu_tier_of_too_many_chunks_names_its_option(n):
    refused(["replay", str(SP), "--kv-offloading-size-chunks", str(n)],
            f"error: option --kv-offloading-size-chunks: {n:,} chunks of 2,097,152 bytes are "
            f"{n * 2097152 / 2**30:.6g} GiB, more than the limit of 1,048,576 GiB (1 PiB)")


def test_a_cpu_tier_of_too_many_chunks_on_the_config_line_names_its_line(tmp_path):
    trace = tmp_path / "t.jsonl"
    trace.write_text(json.dumps({"config": {"kv_offloading_size_chunks": 10**18}}) + "\n"
                     + SP.read_text().splitlines()[0] + "\n")
    refused(["replay", str(trace)],
            f"error: {trace}:1: field 'config.kv_offloading_size_chunks': "
            "1,000,000,000,000,000,000 chunks of 2,097,152 bytes are 1.95312e+15 GiB, more "
            "than the limit of 1,048,576 GiB (1 PiB)")


def test_a_cpu_tier_at_the_limit_replays():
    from typer.testing import CliRunner

    from kvcli.app import app

    res = CliRunner().invoke(app, ["replay", str(SP), "--kv-offloading-size-chunks",
                                   str(2**29), "--json"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["config"]["kv_offloading_size_chunks"] == 2**29


# -- `kvcli curve` read a config line's block size and its unmodelled keys, and let the rest
# through unchecked: an unknown key, enable_prefix_caching "no" (read as on), eviction_policy
# "bogus" ran to a curve, exit 0, where `kvcli replay` of the same trace refused them ---------

@pytest.mark.parametrize("config, said", [
    ({"bogus": 1}, "field 'config': unknown key(s) ['bogus']"),
    ({"enable_prefix_caching": "no"},
     "field 'config.enable_prefix_caching': must be true or false, got 'no'"),
    ({"eviction_policy": "bogus"},
     "field 'config.eviction_policy': must be lru or arc, got 'bogus'"),
    ({"prefix_caching_hash_algo": "md5"},
     "field 'config.prefix_caching_hash_algo': unknown hash 'md5'"),
])
@pytest.mark.parametrize("command", ["curve", "replay"])
def test_a_config_line_value_the_replay_refuses_the_curve_refuses(tmp_path, config, said,
                                                                   command):
    trace = tmp_path / "t.jsonl"
    trace.write_text(json.dumps({"config": config}) + "\n"
                     + "\n".join(SP.read_text().splitlines()[:2]) + "\n")
    refused([command, str(trace)], f"error: {trace}:1: {said}")


# -- a folder option given - : `--plot -` made a folder named '-' in the current folder and wrote
# the charts there, exit 0, where - means stdin or stdout everywhere else ---------------------

@pytest.mark.parametrize("args, flag", [
    (["curve", str(SP), "--plot", "-"], "--plot"),
    (["stats", str(SP), "--plot", "-"], "--plot"),
    (["cluster", str(SP), "--plot", "-"], "--plot"),
    (["cluster", str(SP), "--events", "-"], "--events"),
    (["sweep", "--trace", str(SP), "--set", "num_blocks=300,400", "--results", "r.jsonl",
      "--plot", "-"], "--plot"),
])
def test_a_folder_option_refuses_dash(tmp_path, monkeypatch, args, flag):
    monkeypatch.chdir(tmp_path)
    refused(args, f"error: option {flag}: takes a folder, not - (stdout): it writes files in "
                  "it (./- names a folder called -)")
    assert list(tmp_path.iterdir()) == []
