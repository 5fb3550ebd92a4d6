"""Method mtp for Qwen3-Next (vLLM's `Qwen3NextMTP`), the model side: the module's weights, its
attention layer in the groups, the Gated DeltaNet spec's speculative blocks and conv rows, the
pool `kvcli config` plans, and the drafter's passes on the clock. Checked against vLLM 0.33.0's
own modules and planning (tests/data/mtp_draft/qwen3_next_answers.json, recorded with
record_qwen3_next_mtp.py; tests/data/sizing_vllm's qwen3-next cases)."""

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
from kvcore.errors import InputError
from kvcore.models.config_file import read_config_file
from kvcore.models.eagle_draft import draft_layer_specs
from kvcore.models.mtp_draft import mtp_draft
from kvcore.models.presets import load_preset
from kvcore.models.worker_specs import layer_specs
from kvcore.sizing import get_kv_cache_groups
from kvcore.sizing.resolve import resolve_kv_cache_config
from kvcore.specs import MambaSpec, SizingContext

DATA = Path(__file__).resolve().parent / "data" / "mtp_draft"
ANSWERS = json.loads((DATA / "qwen3_next_answers.json").read_text())["cases"]
PRESET = load_preset("qwen3-next-80b-a3b")
TINY = read_config_file(str(DATA / "4-tiny-qwen3-next" / "target" / "config.json"))


@pytest.mark.parametrize("case, target", [("3-qwen3-next-80b-a3b", PRESET), ("4-tiny-qwen3-next",
                                                                           TINY)])
def test_the_module_vllm_keeps(case, target):
    """fc (2H -> H), three norms and a full-attention MoE decoder layer; the embedding and the
    LM head are the target's: 3,300,942,848 bytes of bf16 for the 80B, 144,768 for the tiny."""
    kept = ANSWERS[f"{case}/K=1"]["after_load_sharing"]["param_bytes_by_dtype_not_the_targets"]
    d = mtp_draft(target)
    assert (d.architecture, {"bfloat16": d.weights_bytes()}) == ("Qwen3NextMTP", kept)


def test_the_targets_weights_are_vllms_count():
    """The q/k norms and the shared-expert gate counted: vLLM's 80B parameters and bytes to the
    one (its 1,152 GDN A_log values in float32)."""
    recorded = ANSWERS["3-qwen3-next-80b-a3b/K=1"]["target"]["param_bytes_by_dtype"]
    from kvcore.models.weights import estimate_weights_bytes
    assert estimate_weights_bytes(PRESET) == recorded["bfloat16"] + recorded["float32"]


def _vllm_name(name: str, n: int) -> str:
    i = int(name.rsplit(".", 1)[1])
    if name.startswith("draft."):
        return f"mtp.layers.{i - n}.self_attn.attn"
    kind = "self_attn.attn" if (i + 1) % 4 == 0 else "linear_attn"
    return f"model.layers.{i}.{kind}"


@pytest.mark.parametrize("case, target", [("3-qwen3-next-80b-a3b", PRESET), ("4-tiny-qwen3-next",
                                                                           TINY)])
@pytest.mark.parametrize("k", [1, 3])
def test_the_groups_and_specs_vllm_plans(case, target, k):
    """The GDN spec keeps K speculative blocks and K more conv rows; the draft's layer joins the
    full-attention group (13 layers for the 80B, the GDN layers grouped by 13)."""
    rec = ANSWERS[f"{case}/K={k}"]
    specs = layer_specs(target, max_model_len=4096, num_speculative_tokens=k)
    block = rec["cache"]["block_size"]
    specs.update(draft_layer_specs(mtp_draft(target), target, block_size=block,
                                   max_model_len=4096))
    groups = get_kv_cache_groups(specs)
    n = target.num_layers
    assert [[_vllm_name(x, n) for x in g.layer_names] for g in groups] == [
        g["layers"] for g in rec["kv_cache_groups"]]
    assert [(g.kv_cache_spec.block_size, g.kv_cache_spec.page_size_bytes) for g in groups] == [
        (g["block_size"], g["page_size_bytes"]) for g in rec["kv_cache_groups"]]
    gdn = next(s for s in specs.values() if isinstance(s, MambaSpec))
    vllm_gdn = rec["kv_specs_target"][0]["spec"]
    assert (str(tuple(gdn.shapes)), gdn.num_speculative_blocks, gdn.page_size_bytes) == (
        vllm_gdn["shapes"], vllm_gdn["num_speculative_blocks"], vllm_gdn["page_size_bytes"])
    ctx = SizingContext(max_model_len=4096)
    assert [gdn.max_memory_usage_bytes(ctx) // gdn.page_size_bytes] == rec[
        "mamba_max_memory_usage_pages"] == [3 + k]


def test_kvcli_config_shows_the_draft_and_fewer_blocks():
    """80B at TP 2 on 141 GiB: 8,410 blocks of 12 pages without drafts (32 MiB of buffers a
    worker: the RoPE cache, 262,144 x 64 x 2 B, and 12 attention layers' scales); with MTP x 2,
    13 pages a block, 1.54 GiB of draft weights and the module's 16 B of scales (it shares the
    RoPE cache) leave 7,547; a request holds 5 GDN
    blocks a group (2 + 1 checkpoint + K)."""
    base = ["config", "qwen3-next-80b-a3b", "--gpu-memory-gib", "141", "--tp", "2",
            "--max-model-len", "32768", "--json"]
    plain = json.loads(CliRunner().invoke(app, base).stdout)
    r = CliRunner().invoke(app, [*base, "--spec-method", "mtp", "--spec-tokens", "2"])
    assert r.exit_code == 0, r.output
    mtp = json.loads(r.stdout)
    assert (plain["num_blocks"], plain["bytes_per_block"]) == (8_410, 12 * 589_824)
    assert (mtp["num_blocks"], mtp["bytes_per_block"]) == (7_547, 13 * 589_824)
    d = mtp["draft"]
    assert (d["architecture"], d["layer_names"], d["weights_bytes"]) == (
        "Qwen3NextMTP", ["draft.layers.48"], mtp_draft(PRESET).weights_bytes(2))
    assert [(g["kind"], g["num_layers"], g["blocks_per_request"]) for g in mtp["groups"]] == [
        ("mamba", 12, 5)] * 3 + [("full", 13, 57)]
    assert "5 Mamba blocks a request" in " ".join(mtp["warnings"])


def test_ngram_keeps_the_speculative_blocks_too():
    """vLLM's MambaSpec takes num_speculative_tokens whatever the method: n-gram adds no layer
    but 2 blocks a request and 2 conv rows."""
    r = resolve_kv_cache_config("qwen3-next-80b-a3b", gpu_memory_gib=141, tensor_parallel_size=2,
                                max_model_len=32768, num_speculative_tokens=2)
    gdn = r.config.kv_cache_groups[0].kv_cache_spec
    assert (gdn.num_speculative_blocks, gdn.shapes[0], r.config.num_blocks) == (2, (5, 4096),
                                                                               8_410)


def test_two_modules_at_k1_are_sized_and_refused_from_k2():
    """vLLM builds both at K 1 (single-module scheduling; refused, it was, as several modules)
    and refuses K = 3 ('must be divisible by n_predict=2'); K 2 is multi-module MTP, which
    kvcli refuses as not modelled (tests/data/weights_census/mtpmulti2/ records more)."""
    assert ANSWERS["5-tiny-qwen3-next-2-mtp/K=3"]["refused"].startswith(
        "ValidationError: 1 validation error for SpeculativeConfig\n  Value error, "
        "num_speculative_tokens:3 must be divisible by n_predict=2")
    rec = ANSWERS["5-tiny-qwen3-next-2-mtp/K=1"]
    target = read_config_file(str(DATA / "5-tiny-qwen3-next-2-mtp" / "target" / "config.json"))
    d = mtp_draft(target)
    kept = rec["after_load_sharing"]["param_bytes_by_dtype_not_the_targets"]
    assert ({"bfloat16": d.weights_bytes()}, d.geometry.layer_kinds) == (kept, ("full", "full"))
    with pytest.raises(InputError, match="has 2 MTP modules: vLLM 0.33 builds 2 draft layers "
                       "and with K >= 2 runs multi-module MTP"):
        mtp_draft(target, 2)
    with pytest.raises(InputError, match="num_speculative_tokens:3 must be divisible by "
                       "n_predict=2"):
        mtp_draft(target, 3)


def test_an_eagle_draft_beside_gdn_layers_gets_the_attention_block():
    """(tests/test_eagle_draft_mamba.py checks these drafts against vLLM's planning.) The
    Llama-3.1-8B draft's 4 KV heads of 128 a worker: a page twice the attention page at the
    576-token block, so vLLM doubles the target's attention blocks and pads the GDN pages,
    49 groups of one layer."""
    r = resolve_kv_cache_config("qwen3-next-80b-a3b", gpu_memory_gib=141, tensor_parallel_size=2,
                                draft=("eagle3-llama-3.1-8b", "eagle3"), num_speculative_tokens=3)
    groups = r.config.kv_cache_groups
    assert (len(groups), groups[-1].layer_names, groups[-1].kv_cache_spec.block_size) == (
        49, ("draft.layers.48",), 576)
    assert {g.kv_cache_spec.page_size_bytes for g in groups} == {2 * 576 * 4 * 128 * 2}
    assert groups[-2].kv_cache_spec.block_size == 1152


def test_the_drafter_runs_fc_split_every_pass():
    """Qwen3-Next's fc is a ColumnParallelLinear run on each of the K passes (DeepSeek's
    eh_proj is whole on every worker): 2 x 2,048 x 2,048 / TP 2 weights a pass, no first-pass
    fold; the passes on an H200 at TP 2 for 64 verifications of 2 drafts: 1.323 ms."""
    clock = RooflineClock(PRESET, find_gpu("h200"), tp=2)
    passes = DraftPasses(mtp_draft(PRESET), 2, clock)
    assert (passes.every_pass_params, passes.first_pass_params) == (2 * 2048 * 2048 // 2, 0)
    assert passes.clock.g.layer_kinds == ("full",)
    verify = StepBatch()
    verify.add(3, 4100, False, 64)
    d = passes.clock
    first = d.forward_ms(aggregate(d.ws, verify)) + d.gemm_ms(4_194_304, 192)
    later = d.forward_ms(aggregate(d.ws, StepBatch(agg_decodes=64, agg_context=64 * 4100 + 64)))
    assert passes.gpu_ms(verify) == pytest.approx(first + later + d.gemm_ms(4_194_304, 64))
    assert round(passes.gpu_ms(verify), 3) == 1.323


def test_the_replays_gdn_warning_counts_the_speculative_blocks():
    """The replay's start-up note says what `kvcli config` says: 3 + K Mamba blocks a request
    (it said 3 whatever K)."""
    trace = Path(__file__).resolve().parent.parent / "traces" / "multiturn-chat.jsonl"
    r = CliRunner().invoke(app, ["replay", str(trace), "--json", "--model",
                                 "qwen3-next-80b-a3b", "--tp", "2", "--num-blocks", "4000",
                                 "--max-model-len", "32768", "--spec-method", "mtp",
                                 "--spec-tokens", "2", "--spec-acceptance-rate", "0.8"])
    assert r.exit_code == 0, r.output
    notes = " ".join(json.loads(r.stdout)["warnings"])
    assert "5 Mamba blocks a request" in notes and "4 a request" in notes
