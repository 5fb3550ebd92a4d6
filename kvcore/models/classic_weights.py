"""One tensor-parallel rank's parameters of a pre-Llama decoder (`kvcore.models.classic_blocks`):
the attention's fused QKV and output projections split by heads (KV heads fewer than the ranks
kept one a rank), the MLP split unless the block keeps it whole, a row-parallel linear's bias,
the norms and learned position embeddings whole on every rank, the vocabulary padded and split
(tests/data/gpt_family/). An fp8 checkpoint's linears at 1 byte (`kvcore.models.weights`) with
their float32 scales, and an attention's q/k/v/prob scales in the model dtype
(tests/data/weights_census/families/)."""

from __future__ import annotations

from kvcore.models.classic_blocks import ClassicBlock
from kvcore.models.classic_paths import OPT_PROJECTIONS, layer_paths
from kvcore.models.fp8_ignored import skipped
from kvcore.models.fp8_scales import Linear, rank_scales
from kvcore.models.geometry import ModelGeometry
from kvcore.models.rank_params import Ledger, on_rank, vocab_rows

# (the Transformers backend builds GPT-NeoX's query_key_value as one ColumnParallelLinear;
# vLLM's own files and the backend's other classes a QKV linear of three shards)
_ONE_SHARD_QKV = ("gpt_neox",)
# (a linear at its vLLM path: output shards, input shard, the whole input width)
PathLinear = tuple[str, tuple[int, ...], int, int]


def linears(g: ModelGeometry, b: ClassicBlock, tp: int) -> list[Linear]:
    """One layer's linears on a rank: (vLLM's role, output shards, input width, split)."""
    h = g.hidden_size
    q = g.num_attention_heads // tp * g.head_dim
    kv = on_rank(g.num_kv_heads, tp) * g.head_dim
    mlp = b.mlp_width // tp if b.mlp_split else b.mlp_width
    whole = "column" if b.mlp_split else "replicated"
    qkv = (q + 2 * kv,) if g.model_type in _ONE_SHARD_QKV else (q, kv, kv)
    return [("qkv", qkv, h, "column"), ("o", (h,), q, "row"),
            ("up", (mlp,) * (2 if b.gated else 1), h, whole),
            ("down", (h,), mlp, "row" if b.mlp_split else "replicated")]


def layer_linears(g: ModelGeometry, tp: int, i: int) -> list[PathLinear]:
    """Layer `i`'s linears on a rank at vLLM's paths, for the int and ModelOpt ledgers
    (`kvcore.models.int_quant_rank`, `kvcore.models.modelopt_rank`): (path, output shards,
    input shard, the whole input width: a row-parallel linear's input is split)."""
    assert g.classic is not None
    return [(path, parts, k, k * tp if split == "row" else k) for (_, parts, k, split), path
            in zip(linears(g, g.classic, tp), layer_paths(g, i), strict=True)]


def stem_linears(g: ModelGeometry) -> list[PathLinear]:
    """The linears beside the embedding (OPT's project_in / project_out, whole on every rank,
    built with the quant_config), in `layer_linears`' form."""
    width = g.classic.embed_dim if g.classic is not None else 0
    if not width:
        return []
    h = g.hidden_size
    return [(OPT_PROJECTIONS[0], (h,), width, width), (OPT_PROJECTIONS[1], (width,), h, h)]


def stage_ends(g: ModelGeometry,
               stage: tuple[range | None, bool, bool]) -> tuple[range | None, bool, bool]:
    """A pipeline stage's layers and whether it holds the embedding and the LM head: all of
    them on every stage where vLLM's own file builds them so (`ClassicBlock.every_stage`)."""
    layers, first, last = stage
    every = g.classic is not None and g.classic.every_stage
    return layers, first or every, last or every


def ledger(g: ModelGeometry, b: ClassicBlock, tp: int, layers: range | None, first: bool,
           last: bool) -> Ledger:
    """One rank's parameters of a pipeline stage (`layers`): the embedding (and position
    embeddings, Bloom's norm) on the first stage, the final norm and LM head on the last (a
    tied head: the embedding again on a last stage that is not the first), or all of them on
    every stage where vLLM's own file builds them so (`ClassicBlock.every_stage`)."""
    led, h = Ledger(), g.hidden_size
    fp8 = g.quantization == "fp8"
    if b.every_stage:
        first = last = True
    rows = vocab_rows(g, tp)
    norm = h * (2 if b.norm_bias else 1)
    width = b.embed_dim or h
    if first:
        led.model += rows * width + b.positions * h + (2 * h if b.embed_norm else 0)
        if b.embed_dim:     # (OPT's project_in, project_out; unquantised where listed)
            proj: list[Linear] = [("project_in", (h,), width, "replicated"),
                                  ("project_out", (width,), h, "replicated")]
            listed = [p for p, path in zip(proj, OPT_PROJECTIONS, strict=True)
                      if fp8 and path in g.fp8_ignored]
            led.layer += width * h * (2 - len(listed))
            led.model += width * h * len(listed)
            if fp8:
                led.fp32 += rank_scales(g, [p for p in proj if p not in listed])
    if last:
        led.model += (norm if b.final_norm else 0) + (rows if b.head_bias else 0)
        if not g.tie_word_embeddings or not first:
            led.model += rows * width
    lins = linears(g, b, tp)
    for i in range(len(g.layer_kinds)):
        if layers is not None and i not in layers:
            continue
        # (the linears an fp8 checkpoint's ignored_layers name: unquantised, no scales)
        plain = [lin for lin, path in zip(lins, layer_paths(g, i), strict=True)
                 if skipped(g, path)] if fp8 and g.fp8_ignored else []
        quantised = [lin for lin in lins if lin not in plain]
        led.layer += sum(sum(parts) * k for _, parts, k, _ in quantised)
        led.model += sum(sum(parts) * k for _, parts, k, _ in plain)
        led.model += b.norms * norm + (sum(lins[0][1]) if b.qkv_bias else 0) + (
            h if b.o_bias else 0)
        led.model += sum(lins[2][1]) + h if b.mlp_bias else 0
        if fp8:
            # (and Fp8KVCacheMethod's q/k/v/prob scales: four, in the model dtype)
            led.fp32 += rank_scales(g, quantised)
            led.model += 4
    return led
