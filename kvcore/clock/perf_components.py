"""Which of perf.py's components vLLM 0.33's `ModelMetrics` builds for a model, and the
attention geometry it parses where a model's layers differ (`kvcore.clock.vllm_count`).

`ModelMetrics.__init__` builds each component (`attn`, `ffn`, `unembed`) from the config and
silently drops one whose parser raises `InvalidComponent` (a debug log only); with none left its
counters never move. Found with the oracle on the families of tests/data/perf_families:

* Mamba, Falcon-Mamba and Mamba2 configs have no ``num_attention_heads``, which every component's
  first parser requires (`get_required`): perf.py counts nothing for them.
* Gemma 3n's ``intermediate_size`` is a list (Gemma3nTextConfig makes one of an int) and Gemma 4's
  ``moe_intermediate_size`` is None unless its MoE block is set: `FfnMetrics`' integer fields
  refuse them, so their FFN is not counted.
* A model whose layers differ (Gemma 4's 512-wide full-attention heads, its per-layer KV heads) is
  one `ModelArchitectureConfig` whose varying fields are the layers' maximum
  (`ModelArchitectureConfig.from_layers`): perf.py bills every layer that head size and those KV
  heads.
* DBRX's experts are in its ``ffn_config``, where vLLM's expert getters do not look: perf.py
  bills it a dense FFN (4 x hidden wide, `kvcore.models.perf_widths`).
* Nemotron-H's config derives `layer_types` from its pattern (``mlp``, ``linear_attention``,
  ``full_attention``): no entry says "sliding", so perf.py bills no layer its window.
"""

from __future__ import annotations

from kvcore.models.geometry import ModelGeometry
from kvcore.models.kv_sharing import GEMMA3N_TYPES, GEMMA4_TYPES
from kvcore.models.mamba_only import MAMBA_ONLY_TYPES

PERF_COMPONENTS = ("attn", "ffn", "unembed")


def built_components(g: ModelGeometry) -> tuple[str, ...]:
    """perf.py's components `ModelMetrics` builds for this model (before the quantisation
    table, which drops `attn` and `ffn` on its own: `VllmShape.weight_byte_size`)."""
    if g.model_type in MAMBA_ONLY_TYPES:
        return ()
    if g.model_type in GEMMA3N_TYPES or (g.model_type in GEMMA4_TYPES
                                         and not g.moe_intermediate_size):
        return ("attn", "unembed")
    return PERF_COMPONENTS


def dropped_note(g: ModelGeometry) -> str:
    """One line saying what perf.py leaves out of this model's count ("" nothing)."""
    if not experts_seen(g):
        return ("vLLM's perf.py sees no experts in DBRX's ffn_config: it bills a dense FFN "
                f"{4 * g.hidden_size} wide (4 x hidden); the clock times the experts")
    if g.model_type in MAMBA_ONLY_TYPES:
        return ("vLLM's perf.py builds no component for this model (its config has no "
                "num_attention_heads): its MFU counters stay 0; the clock times it")
    if "ffn" not in built_components(g):
        why = ("intermediate_size is a list" if g.model_type in GEMMA3N_TYPES
               else "moe_intermediate_size is null")
        return (f"vLLM's perf.py drops the FFN ({why}, which its integer field refuses); the "
                "clock times it")
    return ""


def experts_seen(g: ModelGeometry) -> bool:
    """Whether perf.py sees this model's experts (`ModelConfig.get_num_experts`)."""
    return g.model_type != "dbrx"


def attention_dims(g: ModelGeometry) -> tuple[int, int]:
    """(KV heads, head size) perf.py bills every attention layer: the model's, or the largest
    of its layers' where they differ."""
    if not g.layer_dims:
        return g.num_kv_heads, g.head_dim
    return max(kv for kv, _ in g.layer_dims), max(d for _, d in g.layer_dims)


def swa_layers(g: ModelGeometry) -> tuple[int, int | None]:
    """(sliding layers, window) perf.py bills (`SlidingWindowAttentionParser`)."""
    swa, window = g.perf_sliding()
    if g.model_type == "nemotron_h":
        return 0, window            # (its layer_types name no sliding layer)
    return swa, window
