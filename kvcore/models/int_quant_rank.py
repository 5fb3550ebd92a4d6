"""An AWQ / GPTQ / compressed-tensors checkpoint on one rank (`kvcore.models.int_quant`,
`kvcore.models.ct_quant`): which linears vLLM 0.33 packs, what they hold, and the modules an AWQ
``modules_to_not_convert`` leaves unquantised (the first shard vLLM refuses:
`kvcore.models.int_quant_refusal`).

AWQ's list is matched as AutoAWQConfig matches it (quant_utils.py is_layer_skipped,
"substring" mode): a linear is skipped when any listed string is inside its vLLM path
(``layers.1.mlp`` skips layer 1's gate_up_proj and down_proj); a fused linear when its own
path matches or all of its shards' do, some and vLLM refuses ("Detected some but not all
shards of ... are quantized."); the routed experts when a string is inside their path.
"""

from __future__ import annotations

import json

from kvcore.models import (
    classic_weights,
    ct_groups,
    ct_quant,
    ernie45_vl_quant,
    fp8_shapes,
    gptq_rules,
    tower_int_quant,
)
from kvcore.models.classic_paths import head_path
from kvcore.models.ct_quant import VOCAB_PATHS
from kvcore.models.fp8_ignored import (
    block_names,
    experts_path,
    fused_of,
    gate_path,
    linear_path,
)
from kvcore.models.fp8_scales import QUANTISED_GATES
from kvcore.models.fused_shards import all_or_none
from kvcore.models.geometry import ModelGeometry
from kvcore.models.int_quant import (
    SIZED_METHODS,
    IntQuant,
    experts_bytes,
    linear_bytes,
    marlin_experts,
)
from kvcore.models.kv_cache_quant import NO_QUANT_ATTENTION
from kvcore.models.llama4_vision import TOWER_WITHOUT_QUANT_CONFIG
from kvcore.models.rank_params import shared_width, vocab_rows
from kvcore.models.sparse_mla import layer_geometry
from kvcore.models.text_paths import vllm_text_path
from kvcore.specs import DTYPE_BYTES

Stage = tuple[range | None, bool, bool]
# (the linears under a layer's self_attn: MLA's as deepseek_v2.py names them)
ATTENTION = ("qkv_proj", "o_proj", "fused_qkv_a_proj", "q_b_proj", "q_proj",
             "kv_a_proj_with_mqa", "kv_b_proj", "indexer.wq_b", "wq", "g_proj")


def modelled(g: ModelGeometry) -> IntQuant | None:
    """The checkpoint's AWQ / GPTQ settings where kvcli sizes its weights (None: not an int
    checkpoint, or one whose packed linears kvcli does not list: a vision tower vLLM packs).
    A tower vLLM leaves in the model dtype is sized: Llama 4's (built without the
    quant_config; InternVL's too), one ``modules_to_not_convert`` names whole with its
    projector (``vision_tower`` and ``multi_modal_projector``: still the only way kvcli sizes
    LLaVA-NeXT-Video's, Command A Vision's, Aria's, LightOnOCR's and Phi-4-reasoning-vision's
    AWQ checkpoints, whose tower linears it does not list: tests/data/weights_census/
    quant_tower_rule/), and the towers whose
    linears `kvcore.models.tower_int_quant` packs (the LLaVA family, Mistral 3, PaliGemma,
    Gemma 3, GLM-4.1V / 4.5V, Qwen3-VL, ERNIE-4.5-VL: its language model's routers and
    vision experts `kvcore.models.ernie45_vl_quant`)."""
    q = g.int_quant
    arch = g.architecture
    if q is None or g.vision_params and not (
            arch in TOWER_WITHOUT_QUANT_CONFIG or arch in tower_int_quant.PREFIXES
            or _matches(q, "vision_tower.") and _matches(q, "multi_modal_projector.")):
        return None
    if g.tie_word_embeddings and q.targets and ct_groups.vocab_quant(
            q, "lm_head", "lm_head", g.source):
        return None     # (a tied LM head a compressed-tensors target reaches: not modelled)
    return q


def _matches(q: IntQuant, path: str) -> bool:
    return any(s in path for s in q.skips)


def _skipped(g: ModelGeometry, q: IntQuant, path: str) -> bool:
    proj = path.split(".")[-1]
    fused = fused_of(g)
    if not q.skips or proj not in fused or _matches(q, path):
        return _matches(q, path)
    named = [_matches(q, path.replace(proj, s)) for s in fused[proj]]
    return all_or_none(named, lambda: f"{json.dumps(list(q.skips))} name some but not all "
                       f"shards of {path}", path, g.source,
                       "quantization_config.modules_to_not_convert")


def module_quant(g: ModelGeometry, q: IntQuant, path: str,
                 experts: bool = False) -> IntQuant | None:
    """The settings vLLM packs the module at `path` (kvcli's) with (GPTQ's rules may change
    them), None where it builds it unquantised."""
    # (every list is matched at vLLM's path: a wrapper builds its text model under a prefix,
    # ``language_model.model.layers.N``, which a regex or a renamed name must meet)
    path = vllm_text_path(g.architecture, path)
    shards = fused_of(g).get(path.split(".")[-1])
    if q.family == "gptq":
        return gptq_rules.module_quant(q, path, shards, g.source, experts) \
            if q.rules or q.blocks else q
    if q.family == "ct":
        return ct_groups.experts_quant(q, g.model_type, path, g.source) if experts else \
            ct_groups.linear_quant(q, path, shards, g.source)
    return None if _skipped(g, q, path) else q


def layer_linears(g: ModelGeometry, q: IntQuant, tp: int, i: int, kind: str, moe: bool):
    """Layer `i`'s packed linears on a rank [(path, output shards, k, full input, settings)],
    and the settings its routed experts are packed with (None: unquantised)."""
    out = []
    if g.classic is not None:   # (the pre-Llama decoders' linears at vLLM's paths)
        for path, parts, k, full in classic_weights.layer_linears(g, tp, i):
            if mq := module_quant(g, q, path):
                out.append((path, parts, k, full, mq))
        return out, None
    attn, mixer, mlp = block_names(g, moe)
    mixers = ("mixer", "in_proj", "out_proj", "in_proj_qkvz", "in_proj_ba")
    for name, parts, k, split in fp8_shapes.layer_linears(g, tp, kind, moe, shared_width(g)):
        is_attn = name in ATTENTION
        block = attn if is_attn else mixer if name in mixers else mlp
        path = linear_path(g, i, block, name)
        if mq := module_quant(g, q, path):
            out.append((path, parts, k, k * tp if split == "row" else k, mq))
    if moe and g.model_type in QUANTISED_GATES:
        # (qwen3_moe.py and lfm2_moe.py build their router, a GateLinear, with the
        # quant_config: packed too)
        path = gate_path(g, i)
        if mq := module_quant(g, q, path):
            out.append((path, (g.num_experts,), g.hidden_size, g.hidden_size, mq))
    if not moe or not g.num_experts:
        return out, None
    if q.family == "gptq" and not marlin_experts(q, g.hidden_size, g.moe_intermediate_size // tp):
        return out, q   # (MoeWNA16's fallback: the config's own settings, no rule applied)
    return out, module_quant(g, q, experts_path(g, i), experts=True)


def rank_bytes(g: ModelGeometry, tp: int, stage: Stage) -> tuple[int, int]:
    """(parameters the packed tensors replace, their bytes) on a rank of `stage`."""
    q = modelled(g)
    if q is None:
        return 0, 0
    dt = DTYPE_BYTES[g.dtype]
    layers, first, last = classic_weights.stage_ends(g, stage)
    # (a vision tower's packed linears, loaded with the embedding on the first stage)
    moved, packed = tower_int_quant.rank_bytes(g, q, tp, dt) if first else (0, 0)
    for path, parts, k, full in classic_weights.stem_linears(g) if first else ():
        if mq := module_quant(g, q, path):    # (OPT's projections around its embedding)
            moved += sum(parts) * k
            packed += ct_quant.linear_bytes(mq, parts, k, dt) if q.family == "ct" else \
                linear_bytes(mq, sum(parts), k, full, dt)
    if q.targets:
        # (compressed-tensors targets reaching the embedding or the LM head, `ct_groups`)
        rows, h = vocab_rows(g, tp), g.hidden_size
        path = VOCAB_PATHS.get(g.architecture, "model.embed_tokens")
        if first and (eq := ct_groups.vocab_quant(q, path, "embed_tokens", g.source)):
            moved += rows * h
            packed += ct_quant.embedding_bytes(eq, rows, h, dt, path, g.source)
        if last and (hq := ct_groups.vocab_quant(q, "lm_head", "lm_head", g.source)):
            moved += rows * h
            packed += ct_quant.linear_bytes(hq, (rows,), h, dt)
    for i, kind in enumerate(g.layer_kinds):
        if layers is not None and i not in layers:
            continue
        moe = g.moe_layers[i] if i < len(g.moe_layers) else False
        linears, experts = layer_linears(layer_geometry(g, i), q, tp, i, kind, moe)
        for _, parts, k, full, mq in linears:
            moved += sum(parts) * k
            packed += ct_quant.linear_bytes(mq, parts, k, dt) if q.family == "ct" else \
                linear_bytes(mq, sum(parts), k, full, dt)
        if q.family == "ct" and kind not in ("mamba", "mlp") and \
                g.model_type not in NO_QUANT_ATTENTION \
                and g.mla is None:
            # (CompressedTensorsKVCacheMethod: k/v/q scales, float32, and zero points; MLA's
            # attention holds none as parameters)
            packed += 3 * 4 + 3 * dt
        if experts is not None:
            shards = 1 if g.model_type == "nemotron_h" else 2
            inter = g.moe_intermediate_size // tp
            moved += g.num_experts * (shards + 1) * g.hidden_size * inter
            packed += (ct_quant.experts_bytes if q.family == "ct" else experts_bytes)(
                experts, g.num_experts, g.hidden_size, inter, shards, dt)
        if g.vision_experts is not None:    # (ERNIE-4.5-VL's routers and vision experts)
            vl_moved, vl_held = ernie45_vl_quant.int_layer(g, i, tp, moe, quant_of(g, q))
            moved, packed = moved + vl_moved, packed + vl_held
    if last and q.lm_head and not g.tie_word_embeddings and (
            mq := module_quant(g, q, head_path(g.model_type))):
        rows = vocab_rows(g, tp)
        moved += rows * g.hidden_size
        packed += linear_bytes(mq, rows, g.hidden_size, g.hidden_size, dt)
    return moved, packed


def quant_of(g: ModelGeometry, q: IntQuant) -> ernie45_vl_quant.QuantOf:
    """`module_quant` of `g` and `q`: how ERNIE-4.5-VL's vision experts are settled."""
    return lambda path, experts: module_quant(g, q, path, experts)


def check(g: ModelGeometry) -> None:
    """vLLM's refusals of a list naming part of a fused linear, of GPTQ's rules and of
    compressed-tensors' experts (`kvcore.models.ct_groups`), before anything is sized: every
    module's settings worked out once, as vLLM builds them."""
    rank_bytes(g, 1, (None, True, True))


def unquantised_method(g: ModelGeometry) -> str | None:
    """The checkpoint's quant_method when kvcli counts its weights in the model dtype (a
    method it does not size, or AWQ / GPTQ where `modelled` is None); None otherwise."""
    from kvcore.models.modelopt_rank import modelled as modelopt_modelled

    m = g.quantization
    if m is None or modelopt_modelled(g) is not None or (
            m in SIZED_METHODS and (m in ("fp8", "mxfp4") or modelled(g))):
        return None
    return m


def unmodelled_note(g: ModelGeometry, memory: str, blocks: str,
                    weights: str | None = None) -> str | None:
    """The warning that the weights are counted unquantised (None: kvcli sizes them), naming
    the options that fix it as the command spells them."""
    m = unquantised_method(g)
    if m is None:
        return None
    known = f"the weights' known size ({weights}), or " if weights else ""
    return (f"{g.name}'s weights are counted unquantised, in {g.dtype}: kvcli does not model "
            f"quant_method {m}'s weight sizes, so the KV memory is understated: give {known}"
            f"{blocks}, or {memory} less the difference")
