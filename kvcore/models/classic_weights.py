"""One tensor-parallel rank's parameters of a pre-Llama decoder (`kvcore.models.classic_blocks`):
the attention's fused QKV and output projections split by heads (KV heads fewer than the ranks
kept one a rank), the MLP split unless the block keeps it whole, a row-parallel linear's bias,
the norms and learned position embeddings whole on every rank, the vocabulary padded and split
(tests/data/gpt_family/)."""

from __future__ import annotations

from kvcore.models.classic_blocks import ClassicBlock
from kvcore.models.geometry import ModelGeometry
from kvcore.models.rank_params import Ledger, on_rank, vocab_rows


def ledger(g: ModelGeometry, b: ClassicBlock, tp: int, layers: range | None, first: bool,
           last: bool) -> Ledger:
    """One rank's parameters of a pipeline stage (`layers`): the embedding (and position
    embeddings, Bloom's norm) on the first stage, the final norm and LM head on the last (a
    tied head: the embedding again on a last stage that is not the first), or all of them on
    every stage where vLLM's own file builds them so (`ClassicBlock.every_stage`)."""
    led, h = Ledger(), g.hidden_size
    if b.every_stage:
        first = last = True
    rows = vocab_rows(g, tp)
    norm = h * (2 if b.norm_bias else 1)
    width = b.embed_dim or h
    if first:
        led.model += rows * width + b.positions * h + (2 * h if b.embed_norm else 0)
        led.layer += 2 * width * h if b.embed_dim else 0    # (OPT's project_in, project_out)
    if last:
        led.model += (norm if b.final_norm else 0) + (rows if b.head_bias else 0)
        if not g.tie_word_embeddings or not first:
            led.model += rows * width
    q = g.num_attention_heads // tp * g.head_dim
    kv = on_rank(g.num_kv_heads, tp) * g.head_dim
    mlp = b.mlp_width // tp if b.mlp_split else b.mlp_width
    ups = 2 if b.gated else 1
    for i in range(len(g.layer_kinds)):
        if layers is not None and i not in layers:
            continue
        led.layer += h * (q + 2 * kv) + q * h + ups * mlp * h + mlp * h
        led.model += b.norms * norm + (q + 2 * kv if b.qkv_bias else 0) + (h if b.o_bias else 0)
        led.model += ups * mlp + h if b.mlp_bias else 0
    return led
