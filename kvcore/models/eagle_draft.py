"""An EAGLE / EAGLE-3 draft model as vLLM 0.33 loads it beside its target: what the draft adds
to the KV cache (its attention layers) and to the weights the pool's memory is left after.

vLLM builds the draft from `--speculative-config`'s ``model`` (a config.json), in the target's
dtype (config/speculative.py:1418), tensor-parallel like the target. Its attention layers are
named after the target's (``layers.{N + i}``) and their specs marked ``is_draft``, which spec
equality ignores (v1/kv_cache_interface.py:215): a draft layer of the target's geometry joins the
target's full-attention group, so a block costs (N + L) / N as much. The draft's weights load
inside the same memory profile as the target's (v1/worker/gpu_model_runner.py:4989-5089).

Modelled: the Llama EAGLE drafts vLLM serves for Llama targets, EAGLE-1 (``EagleLlamaForCausalLM``,
model_executor/models/llama_eagle.py) and EAGLE-3 (``Eagle3LlamaForCausalLM``, llama_eagle3.py);
other draft architectures are refused by name. A draft layer ``layer_types`` calls
``sliding_attention`` is a sliding window of ``sliding_window`` (llama.py reads it by the
draft's own layer index). Parameters counted, as those modules build them:
per layer q/k/v/o (EAGLE-3's first layer reads 2 x hidden: embeddings and hidden states), the
gated MLP and the norms (EAGLE-1's first layer has no input norm; EAGLE-3's layers one more, the
hidden-state norm); the ``fc`` that folds the target's hidden states in (EAGLE-1: 2 x hidden;
EAGLE-3: the target's hidden size x 3 auxiliary layers), EAGLE-3's final norm, its own LM head
over ``draft_vocab_size`` and its draft-to-target id map (int64). The embedding is the target's:
vLLM shares it when the checkpoint has none or the same one (v1/spec_decode/llm_base_proposer.py
1420-1505; EAGLE-3 checkpoints ship none), and EAGLE-1 also the target's LM head.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from typing import Any

from kvcore.errors import InputError, clipped
from kvcore.models.eagle3_keys import eagle3_keys
from kvcore.models.eagle_fp8 import Fp8Linear, fp8_linears, linear_bytes, quantised_params
from kvcore.models.geometry import ModelGeometry
from kvcore.models.hf_config import load_hf_config, read_hf_config
from kvcore.models.modelopt_quant import ModelOpt
from kvcore.models.modelopt_quant import linear_bytes as modelopt_linear_bytes
from kvcore.models.qwen3_5 import QWEN3_5_TYPES
from kvcore.models.weights import estimate_weights_bytes
from kvcore.models.worker_specs import layer_specs
from kvcore.read_once import ReadOnce
from kvcore.specs import DTYPE_BYTES, KVCacheSpec

# The drafts whose public config.json is typed in (no download at run time): name -> (repo,
# config). Source: the Hugging Face repository's config.json.
DRAFT_PRESETS: dict[str, tuple[str, dict[str, Any]]] = {
    "eagle3-llama-3.1-8b": ("yuhuili/EAGLE3-LLaMA3.1-Instruct-8B", {
        "architectures": ["LlamaForCausalLMEagle3"], "bos_token_id": 128000,
        "eos_token_id": 128001, "hidden_act": "silu", "hidden_size": 4096,
        "intermediate_size": 14336, "max_position_embeddings": 2048, "model_type": "llama",
        "num_attention_heads": 32, "num_key_value_heads": 8, "num_hidden_layers": 1,
        "pad_token_id": 0, "rms_norm_eps": 1e-05, "tie_word_embeddings": False,
        "torch_dtype": "float16", "vocab_size": 128256, "draft_vocab_size": 32000}),
}
# vLLM's class for each method and the draft's first architecture, as `EAGLEConfig` renames it
# (transformers_utils/configs/eagle.py) and the registry maps it
_MODELLED = {("eagle", "EagleLlamaForCausalLM"): "EagleLlamaForCausalLM",
             ("eagle3", "Eagle3LlamaForCausalLM"): "Eagle3LlamaForCausalLM",
             ("eagle3", "LlamaForCausalLMEagle3"): "Eagle3LlamaForCausalLM"}
FIELD = "spec_model"
# The Mamba hybrids whose vLLM 0.33 class hands EAGLE-3 the target's auxiliary hidden states
# (SupportsEagle3: qwen3_next.py, qwen3_5.py, nemotron_h.py). JambaForCausalLM,
# FalconH1ForCausalLM and GraniteMoeHybridForCausalLM do not: the runner refuses to load an
# EAGLE-3 draft reading them (v1/worker/gpu/spec_decode/eagle/eagle3_utils.py:28).
EAGLE3_MAMBA_TYPES = ("qwen3_next", *QWEN3_5_TYPES, "nemotron_h")
DRAFT_LAYERS = "draft.layers."     # a draft layer's name, before its number
# (a cluster's replicas each size their pool: the file is read once per version)
_read_config: ReadOnce[dict[str, Any]] = ReadOnce(load_hf_config)


@dataclass(frozen=True, slots=True)
class DraftModel:
    """A draft as the sizing takes it: its decoder layers' geometry (the target's dtype) and
    its own parameters (what vLLM does not share with the target), split as the weights are
    over tensor-parallel workers."""
    name: str                   # as the speculative config's model gave it
    method: str                 # eagle, eagle3 or mtp
    architecture: str           # vLLM's class
    geometry: ModelGeometry
    split_params: int           # split over the workers (q/k/v/o, MLP, LM head)
    whole_params: int           # on every worker (norms, fc)
    id_map_entries: int         # EAGLE-3's draft-to-target ids, int64 on every worker
    lm_head_rows: int           # the logits a pass computes: the draft vocabulary, or the target's
    # what the clock reads beyond the plain geometry (in the params above): the fc folding the
    # target's hidden states in (the first pass), and weights every pass reads, split (EAGLE-3's
    # first QKV reading twice the hidden size, Qwen3-Next MTP's fc) or whole (DeepSeek's eh_proj)
    fc_params: int = 0
    pass_split: int = 0
    pass_whole: int = 0
    # layers the draft repeats of its target, weights and all (an MTP module's decoder layer,
    # quantised as the target's): `repeated` copies of `target`'s last layer (DeepSeek-V3's
    # own; for Qwen3-Next the draft's one-layer geometry, its layer 0's feed-forward)
    target: ModelGeometry | None = None
    repeated: int = 0
    # the `repeated` layers are `target`'s own, each once (Qwen3-Next's modules: each its
    # index's feed-forward), not copies of its last
    each_layer: bool = False
    # EAGLE-3 reading the target's auxiliary hidden states (its eagle_config's
    # use_aux_hidden_state, true unless said): a target class must provide them
    aux_hidden_states: bool = False
    # the linears vLLM builds in fp8, outside split_params and whole_params (1 byte a weight
    # and its block scales): an fp8 draft's (`kvcore.models.eagle_fp8`), an fp8 target's Qwen
    # MTP fc (`kvcore.models.mtp_fp8`)
    fp8: tuple[Fp8Linear, ...] = ()
    # a ModelOpt target's Qwen MTP fc as its linears (`kvcore.models.mtp_fp8`): how, out, in
    modelopt_fc: tuple[ModelOpt, int, int] | None = None
    # an EAGLE draft's q/k/v input widths, summed over its layers (+ 1 a layer with biases):
    # with fewer KV heads than ranks vLLM gives each rank a whole one (QKVParallelLinear)
    qkv_inputs: int = 0

    def weights_bytes(self, tp: int = 1) -> int:
        """The draft's weight bytes on one of `tp` workers."""
        b = DTYPE_BYTES[self.geometry.dtype]
        own = self.split_params * b // tp + self.whole_params * b + 8 * self.id_map_entries
        own += sum(linear_bytes(lin, tp, self.geometry.fp8_block) for lin in self.fp8)
        if self.modelopt_fc is not None:
            how, n, k = self.modelopt_fc
            own += modelopt_linear_bytes(how, (n // tp,), k, b)     # (column parallel)
        kv = self.geometry.num_kv_heads
        if kv < tp:
            # (K and V: one head a rank where the even split gave kv / tp; in fp8 1 byte, its
            # block scales aside)
            kb = 1 if self.fp8 else b
            own += 2 * self.geometry.head_dim * self.qkv_inputs * (tp - kv) * kb // tp
        if self.target is None or not self.repeated:
            return own
        last = self.target.num_layers
        if self.each_layer:
            return own + estimate_weights_bytes(self.target, tp, (range(last), False, False))
        return own + self.repeated * estimate_weights_bytes(
            self.target, tp, (range(last - 1, last), False, False))


def _architecture(method: str, cfg: dict[str, Any], name: str) -> str:
    archs = cfg.get("architectures")
    arch = str(archs[0]) if isinstance(archs, list) and archs else "LlamaForCausalLM"
    if method == "eagle":
        arch = arch if arch.startswith("Eagle") else f"Eagle{arch}"
    elif not (arch.startswith("Eagle3") or arch.endswith("Eagle3")):
        arch = f"Eagle3{arch}"
    cls = _MODELLED.get((method, arch))
    if cls is None:
        raise InputError(f"draft {clipped(name)} is {clipped(arch)} for {method}, which kvcli "
                         "does not size (it sizes the Llama EAGLE drafts: EagleLlamaForCausalLM, "
                         "Eagle3LlamaForCausalLM)", field=FIELD)
    return cls


def _config(name: str) -> tuple[dict[str, Any], str]:
    """The draft's config.json: a preset's (by name or repo id), or a file or a directory
    holding one."""
    for key, (repo, cfg) in DRAFT_PRESETS.items():
        if name.lower() in (key, repo.lower()):
            return cfg, f"draft preset {key} ({repo})"
    path = os.path.join(name, "config.json") if os.path.isdir(name) else name
    if not os.path.exists(path):
        raise InputError(f"draft model {clipped(name)} is neither a config.json (or a folder "
                         "holding one) nor a draft kvcli knows: "
                         + ", ".join(f"{k} ({r})" for k, (r, _) in DRAFT_PRESETS.items()),
                         field=FIELD)
    return _read_config(path), path


def load_draft(name: str, method: str, target: ModelGeometry) -> DraftModel:
    """The draft `name` (a preset, its repo id, or a config.json) for `method` beside
    `target`; an InputError for a draft vLLM would build as something kvcli does not size."""
    cfg, source = _config(name)
    arch = _architecture(method, cfg, name)
    g = replace(read_hf_config(cfg, name=name, source=source), dtype=target.dtype)
    # (llama.py gives a layer layer_types calls sliding_attention the config's sliding_window)
    if any(k not in ("full", "sliding") for k in g.layer_kinds) or g.mla is not None or (
            g.num_experts):
        raise InputError(f"draft {clipped(name)}: kvcli sizes dense full-attention and "
                         f"sliding-window drafts only, got layers {sorted(set(g.layer_kinds))}",
                         field=FIELD)
    h, q, kv = g.hidden_size, g.num_attention_heads * g.head_dim, g.num_kv_heads * g.head_dim
    eagle3 = arch == "Eagle3LlamaForCausalLM"
    split = whole = qkv_inputs = 0
    for i in range(g.num_layers):
        width = 2 * h if eagle3 and i == 0 else h
        split += width * (q + 2 * kv) + q * h + 3 * h * g.intermediate_size
        qkv_inputs += width + g.attention_bias
        if g.attention_bias:
            split += q + 2 * kv
        # the post-attention norm, the input norm (not EAGLE-1's first layer), EAGLE-3's
        # hidden-state norm
        whole += h * (1 + (i > 0 or eagle3) + eagle3)
    id_map = 0
    rows = target.vocab_size                    # EAGLE-1: the target's head
    if eagle3:
        keys = eagle3_keys(cfg, h, g.vocab_size, source)
        fc_in = keys.fc_in
        fc = fc_in * h if keys.use_aux else 0
        if fc:
            whole += fc + (fc_in if keys.norm_before_fc else 0) + (fc_in if keys.fc_norm else 0)
        rows = keys.draft_vocab
        split += rows * h                       # its own LM head
        whole += h                              # the final norm
        id_map = rows if rows != target.vocab_size else 0
    else:
        fc_in = 2 * h                           # over (embedding, hidden state)
        fc = fc_in * h
        whole += fc
    # (an fp8 checkpoint: its layers' linears and fc at 1 byte, four scales an attention layer)
    fp8 = fp8_linears(g, target.num_layers, eagle3,
                      (fc_in, h) if fc else None, name, FIELD)
    if fp8:
        fc_weights = fc if fc else 0
        split -= quantised_params(fp8) - fc_weights
        whole -= fc_weights - 4 * g.num_layers
    draft = DraftModel(name, method, arch, g, split, whole, id_map, rows, fc_params=fc,
                       pass_split=h * (q + 2 * kv) if eagle3 else 0,
                       aux_hidden_states=eagle3 and bool(fc), fp8=fp8, qkv_inputs=qkv_inputs)
    if draft.aux_hidden_states and target.mamba and target.model_type not in EAGLE3_MAMBA_TYPES:
        raise InputError(f"eagle3 reads the target's auxiliary hidden states, which vLLM 0.33's "
                         f"class for {target.model_type} ({target.name}) does not give (vLLM "
                         "refuses to start: 'Model does not support EAGLE3 interface'); among "
                         "Mamba hybrids Qwen3-Next, Qwen3.5 and Nemotron-H give them; eagle runs "
                         "beside any", field="spec_method")
    return draft


def draft_layer_specs(draft: DraftModel, target: ModelGeometry, **kw: Any
                      ) -> dict[str, KVCacheSpec]:
    """The draft's attention layers for one worker (`layer_specs`' keywords), named after
    the target's layers as vLLM numbers them, after them in the model order."""
    n = target.num_layers
    out: dict[str, KVCacheSpec] = {}
    seen: dict[str, int] = {}       # a draft layer's own number -> its place among them
    for name, spec in layer_specs(draft.geometry, **kw).items():
        # ("layers.I", and a sparse MLA layer's indexer cache "layers.I.indexer" beside it)
        _, own, *rest = name.split(".")
        place = seen.setdefault(own, len(seen))
        out[".".join([f"{DRAFT_LAYERS}{n + place}", *rest])] = spec
    return out


def is_draft_layer(name: str) -> bool:
    """Whether a layer of the groups is a draft's (`draft_layer_specs` named it)."""
    return name.startswith(DRAFT_LAYERS)
