# ruff: noqa
"""Dev tool (never run by tests): vLLM 0.33's start-up refusal of a multimodal model whose
largest item does not fit --max-num-batched-tokens while chunked mm input is disabled
(encoder_cache_manager.py `compute_mm_encoder_budget`), with the inputs vLLM decides it from:
`ModelConfig.is_mm_prefix_lm` (cuda.py forces --disable-chunked-mm-input when it is true) and
`supports_multimodal_inputs` (False when every limit is 0 or --language-model-only: no
MultiModalBudget is built at all). See README.md for the command."""
import json
import sys
import tempfile
from pathlib import Path

import vllm
from vllm.config import ModelConfig, SchedulerConfig
from vllm.model_executor.models.siglip import SiglipEncoderInfo
from vllm.multimodal import MULTIMODAL_REGISTRY
from vllm.v1.core.encoder_cache_manager import compute_mm_encoder_budget

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
from kvcore.models.presets import PRESETS  # noqa: E402

GEMMA3 = PRESETS["gemma-3-27b"][1]


def paligemma(size):
    return {"architectures": ["PaliGemmaForConditionalGeneration"], "model_type": "paligemma",
            "image_token_index": 257152, "projection_dim": 2048, "hidden_size": 2048,
            "torch_dtype": "bfloat16",
            "text_config": {"model_type": "gemma", "hidden_size": 2048, "num_hidden_layers": 2,
                            "num_attention_heads": 8, "num_key_value_heads": 1,
                            "intermediate_size": 16384, "vocab_size": 257216},
            "vision_config": {"model_type": "siglip_vision_model", "image_size": size,
                              "patch_size": 14, "hidden_size": 1152, "num_hidden_layers": 2,
                              "intermediate_size": 4304, "num_attention_heads": 16}}


PLAN = json.loads((Path(__file__).parents[1] / "sched_gemma" / "planning.json").read_text())


def gemma4(output_length=280, bidirectional="vision"):
    """sched_gemma's gemma4-default text model under Gemma 4's wrapper, no audio tower (with
    one, its processing info needs the HF processor: absent offline)."""
    text = dict(PLAN["gemma4-default"]["config"])
    text.pop("architectures", None)
    text["use_bidirectional_attention"] = bidirectional
    vision = {"model_type": "gemma4_vision"}
    if output_length is not None:
        vision["default_output_length"] = output_length
    return {"architectures": ["Gemma4ForConditionalGeneration"], "model_type": "gemma4",
            "text_config": text, "vision_config": vision, "audio_config": None}


def item_tokens(mc):
    """Each served modality's largest item's tokens, as MultiModalBudget counts them: the
    class's get_mm_max_tokens_per_item (Gemma 4's), filtered to the modalities with a limit
    above 0 (MultiModalBudget's `tower_modalities`). Gemma 3 and PaliGemma answer None there and
    vLLM counts a dummy item's embeddings, which needs the HF processor (the tokenizer), absent
    offline: PaliGemma's from SiglipEncoderInfo at the config's image size (its dummy image's),
    Gemma 3's config mm_tokens_per_image (without pan-and-scan, vLLM's default)."""
    info = MULTIMODAL_REGISTRY.get_processing_info(mc)
    limits = info.allowed_mm_limits
    served = {m for m in info.supported_mm_limits if limits.get(m, 0) > 0}
    hf = mc.hf_config
    every = info.get_mm_max_tokens_per_item(seq_len=mc.max_model_len,
                                            mm_counts=dict.fromkeys(served, 1))
    if every is None and hf.model_type == "paligemma":
        s = hf.vision_config.image_size
        every = {"image": SiglipEncoderInfo(hf).get_num_image_tokens(image_width=s,
                                                                     image_height=s)}
    elif every is None:
        every = {"image": hf.mm_tokens_per_image}
    return {m: n for m, n in every.items() if m in served}


CASES = [  # (name, config, limit_mm_per_prompt, language_model_only, budgets)
    ("gemma-3-27b", GEMMA3, None, False, [128, 255, 256, 2048]),
    ("gemma-3-27b image 0", GEMMA3, {"image": 0}, False, [128]),
    ("gemma-3-27b language-model-only", GEMMA3, None, True, [128]),
    ("gemma-3-27b image 1", GEMMA3, {"image": 1}, False, [128]),
    ("paligemma-224", paligemma(224), None, False, [255, 256]),
    ("paligemma-448", paligemma(448), None, False, [1023, 1024]),
    ("paligemma-896", paligemma(896), None, False, [2048, 4096]),
    ("paligemma-896 image 0", paligemma(896), {"image": 0}, False, [2048]),
    ("gemma4 vision", gemma4(), None, False, [2048, 2495, 2496]),
    ("gemma4 vision, video 0", gemma4(), {"video": 0}, False, [279, 280]),
    ("gemma4 vision, video 8 frames", gemma4(), {"video": {"count": 1, "num_frames": 8}},
     False, [623, 624]),
    ("gemma4 vision, image 0", gemma4(), {"image": 0}, False, [2048]),
    ("gemma4 vision, image 0 video 0", gemma4(), {"image": 0, "video": 0}, False, [128]),
    ("gemma4 vision, language-model-only", gemma4(), None, True, [128]),
    ("gemma4 causal", gemma4(bidirectional=None), None, False, [128]),
]


def main():
    out = {"vllm_version": vllm.__version__, "cases": []}
    for name, cfg, limits, lmo, budgets in CASES:
        with tempfile.TemporaryDirectory() as d:
            Path(d, "config.json").write_text(json.dumps(cfg))
            mc = ModelConfig(model=d, skip_tokenizer_init=True, seed=0, max_model_len=8192,
                             limit_mm_per_prompt=limits, language_model_only=lmo)
        supports = mc.supports_multimodal_inputs
        prefix = mc.is_mm_prefix_lm
        tokens = item_tokens(mc) if supports else {}
        rec = {"case": name, "config": cfg, "limit_mm_per_prompt": limits,
               "language_model_only": lmo,
               "is_mm_prefix_lm": prefix, "supports_multimodal_inputs": supports,
               "max_tokens_per_item": tokens, "budgets": {}}
        for b in budgets:
            # cuda.py: forced when is_mm_prefix_lm and the model is multimodal; no
            # MultiModalBudget (and so no check) when supports_multimodal_inputs is False
            sc = SchedulerConfig(max_num_batched_tokens=b, max_model_len=8192,
                                 is_encoder_decoder=False, is_multimodal_model=True,
                                 disable_chunked_mm_input=prefix)
            if not supports:
                rec["budgets"][b] = "no MultiModalBudget built: no check"
                continue
            try:
                rec["budgets"][b] = list(compute_mm_encoder_budget(sc, tokens))
            except ValueError as err:
                # (in pieces of 70 characters, joined by "": lines of the file stay short)
                text = f"ValueError: {err}"
                rec["budgets"][b] = [text[i:i + 70] for i in range(0, len(text), 70)]
        out["cases"].append(rec)
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
