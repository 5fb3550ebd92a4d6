"""Method mtp for GLM-4.5 / 4.5-Air / 4.6 (vLLM's `Glm4MoeMTP`), the model side: the target's
weights, the module's weights, its attention layer in the group, the pool `kvcli config` plans
and the drafter's passes on the clock. Checked against vLLM 0.33.0's own modules and planning
(tests/data/mtp_draft/glm4_moe_answers.json, recorded with record_glm4_moe_mtp.py;
tests/data/sizing_vllm's glm-4.5-air case)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kvcli.app import app
from kvcore.clock.batch import StepBatch
from kvcore.clock.draft_passes import DraftPasses
from kvcore.clock.gpus import find_gpu
from kvcore.clock.roofline import RooflineClock
from kvcore.clock.work import aggregate
from kvcore.models.config_file import read_config_file
from kvcore.models.eagle_draft import draft_layer_specs
from kvcore.models.mtp_draft import mtp_draft
from kvcore.models.presets import load_preset
from kvcore.models.weights import estimate_params, estimate_weights_bytes
from kvcore.models.worker_specs import layer_specs
from kvcore.sizing import get_kv_cache_groups

ROOT = Path(__file__).resolve().parent
DATA = ROOT / "data" / "mtp_draft"
ANSWERS = json.loads((DATA / "glm4_moe_answers.json").read_text())["cases"]
AIR = load_preset("glm-4.5-air")
TINY = read_config_file(str(DATA / "6-tiny-glm4-moe" / "target" / "config.json"))
NO_KEY = read_config_file(str(DATA / "8-tiny-glm4-moe-no-nextn-key" / "target" / "config.json"))
CASES = [("7-glm-4.5-air", AIR), ("6-tiny-glm4-moe", TINY), ("8-tiny-glm4-moe-no-nextn-key", NO_KEY)]


@pytest.mark.parametrize("case, target, total", [(*c, b) for c, b in zip(CASES, (
    4_751_168_000, 129_296, 129_296))])
def test_the_module_vllm_keeps(case, target, total):
    """eh_proj (2H -> H), enorm, hnorm, shared_head.norm and a MoE decoder layer (its router
    and correction bias float32, the tiny one's q/k norms); the embedding and the head are the
    target's. Air: 4,749,070,336 B bf16 + 2,097,664 B float32; tiny 128,256 + 1,040."""
    rec = ANSWERS[f"{case}/K=1"]
    kept = rec["after_load_sharing"]["param_bytes_by_dtype_not_the_targets"]
    d = mtp_draft(target)
    assert (d.architecture, rec["draft"]["class"]) == ("Glm4MoeMTP", "Glm4MoeMTP")
    assert d.weights_bytes() == kept["bfloat16"] + kept["float32"] == total


def test_eh_proj_is_whole_on_every_worker():
    """A plain nn.Linear: at TP 4 each worker holds all of eh_proj and the three norms, a
    quarter of the decoder layer (its router whole)."""
    layer = estimate_weights_bytes(AIR, 4, (range(45, 46), False, False))
    assert mtp_draft(AIR).weights_bytes(4) == 2 * (2 * 4096 * 4096 + 3 * 4096) + layer \
        == 1_239_727_616


def test_the_targets_weights_are_vllms_count():
    """q/k norms where use_qk_norm, the shared expert, the dense first layer, the float32
    routers with their correction biases: GLM-4.5-Air's 106,852,251,264 parameters and
    213,751,699,968 bytes, to the one; the tiny one too (its 1,000-row vocabulary padded to
    1,024 as vLLM pads it, embedding and head)."""
    air = ANSWERS["7-glm-4.5-air/K=1"]["target"]
    assert estimate_params(AIR) == (air["param_numel"], 0) == (106_852_251_264, 0)
    assert estimate_weights_bytes(AIR) == sum(air["param_bytes_by_dtype"].values()) \
        == 213_751_699_968
    tiny = ANSWERS["6-tiny-glm4-moe/K=1"]["target"]
    assert estimate_params(TINY)[0] == tiny["param_numel"] == 292_744
    assert estimate_weights_bytes(TINY) == sum(tiny["param_bytes_by_dtype"].values())


def test_a_missing_key_is_one_module():
    """transformers' Glm4MoeConfig gives num_nextn_predict_layers 1 (its num_mtp_layers): vLLM
    builds the same module without the key."""
    rec = ANSWERS["8-tiny-glm4-moe-no-nextn-key/K=1"]
    assert (rec["target"]["num_nextn_predict_layers"], rec["draft"]["n_predict"]) == (1, 1)
    assert (NO_KEY.mtp_layers, TINY.mtp_layers, AIR.mtp_layers) == (1, 1, 1)


@pytest.mark.parametrize("case, target", CASES)
@pytest.mark.parametrize("k", [1, 3])
def test_the_group_vllm_plans(case, target, k):
    """The draft's layer (vLLM's model.layers.N.self_attn.attn) is the target's spec but for
    is_draft: one full-attention group of N + 1 layers (47 for the Air) at K = 1 and 3."""
    rec = ANSWERS[f"{case}/K={k}"]
    specs = layer_specs(target, max_model_len=4096, num_speculative_tokens=k)
    drafts = draft_layer_specs(mtp_draft(target), target, max_model_len=4096)
    n = target.num_layers
    assert [f"model.layers.{x.rsplit('.', 1)[1]}.self_attn.attn" for x in drafts] == list(
        rec["kv_specs_draft"]) == [f"model.layers.{n}.self_attn.attn"]
    specs.update(drafts)
    groups = get_kv_cache_groups(specs)
    vllm = rec["kv_cache_groups"]
    assert [(len(g.layer_names), g.kv_cache_spec.block_size, g.kv_cache_spec.num_kv_heads,
             g.kv_cache_spec.head_size, g.kv_cache_spec.page_size_bytes) for g in groups] == [
        (g["num_layers"], g["spec"]["block_size"], g["spec"]["num_kv_heads"],
         g["spec"]["head_size"], g["spec"]["page_size_bytes"]) for g in vllm]
    assert [g["num_layers"] for g in vllm] == [n + 1] and vllm[0]["is_eagle_group"]


BASE = ["config", "glm-4.5-air", "--gpu-memory-gib", "80", "--max-model-len", "32768", "--json"]
MTP = ["--spec-method", "mtp", "--spec-tokens", "2"]


def test_kvcli_config_at_tp4():
    """80 GiB x 4: 33,836 blocks of 46 pages without drafts (the norms whole on every rank;
    16,777,952 B of buffers a worker: the RoPE cache, 131,072 x 64 x 2 B, and 46 layers'
    scales); with MTP, 47 pages a block, 1.15 GiB of draft weights and the module's 16 B of
    scales (it shares the RoPE cache) leave 31,506 (vLLM's planning answered 31,529 on the
    memory kvcli left before it counted the buffers: tests/data/sizing_vllm,
    glm-4.5-air-tp4-mtp-22gib)."""
    plain = json.loads(CliRunner().invoke(app, [*BASE, "--tp", "4"]).stdout)
    r = CliRunner().invoke(app, [*BASE, "--tp", "4", *MTP])
    assert r.exit_code == 0, r.output
    mtp = json.loads(r.stdout)
    assert (plain["num_blocks"], plain["bytes_per_block"]) == (33_836, 46 * 16_384)
    assert (mtp["num_blocks"], mtp["bytes_per_block"]) == (31_506, 47 * 16_384)
    d = mtp["draft"]
    assert (d["architecture"], d["layer_names"], d["weights_bytes"]) == (
        "Glm4MoeMTP", ["draft.layers.46"], mtp_draft(AIR).weights_bytes(4)) \
        == ("Glm4MoeMTP", ["draft.layers.46"], 1_239_727_616)


def test_bf16_air_does_not_fit_two_80_gib_gpus():
    """213.75 GB of bf16 weights: 101.82 GiB a worker at TP 2 with the module, refused in one
    line naming the option."""
    r = CliRunner().invoke(app, [*BASE, "--tp", "2", *MTP])
    assert (r.exit_code, r.stdout) == (2, "")
    assert r.stderr == ("error: option --gpu-memory-gib: no memory left for the KV cache: 80 GiB"
                        " x 0.92 = 73.60 GiB, weights 101.82 GiB (estimated), buffers 16.00 MiB "
                        "per worker (tensor parallel 2); short by 28.24 GiB\n")


def test_the_drafter_runs_a_moe_layer_and_eh_proj_whole():
    """K = 2 passes of the MoE layer with eh_proj (2 x 4,096 x 4,096, not split) each, no
    first-pass fold; on an H100 at TP 4 for 64 verifications of 2 drafts: 1.540 ms."""
    clock = RooflineClock(AIR, find_gpu("h100-sxm"), tp=4)
    passes = DraftPasses(mtp_draft(AIR), 2, clock)
    assert (passes.every_pass_params, passes.first_pass_params) == (2 * 4096 * 4096, 0)
    d = passes.clock
    assert (d.g.layer_kinds, d.g.moe_layers, d.g.vocab_size) == (("full",), (True,), 151_552)
    verify = StepBatch()
    verify.add(3, 4100, False, 64)
    first = d.forward_ms(aggregate(d.ws, verify)) + d.gemm_ms(2 * 4096 * 4096, 192)
    later = d.forward_ms(aggregate(d.ws, StepBatch(agg_decodes=64, agg_context=64 * 4100 + 64)))
    assert passes.gpu_ms(verify) == pytest.approx(first + later + d.gemm_ms(2 * 4096 * 4096, 64))
    assert round(passes.gpu_ms(verify), 3) == 1.540


def test_mtp_speeds_the_airs_decodes_up():
    """traces/multiturn-chat.jsonl on H100s at TP 4: TPOT p50 23.939 ms, 9.863 ms with MTP x 2
    at an acceptance rate of 0.8 (2.45 tokens a step)."""
    def p50(*extra: str) -> float:
        r = CliRunner().invoke(app, ["replay", str(ROOT.parent / "traces" / "multiturn-chat.jsonl"),
                                     "--json", "--model", "glm-4.5-air", "--gpu", "h100-sxm",
                                     "--tp", "4", "--gpu-memory-gib", "80", *extra])
        assert r.exit_code == 0, r.output
        return round(json.loads(r.stdout)["latency"]["tpot_ms"]["p50"], 3)

    assert p50() == 23.939
    assert p50(*MTP, "--spec-acceptance-rate", "0.8") == 9.863
