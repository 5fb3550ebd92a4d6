"""What a model's layers run, as the clock counts it: mixers, feed-forward blocks, all-reduces.

Most models give every layer one mixer (attention or Mamba) and one feed-forward block. The
hybrids read differently (vLLM 0.33's model files):
* Nemotron-H (`nemotron_h.py`): one block a layer, a mixer *or* a feed-forward (kind ``mlp``),
  each followed by its own all-reduce; the feed-forward is squared ReLU with no gate (an up and
  a down projection), the experts too, and the shared experts one MLP
  ``moe_shared_expert_intermediate_size x n_shared_experts`` wide;
* Falcon-H1 (`falcon_h1.py`, kind ``parallel``): attention and a Mamba2 mixer side by side in
  every layer, then a gated MLP: three row-parallel outputs, three all-reduces a layer;
* Zamba2 (`zamba2.py`, kind ``parallel`` for a hybrid layer): a Mamba2 mixer every layer; a
  hybrid layer runs a shared block first, attention over 2 x hidden_size and its gated MLP,
  the only feed-forward blocks (its LoRA adapters and the hybrid layer's replicated linear are
  not timed): three all-reduces a hybrid layer, one a Mamba layer;
* Qwen3-Next (`qwen3_next.py`): Gated DeltaNet layers (kvcli's kind ``mamba``, version
  ``gdn``) and full attention with an output gate (``attn_output_gate``, on by default: the QKV
  projection makes a second query-sized output, multiplied into the attention's output).
"""

from __future__ import annotations

from dataclasses import dataclass

from kvcore.models.geometry import ModelGeometry


@dataclass(frozen=True, slots=True)
class LayerBlocks:
    full: int               # full-attention mixers (Falcon-H1: one in every layer)
    sliding: int
    chunked: int
    mamba: int              # Mamba / Gated DeltaNet mixers
    dense_ffn: int          # dense feed-forward blocks
    moe_ffn: int            # mixture-of-experts feed-forward blocks
    ffn_matrices: int       # 3: gate, up and down; 2: up and down (squared ReLU)
    output_gate: bool       # the attention output multiplied by a projected gate
    allreduces: int         # per step under tensor parallelism, the embedding's included

    @property
    def attention(self) -> int:
        return self.full + self.sliding + self.chunked


def layer_blocks(g: ModelGeometry) -> LayerBlocks:
    parallel = g.count("parallel")
    n_moe = sum(1 for m in g.moe_layers if m) if g.num_experts else 0
    nemotron = g.model_type == "nemotron_h"
    # a Nemotron-H feed-forward is a layer of its own; elsewhere every layer has one
    ffn_layers = (g.count("mlp") if nemotron else parallel if g.zamba is not None
                  else g.num_layers)
    dense = ffn_layers - n_moe if g.intermediate_size else 0
    # one all-reduce per row-parallel output: a Nemotron-H layer has one, a Falcon-H1 layer
    # three (attention, Mamba, MLP), a Zamba2 layer one and a hybrid one three, any other two
    # (mixer, feed-forward); plus the vocabulary-parallel embedding's
    per_layer = 1 if nemotron or g.zamba is not None else 2
    parallel_extra = 2 * parallel if g.zamba is not None else parallel
    allreduces = per_layer * g.num_layers + parallel_extra + 1
    return LayerBlocks(
        full=g.count("full") + parallel, sliding=g.count("sliding"),
        chunked=g.count("chunked"), mamba=g.count("mamba") + parallel, dense_ffn=dense,
        moe_ffn=n_moe, ffn_matrices=2 if nemotron else 3,
        output_gate=g.attention_output_gate, allreduces=allreduces)
