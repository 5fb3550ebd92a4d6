"""A ModelOpt checkpoint on one rank (`kvcore.models.modelopt_quant`): which linears vLLM 0.33
quantises, what they hold, and the first shard it refuses.

The exclude list is matched as ModelOptQuantConfigBase.is_layer_excluded matches it: a path
listed exactly (a fused linear's own path, or all of its shards': some and vLLM refuses,
"Detected some but not all shards ..."; the routed experts when a listed name holding
"experts" contains their path), a listed string inside the path, or an fnmatch glob over it.
Attention layers take ModelOptKVCacheMethod before the list is read: excluded or not, each
holds its four scales.
"""

from __future__ import annotations

from dataclasses import replace
from fnmatch import fnmatch

from kvcore.errors import InputError
from kvcore.models import classic_weights, fp8_shapes
from kvcore.models.classic_paths import head_path
from kvcore.models.fp8_ignored import (
    block_names,
    experts_path,
    fused_of,
    gate_path,
    linear_path,
)
from kvcore.models.fused_shards import all_or_none
from kvcore.models.geometry import ModelGeometry
from kvcore.models.int_quant_rank import ATTENTION, QUANTISED_GATES  # (any method's)
from kvcore.models.kv_cache_quant import NO_QUANT_ATTENTION
from kvcore.models.llama4_vision import TOWER_WITHOUT_QUANT_CONFIG
from kvcore.models.modelopt_mixed import algo_at
from kvcore.models.modelopt_quant import (
    ModelOpt,
    dtype_refusal,
    experts_bytes,
    experts_refusal,
    linear_bytes,
    refusal,
    weight_bytes,
)
from kvcore.models.rank_params import shared_width, vocab_rows
from kvcore.models.sparse_mla import layer_geometry
from kvcore.models.text_paths import vllm_text_path
from kvcore.models.tower_int_quant import PREFIXES
from kvcore.specs import DTYPE_BYTES

Stage = tuple[range | None, bool, bool]
# (the multimodal models whose tower vLLM builds at vision_tower.vision_model: Gemma 3's)
UNQUANTISED_TOWERS = ("gemma3_text",)


def modelled(g: ModelGeometry) -> ModelOpt | None:
    """The checkpoint's ModelOpt settings where kvcli sizes its weights (None: not ModelOpt,
    an algorithm left unquantised, a vision tower vLLM quantises that
    `kvcore.models.tower_int_quant.PREFIXES` does not list, or any under a mixed-precision
    table). vLLM's ModelOpt leaves a module under a
    ``vision_tower`` / ``vision_model`` prefix unquantised whatever its exclude list
    (ModelOptQuantConfigBase.get_quant_method): Gemma 3's SigLIP, in the model dtype; Llama 4
    builds its tower and projector without the quant_config."""
    q = g.modelopt
    arch = g.architecture
    if q is None or g.vision_params and (g.model_type not in UNQUANTISED_TOWERS or q.layers) \
            and arch not in TOWER_WITHOUT_QUANT_CONFIG and not (arch in PREFIXES and not q.layers):
        return None
    return q


def _exact(g: ModelGeometry, q: ModelOpt, path: str) -> bool:
    proj = path.split(".")[-1]
    fused = fused_of(g)
    if proj in fused and path in q.exclude:
        return True
    if proj in fused:
        named = [path.replace(proj, s) in q.exclude for s in fused[proj]]
        return all_or_none(named, lambda: f"names some but not all shards of {path}", path,
                           g.source, "quantization_config.exclude_modules")
    if "experts" in path:
        return any(path in x for x in q.exclude if "experts" in x)
    return path in q.exclude


def excluded(g: ModelGeometry, q: ModelOpt, path: str) -> bool:
    """Whether vLLM builds the module at `path` unquantised."""
    if not q.exclude:
        return False
    if _exact(g, q, path):
        return True
    return any(x != path and x in path for x in q.exclude) or \
        any(fnmatch(path, x) for x in q.exclude)


def at_prefix(q: ModelOpt | None, ours: str, vllms: str) -> ModelOpt | None:
    """`q` for a geometry whose layer `ours` vLLM builds at `vllms` (an MTP module's), its
    exclude list and table matched at vLLM's paths."""
    return None if q is None else replace(q, at=(ours + ".", vllms + "."))


def quantised(g: ModelGeometry, q: ModelOpt, path: str) -> ModelOpt | None:
    """How vLLM quantises the module at `path` (None: it does not): excluded, or (mixed
    precision) not reached by the table, or the config's algorithm (the table's entry's)."""
    if q.at is not None and path.startswith(q.at[0]):
        path = q.at[1] + path[len(q.at[0]):]
    elif q.at is None:
        # (a multimodal class's language model, as vLLM names it)
        path = vllm_text_path(g.architecture, path)
    if excluded(g, q, path):
        return None
    if not q.layers:
        return q
    algo = algo_at(q.layers, path, fused_of(g), g.source)
    return None if algo is None else replace(q, algo=algo)


def _layer(g: ModelGeometry, q: ModelOpt, tp: int, i: int, kind: str, moe: bool):
    """Layer `i`'s quantised linears on a rank [(path, output shards, k, how)], and how its
    routed experts are quantised (None: not)."""
    out = []
    if g.classic is not None:   # (the pre-Llama decoders' linears at vLLM's paths)
        for path, parts, k, _ in classic_weights.layer_linears(g, tp, i):
            if how := quantised(g, q, path):
                out.append((path, parts, k, how))
        return out, None
    attn, mixer, mlp = block_names(g, moe)
    mixers = ("mixer", "in_proj", "out_proj", "in_proj_qkvz", "in_proj_ba")
    for name, parts, k, _ in fp8_shapes.layer_linears(g, tp, kind, moe, shared_width(g)):
        block = attn if name in ATTENTION else mixer if name in mixers else mlp
        path = linear_path(g, i, block, name)
        if how := quantised(g, q, path):
            out.append((path, parts, k, how))
    if moe and g.model_type in QUANTISED_GATES:
        path = gate_path(g, i)
        if how := quantised(g, q, path):
            out.append((path, (g.num_experts,), g.hidden_size, how))
    experts = quantised(g, q, experts_path(g, i)) if moe and g.num_experts else None
    return out, experts


def rank_bytes(g: ModelGeometry, tp: int, stage: Stage) -> tuple[int, int]:
    """(parameters the quantised tensors replace, their bytes) on a rank of `stage`; the
    attention layers' k/v/q/prob scales among the bytes."""
    q = modelled(g)
    if q is None:
        return 0, 0
    dt = DTYPE_BYTES[g.dtype]
    layers, first, last = classic_weights.stage_ends(g, stage)
    moved = held = 0
    for path, parts, k, _ in classic_weights.stem_linears(g) if first else ():
        if how := quantised(g, q, path):    # (OPT's projections around its embedding)
            moved += sum(parts) * k
            held += linear_bytes(how, parts, k, dt)
    for i, kind in enumerate(g.layer_kinds):
        if layers is not None and i not in layers:
            continue
        moe = g.moe_layers[i] if i < len(g.moe_layers) else False
        linears, experts = _layer(layer_geometry(g, i), q, tp, i, kind, moe)
        for _, parts, k, how in linears:
            moved += sum(parts) * k
            held += linear_bytes(how, parts, k, dt)
        if kind not in ("mamba", "mlp") and g.model_type not in NO_QUANT_ATTENTION and \
                q.kv_scales and not (
                q.layers and g.mla is not None):
            # (ModelOptKVCacheMethod: q/k/v/prob scales, MLA's too; mixed precision gives
            # them to Attention alone, with a KV cache algorithm)
            held += 4 * dt
        if experts:
            shards = 1 if g.model_type == "nemotron_h" else 2
            inter = g.moe_intermediate_size // tp
            moved += g.num_experts * (shards + 1) * g.hidden_size * inter
            held += experts_bytes(experts, g.num_experts, g.hidden_size, inter, shards)
    head = quantised(g, q, head_path(g.model_type)) if last else None
    if head:
        # (a ParallelLMHead is quantised unless excluded; tied, tie_weights swaps its weight
        # for the embedding's and leaves the scales create_weights made)
        rows = vocab_rows(g, tp)
        held += linear_bytes(head, (rows,), g.hidden_size, dt)
        if g.tie_word_embeddings:
            held -= weight_bytes(head, rows, g.hidden_size)
        else:
            moved += rows * g.hidden_size
    return moved, held


def tp_refusal(g: ModelGeometry, tp: int) -> tuple[int, str, str] | None:
    """The first layer (index, module, vLLM's words) vLLM refuses at `tp`; None if it builds."""
    q = modelled(g)
    if q is None:
        return None
    for i, kind in enumerate(g.layer_kinds):
        moe = g.moe_layers[i] if i < len(g.moe_layers) else False
        linears, experts = _layer(layer_geometry(g, i), q, tp, i, kind, moe)
        for path, _, k, how in linears:
            if why := refusal(how, k):
                return i, path.rsplit(".", 1)[-1], why
        if experts and (why := experts_refusal(experts, g.hidden_size,
                                               g.moe_intermediate_size // tp)):
            return i, "experts", why
    return None


def check_tp(g: ModelGeometry, tp: int) -> None:
    """vLLM's refusal of a quantised linear's input shard at `tp`, naming the option."""
    refused = tp_refusal(g, tp)
    if refused is not None and g.modelopt is not None:
        layer, module, why = refused
        raise InputError(f"{g.name}'s ModelOpt {g.modelopt.algo} input shard does not fit at "
                         f"it (layer {layer}'s {module}), and vLLM refuses to build it: "
                         f"\"{why}\"; got {tp}", field="tensor_parallel_size")


def check(g: ModelGeometry) -> None:
    """vLLM's refusals of the exclude list and of an input width at TP 1, before sizing."""
    rank_bytes(g, 1, (None, True, True))
    refused = tp_refusal(g, 1)
    if refused is not None and g.modelopt is not None:
        layer, module, why = refused
        raise InputError(f"gives layer {layer}'s {module} a shape vLLM refuses to build: "
                         f"\"{why}\"",
                         path=g.source or None, field="quantization_config.quant_algo")


def check_dtype(g: ModelGeometry, given: bool) -> None:
    """VllmConfig's refusal of a model dtype the config's activations do not take, naming the
    ``dtype`` option when it was `given`, else the config's key."""
    if g.modelopt is None or not (why := dtype_refusal(g.modelopt, g.dtype)):
        return
    if given:
        raise InputError(f"vLLM refuses {g.name}'s ModelOpt checkpoint in it: \"{why}\"; got "
                         f"{g.dtype}", field="dtype")
    raise InputError(f"is {g.dtype}, and vLLM refuses to build it: \"{why}\"",
                     path=g.source or None, field="torch_dtype")
