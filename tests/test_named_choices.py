"""A refusal of a bad choice names all the choices when they are few (8 or fewer), else the
closest to what was given and where to see them all, on one line (`kvcore.named_choices`)."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from kvcli.app import app
from kvcore.named_choices import named_choices

runner = CliRunner()
TRACE = "tests/data/traces/generated/vllm_prefix_repetition_default_bs16.jsonl"
NINE = [f"c{i}" for i in range(9)]


def test_eight_are_listed_whole_and_nine_are_not() -> None:
    assert named_choices("x", NINE[:8], "kinds", "S") == "kinds: c0, c1, c2, c3, c4, c5, c6, c7"
    assert named_choices("zzz", NINE, "kinds", "S") == "see S for the 9 kinds"
    # difflib's best at 0.6 (c0 is 0.5 like c1), what was given lower-cased
    assert named_choices("C1", NINE, "kinds", "S") == "closest kinds: c1; see S for all 9"
    # near misses said already by the caller: none named again
    assert named_choices("c1", NINE, "kinds", "S", close=()) == "see S for the 9 kinds"
    assert named_choices(["c1"], NINE, "kinds", "S") == "see S for the 9 kinds"


@pytest.mark.parametrize(("args", "line"), [
    (["config", "lama-3.1-8b"],
     ("error: argument MODEL: unknown model 'lama-3.1-8b'; closest presets: llama-3.1-8b, "
     "llama-3.1-70b; see kvcli config --list for all 13 (or give a HF config.json as "
     "model_config, or the layers, kv_heads and head_dim)")),
    (["config", "llama-3.1-8b", "--gpu", "h100-sx", "--gpu-memory-gib", "80"],
     ("error: option --gpu: unknown GPU 'h100-sx'; closest presets: h100-sxm, h100-nvl, "
     "h100-pcie; see kvcli clock gpus for all 9")),
    (["cluster", TRACE, "--router", "bogus"],
     ("error: option --router: unknown router 'bogus'; see kvcli cluster --list-routers for the "
     "11 routers")),
    (["config", "llama-3.1-8b", "--kv-cache-dtype", "fp9"],
     ("error: option --kv-cache-dtype: unknown dtype 'fp9'; closest dtypes: fp8; see "
     "--kv-cache-dtype in kvcli config -h for all 13")),
    # (vLLM's 8 model dtypes and kvcli's spellings: listed whole)
    (["config", "llama-3.1-8b", "--dtype", "int8"],
     ("error: option --dtype: unknown dtype 'int8'; dtypes: bf16, bfloat16, float, float16, "
     "float32, fp16, fp32, half")),
])
def test_long_lists_name_the_closest_and_where_all_are(args: list[str], line: str) -> None:
    r = runner.invoke(app, args)
    assert r.exit_code == 2 and r.stdout == "", r.output
    assert r.stderr.strip() == line


def test_a_sweeps_metrics_name_the_closest(tmp_path) -> None:
    results = tmp_path / "r.jsonl"
    results.write_text("")
    r = runner.invoke(app, ["sweep", "report", str(results), "--metrics", "hitrate"])
    assert r.exit_code == 2, r.output
    assert r.stderr.strip() == ("error: option --metrics: unknown metric 'hitrate'; closest "
                                "metrics: hit_rate; see docs/sweep.md for all 14")
