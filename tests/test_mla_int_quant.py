"""AWQ, GPTQ and compressed-tensors checkpoints of MLA models (DeepSeek-V2 / V3) and
compressed-tensors' int experts (Qwen3-MoE, Mixtral), against vLLM 0.33.0's own classes
(tests/data/weights_census/int_quant/answers.json; every rank is compared by
tests/test_int_quant_census.py): what an MLA layer packs, and the task's example."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from kvcli.app import app
from kvcore.models.hf_config import read_hf_config
from kvcore.models.weights import estimate_weights_bytes

HERE = Path(__file__).parent / "data" / "weights_census" / "int_quant"
CASES = json.loads((HERE / "answers.json").read_text())["cases"]
runner = CliRunner()


def _rank0(name: str, tp: int = 1) -> dict:
    return CASES[f"weights_census/int_quant/{name}.config.json"]["tp"][str(tp)][0]


def _weights(name: str, tp: int) -> int:
    cfg = json.loads((HERE / f"{name}.config.json").read_text())
    return estimate_weights_bytes(read_hf_config(cfg, name=name), tp)


def test_what_vllm_packs_in_an_mla_layer() -> None:
    # every MLA projection (q_a and kv_a fused), the MLPs and experts; the router is a
    # GateLinear built without the quant_config: bfloat16, its bias float32
    names = _rank0("deepseek-v3-awq")["param_numel_by_name"]
    for proj in ("fused_qkv_a_proj", "q_b_proj", "kv_b_proj", "o_proj"):
        assert f"model.layers.*.self_attn.{proj}.qweight" in names
    assert names["model.layers.*.mlp.gate.weight"] == 8 * 1024
    lite = _rank0("deepseek-v2-lite-awq")["param_numel_by_name"]
    # (no q_lora_rank: q_proj and kv_a_proj_with_mqa, 1024 in, 8 x 96 and 256 + 32 out)
    assert lite["model.layers.*.self_attn.q_proj.qweight"] == 2 * 1024 * 768 // 8
    assert lite["model.layers.*.self_attn.kv_a_proj_with_mqa.qweight"] == 2 * 1024 * 288 // 8


def test_mla_attention_holds_no_kv_scales_under_compressed_tensors() -> None:
    # (a Llama layer holds k/v/q scales and zero points; MLA's none: the float32 is the
    # router's e_score_correction_bias alone, 8 experts in the one MoE layer)
    rec = _rank0("deepseek-v3-ct-w4a16")
    assert rec["param_bytes_by_dtype"]["float32"] == 8 * 4
    assert _weights("deepseek-v3-ct-w4a16", 1) == sum(rec["param_bytes_by_dtype"].values()) \
        == 16_591_648


def test_compressed_tensors_wna16_experts() -> None:
    # N-first: w13 [8, 2 x 2048, 1024 / 8] int32 a layer, scales [8, 4096, 8] bfloat16, and two
    # weight_shape [8, 2] in bfloat16 (torch.empty in the default dtype)
    names = _rank0("qwen3-moe-ct-w4a16")["param_numel_by_name"]
    assert names["model.layers.*.mlp.experts.routed_experts.w13_weight_packed"] == \
        2 * 8 * 4096 * 128
    assert names["model.layers.*.mlp.experts.routed_experts.w13_weight_shape"] == 2 * 8 * 2
    # 59,362,820 B at TP 1 (218,147,840 counted unquantised before)
    assert _weights("qwen3-moe-ct-w4a16", 1) == 59_362_820
    assert _weights("qwen3-moe-ct-w8a8-int8", 1) == 111_529_060


def test_the_deepseek_v3_awq_example(tmp_path: Path) -> None:
    # DeepSeek-V3 in float16 under AWQ: 44,548,133,632 B a rank at TP 8 as vLLM builds it
    # (169,560,743,936 counted unquantised before, which left no KV memory on 141 GiB)
    assert _weights("deepseek-v3-671b-awq", 8) == \
        sum(_rank0("deepseek-v3-671b-awq", 8)["param_bytes_by_dtype"].values()) \
        == 44_548_133_632
    res = runner.invoke(app, ["config", "--model-config",
                              str(HERE / "deepseek-v3-671b-awq.config.json"), "--tp", "8",
                              "--gpu-memory-gib", "141", "--json"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    # (84,259 blocks less its 20 MiB of buffers a worker, RoPE caches and attention scales)
    assert doc["num_blocks"] == 84_241 and doc["memory"]["weights_unquantised_method"] is None
    assert doc["memory"]["buffers_bytes"] == 20_972_496
    assert "unquantised" not in res.stderr
