"""The attention-free Mamba models (MambaForCausalLM, FalconMambaForCausalLM, Mamba2ForCausalLM)
= what vLLM 0.33.0's start-up derives for them.

tests/data/mamba_only/start.json was recorded from the real vLLM on the CPU
(tests/data/mamba_only/record_start.py: `ModelConfig`, `VllmConfig` with its MambaModelConfig
hook, the layer class's `get_kv_cache_spec`, `get_kv_cache_groups` and planning over 4 GiB,
the block size EngineCore sets, `resolve_kv_cache_block_sizes`) for a tiny and a real-size
config of each, prefix caching off (vLLM's default for an attention-free model) and on, at
max_model_len 8192. Before, kvcli refused the three architectures by name.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kvcore.kv_cache_manager import KVCacheManager
from kvcore.models.hf_config import load_hf_config, read_hf_config
from kvcore.sizing import (
    blocks_per_request,
    estimate_max_model_len_from_groups,
    kv_cache_config_from_groups,
    kv_cache_tokens,
    max_concurrency,
    resolve_kv_cache_config,
)
from kvcore.sizing.config import bytes_per_block

DATA = Path(__file__).resolve().parent / "data" / "mamba_only"
START = json.loads((DATA / "start.json").read_text())
CASES = START["cases"]
MODES = [pytest.param(c, m, id=f"{c['name']}-{m}") for c in CASES for m in ("off", "on")]


def _config(name: str) -> str:
    return str(DATA / f"{name}.config.json")


@pytest.mark.parametrize(("case", "mode"), MODES)
def test_groups_specs_and_pool_equal_vllms(case: dict, mode: str) -> None:
    want = case["modes"][mode]
    r = resolve_kv_cache_config(model_config=_config(case["name"]), max_model_len=8192,
                                num_blocks=1000, enable_prefix_caching=mode == "on")
    assert r.ctx.mamba_cache_mode == want["mamba_cache_mode"]
    groups = list(r.config.kv_cache_groups)
    assert [{"block_size": g.kv_cache_spec.block_size, "num_layers": len(g.layer_names)}
            for g in groups] == want["groups"]
    spec, ws = groups[0].kv_cache_spec, want["spec"]
    assert ([list(s) for s in spec.shapes], [f"torch.{d}" for d in spec.dtypes],
            spec.page_size_bytes, spec.num_prefill_checkpoint_blocks,
            spec.prefill_checkpoint_alignment, blocks_per_request(spec, r.ctx)) == (
        ws["shapes"], ws["dtypes"], ws["page_size_bytes"], ws["num_prefill_checkpoint_blocks"],
        ws["prefill_checkpoint_alignment"], ws["max_memory_usage_pages"])
    assert spec.mamba_type == ws["mamba_type"].rsplit(".", 1)[1].lower()
    kvm = KVCacheManager(r.config, 8192, enable_caching=mode == "on")
    assert (kvm.scheduler_block_size, kvm.hash_block_size) == (
        want["scheduler_block_size"], want["hash_block_size"])
    # vLLM's planning of the same layers over the same bytes
    available = want["available_bytes"]
    cfg = kv_cache_config_from_groups(groups, available)
    assert cfg.num_blocks == want["num_blocks"]
    assert max_concurrency(groups, cfg.num_blocks, r.ctx) == want["max_concurrency"]
    assert kv_cache_tokens(groups, cfg.num_blocks, r.ctx) == want["kv_cache_tokens"]
    assert estimate_max_model_len_from_groups(
        groups, r.ctx, available - bytes_per_block(groups)) == want["max_model_len_fits"]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c["name"])
def test_vllms_defaults_for_an_attention_free_model(case: dict) -> None:
    """Prefix caching off unless asked for ("none" mode: one block of max_model_len a
    request), and 2,048 tokens for a config with no length key."""
    assert (case["is_attention_free"], case["prefix_caching_by_default"],
            case["default_max_model_len"]) == (True, False, 2048)
    r = resolve_kv_cache_config(model_config=_config(case["name"]), num_blocks=1000,
                                enable_prefix_caching=None)
    assert (r.enable_prefix_caching, r.ctx.mamba_cache_mode, r.ctx.max_model_len) == (
        False, "none", 2048)
    assert r.config.kv_cache_groups[0].kv_cache_spec.block_size == 2048
    assert read_hf_config(load_hf_config(_config(case["name"]))).dtype == \
        case["dtype"].removeprefix("torch.")


def test_the_recorded_answers_spelled_out() -> None:
    """Codestral-style Mamba2 (64 layers of 2,158,592 B): 31 blocks in 4 GiB, one a request
    with caching off, three on (two states and the prefill checkpoint); Mamba-1 two."""
    got = {c["name"]: (c["modes"]["on"]["spec"]["page_size_bytes"], c["modes"]["on"]["num_blocks"],
                       c["modes"]["off"]["spec"]["max_memory_usage_pages"],
                       c["modes"]["on"]["spec"]["max_memory_usage_pages"]) for c in CASES}
    assert got == {"tiny-mamba1": (2816, 508400, 1, 2),
                   "tiny-falcon-mamba": (7296, 294337, 1, 2),
                   "tiny-mamba2": (5248, 272800, 1, 3),
                   "mamba-130m-style": (58368, 3066, 1, 2),
                   "falcon-mamba-7b-style": (311296, 215, 1, 2),
                   "mamba-codestral-7b-style": (2158592, 31, 1, 3)}


@pytest.mark.parametrize(("change", "field", "said"), [
    ({"num_heads": 4}, "num_heads", ("hidden_size x expand (128) must equal num_heads x "
                                     "head_dim (64), as transformers' Mamba2Config requires")),
    ({"expand": "2"}, "expand", "expected a positive number, got '2'"),
    ({"state_size": 0}, "state_size", "expected an integer >= 1, got 0"),
    ({"num_hidden_layers": 200_000}, "num_hidden_layers", "<= 100,000"),
    ({"quantization_config": {"quant_method": "fp8"}}, "quantization_config",
     "a quantised mamba2 checkpoint is not modelled"),
])
def test_a_bad_config_is_one_line_naming_the_file_and_key(tmp_path, change, field, said):
    from typer.testing import CliRunner

    from kvcli.app import app

    path = tmp_path / "config.json"
    path.write_text(json.dumps({**load_hf_config(_config("tiny-mamba2")), **change}))
    res = CliRunner().invoke(app, ["config", "--model-config", str(path), "--num-blocks", "10"])
    assert res.exit_code == 2, (res.output, res.exception)
    assert res.stdout == ""
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in res.stderr, res.stderr
    assert lines[0].startswith(f"error: {path}: field '{field}': "), lines[0]
    assert said in lines[0], lines[0]


def test_config_says_any_length_fits_where_the_model_sets_no_limit() -> None:
    from typer.testing import CliRunner

    from kvcli.app import app
    res = CliRunner().invoke(app, ["config", "--model-config",
                                   str(DATA / "tiny-mamba1.config.json"), "--gpu-memory-gib", "80"])
    assert res.exit_code == 0, res.output
    assert ("largest max_model_len that fits = any (the model sets no limit and a request's "
            "blocks do not grow with its length)") in res.output


@pytest.mark.parametrize("line", [False, True], ids=["vllms-default", "config-line-on"])
def test_a_replays_caching_is_vllms_default_unless_the_config_line_sets_it(tmp_path,
                                                                           line) -> None:
    from typer.testing import CliRunner

    from kvcli.app import app
    prompt = {"prompt_token_ids": list(range(1, 21)), "output_length": 4}
    rows = ([{"config": {"enable_prefix_caching": True}}] if line else []) + [prompt, prompt]
    trace = tmp_path / "t.jsonl"
    trace.write_text("".join(json.dumps(r) + "\n" for r in rows))
    res = CliRunner().invoke(app, ["replay", str(trace), "--model-config", _config("tiny-mamba2"),
                                   "--num-blocks", "100", "--max-model-len", "256", "--json"])
    assert res.exit_code == 0, res.output
    summary = json.loads(res.stdout)
    # (on: the second prompt hits the first's 16-token block; off: nothing is looked up)
    assert summary["hit_tokens"] == (16 if line else 0)
    assert ("mamba2 is attention-free: vLLM serves it with prefix caching off unless asked"
            in res.stderr) is not line
