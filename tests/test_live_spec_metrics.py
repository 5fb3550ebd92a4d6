"""Speculative decoding's metrics (docs/live.md): vLLM 0.33's `SpecDecodingProm` counters,
registered only with a speculative config, ending at the summary's `spec_decode`."""

from __future__ import annotations

import json
from pathlib import Path

from test_live_metrics import E, snapshots, value
from typer.testing import CliRunner

from kvcli.app import app
from kvcore.live.metric_defs import SPEC_METRICS

TRACE = str(Path(__file__).resolve().parents[1] / "traces" / "shared-prefix.jsonl")
runner = CliRunner()

# vllm/v1/spec_decode/metrics.py (SpecDecodingProm), with a speculative config only
VLLM_SPEC = {
    "vllm:spec_decode_num_drafts": ("counter", E),
    "vllm:spec_decode_num_draft_tokens": ("counter", E),
    "vllm:spec_decode_num_accepted_tokens": ("counter", E),
    "vllm:spec_decode_num_accepted_tokens_per_pos": ("counter", E + ["position"]),
}


def test_definitions_are_vllms():
    assert {n: (k, ["model_name", "engine", *x]) for n, k, _, x, _ in SPEC_METRICS} == VLLM_SPEC


def test_spec_decode_counters_end_at_the_summary(tmp_path):
    out = tmp_path / "m.prom"
    r = runner.invoke(app, ["replay", TRACE, "--num-blocks", "96", "--metrics", str(out),
                            "--speculative-config",
                            '{"method": "ngram", "num_speculative_tokens": 3}',
                            "--spec-acceptance-rate", "0.6", "--json"])
    assert r.exit_code == 0, r.output
    sd = json.loads(r.stdout)["spec_decode"]
    snaps = snapshots(out.read_text())
    first, last = snaps[0][1], snaps[-1][1]
    names = [n for n in first if not n.endswith("_created")]     # (prometheus_client's)
    assert names[:4] == list(VLLM_SPEC)                 # registered first, as vLLM's
    for name, key in (("vllm:spec_decode_num_drafts", "num_drafts"),
                      ("vllm:spec_decode_num_draft_tokens", "num_draft_tokens"),
                      ("vllm:spec_decode_num_accepted_tokens", "num_accepted_tokens")):
        assert value(last[name], name + "_total") == sd[key] > value(first[name], name + "_total")
    per_pos = last["vllm:spec_decode_num_accepted_tokens_per_pos"]
    assert [value(per_pos, "vllm:spec_decode_num_accepted_tokens_per_pos_total", position=str(i))
            for i in range(3)] == sd["accepted_per_position"]
    plain = tmp_path / "p.prom"
    runner.invoke(app, ["replay", TRACE, "--num-blocks", "96", "--metrics", str(plain)])
    assert "spec_decode" not in plain.read_text()      # none without a speculative config
