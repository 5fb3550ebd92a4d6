"""kvcli's per-layer KV cache specs against vLLM 0.33's, for every architecture of vLLM's
registry it could build here (tests/data/kv_spec_census/: record_kv_specs.py, README.md).

Each recorded config.json is read as `kvcli config --model-config FILE` reads it; kvcli must
build vLLM's specs exactly (kind, block size, heads, head size, dtype, window or chunk, Mamba
shapes, page bytes; the attention layers in vLLM's order), or refuse the architecture with one
line naming it. Before the census kvcli read Gemma 3n (KV sharing), Gemma 4 (KV sharing,
512-wide full layers), HRM-Text, MiniCPM3, Whisper, Bagel, Qwen2.5-Omni and Qwen3-ASR as plain
attention or refused them by a missing key (and Bloom, GPT-2, GPT-J, GPTBigCode, ChatGLM and DBRX
for a 'num_hidden_layers' their config classes spell otherwise), gave Mistral's, Phi-3's and StarCoder2's windows to
layers vLLM 0.33 runs in full, and Cohere2-MoE a window one token short.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from kv_census_rows import ANSWERS, ROWS, kvcli_specs, same, vllm_specs

from kvcore.errors import InputError
from kvcore.models import read_hf_config

BUILT = [a for a, r in ROWS.items() if "specs" in r]
# refused by name (one line), as the census found them
REFUSED = {
    "AXK1ForCausalLM", "HrmTextForCausalLM", "HYV4ForCausalLM",
    "MiniCPM3ForCausalLM", "BagelForConditionalGeneration",
    "WhisperForConditionalGeneration", "DiffusionGemmaForBlockDiffusion",
}


def test_every_registry_architecture_has_a_row() -> None:
    assert len(ROWS) == 274
    # (140: Gemma 3n's, Gemma 4's, Gemma 4 Unified's and LFM2-VL's multimodal classes built
    # since, with timm installed for MobileNetV5, Gemma 4's vision and audio configs and
    # LFM2's block_dim given; 142: DeepSeek-V3.2's and GLM-5's on the sparse MLA backend;
    # 143: GLM-4.7-Flash's, its first_k_dense_replace given; 144: LongCat-Flash's, its
    # checkpoint's mla_scale_q_lora, mla_scale_kv_lora and zero_expert_type given: two MLA
    # caches a decoder layer; 149: InternVLChatModel's and its kin's, H2OVL's, NVLM-D's,
    # Skywork-R1V's and InternS1's, with the remote-code config classes rewritten:
    # weights_census/internvl_chat/; 150: Qwen3-Omni's thinker, its vision image_size and
    # apply_vit_abs_pos_embed and text tie_word_embeddings given; 151:
    # DeepSeek-VL2's, its language_config and tile_tag given, its tokenizer lookup stood in for;
    # 154: MiniCPM-V's, Phi-3-vision's and Phi-4-multimodal's, from published configs with the
    # remote-code config classes rewritten: weights_census/mm_minicpm_idefics_phi; 155:
    # InternLM2ForCausalLM's, internvl_chat_config's InternLM2Config registered for internlm2;
    # 156: ERNIE-4.5-VL's, its -PT checkpoint's config with the remote class rewritten:
    # weights_census/mm_ernie; 158: Keye-VL's two classes, the same way; 160:
    # NemotronH_Nano_VL_V2's and MolmoForCausalLM's, the same way: weights_census/mm_nemo;
    # 163: Step3's text model and Step3-VL's, moe_layers_enum given as Step3's checkpoint
    # writes it, and GLM-4V's, ChatGLM's keys and an EVA2-CLIP vision_config given; 165:
    # MiniCPMO's and InternS1ProForConditionalGeneration's, published configs with the
    # remote-code config classes rewritten: weights_census/mm_audio; LightOnOCR's (its
    # published mistral3 config) and Granite 4 Vision's (a synthetic one with the
    # deepstack_layer_map its class leaves null): weights_census/mm_cohere; dots.ocr's, vLLM's
    # DotsOCRConfig registered for dots_ocr, and DeepSeek-OCR's and -OCR-2's, published configs
    # with the tokenizer stood in for: weights_census/mm_ocr; Ovis's, Ovis2.5's,
    # Ovis2.6's two, Eagle 2.5's and OpenCUA's, published configs (Ovis2.6's dense class a
    # tiny one) with the remote-code config classes rewritten: weights_census/mm_ovis, and
    # Kanana-V's, the same way; UltravoxModel's, its published config with the text and audio
    # configs written out: weights_census/mm_audio2; 187: DeciLMForCausalLM's, with the
    # stand-in of its remote config class: nemotron_nas; 188: Molmo2's, its remote config
    # class rewritten: weights_census/mm_molmo2)
    assert len(BUILT) == 188
    # (the Mamba-only rows, recorded while other changes modelled them: equal where built
    # (Zamba2 since tests/data/zamba2); LFM2's default config lacks the block_dim vLLM needs)
    assert set(ANSWERS["another_helper"]) - set(BUILT) == {"Lfm2ForCausalLM"}
    for arch, row in ROWS.items():
        assert ("specs" in row) != ("skipped" in row), arch


@pytest.mark.parametrize("arch", BUILT)
def test_kvcli_builds_vllms_specs_or_refuses_by_name(arch: str) -> None:
    row = ROWS[arch]
    ours = kvcli_specs(row, arch)
    if isinstance(ours, InputError):
        assert arch in REFUSED, str(ours)
        text = str(ours)
        assert "\n" not in text
        assert arch in text or repr(row["config"]["model_type"]) in text
        return
    assert arch not in REFUSED
    assert same(ours, vllm_specs(row)), (ours, vllm_specs(row))


def test_the_census_found_these_differences_fixed() -> None:
    """The rows that were quietly wrong, their numbers as vLLM records them."""
    mistral = vllm_specs(ROWS["MistralForCausalLM"])
    assert {s[0] for s in mistral} == {"FullAttentionSpec"}      # (its config: window 4,096)
    assert ROWS["MistralForCausalLM"]["config"]["sliding_window"] == 4096
    cohere = vllm_specs(ROWS["Cohere2MoeForCausalLM"])
    assert {s[5] for s in cohere if s[0] == "SlidingWindowSpec"} == {4097}
    gemma3n = ROWS["Gemma3nForCausalLM"]
    assert len(gemma3n["specs"]) == 5 and len(gemma3n["kv_sharing"]) == 3
    # Gemma 4's full layers cache 512 a head, its sliding ones 256
    assert {s["head_size"] for s in ROWS["Gemma4ForCausalLM"]["specs"]} == {256, 512}
    for arch, window in (("Phi3ForCausalLM", 2047), ("Starcoder2ForCausalLM", 4096)):
        assert ROWS[arch]["config"]["sliding_window"] == window
        assert {s[0] for s in vllm_specs(ROWS[arch])} == {"FullAttentionSpec"}


@pytest.mark.parametrize(("arch", "kv_heads", "head_size"), [
    ("GPT2LMHeadModel", 12, 64), ("GPTJForCausalLM", 16, 256), ("BloomForCausalLM", 8, 8),
    ("GPTBigCodeForCausalLM", 1, 64), ("ChatGLMModel", 2, 128), ("DbrxForCausalLM", 8, 128)])
def test_configs_naming_sizes_by_their_own_keys_are_read(arch: str, kv_heads: int,
                                                          head_size: int) -> None:
    """n_layer / n_head / n_embd (transformers' attribute_map), ChatGLM's num_layers and
    multi_query_group_num, DBRX's n_layers / d_model / attn_config.kv_n_heads, GPTBigCode's one
    KV head under multi_query: refused before for a missing 'num_hidden_layers'."""
    row = ROWS[arch]
    assert "num_hidden_layers" not in row["config"]
    assert {(s[2], s[3]) for s in vllm_specs(row)} == {(kv_heads, head_size)}
    assert same(kvcli_specs(row, arch), vllm_specs(row))


def test_perf_bills_the_window_vllm_layers_do_not_keep() -> None:
    """vLLM 0.33's perf.py bills a Mistral with a window as every layer sliding (perf.py:
    430-447), though its layers attend fully: the clock's count keeps perf.py's."""
    g = read_hf_config(ROWS["MistralForCausalLM"]["config"])
    assert g.count("full") == 8 and g.sliding_window is None
    assert g.perf_sliding() == (8, 4096)


@pytest.mark.parametrize("arch", ["MiniMaxText01ForCausalLM", "Phi4FlashForCausalLM",
                                  "MllamaForConditionalGeneration"])
def test_architectures_vllm_no_longer_serves_are_refused(arch: str) -> None:
    cfg = {"architectures": [arch], "model_type": "llama", "num_hidden_layers": 2,
           "num_attention_heads": 4, "hidden_size": 64, "max_position_embeddings": 128}
    with pytest.raises(InputError) as e:
        read_hf_config(cfg, source="config.json")
    assert e.value.field == "architectures"
    assert str(e.value).startswith(f"config.json: field 'architectures': {arch}: vLLM 0.33 no "
                                   "longer serves it")


@pytest.mark.parametrize("arch", ["CohereAsrForConditionalGeneration", "Moondream3ForCausalLM",
                                  "NemotronHPuzzleForCausalLM"])
def test_unbuilt_architectures_kvcli_misread_are_refused_by_name(arch: str) -> None:
    """Not buildable here; vLLM's source says kvcli's plain reading of their configs would not
    be vLLM's cache (cross-attention, Moondream's own text keys, per-layer configs): refused in
    one line."""
    assert "skipped" in ROWS[arch]
    with pytest.raises(InputError) as e:
        read_hf_config(ROWS[arch]["config"], source="config.json")
    assert e.value.field == "architectures"
    assert str(e.value).startswith(f"config.json: field 'architectures': {arch}: vLLM 0.33 "
                                   "serves it with ")



def _writes_or_aliases(tree: ast.AST) -> list[int]:
    """The lines where a module appends to, extends or assigns another's SUBSTITUTIONS, or
    names another's list as its own (`SUBSTITUTIONS = other.SUBSTITUTIONS`)."""
    def other(n: ast.AST) -> bool:
        return isinstance(n, ast.Attribute) and n.attr == "SUBSTITUTIONS"
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and (
                node.func.attr in ("append", "extend", "insert") and other(node.func.value)):
            lines.append(node.lineno)
        elif isinstance(node, (ast.Assign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(other(t) for t in targets) or (other(node.value) and any(
                    isinstance(t, ast.Name) and t.id == "SUBSTITUTIONS" for t in targets)):
                lines.append(node.lineno)
    return lines


def test_no_census_helper_writes_another_modules_substitutions() -> None:
    # (census_configs.SUBSTITUTIONS had been ovis_config's list itself, and kv_stand_ins.py
    # appended its line to census_configs' at import: each helper keeps a list of its own,
    # which record_kv_specs.py joins)
    data = Path(__file__).resolve().parent / "data"
    found = {str(p.relative_to(data)): lines for p in sorted(data.rglob("*.py"))
             # (a recorder's own run may add to the lists it imported)
             if not p.name.startswith("record") and p.name != "tower_recorder.py"
             and (lines := _writes_or_aliases(ast.parse(p.read_text(encoding="utf-8"))))}
    assert found == {}
