"""Where vLLM 0.33 builds the pre-Llama decoders' linears (gpt2.py, gpt_j.py, bloom.py,
opt.py, falcon.py, chatglm.py, stablelm.py: their module paths), so that an fp8 checkpoint's
``ignored_layers`` is matched as vLLM matches it: a linear whose path the list holds exactly
is built unquantised (its weight in the model dtype, no scales); a fused linear of the
model's ``packed_modules_mapping`` (OPT's ``qkv_proj`` of q/k/v_proj) also when the list names
all its shards, and vLLM refuses some (`kvcore.models.fp8_ignored.skipped`); where the file has
none (GPT-J's, StableLM's) shards named one by one name nothing. The classes served by the
Transformers backend (GPT-NeoX, Phi, GPTBigCode) name theirs otherwise and stay refused with a
list (`kvcore.models.quant_unsized`). Checked per rank: tests/data/weights_census/family_lists/.
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
}
# (OPT's projections around a narrower embedding: opt.py's OPTDecoder, whole on every rank)
OPT_PROJECTIONS = ("model.decoder.project_in", "model.decoder.project_out")


def layer_paths(g: ModelGeometry, i: int) -> tuple[str, str, str, str]:
    """Layer `i`'s QKV, output, up and down projections' vLLM paths (the order of
    `kvcore.models.classic_weights.linears`)."""
    layers, *linears = PATHS[g.model_type]
    qkv, o, up, down = (f"{layers}.{i}.{name}" for name in linears)
    return qkv, o, up, down
