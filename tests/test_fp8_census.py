"""fp8 block-quantised checkpoints against vLLM 0.33.0's own model classes on the meta device
(tests/data/weights_census/fp8/answers.json: Qwen3-Next, Qwen3.5, Jamba and Nemotron-H, and the
two tiny configs of ../mutants, at TP 1, 2, 4 and 8, every rank): the bytes a rank holds, where
vLLM builds them (Gated DeltaNet's and Mamba2's projections quantised with their block scales,
their convolutions and Jamba's Mamba1 mixers not, the attention's q/k/v/prob scales), and
vLLM's refusal, word for word, where a shard is not whole blocks (`kvcore.models.fp8_shapes`)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kvcli.app import app
from kvcore.errors import InputError
from kvcore.models import fp8_shapes
from kvcore.models.hf_config import read_hf_config
from kvcore.models.weights import estimate_params, estimate_weights_bytes
from kvcore.sizing.resolve import resolve_kv_cache_config
from tests.census_rows import built_ranks

DATA = Path(__file__).parent / "data"
CASES = json.loads((DATA / "weights_census" / "fp8" / "answers.json").read_text())["cases"]
runner = CliRunner()


def _geometry(name: str):
    return read_hf_config(json.loads((DATA / name).read_text()), name=name)


# (the cases built with a multimodal serving option, `<config> <flag> <value>`: tests/test_fp8_vision.py)
MM = {n for n in CASES if " --" in n}
BUILT = built_ranks(CASES, skip=MM)
# (vLLM's AssertionError at TP 8 on the MLA config is its 4 heads: kvcli's heads check)
REFUSED = [pytest.param(n, int(tp), c["tp"][tp][0]["refused"], id=f"{n}-tp{tp}")
           for n, c in CASES.items() for tp in c["tp"]
           if c["tp"][tp][0].get("refused", "").startswith("ValueError")
           and "shards of fused layers" not in c["tp"][tp][0]["refused"] and n not in MM]
# (a quantization_config naming some but not all shards of a fused linear: refused at every TP)
FUSED_REFUSED = [pytest.param(n, c["tp"]["1"][0]["refused"], id=n) for n, c in CASES.items()
                 if n not in MM and "shards of fused layers" in c["tp"]["1"][0].get("refused", "")]


@pytest.mark.parametrize(("name", "tp", "rank"), BUILT)
def test_bytes_per_rank_equal_vllms(name: str, tp: int, rank: int) -> None:
    rec = CASES[name]["tp"][str(tp)][rank]
    assert estimate_weights_bytes(_geometry(name), tp) == sum(rec["param_bytes_by_dtype"].values())
    assert fp8_shapes.refusal(_geometry(name), tp) is None


@pytest.mark.parametrize("name", [n for n, c in CASES.items()
                                  if "refused" not in c["tp"]["1"][0] and n not in MM])
def test_parameter_count_equals_vllms(name: str) -> None:
    assert estimate_params(_geometry(name))[0] == CASES[name]["tp"]["1"][0]["param_numel"]


@pytest.mark.parametrize(("name", "tp", "words"), REFUSED)
def test_a_shard_of_partial_blocks_is_refused_with_vllms_words(name: str, tp: int,
                                                                words: str) -> None:
    g = _geometry(name)
    with pytest.raises(InputError) as e:
        resolve_kv_cache_config(geometry=g, tensor_parallel_size=tp, gpu_memory_gib=80,
                                max_model_len=4096)
    assert e.value.field == "tensor_parallel_size"
    said = words.removeprefix("ValueError: ")
    if g.num_attention_heads % tp:
        # (the census builds with ParallelConfig's TP at 1, so vLLM's check of the heads,
        # which `vllm serve` runs first, ModelConfig.verify_with_parallel_config, never ran:
        # kvcli refuses as vllm serve does; its fp8 refusal, next, is the census's)
        assert e.value.message.endswith(f"as vLLM requires; got {tp}")
        assert fp8_shapes.refusal(g, tp)[2] == said
    else:
        assert f'vLLM refuses to build it: "{said}"; got {tp}' in e.value.message


def test_the_census_draws_every_kind_of_refusal() -> None:
    # a column shard (Qwen3-Next's fused in_proj_qkvz and in_proj_ba, MLA's q_proj), a row
    # shard (Qwen3.5's down_proj at 160 wide), the experts' intermediate size at TP 1 (48: no
    # finer block of 32 or more divides it); Qwen3-Next's experts at 64 a rank take vLLM's
    # finer 64 x 64 block instead (qwen3-next-fp8-wide at TP 8 builds); a vision tower's
    # column shard (Qwen3.5's linear_fc1 640 wide) and row shard (SigLIP's out_proj 384 wide),
    # at TP 2 and 4 each, and the Qwen3.5-MoE config's shared expert (256 wide) at TP 4;
    # Qwen3-VL-8B's tower (1,152 wide: 576 a rank at TP 2) at TP 2, 4 and 8, two configs
    said = {words.split(" = ")[0] for _, _, words in (p.values for p in REFUSED)}
    assert said == {"ValueError: Weight output_partition_size",
                    "ValueError: Weight input_size_per_partition",
                    "ValueError: The output_size of gate's and up's weight"}
    assert len(REFUSED) == 17 + 6
    wide = CASES["weights_census/fp8/qwen3-next-fp8-wide.config.json"]["tp"]["8"][0]
    assert wide["param_numel_by_name"][
        "model.layers.*.mlp.experts.routed_experts.w2_weight_scale_inv"] == 4 * 8 * 16 * 1


def test_what_vllm_quantises_in_a_qwen3_next_layer() -> None:
    # the tiny config (../mutants) at TP 1: kvcli was 6,368 bytes short (4,091,880): the
    # convolutions (6,144 parameters) are not fp8, the GDN projections' 54 block scales and
    # the attention layer's 4 q/k/v/prob scales were not counted
    names = CASES["mutants/qwen3-next-fp8.config.json"]["tp"]["1"][0]["param_numel_by_name"]
    assert names["model.layers.*.linear_attn.conv1d.weight"] == 6144
    assert sum(v for k, v in names.items() if "linear_attn" in k and "scale" in k) == 54
    g = _geometry("mutants/qwen3-next-fp8.config.json")
    assert estimate_weights_bytes(g, 1) == 4_098_248 == 4_091_880 + 6144 + 54 * 4 + 4 * 2


def test_jambas_mamba_layers_and_attention_are_not_quantised() -> None:
    names = CASES["weights_census/fp8/jamba-fp8.config.json"]["tp"]["1"][0]["param_numel_by_name"]
    assert not any("scale" in k for k in names if ".mamba." in k or ".attn." in k)
    assert "model.layers.*.qkv_proj.weight_scale_inv" in names


def test_an_ignored_linear_is_not_refused() -> None:
    # (a checkpoint listing a module in modules_to_not_convert: vLLM leaves it unquantised)
    cfg = json.loads((DATA / "mutants" / "qwen3-next-fp8.config.json").read_text())
    assert fp8_shapes.refusal(read_hf_config(cfg), 2)[1] == "in_proj_ba"
    cfg["quantization_config"]["modules_to_not_convert"] = [
        f"model.layers.{i}.linear_attn.in_proj_ba" for i in range(4)]
    # (the next one: the shared expert's down_proj, 64 wide a rank)
    assert fp8_shapes.refusal(read_hf_config(cfg), 2)[1:] == (
        "down_proj", ("Weight input_size_per_partition = 64 is not divisible by weight "
                      "quantization block_k = 128."))


@pytest.mark.parametrize("command", ["config", "replay"])
def test_the_cli_refuses_in_one_line(command: str) -> None:
    cfg = str(DATA / "mutants" / "fp8-mla-no-q-lora.config.json")
    trace = [str(DATA.parent.parent / "traces" / "multiturn-chat.jsonl")] if command == "replay" else []
    res = runner.invoke(app, [command, *trace, "--model-config", cfg, "--tp", "2",
                              "--gpu-memory-gib", "80"])
    assert res.exit_code == 2, res.output
    assert res.stdout == "" and "Traceback" not in res.stderr
    flag = "--tensor-parallel-size"      # (replay named it --tp, config by vLLM's name)
    assert res.stderr == (
        f"error: option {flag}: deepseek_v3's fp8 weight blocks [128, 128] do not split over it "
        "(layer 0's q_proj), and vLLM refuses to build it: \"Weight output_partition_size = 192 "
        "is not divisible by weight quantization block_n = 128.\"; got 2\n")


def test_the_linears_a_checkpoint_ignores_are_in_the_model_dtype_without_scales() -> None:
    # layer 3's q/k/v/o_proj named: its qkv_proj (2,621,440) and o_proj (1,048,576) in bfloat16
    # and without their 160 + 64 block scales; its q/k/v/prob scales stay (Fp8KVCacheMethod)
    base = CASES["weights_census/fp8/qwen3-5-text-fp8.config.json"]["tp"]["1"][0]
    rec = CASES["weights_census/fp8/qwen3-5-text-fp8-skip-attn.config.json"]["tp"]["1"][0]
    moved = 2_621_440 + 1_048_576
    assert rec["param_bytes_by_dtype"]["float8_e4m3fn"] == (
        base["param_bytes_by_dtype"]["float8_e4m3fn"] - moved)
    assert rec["param_bytes_by_dtype"]["float32"] == base["param_bytes_by_dtype"]["float32"] - 4 * 224
    assert "model.layers.*.self_attn.attn.q_scale" in rec["param_numel_by_name"]
    name = "weights_census/fp8/qwen3-5-text-fp8-skip-attn.config.json"
    assert estimate_weights_bytes(_geometry(name), 1) == sum(rec["param_bytes_by_dtype"].values())


def test_fused_names_and_prefixes_match_as_vllm_matches_them() -> None:
    # qkv_proj, gate_up_proj and in_proj_ba named whole are skipped; "model.layers.2.mlp", a
    # prefix, skips nothing (vLLM's exact match): one layer's gate_up scales of four gone
    rec = CASES["weights_census/fp8/qwen3-5-text-fp8-skip-fused-names.config.json"]["tp"]["1"][0]
    names = rec["param_numel_by_name"]
    assert "model.layers.*.self_attn.qkv_proj.weight_scale_inv" not in names
    assert names["model.layers.*.mlp.gate_up_proj.weight_scale_inv"] == 3 * 128
    assert names["model.layers.*.mlp.down_proj.weight_scale_inv"] == 4 * 64
    g = _geometry("weights_census/fp8/qwen3-5-text-fp8-skip-fused-names.config.json")
    # a byte more for each weight of layer 3's qkv_proj, one layer's gate_up_proj and
    # in_proj_ba, their 160 + 128 + 128 float32 scales gone
    assert estimate_weights_bytes(g, 1) - estimate_weights_bytes(replace(g, fp8_ignored=()), 1) \
        == 2_621_440 + 8_388_608 // 4 + 6_291_456 // 3 - 4 * 416


@pytest.mark.parametrize(("name", "words"), FUSED_REFUSED)
def test_part_of_a_fused_linear_ignored_is_refused_naming_the_field(name: str,
                                                                     words: str) -> None:
    with pytest.raises(InputError) as e:
        _geometry(name)
    assert e.value.field == "quantization_config.ignored_layers"
    assert e.value.message.endswith(f'vLLM refuses to build it: "{words.removeprefix("ValueError: ")}"')


def test_the_cli_refuses_a_partly_ignored_fused_linear_in_one_line() -> None:
    cfg = str(DATA / "weights_census" / "fp8" / "qwen3-5-text-fp8-skip-half-qkv.config.json")
    res = runner.invoke(app, ["config", "--model-config", cfg, "--gpu-memory-gib", "80"])
    assert res.exit_code == 2, res.output
    assert res.stdout == "" and "Traceback" not in res.stderr
    assert res.stderr.count("\n") == 1 and res.stderr.startswith(f"error: {cfg}: ")
    assert ("field 'quantization_config.ignored_layers': names model.layers.3.self_attn.q_proj, "
            "model.layers.3.self_attn.k_proj but not model.layers.3.self_attn.v_proj") in res.stderr


def test_a_layers_routed_experts_ignored_by_their_module_name() -> None:
    # "model.layers.2.mlp.experts": that layer's 8 experts (3 x 1024 x 512 each) in bfloat16,
    # their 512 + 256 scales gone (3 layers' of 4 left); vLLM matches a path inside the name
    name = "weights_census/fp8/qwen3-next-fp8-wide-skip-experts.config.json"
    names = CASES[name]["tp"]["1"][0]["param_numel_by_name"]
    assert names["model.layers.*.mlp.experts.routed_experts.w13_weight_scale_inv"] == 3 * 512
    g = _geometry(name)
    assert estimate_weights_bytes(g, 1) - estimate_weights_bytes(replace(g, fp8_ignored=()), 1) \
        == 8 * 3 * 1024 * 512 - 4 * 768


def _bytes(name: str, tp: str) -> list[int]:
    return [sum(r["param_bytes_by_dtype"].values()) for r in CASES[f"weights_census/fp8/{name}"
                                                                    ".config.json"]["tp"][tp]]


@pytest.mark.parametrize(("hf", "vllm"), [
    ("qwen3-5-text-fp8-skip-hf-names", "qwen3-5-text-fp8-skip-mlp-head-gdn"),
    ("nemotron-h-fp8-skip-hf-names", "nemotron-h-fp8-skip"),
    ("jamba-fp8-skip-hf-names", "jamba-fp8-skip")])
def test_checkpoint_names_are_renamed_as_vllm_renames_them(hf: str, vllm: str) -> None:
    # model.language_model.layers.N (Qwen3.5), backbone.layers.N (Nemotron-H),
    # model.layers.4.self_attn.q_proj (Jamba): vLLM builds what the list in its own module
    # paths builds, on every rank (test_bytes_per_rank_equal_vllms: kvcli too)
    for tp in ("1", "2", "4", "8"):
        assert _bytes(hf, tp) == _bytes(vllm, tp)
    g = _geometry(f"weights_census/fp8/{hf}.config.json")
    assert estimate_weights_bytes(g, 1) == _bytes(vllm, "1")[0]
    assert g.fp8_ignored == _geometry(f"weights_census/fp8/{vllm}.config.json").fp8_ignored + (
        ("mtp.layers.0.mlp.gate_proj",) if hf.startswith("qwen") else ())


def test_qwen3_5s_checkpoint_names_were_fp8_before() -> None:
    # unrenamed, model.language_model.layers.N named nothing: 30,401,280 B short at TP 1
    g = _geometry("weights_census/fp8/qwen3-5-text-fp8-skip-hf-names.config.json")
    assert estimate_weights_bytes(replace(g, fp8_ignored=()), 1) == _bytes(
        "qwen3-5-text-fp8", "1")[0] == 139_237_560 - 30_401_280


@pytest.mark.parametrize("model", ["qwen3-5-vl-fp8", "gemma-3-mm-fp8"])
@pytest.mark.parametrize("tp", ["1", "2", "4"])
def test_multimodal_names_match_inside_the_language_model(model: str, tp: str) -> None:
    # the checkpoint's model.language_model.layers.N are vLLM's language_model.model.layers.N;
    # a text model's path (model.layers.N) names nothing there: kvcli's estimate moves by
    # vLLM's, rank by rank (Qwen3.5: 30,401,280 B at TP 1, as its text model; Gemma 3: 3,144,960)
    base = _bytes(model, tp)
    assert _bytes(f"{model}-skip-vllm-names", tp) == base
    ours = [estimate_weights_bytes(_geometry(f"weights_census/fp8/{n}.config.json"), int(tp))
            for n in (model, f"{model}-skip-hf-names", f"{model}-skip-vllm-names")]
    assert [ours[1] - ours[0]] * len(base) == [
        a - b for a, b in zip(_bytes(f"{model}-skip-hf-names", tp), base, strict=True)]
    assert ours[2] == ours[0]
    if tp == "1":
        assert ours[1] - ours[0] == {"qwen3-5-vl-fp8": 30_401_280, "gemma-3-mm-fp8": 3_144_960}[model]
