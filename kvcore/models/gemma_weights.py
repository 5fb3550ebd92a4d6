"""Gemma 3n's and Gemma 4's text-model weights on one tensor-parallel rank, as vLLM 0.33 builds
them (gemma3n.py, gemma4.py; checked parameter for parameter against their classes on the meta
device at TP 1, 2, 4 and 8: tests/data/weights_gemma/).

Beside a decoder's embedding, attention, gated MLP, final norm and tied head:
* per-layer embeddings (PLE), where ``hidden_size_per_layer_input`` P > 0: a second embedding
  of ``vocab_size_per_layer_input`` rows, ``num_hidden_layers`` x P wide (vocabulary-parallel),
  its projection from the hidden state (column-parallel) and a P-wide norm; in each layer a
  gate (hidden -> P) and a projection (P -> hidden), whole on every rank, and a norm;
* with ``attention_bias``, the q(kv) and o projections' biases (gemma3n.py, gemma4.py);
* four norms a layer (pre and post attention and feed-forward) and q/k norms a head wide (no
  k norm on a KV-shared layer, which projects queries only: its K and V are its target's);
* Gemma 3n: AltUp (``altup_num_inputs`` n: n - 1 projections in and n - 1 out, hidden x hidden,
  split by TP; a layer's router hidden x n, its n x n correction and n x n^2 prediction
  coefficients, a norm and a float32 output scale, whole) and LAuReL (a rank-``laurel_rank``
  pair of linears, split, and a norm) in every layer;
* Gemma 4: each layer's own head size and KV heads (`kvcore.models.kv_sharing`),
  ``use_double_wide_mlp``: a KV-shared layer's MLP twice as wide, and with ``num_experts``
  (vLLM's test, not ``enable_moe_block``) a MoE block beside each MLP: a router (hidden x
  experts, a hidden-wide scale, a scale an expert), the experts' gated MLPs split by TP, three
  more norms.
Not modelled (refused where the estimate is asked for): pipeline stages (the PLE's place on
them is not checked) and quantised checkpoints.
"""

from __future__ import annotations

from kvcore.models.geometry import ModelGeometry
from kvcore.models.kv_sharing import GEMMA3N_TYPES, GemmaExtras
from kvcore.models.rank_params import VOCAB_PAD
from kvcore.models.worker_specs import kv_heads_per_worker


def _rows(vocab: int, tp: int) -> int:
    return -(-vocab // VOCAB_PAD) * VOCAB_PAD // tp


def gemma_rank_params(g: ModelGeometry, x: GemmaExtras, tp: int) -> tuple[int, int]:
    """One rank's parameters of the whole text model: (in the model dtype, in float32: AltUp's
    output scales, which gemma3n.py creates in float32)."""
    H, L, P = g.hidden_size, g.num_layers, x.per_layer_width
    n = _rows(g.vocab_size, tp) * H + H             # the embedding (the head tied to it), norm
    if not g.tie_word_embeddings and g.model_type not in GEMMA3N_TYPES:
        # (Gemma 4 builds its own head unless tied: gemma4.py; Gemma 3n's logits always read
        # the embedding: gemma3n.py)
        n += _rows(g.vocab_size, tp) * H
    if P:
        n += _rows(x.per_layer_vocab, tp) * L * P + H * L * P // tp + P
    if x.altup_inputs:
        n += 2 * (x.altup_inputs - 1) * H * H // tp
    q_heads = g.num_attention_heads // tp
    first_shared = L - x.shared_layers
    for i in range(L):
        kv, d = g.layer_dims[i] if g.layer_dims else (g.num_kv_heads, g.head_dim)
        # (vLLM's is_kv_shared_layer: queries only, whether or not a target was found)
        shared = x.shared_layers > 0 and i >= first_shared
        kv_rank = 0 if shared else kv_heads_per_worker(kv, tp)
        n += (q_heads + 2 * kv_rank) * d * H + q_heads * d * H      # q(kv) and o projections
        if g.attention_bias:    # (their biases: q(kv)'s split, o's whole on every rank)
            n += (q_heads + 2 * kv_rank) * d + H
        n += d * (1 if shared else 2) + 4 * H                       # q/k norms, 4 norms
        wide = 2 if x.double_wide_mlp and i >= first_shared > 0 else 1
        n += 3 * H * g.intermediate_size * wide // tp
        if P:
            n += 2 * H * P + H
        if x.altup_inputs:
            k = x.altup_inputs
            n += H * k + k * k + k * k * k + H
        if x.laurel_rank:
            n += 2 * H * x.laurel_rank // tp + H
        if g.num_experts:   # (Gemma 4's MoE block beside the MLP: router, experts, 3 norms)
            E = g.num_experts
            n += H + E + H * E + 3 * E * H * g.moe_intermediate_size // tp + 3 * H
    return n, (L * H if x.altup_inputs else 0)
