"""Architectures vLLM 0.33 serves with a recurrent or linear-attention state kvcli does not
model: their config.json is refused by name, since read as plain attention it would size a
cache vLLM never allocates (a quiet lie).

Each maps to what its layers keep in vLLM (model_executor/models/<file>.py).
"""

from __future__ import annotations

from kvcore.errors import clipped
from kvcore.models.encoder_only import ENCODER_ONLY
from kvcore.models.retired import RETIRED

NOT_MODELLED = {
    "BailingMoeV2_5ForCausalLM": "linear-attention layers",
    "BailingMoeV3ForCausalLM": "Gated DeltaNet layers",
    "OlmoHybridForCausalLM": "linear-attention layers",
    "AliceAIForCausalLM": "linear-attention layers",
    # found by the KV-spec census (tests/data/kv_spec_census/README.md), read otherwise as
    # plain attention with one cache a layer:
    "HrmTextForCausalLM": "non-causal attention layers run over several reasoning cycles, a "
                          "cache for each layer in each cycle",
    "MiniCPM3ForCausalLM": "latent-projected attention caching qk_nope_head_dim + "
                           "qk_rope_head_dim a head (not head_dim)",
    "WhisperForConditionalGeneration": "an audio encoder and cross-attention caches sized by it",
    "BagelForConditionalGeneration": "a language model under llm_config with its own "
                                     "generation experts",
    # Gemma 4's text model is read (`kvcore.models.kv_sharing`)
    "DiffusionGemmaForBlockDiffusion": "block diffusion over Gemma 4's layers (a canvas of "
                                       "tokens denoised together, not one token a step)",
    # not built here either (vllm/models/minimax_m3, step5: an indexer as DeepSeek-V3.2's;
    # LFM2-VL: LFM2's text model; Kimi-K3's, Kimi Linear's, is read: `models/kimi_linear`)
    **dict.fromkeys(("MiniMaxM3SparseForCausalLM", "MiniMaxM3SparseForConditionalGeneration",
                     "Step5ForCausalLM", "Step5ForConditionalGeneration"),
                    "sparse attention whose indexer keeps a cache of its own"),
    # read from vLLM's source, not built here (tests/data/kv_spec_census/README.md: the rows
    # kvcli read unchecked): cohere_asr.py, moondream3.py, nemotron_h.py
    "CohereAsrForConditionalGeneration": "an audio encoder and a decoder whose cross-attention "
                                         "caches the encoder's output",
    "Moondream3ForCausalLM": "a text model built from config['text'] by Moondream's own keys "
                             "(dim, n_layers, n_kv_heads; MoE from moe.start_layer)",
    "NemotronHPuzzleForCausalLM": "heterogeneous layers (per-layer configs from block_configs: "
                                  "heads, windows and experts a layer)",
    # the registry's other classes read against vLLM's source (tests/data/kv_spec_census/
    # README.md, "Every class of the registry"; not built here): vllm/models/<name>/ and
    # model_executor/models/<file>.py
    **dict.fromkeys(("Glm5NextForCausalLM", "Glm5NextForConditionalGeneration"), (
        "sparse MLA whose indexer keeps a compressed cache and a circular-buffer tail of its "
        "own, beside Kimi Delta Attention layers (vllm/models/glm5next)")),
    **dict.fromkeys(("Qwen4ExpForCausalLM", "Qwen4ExpForConditionalGeneration"), (
        "QSA sparse attention with compressed and circular-buffer caches, MLA, linear-attention "
        "states and per-layer-embedding layers (vllm/models/qwen4_exp)")),
    **dict.fromkeys(("InklingForCausalLM", "InklingForConditionalGeneration"), (
        "a short-convolution state kept as a second sliding-window cache beside each layer's "
        "attention (vllm/models/inkling)")),
    "DeepseekV41ForCausalLM": (
        "compressed sparse attention, as DeepSeek-V4's: sliding-window and compressed MLA "
        "caches, an indexer cache and compressor states in one block-outermost pool "
        "(vllm/models/deepseek_v41)"),
    "Dots3NoteForCausalLM": (
        "sparse MLA with an indexer cache (DeepSeek-V3.2's) beside sliding-window MLA layers "
        "padded to its rows (vllm/models/dots3_note)"),
    # (their model types are refused as MLA variants (`mla.MLA_NOT_MODELLED`); by name too, so
    # a config naming the class under another model_type is not sized as DeepSeek's MLA)
    "AXK1ForCausalLM": "multi-head latent attention of its own model (AXK1.py: layers dense "
                       "or sparse by mlp_layer_types)",
    "HYV4ForCausalLM": "multi-head latent attention with a lightning indexer, 'full' or 'shared' "
                       "a layer by indexer_types, and learnable sinks (vllm/models/hy_v4)",
    # (its MiMo-V2 text model is read: `kvcore.models.mimo_v2`)
    "MiMoV2OmniForCausalLM": "a windowed vision transformer and an audio encoder (mimo_v2_omni.py) "
                             "kvcli does not count",
    # (its caches are Qwen3.5's; its text config is remote code kvcli cannot key, and its
    # weights are not Qwen3.5-MoE's)
    "InternS2MobiusForConditionalGeneration": (
        "Gated DeltaNet layers (Qwen3.5's) under its own text config, whose routed experts "
        "are num_blocks banks shared across the layers (layer i runs bank i % num_blocks) "
        "beside a gated shared expert a layer"),
    **dict.fromkeys(("NemotronParseForConditionalGeneration", "RadioMBartPrefixForCausalLM"), (
        "an MBart decoder whose cross-attention caches the vision encoder's output")),
    "HfMoondream": "a text model built from config['text'] by Moondream's own keys (dim, "
                   "n_layers, n_kv_heads; MoE from moe.start_layer)",
    # encoder-only pooling classes: EncoderOnlyAttention keeps no KV cache at all
    **dict.fromkeys(sorted(ENCODER_ONLY), "bidirectional (encoder-only) attention, for which it "
                                          "keeps no KV cache at all"),
}


# model types refused as their class is where a config names no architecture (else read
# further, and refused for a field whose words say nothing of the cache)
BY_MODEL_TYPE: dict[str, str] = {}


def refusal(architectures: object, model_type: object = None) -> tuple[str, str] | None:
    """The field and the one line a config is refused with for its architecture (or, naming
    none, its model type): not modelled, or no longer served by vLLM 0.33; or None."""
    if architectures is not None and not isinstance(architectures, str) and not (
            isinstance(architectures, list) and all(isinstance(a, str) for a in architectures)):
        # (vLLM's registry looks each name up, and refuses what it does not know: [1], false)
        return "architectures", ("must be a list of architecture names, got "
                                 f"{clipped(architectures)}")
    if not (isinstance(architectures, list) and architectures):
        arch = BY_MODEL_TYPE.get(model_type) if isinstance(model_type, str) else None
        return None if arch is None else (
            "model_type", _not_modelled(f"{model_type!r} (vLLM's {arch})", arch))
    arch = str(architectures[0])
    if arch in NOT_MODELLED:
        return "architectures", _not_modelled(arch, arch)
    if (last := RETIRED.get(arch)) is not None:
        return "architectures", (f"{arch}: vLLM 0.33 no longer serves it (its registry lists it "
                                 f"as supported until {last}), so there is no vLLM cache to size")
    return None


def _not_modelled(name: str, arch: str) -> str:
    return (f"{name}: vLLM 0.33 serves it with {NOT_MODELLED[arch]}, which kvcli does not "
            "model (sizing it as attention would not be vLLM's cache)")
