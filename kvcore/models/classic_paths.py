"""Where vLLM 0.33 builds the pre-Llama decoders' linears (gpt2.py, gpt_j.py, bloom.py,
opt.py, falcon.py, chatglm.py, stablelm.py: their module paths; the Transformers backend's for
GPT-NeoX, Phi, GPTBigCode and StarCoder2), so that an fp8 checkpoint's ``ignored_layers`` is
matched as vLLM matches it: a linear whose path the list holds exactly is built unquantised
(its weight in the model dtype, no scales); a fused linear of the model's
``packed_modules_mapping`` (OPT's ``qkv_proj`` of q/k/v_proj, the backend's Phi's and
StarCoder2's) also when the list names all its shards, and vLLM refuses some
(`kvcore.models.fp8_ignored.skipped`); where the file has none (GPT-J's, StableLM's) shards
named one by one name nothing. The backend's lists are renamed first
(`kvcore.models.backend_renames`). Checked per rank: tests/data/weights_census/family_lists/.
"""

from __future__ import annotations

from kvcore.models.geometry import ModelGeometry

# model_type: (the decoder layers, then a layer's QKV, output, MLP up and down projections)
PATHS: dict[str, tuple[str, str, str, str, str]] = {
    "gpt2": ("transformer.h", "attn.c_attn", "attn.c_proj", "mlp.c_fc", "mlp.c_proj"),
    "gptj": ("transformer.h", "attn.qkv_proj", "attn.out_proj", "mlp.fc_in", "mlp.fc_out"),
    "bloom": ("transformer.h", "self_attention.query_key_value", "self_attention.dense",
              "mlp.dense_h_to_4h", "mlp.dense_4h_to_h"),
    "opt": ("model.decoder.layers", "self_attn.qkv_proj", "self_attn.out_proj", "fc1", "fc2"),
    "falcon": ("transformer.h", "self_attention.query_key_value", "self_attention.dense",
               "mlp.dense_h_to_4h", "mlp.dense_4h_to_h"),
    "chatglm": ("transformer.encoder.layers", "self_attention.query_key_value",
                "self_attention.dense", "mlp.dense_h_to_4h", "mlp.dense_4h_to_h"),
    "stablelm": ("model.layers", "self_attn.qkv_proj", "self_attn.o_proj",
                 "mlp.gate_up_proj", "mlp.down_proj"),
    # (the Transformers backend's: the HF modules' names under the base model at model.;
    # Phi's q/k/v_proj fused into qkv_proj by its fuser, GPTBigCode's c_attn kept whole)
    "gpt_neox": ("model.layers", "attention.query_key_value", "attention.dense",
                 "mlp.dense_h_to_4h", "mlp.dense_4h_to_h"),
    "phi": ("model.layers", "self_attn.qkv_proj", "self_attn.dense", "mlp.fc1", "mlp.fc2"),
    "gpt_bigcode": ("model.h", "attn.c_attn", "attn.c_proj", "mlp.c_fc", "mlp.c_proj"),
    "starcoder2": ("model.layers", "self_attn.qkv_proj", "self_attn.o_proj", "mlp.c_fc",
                   "mlp.c_proj"),
}
# (OPT's projections around a narrower embedding: opt.py's OPTDecoder, whole on every rank)
OPT_PROJECTIONS = ("model.decoder.project_in", "model.decoder.project_out")

# (the LM head where it is not at lm_head: chatglm.py's ChatGLMModel's output_layer, which an
# exclude list naming lm_head leaves quantised)
_HEADS = {"chatglm": "transformer.output_layer"}


def head_path(model_type: str) -> str:
    """The LM head's vLLM path (a list matched against it)."""
    return _HEADS.get(model_type, "lm_head")


def layer_paths(g: ModelGeometry, i: int) -> tuple[str, str, str, str]:
    """Layer `i`'s QKV, output, up and down projections' vLLM paths (the order of
    `kvcore.models.classic_weights.linears`)."""
    layers, *linears = PATHS[g.model_type]
    qkv, o, up, down = (f"{layers}.{i}.{name}" for name in linears)
    return qkv, o, up, down
