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


def item_tokens(mc):
    """The largest image's tokens as the class's processing info counts them (Gemma 3's
    processor needs the tokenizer, absent offline: its config's mm_tokens_per_image, what
    Gemma3ProcessingInfo returns without pan-and-scan, vLLM's default)."""
    hf = mc.hf_config
    if hf.model_type == "paligemma":
        info = SiglipEncoderInfo(hf)
        s = hf.vision_config.image_size
        return info.get_num_image_tokens(image_width=s, image_height=s)
    return hf.mm_tokens_per_image


CASES = [  # (name, config, limit_mm_per_prompt, language_model_only, budgets)
    ("gemma-3-27b", GEMMA3, None, False, [128, 255, 256, 2048]),
    ("gemma-3-27b image 0", GEMMA3, {"image": 0}, False, [128]),
    ("gemma-3-27b language-model-only", GEMMA3, None, True, [128]),
    ("gemma-3-27b image 1", GEMMA3, {"image": 1}, False, [128]),
    ("paligemma-224", paligemma(224), None, False, [255, 256]),
    ("paligemma-448", paligemma(448), None, False, [1023, 1024]),
    ("paligemma-896", paligemma(896), None, False, [2048, 4096]),
    ("paligemma-896 image 0", paligemma(896), {"image": 0}, False, [2048]),
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
        tokens = item_tokens(mc)
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
                rec["budgets"][b] = list(compute_mm_encoder_budget(sc, {"image": tokens}))
            except ValueError as err:
                # (in pieces of 70 characters, joined by "": lines of the file stay short)
                text = f"ValueError: {err}"
                rec["budgets"][b] = [text[i:i + 70] for i in range(0, len(text), 70)]
        out["cases"].append(rec)
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
