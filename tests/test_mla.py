"""MLA models (DeepSeek-V3, DeepSeek-V2-Lite, Kimi-K2) against vLLM 0.33.0's own answers.

tests/data/mla/answers.json was recorded from the real vLLM (record_mla_answers.py there): per
config and case, what its `ModelConfig` says (MLA, head size 576, one KV head a rank), the
layer's `MLAAttentionSpec`, and its planning on one spec a decoder layer. Before MLA was read,
kvcli sized DeepSeek-V3 at TP 8 with 16 KV heads of hidden/heads = 56 and a K/V pair: a page
of 57,344 bytes at block 16 where vLLM's is 18,432.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kvcli.app import app
from kvcore.errors import InputError
from kvcore.models import layer_specs, load_hf_config, read_hf_config
from kvcore.models.mla import mla_block_size_note
from kvcore.models.weights import estimate_params
from kvcore.sizing import get_kv_cache_groups, kv_cache_config_from_groups
from kvcore.sizing.config import capacity, vllm_tensor_count
from kvcore.specs import MLAAttentionSpec, SizingContext

DATA = Path(__file__).resolve().parent / "data" / "mla"
ANSWERS = json.loads((DATA / "answers.json").read_text())
VLLM_DTYPES = {"bfloat16": "bfloat16", "uint8": "fp8"}  # vLLM stores an fp8 MLA cache as uint8
runner = CliRunner()


def geometry(name: str):
    return read_hf_config(load_hf_config(DATA / f"{name}.config.json"))


def case_id(c: dict) -> str:
    return f"{c['config']}-tp{c['tp']}-{c['kv_cache_dtype']}-bs{c['block_size']}"


@pytest.mark.parametrize("case", ANSWERS["cases"], ids=case_id)
def test_specs_and_planning_as_vllm(case) -> None:
    g = geometry(case["config"])
    assert g.mla is not None and g.mla.latent_size == case["model"]["head_size"]
    assert g.num_layers == case["model"]["num_layers"]
    specs = layer_specs(g, block_size=case["block_size"], kv_cache_dtype=case["kv_cache_dtype"],
                        tp=case["tp"], max_model_len=case["max_model_len"])
    want = case["spec"]
    for spec in specs.values():
        assert isinstance(spec, MLAAttentionSpec)
        assert (spec.block_size, spec.num_kv_heads, spec.head_size, spec.dtype,
                spec.page_size_bytes) == (want["block_size"], want["num_kv_heads"],
                                          want["head_size"], VLLM_DTYPES[want["dtype"]],
                                          want["page_size_bytes"])
    assert case["model"]["num_kv_heads_per_rank"] == 1
    ctx = SizingContext(max_model_len=case["max_model_len"], max_num_batched_tokens=2048,
                        max_concurrent_batches=2)
    groups = get_kv_cache_groups(specs)
    config = kv_cache_config_from_groups(groups, case["available"])
    cap = capacity(config, ctx, case["available"], case["max_model_len"])
    exp = case["expected"]
    assert [{"num_layers": len(gr.layer_names), "spec": type(gr.kv_cache_spec).__name__,
             "block_size": gr.kv_cache_spec.block_size,
             "page_size_bytes": gr.kv_cache_spec.page_size_bytes} for gr in groups] \
        == exp["groups"]
    # (kvcore's tensors describe the bytes one layer at a time; `kvcli config` reports vLLM
    # 0.33's count: one a group and distinct spec)
    assert vllm_tensor_count(groups) == exp["num_tensors"]
    assert (config.num_blocks, cap.max_concurrency, cap.kv_cache_tokens,
            cap.max_model_len_fits) == (exp["num_blocks"], exp["max_concurrency"],
                                        exp["kv_cache_tokens"], exp["max_model_len_fits"])


def test_block_size_note_says_what_vllm_recorded() -> None:
    """The warning's backends and block sizes are vLLM's recorded ones where this CPU could
    import the backend: FLASHMLA 64 (Hopper, fp8 cache), TRITON_MLA 16 (Ampere); and the
    backends it names first lead vLLM's priorities (FLASH_ATTN_MLA on Hopper, FLASHINFER_MLA on
    Blackwell)."""
    note = mla_block_size_note("m", 16)
    rows = {(b["capability"], b["kv_cache_dtype"]): b["priorities"] for b in ANSWERS["backends"]}
    first = {k: v[0]["backend"] for k, v in rows.items()}
    assert f"Hopper: 16 with {first[('9.0', 'auto')]}" in note
    assert f"Blackwell: 32, {first[('10.0', 'auto')]}" in note
    hopper_fp8 = next(r for r in rows[("9.0", "fp8")] if r.get("kv_cache_dtype_ok"))
    assert f"{hopper_fp8['preferred_block_size']} with an fp8 cache, {hopper_fp8['backend']}" \
        in note
    ampere = next(r for r in rows[("8.0", "auto")] if r.get("capability_ok"))
    assert f"others: {ampere['preferred_block_size']}, {ampere['backend']}" in note


def test_weights_estimate_counts_the_published_parameters() -> None:
    """671B (DeepSeek-V3 without its MTP layer), 15.7B (V2-Lite), about 1T (Kimi-K2): MLA
    projections, 256/64/384 routed experts after the dense layers, shared experts; the fp8
    checkpoints' float32 block scales (DeepSeek-V3's 40,838,232, Kimi-K2's 62,495,192) and
    routing biases (58 x 256, 60 x 384) too, as vLLM builds them (weights_census/answers.json)."""
    assert sum(estimate_params(geometry("deepseek-v3"))) == 671_067_257_432
    assert sum(estimate_params(geometry("deepseek-v2-lite"))) == 15_706_484_224
    assert sum(estimate_params(geometry("kimi-k2"))) == 1_026_470_727_640


def config_json(*args: str):
    r = runner.invoke(app, ["config", "--model-config", str(DATA / "deepseek-v3.config.json"),
                            "--tp", "8", "--gpu-memory-gib", "141", *args, "--json"])
    return r, (json.loads(r.stdout) if r.exit_code == 0 else None)


def test_every_rank_holds_the_mla_down_projections_whole() -> None:
    from kvcore.models.weights import estimate_weights_bytes

    # V2-Lite has no q_lora_rank: its q_proj is split, kv_a_proj_with_mqa (2048 x 576) is not
    g = read_hf_config(json.loads((DATA / "deepseek-v2-lite.config.json").read_text()))
    split = estimate_weights_bytes(g, 1)
    # (and its 26 MoE layers' routers, 2048 x 64 each, whole as every MoE model's, and the
    # norms: 2 a layer, kv_a_layernorm (512), the final one)
    whole, router = 27 * 2048 * 576 * 2, 26 * 2048 * 64 * 2
    norms = (27 * (2 * 2048 + 512) + 2048) * 2
    assert estimate_weights_bytes(g, 2) == (split - whole - router - norms) // 2 + whole \
        + router + norms == 15_741_869_056   # vLLM's rank at TP 2 (weights_census)


def test_config_cli_sizes_the_latent_and_warns_about_the_block_size() -> None:
    r, d = config_json()
    assert r.exit_code == 0, r.output
    assert d["layer_kinds"] == {"mla": 61}
    assert [(g["kind"], g["block_size"], g["page_size_bytes"]) for g in d["groups"]] == [
        ("mla", 16, 18432)]
    # fp8 weights: 79.29 GiB a rank at TP 8, vLLM's to the byte (weights_census) (not the 8.98
    # of a model without experts; not the 78.33 of splitting every matrix: vLLM holds each
    # layer's q_a and kv_a projections whole, 61 x 7168 x 2112 bytes on every rank, and each
    # MoE layer's router in bf16, 58 x 7168 x 256 x 2 bytes; with the norms whole and the
    # float32 block scales, 0.02 GiB a rank)
    assert round(d["memory"]["weights_gib"], 2) == 79.29
    # (the planning at a given memory is vLLM's: test_specs_and_planning_as_vllm; the
    # recorded case's 46,380 blocks were at the 78.33 GiB estimate's memory)
    # at vLLM's default utilization 0.92: (141 x 0.92 - 79.29 GiB - 20 MiB of buffers: the
    # RoPE cache, 4,096 x 40 YaRN rows x 64 x 2 B, and 61 layers' scales) // (61 x 18,432)
    assert d["num_blocks"] == 48138
    assert "uses MLA" in r.stderr and "FLASHMLA" in r.stderr
    r, d = config_json("--block-size", "64", "--kv-cache-dtype", "fp8")
    assert r.exit_code == 0 and "uses MLA" not in r.stderr
    assert d["groups"][0]["page_size_bytes"] == 64 * 576


def test_cpu_tier_keeps_one_copy_of_the_replicated_latent() -> None:
    """vLLM's CPU spec with an MLA model at TP > 1 (replicated layout): one copy, not tp."""
    _, d = config_json("--block-size", "16", "--kv-offloading-size", "10")
    assert d["cpu_offload"]["kv_bytes_per_chunk"] == -(-61 * 18432 // 4096) * 4096


@pytest.mark.parametrize("change, field", [
    # (LongCat-Flash is modelled: without its checkpoint's keys vLLM fails, test_longcat.py)
    ({"model_type": "longcat_flash"}, "mla_scale_q_lora"),
    ({"model_type": "hy_v4"}, "model_type"),
    # (Kimi Linear is modelled, test_kimi_linear.py: without its linear_attn_config vLLM's
    # state-shape hook fails, "'NoneType' object is not subscriptable")
    ({"model_type": "kimi_linear"}, "linear_attn_config"),
    # (a sparse deepseek_v3 config without its indexer's sizes: tests/test_sparse_mla.py)
    ({"index_topk": 2048}, "index_n_heads"),
])
def test_mla_variants_not_modelled_are_refused(change, field) -> None:
    cfg = {**load_hf_config(DATA / "deepseek-v3.config.json"), **change}
    with pytest.raises(InputError) as e:
        read_hf_config(cfg, source="x.json")
    assert e.value.field == field


def test_missing_mla_keys_take_the_config_class_defaults() -> None:
    """transformers' DeepseekV3Config defaults kv_lora_rank 512 and qk_rope_head_dim 64: vLLM
    uses MLA for a config that omits them; an explicit null q_lora_rank is no query LoRA."""
    cfg = {k: v for k, v in load_hf_config(DATA / "deepseek-v3.config.json").items()
           if k not in ("kv_lora_rank", "qk_rope_head_dim", "q_lora_rank")}
    g = read_hf_config(cfg)
    assert g.mla is not None and (g.mla.latent_size, g.mla.q_lora_rank) == (576, 1536)
    assert geometry("deepseek-v2-lite").mla.q_lora_rank is None


def test_replay_events_name_the_mla_kind(tmp_path) -> None:
    trace, events = tmp_path / "t.jsonl", tmp_path / "ev.jsonl"
    trace.write_text('{"timestamp": 0, "input_length": 100, "output_length": 4, '
                     '"hash_ids": [1]}\n')
    r = runner.invoke(app, ["replay", str(trace), "--model-config",
                            str(DATA / "deepseek-v2-lite.config.json"), "--num-blocks", "100",
                            "--max-model-len", "4096", "--events", str(events),
                            "--events-format", "vllm", "--json"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["groups"] == [{"type": "mla", "block_size": 16,
                                               "sliding_window": None}]
    assert '"mla_attention"' in events.read_text()
    assert any("uses MLA" in w for w in json.loads(r.stdout)["warnings"])


@pytest.mark.parametrize("preset", ["deepseek-v3", "deepseek-v2-lite"])
def test_presets_are_the_published_configs(preset) -> None:
    """The presets size exactly as the config files the vLLM answers were recorded from."""
    r = runner.invoke(app, ["config", preset, "--gpu-memory-gib", "141", "--tp", "8",
                            "--block-size", "16", "--json"])
    f = runner.invoke(app, ["config", "--model-config", str(DATA / f"{preset}.config.json"),
                            "--gpu-memory-gib", "141", "--tp", "8", "--block-size", "16",
                            "--json"])
    a, b = json.loads(r.stdout), json.loads(f.stdout)
    assert {k: v for k, v in a.items() if k not in ("model", "source")} == \
        {k: v for k, v in b.items() if k not in ("model", "source")}
    listed = {p["name"]: p for p in json.loads(runner.invoke(
        app, ["config", "--list", "--json"]).stdout)["presets"]}
    assert (listed[preset]["kv_heads"], listed[preset]["head_dim"]) == (1, 576)


def test_gpu_decode_benchmark_refuses_mla() -> None:
    from kvcli.gpu_steps import heads_of

    with pytest.raises(InputError) as e:
        heads_of("deepseek-v3")
    assert e.value.field == "model"


def test_calibrate_refuses_mla_before_measuring(tmp_path) -> None:
    out = tmp_path / "cal.json"
    r = runner.invoke(app, ["calibrate", "--gpu", "--model", "deepseek-v2-lite", "-o", str(out),
                            "--device", "cpu", "--grid", "tiny"])
    assert r.exit_code == 2 and "option --model: deepseek-v2-lite uses multi-head" in r.stderr
    assert not out.exists()


def test_with_a_known_gpu_the_block_size_note_names_vllms_pick_or_is_quiet() -> None:
    """--gpu h200 with the default cache: vLLM's FLASH_ATTN_MLA takes 16, the block kvcli
    sized at: nothing to say (it warned before); an fp8 cache (FLASHMLA: 64, as recorded) and
    Blackwell (32) name the block to give; a GPU without a known pick keeps the whole table."""
    from kvcore.engine.options import ReplayOptions
    from kvcore.engine.replay import replay

    trace = str(Path(__file__).resolve().parents[1] / "traces" / "multiturn-chat.jsonl")

    def mla_notes(**kw):
        s = replay(trace, ReplayOptions(model="deepseek-v3", tp=8, gpu_memory_gib=141,
                                        max_steps=1, **kw))
        return [w for w in s.warnings if "MLA" in w]

    assert mla_notes(gpu="h200") == []
    rows = {(b["capability"], b["kv_cache_dtype"]): b["priorities"] for b in ANSWERS["backends"]}
    fp8 = next(r for r in rows[("9.0", "fp8")] if r.get("kv_cache_dtype_ok"))
    assert mla_notes(gpu="h200", kv_cache_dtype="fp8") == [
        (f"deepseek-v3 uses MLA: on h200 with kv_cache_dtype fp8 vLLM 0.33 picks "
         f"{fp8['backend']}, block_size {fp8['preferred_block_size']}; sized at block_size 16: "
         f"give block_size {fp8['preferred_block_size']}")]
    assert mla_notes(gpu="b200")[0].startswith(
        "deepseek-v3 uses MLA: on b200 with kv_cache_dtype auto vLLM 0.33 picks FLASHINFER_MLA")
    assert mla_notes(gpu="mi300x") == [mla_block_size_note("deepseek-v3", 16)]
    assert mla_notes(gpu="h200", kv_cache_dtype="fp8", block_size=64) == []


def test_glm_4_7_flash_is_plain_mla_and_needs_first_k_dense_replace() -> None:
    """GLM-4.7-Flash: every layer one 576-wide latent (the KV-spec census); its config class
    lacks first_k_dense_replace, which vLLM's model reads: refused without it."""
    cfg = load_hf_config(DATA / "glm-4.7-flash.config.json")
    g = read_hf_config(cfg)
    assert g.mla is not None and g.mla.indexer is None and g.mla.latent_size == 576
    with pytest.raises(InputError) as e:
        read_hf_config({k: v for k, v in cfg.items() if k != "first_k_dense_replace"},
                       source="x.json")
    assert e.value.field == "first_k_dense_replace"
