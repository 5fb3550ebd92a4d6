"""The pre-Llama decoder blocks (GPT-2, GPTBigCode, GPT-J, GPT-NeoX, Bloom, OPT, Falcon, Phi-2,
StableLM, ChatGLM; StarCoder2, served as Phi-2 is) as vLLM 0.33 builds them, for the weights and
buffers estimate: what a Llama-shaped count gets wrong there (a two-matrix MLP with biases,
LayerNorms with a bias, one norm a layer where attention and MLP run in parallel, learned position
embeddings, Bloom's embedding norm, GPT-J's LM-head bias, no RoPE cache under ALiBi or learned
positions, the Transformers backend's `inv_freq` in place of a cache and GPTBigCode's causal mask,
whole on every rank with its MLP).

Each read from vLLM's model file (gpt2.py, gpt_j.py, bloom.py, opt.py, falcon.py, chatglm.py,
stablelm.py; the Transformers backend for GPTBigCode, GPT-NeoX, Phi and StarCoder2) and checked
tensor by tensor at TP 1, 2, 4 and 8 on published checkpoints' configs (tests/data/gpt_family/);
`kvcore.models.classic_weights` counts a rank's share.
"""

from __future__ import annotations

from dataclasses import dataclass

# served by vLLM's Transformers backend, which keeps the rotary inv_freq (and its original)
# as float32 buffers rather than a cos/sin cache
INV_FREQ_TYPES = ("gpt_neox", "phi", "starcoder2")


@dataclass(frozen=True)
class ClassicBlock:
    qkv_bias: bool
    o_bias: bool
    mlp_width: int
    gated: bool = False        # gate and up projections (ChatGLM's, StableLM's)
    mlp_bias: bool = True
    mlp_split: bool = True     # False: the MLP whole on every rank (GPTBigCode's backend)
    norms: int = 2             # norms a layer
    norm_bias: bool = True     # LayerNorm (weight and bias), else RMSNorm
    final_norm: bool = True
    positions: int = 0         # learned position embeddings' rows (whole on every rank)
    embed_norm: bool = False   # Bloom's word_embeddings_layernorm
    head_bias: bool = False    # GPT-J's lm_head bias
    rope_cache: bool = False   # a get_rope cos/sin cache (`kvcore.models.buffers`)
    buffers: int = 0           # other buffer bytes, whole on every rank
    # vLLM's own files for these (gpt2.py, opt.py, falcon.py, ...) build the embedding, final
    # norm and LM head on every pipeline stage (no PPMissingLayer); the Transformers backend
    # (GPTBigCode, GPT-NeoX, Phi) on the first and last only
    every_stage: bool = True
    embed_dim: int = 0         # OPT's word_embed_proj_dim where it is not hidden_size (0: it
                               # is): the embedding that wide, projected in and out (whole)


def classic_block(model_type: str, hidden: int, head_dim: int, get,
                  get_dim) -> ClassicBlock | None:
    """The block of a config already read through `config_aliases.canonical` (None: not one
    of these); ``get_dim`` checks a width (an InputError naming the key)."""
    four = 4 * hidden
    if model_type in ("gpt2", "gpt_bigcode"):
        bigcode = model_type == "gpt_bigcode"
        positions = get("max_position_embeddings")
        return ClassicBlock(True, True, get_dim("n_inner", four), mlp_split=not bigcode,
                            every_stage=not bigcode,
                            positions=positions,
                            # (HF's causal-mask buffer, n_positions squared booleans)
                            buffers=positions * positions if bigcode else 0)
    if model_type == "gptj":
        return ClassicBlock(False, False, get_dim("n_inner", four), norms=1, head_bias=True,
                            rope_cache=True)
    if model_type == "bloom":
        return ClassicBlock(True, True, four, embed_norm=True)
    if model_type == "opt":
        bias = bool(get("enable_bias", True))
        embed = get_dim("word_embed_proj_dim", hidden)
        return ClassicBlock(bias, bias, get_dim("ffn_dim", four), mlp_bias=bias,
                            embed_dim=0 if embed == hidden else embed,
                            norm_bias=bool(get("layer_norm_elementwise_affine", True)),
                            final_norm=bool(get("do_layer_norm_before", True))
                            and not get("_remove_final_layer_norm", False),
                            positions=get("max_position_embeddings") + 2)   # (OPT's offset 2)
    if model_type == "falcon":
        bias, parallel = bool(get("bias", False)), bool(get("parallel_attn", True))
        lns = 2 if get("num_ln_in_parallel_attn") == 2 or (
            get("num_ln_in_parallel_attn") is None and get("new_decoder_architecture")) else 1
        # (falcon.py's MLP is 4 x hidden whatever ffn_hidden_size says)
        return ClassicBlock(bias, bias, four, mlp_bias=bias, norms=2 if not parallel else lns,
                            rope_cache=not get("alibi", False))
    if model_type == "chatglm":
        linear = bool(get("add_bias_linear", False))
        return ClassicBlock(bool(get("add_qkv_bias", False)) or linear, linear,
                            get_dim("ffn_hidden_size", required=True), gated=True,
                            mlp_bias=linear,
                            norm_bias=not get("rmsnorm", True),
                            final_norm=bool(get("post_layer_norm", True)), rope_cache=True)
    if model_type == "stablelm":
        return ClassicBlock(bool(get("use_qkv_bias", False)), False,
                            get_dim("intermediate_size", required=True), gated=True,
                            mlp_bias=False, rope_cache=True)
    if model_type == "starcoder2":
        # (HF's Starcoder2 modules: q/k/v_proj fused by the backend, c_fc / c_proj, LayerNorms
        # with a bias, every linear's bias by use_bias, RoPE over the whole head)
        bias = bool(get("use_bias", True))
        return ClassicBlock(bias, bias, get_dim("intermediate_size", required=True),
                            mlp_bias=bias, every_stage=False, buffers=2 * (head_dim // 2) * 4)
    if model_type in INV_FREQ_TYPES:
        partial = next((v for v in (get("partial_rotary_factor"), get("rotary_pct"))
                        if isinstance(v, (int, float)) and not isinstance(v, bool)
                        and 0 < v <= 1), 0.25 if model_type == "gpt_neox" else 0.5)
        rotary = int(head_dim * partial)
        # (the Transformers backend keeps HF's modules: GPT-NeoX's query_key_value and dense
        # both biased by attention_bias, modeling_gpt_neox.py; Phi's dense always biased)
        bias = bool(get("attention_bias", True))
        return ClassicBlock(bias, bias or model_type != "gpt_neox",
                            get_dim("intermediate_size", required=True),
                            norms=1 if model_type == "phi" else 2, every_stage=False,
                            buffers=2 * (rotary // 2) * 4)   # (inv_freq, original_inv_freq)
    return None

