"""kvcli against vLLM 0.33 on the size fuzz's kept cases (tests/data/size_fuzz/cases.json: a
drawn variation of a census config, its serving options and vLLM's answer, recorded by
record.py there; README.md says how). Each case: `kvcli config --model-config F --json` with
the case's --tp, --kv-cache-dtype, --max-model-len and --block-size on the case's available
bytes gives vLLM's KV cache groups (block size, page bytes, layers) and blocks, kvcore's
weights estimate vLLM's parameter bytes on rank 0, or both refuse (kvcli in one line, exit 2).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from size_fuzz_verdict import cli_args, verdict
from typer.testing import CliRunner

from kvcli.app import app

DATA = Path(__file__).parent / "data" / "size_fuzz"
CASES = {c["id"]: c for c in json.loads((DATA / "cases.json").read_text())}


@pytest.mark.parametrize("case_id", sorted(CASES))
def test_kvcli_sizes_the_case_as_vllm(case_id: str, tmp_path: Path) -> None:
    case = CASES[case_id]
    cause, detail = verdict(case["config"], case["options"], case["vllm"],
                            tmp_path / "config.json")
    assert cause == "equal", (case["arch"], detail)


def _equal(case_id: str, tmp_path: Path) -> dict:
    case = CASES[case_id]
    assert verdict(case["config"], case["options"], case["vllm"],
                   tmp_path / "config.json")[0] == "equal"
    return case


@pytest.mark.parametrize(("case_id", "arch", "tie", "vllm_bytes", "kvcli_before"), [
    # (an lm_head of its own whatever the flag: kvcli left it out)
    ("s0-0011", "DeepseekForCausalLM", True, 9_465_389_056, 9_454_379_008),
    ("s0-0031", "Glm4MoeLiteForCausalLM", True, 689_529_360, 372_335_120),
    ("s0-0233", "DeepseekV32ForCausalLM", True, 2_202_533_376, 1_739_193_856),    # (TP 4)
    # (logits from the embedding, no lm_head: kvcli counted one)
    ("s0-0024", "Gemma2ForCausalLM", False, 458_777_600, 720_921_600),
    # (a wrapper's language model is its text config's class: NemotronHForCausalLM's lm_head)
    ("s0-0544", "NemotronH_Nano_VL_V2", True, 6_645_117_952, 5_302_940_672),
])
def test_the_class_decides_the_heads_tie_not_the_flag(case_id: str, arch: str, tie: bool,
                                                       vllm_bytes: int, kvcli_before: int,
                                                       tmp_path: Path) -> None:
    case = _equal(case_id, tmp_path)
    text = case["config"].get("llm_config", case["config"])
    assert case["arch"] == arch and text["tie_word_embeddings"] is tie
    assert case["vllm"]["rank0_bytes"] == vllm_bytes != kvcli_before


@pytest.mark.parametrize(("case_id", "tp", "vllm_bytes", "kvcli_before"), [
    # Llama, 5 layers of 4,096, attention_bias: o_proj's 4,096 a layer, whole on each rank
    ("s0-0053", 2, 621_965_312, 621_924_352),
    # InternLM3's Llama layers, attention_bias and mlp_bias (gate_up's split, down's whole)
    ("s0-0047", 4, 114_488_064, 114_445_824),
    # Llama at TP 8, 1 layer of 4,096, MLP 184 wide, both biases: 46 + 4,096 + 4,096 more
    ("s0-0055", 8, 82_922_588, 82_906_112),
])
def test_llamas_o_proj_and_mlp_biases_are_counted(case_id: str, tp: int, vllm_bytes: int,
                                                  kvcli_before: int, tmp_path: Path) -> None:
    case = _equal(case_id, tmp_path)
    assert case["options"]["tp"] == tp and case["config"]["attention_bias"] is True
    assert case["vllm"]["rank0_bytes"] == vllm_bytes != kvcli_before


@pytest.mark.parametrize(("case_id", "arch", "groups", "blocks", "before"), [
    # (vLLM's answer as ../data/size_fuzz first recorded it, aligning before the layers were
    # built, and kvcli sized it until 2026-12-08: block, page, layers; blocks)
    ("s0-0028", "Qwen3NextForCausalLM", [[16, 268288, [0]]], 4002, ([320, 327680], 3276)),
    ("s0-0049", "JambaForCausalLM", [[16, 4864, [0]]], 662261, ([32, 8192], 393217)),
    ("s0-0066", "NemotronHForCausalLM", [[16, 1329152, [0]]], 2423, ([1312, 1343488], 2397)),
    ("s0-0288", "GraniteMoeHybridForCausalLM", [[16, 4229120, [0, 1, 2]]], 253,
     ([272, 4456448], 240)),
    ("s0-0336", "GraniteMoeHybridForCausalLM", [[16, 2124800, [0]]], 2021,
     ([272, 2228224], 1927)),
    ("s0-0335", "Qwen3_5ForConditionalGeneration", [[16, 270336, [0, 1]]], 7943,
     ([320, 327680], 6553)),
    ("s0-0408", "NemotronHForCausalLM", [[16, 2689024, [0, 2, 4]]], 33, ([2640, 2703360], 33)),
    ("s0-0427", "Qwen3_5MoeForConditionalGeneration", [[32, 137216, [0, 1]]], 3912,
     ([192, 196608], 2730)),     # (--block-size 32: the configured block kept)
    ("s0-0492", "Lfm2ForCausalLM", [[16, 256, [0]]], 4194304, ([16, 2048], 524288)),
    ("s0-0544", "NemotronH_Nano_VL_V2", [[16, 2689024, [0, 2, 4]]], 399, ([672, 2752512], 390)),
])
def test_a_hybrid_cut_to_mamba_layers_aligns_nothing(case_id: str, arch: str, groups: list,
                                                     blocks: int, before: tuple,
                                                     tmp_path: Path) -> None:
    """Mamba layers alone (a vision tower's attention is no KV cache layer): vLLM's worker
    aligns the block only where it finds an attention backend once the layers are built
    (`update_block_size_for_backend`), so the Mamba layers keep the configured block and an
    unpadded page, whatever the class; record.py had aligned them before building."""
    case = _equal(case_id, tmp_path)
    assert case["arch"] == arch and case["vllm"]["groups"] == groups
    assert case["vllm"]["num_blocks"] == blocks
    assert groups[0][0] == (case["options"]["block_size"] or 16)
    assert groups[0][:2] != before[0] and (blocks != before[1] or case_id == "s0-0408")


@pytest.mark.parametrize(("case_id", "arch", "page", "kvcli_before"), [
    ("s0-0021", "FalconMambaForCausalLM", 471_680, 205_824),    # intermediate_size 3,520
    ("s0-0246", "MambaForCausalLM", 115_200, 55_296),           # intermediate_size 3,200
])
def test_mamba1_is_its_intermediate_size_wide(case_id: str, arch: str, page: int,
                                              kvcli_before: int, tmp_path: Path) -> None:
    """vLLM's MambaMixer reads config.json's intermediate_size (transformers computes expand x
    hidden, then the file's key overrides it); kvcli took expand x hidden (1,536)."""
    case = _equal(case_id, tmp_path)
    assert case["arch"] == arch and case["config"]["expand"] * case["config"]["hidden_size"] \
        != case["config"]["intermediate_size"]
    assert [g[1] for g in case["vllm"]["groups"]] == [page] != [kvcli_before]


@pytest.mark.parametrize(("case_id", "arch", "words"), [
    ("s0-0051", "Lfm2MoeForCausalLM", "No Lfm2MoeSparseMoeBlock layer found in the model.layers."),
    ("s0-0078", "Step3p5ForCausalLM", "No MoE layers found in the model."),
    ("s0-0266", "Glm4MoeLiteForCausalLM", "No Glm4MoE layer found in model.layers."),
    ("s0-0316", "Glm4MoeForCausalLM", "No Glm4MoE layer found in model.layers."),
    ("s0-0326", "HYV3ForCausalLM", "No MoE layer found in model.layers."),
])
def test_a_moe_class_with_no_moe_layer_is_refused_in_vllms_words(case_id: str, arch: str,
                                                                 words: str,
                                                                 tmp_path: Path) -> None:
    """Its dense-layer keys cover every drawn layer: vLLM raises as it builds the class;
    kvcli sized it before."""
    case = _equal(case_id, tmp_path)
    assert case["arch"] == arch and "".join(case["vllm"]["refused"]).endswith(words)
    r = CliRunner().invoke(app, cli_args(tmp_path / "config.json", case["options"]))
    assert r.exit_code == 2 and r.stderr.endswith(f"vLLM refuses to build it: '{words}'\n")


@pytest.mark.parametrize(("case_id", "arch", "vllm_bytes", "kvcli_before"), [
    # float32 router (786,432 a 4-layer, 64-expert model), q/k norms as wide as the heads
    ("s0-0060", "MiniMaxM2ForCausalLM", 7_879_805_440, 7_878_227_968),
    ("s0-0309", "Exaone4ForCausalLM", 5_785_344, 5_785_088),             # q/k norms
    ("s0-0191", "HunYuanDenseV1ForCausalLM", 4_407_421_440, 4_407_377_920),  # norms, o bias
    ("s0-0210", "Olmo3ForCausalLM", 247_753_728, 247_744_512),  # full-width norms, whole
    ("s0-0291", "FalconH1ForCausalLM", 1_671_241_728, 1_671_254_016),  # no mamba_rms_norm
    ("s0-0383", "FalconH1ForCausalLM", 3_363_457_152, 3_363_528_832),  # attention unbiased
    ("s0-0198", "SmolLM3ForCausalLM", 602_451_968, 602_421_760),        # mlp_bias
    # (transformers' shared_mlp beside the experts, intermediate_size wide, split over TP 4)
    ("s0-0482", "HunYuanMoEV1ForCausalLM", 390_764_032, 221_681_152),
    # (hidden 256, block_dim and conv_dim 64: the MLP and the short conv are 64 wide)
    ("s0-0376", "Lfm2ForCausalLM", 2_103_552, 6_823_296),
    # (layer 0 dense, float32 routers, gated and normed attention unbiased, four norms a layer)
    ("s0-0406", "AfmoeForCausalLM", 5_253_962_496, 6_342_922_240),
    # (attention_bias: q(kv) and o biases, a KV-shared layer's q_proj's alone)
    ("s0-0368", "Gemma3nForCausalLM", 776_901_760, 776_894_592),
    ("s0-0516", "Gemma4ForCausalLM", 546_464_256, 546_425_856),
    # (four norms a layer and q/k norms, whole on both ranks: the Transformers backend's)
    ("s0-0171", "Kolibri1ForCausalLM", 3_317_477_888, 3_317_454_848),
    # (a sink a head, split over TP 4; granitemoe.py's attention unbiased whatever the flag)
    ("s0-0682", "GraniteMoeSWAForCausalLM", 1_122_066_512, 1_122_079_232),
    ("s0-0357", "GraniteSWAForCausalLM", 38_536_968, 38_470_912),   # (sinks, mlp_bias)
    ("s0-0408", "NemotronHForCausalLM", 231_843_712, 231_748_096),  # (the MLP's mlp_bias)
    # (a text_config of model_type qwen2_vl_text / qwen2_5_vl_text: Qwen2's QKV bias)
    ("s0-0540", "Qwen2VLForConditionalGeneration", 8_222_070_784, 8_221_968_384),
    ("s0-0407", "Qwen2_5_VLForConditionalGeneration", 4_196_431_744, 4_196_401_024),
    # (48 query heads a layer for the config's 16, layer 0 dense, g_proj, q/k norms, TP 8)
    ("s0-0600", "LagunaForCausalLM", 20_838_144, 21_970_944),
    # (up and down, no gate; LayerNorms' biases; Jais2's mlp_bias, Nemotron's attention_bias)
    ("s0-0170", "Jais2ForCausalLM", 1_019_785_728, 1_285_453_312),
    ("s0-0065", "NemotronForCausalLM", 599_904_256, 801_212_416),
    ("s0-0657", "ArceeForCausalLM", 239_884_288, 278_550_528),      # (up and down, no gate)
    ("s0-0695", "Cohere2ForCausalLM", 4_563_468_288, 4_563_542_016),    # (unbiased attention)
    ("s0-0001", "ApertusForCausalLM", 10_669_064, 14_338_560),  # (up, down, XIELU, q/k norms)
    # (qkv and o biased whatever the flag, LayerNorms' biases, the LM head's bias)
    ("s0-0070", "PhiMoEForCausalLM", 147_512_640, 147_470_336),
    ("s0-0067", "OlmoeForCausalLM", 1_425_819_648, 1_425_817_600),  # (whole q/k norms, unbiased)
    ("s0-0589", "OlmoForCausalLM", 80_887_808, 80_890_880),     # (norms without weights)
    # (attention_bias true, qkv_bias absent: the QKV unbiased)
    ("s0-0244", "Qwen3_5MoeForCausalLM", 2_503_513_344, 2_503_525_632),
    # (mlp_bias: gate_up's split, down's whole; attention never biased)
    ("s0-0163", "CwmForCausalLM", 2_519_353_344, 2_519_076_864),
    # (o_proj's bias whole on the 8 ranks, q/k norms a head wide)
    ("s0-0172", "MellumForCausalLM", 119_758_592, 119_750_912),
    # (mlp_bias, and use_post_norm's two more norms a layer)
    ("s0-0045", "HyperCLOVAXForCausalLM", 37_544_192, 37_506_560),
    # (mlp_bias: transformers' SeedOssMLP, gate_up's split, down's whole)
    ("s0-0414", "SeedOssForCausalLM", 5_998_501_888, 5_998_026_752),
    # (q/k norms, the float32 e_score_correction_bias of every MoE layer)
    ("s0-0019", "ExaoneMoEForCausalLM", 4_815_379_200, 4_815_376_384),
    # (o_proj's bias where attention_bias, whole on both ranks)
    ("s0-0396", "VaultGemmaForCausalLM", 218_831_616, 218_830_080),
    # (gemma.py's attention never biased: PaliGemma's text model, attention_bias drawn true)
    ("s0-0592", "PaliGemmaForConditionalGeneration", 289_350_464, 289_355_584),
    # (llama4.py's decoder layer builds its attention unbiased)
    ("s0-0123", "Llama4ForConditionalGeneration", 367_297_792, 367_300_608),
    # (float32 router and expert_bias; attention unbiased whatever attention_bias says)
    ("s0-0504", "HYV3ForCausalLM", 3_364_102_192, 3_364_085_760),
    # (5 Mamba layers, no hybrid one: no shared block, no adapter is built)
    ("s0-0081", "Zamba2ForCausalLM", 564_165_440, 835_368_768),
    # (attention_bias: Llama's o_proj bias, whole on both ranks)
    ("s0-0083", "AriaForConditionalGeneration", 2_879_995_648, 2_879_962_880),
    # (mlp_bias: the shared experts' LlamaMLP biases)
    ("s0-0709", "AriaForConditionalGeneration", 1_914_699_520, 1_914_617_600),
    # (padded_vocab_size's rows, vocab_size drawn apart from it)
    ("s0-0555", "ChatGLMModel", 109_709_824, 44_567_040),
    # (its LlamaModel's o_proj bias where attention_bias)
    ("s0-0289", "Phi4MMForCausalLM", 1_555_562_832, 1_555_544_400),
])
def test_family_weights_as_vllm_builds_them(case_id: str, arch: str, vllm_bytes: int,
                                            kvcli_before: int, tmp_path: Path) -> None:
    case = _equal(case_id, tmp_path)
    assert case["arch"] == arch
    assert case["vllm"]["rank0_bytes"] == vllm_bytes != kvcli_before


GRANITE = "The dimensions for the Mamba head state do not match the model intermediate_size"


@pytest.mark.parametrize(("case_id", "arch", "vllms", "kvclis"), [
    ("s0-0033", "GptOssForCausalLM", "ZeroDivisionError: integer modulo by zero",
     "KV heads are fewer than the ranks"),
    ("s0-0324", "SmolLM3ForCausalLM", "Padding_idx must be within num_embeddings",
     "'Padding_idx must be within num_embeddings'"),
    ("s0-0010", "DbrxForCausalLM", "tie_word_embeddings is not supported for DBRX models.",
     "tie_word_embeddings is not supported for DBRX models"),
    ("s0-0352", "GraniteMoeHybridForCausalLM", GRANITE, f"'{GRANITE}'"),
    # (DeepseekV2Config's 1,407-wide experts, two shared: 2,814 at TP 4, 1,407 at TP 2)
    ("s0-0012", "DeepseekV2ForCausalLM", "AssertionError", "experts are 1407 wide"),
    ("s0-0610", "DeepseekV2ForCausalLM", "AssertionError", "experts are 1407 wide"),
    # (its b and a projections, a value head each, assert it as they are built: bare)
    ("s0-0076", "Qwen3_5MoeForCausalLM", "AssertionError",
     "(linear_num_value_heads) do not split over the ranks, and vLLM refuses to build it; got 4"),
    # (head_dim drawn: Phi-3-vision's 48 LongRoPE factors for 32 frequencies; Keye-VL 1.5's
    # mrope_section summing to 64 for a rotary half of 128)
    ("s0-0241", "Phi3VForCausalLM", "Attempting to broadcast a dimension of length 32",
     "field 'rope_scaling.short_factor': 48 factors for a rotary dimension of 64"),
    ("s0-0480", "KeyeVL1_5ForConditionalGeneration", "AssertionError",
     "field 'rope_scaling.mrope_section': sums to 64, not half the rotary dimension of 256"),
])
def test_what_vllm_refuses_kvcli_refuses_in_one_line(case_id: str, arch: str, vllms: str,
                                                    kvclis: str, tmp_path: Path) -> None:
    """kvcli sized each of these before."""
    case = _equal(case_id, tmp_path)
    assert case["arch"] == arch and vllms in "".join(case["vllm"]["refused"])
    r = CliRunner().invoke(app, cli_args(tmp_path / "config.json", case["options"]))
    assert r.exit_code == 2 and kvclis in r.stderr and r.stderr.count("\n") == 1


@pytest.mark.parametrize(("key", "value"), [("num_attention_heads_per_layer", [48, 48]),
                                            ("mlp_layer_types", ["dense", "moe", "sparse"])])
def test_lagunas_per_layer_lists_refused_by_name(key: str, value: list, tmp_path: Path) -> None:
    case = CASES["s0-0600"]
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**case["config"], key: value}))
    r = CliRunner().invoke(app, cli_args(path, case["options"]))
    assert r.exit_code == 2 and r.stderr.count("\n") == 1
    assert f"field '{key}'" in r.stderr and "expected a list of 3 (num_hidden_layers)" in r.stderr
