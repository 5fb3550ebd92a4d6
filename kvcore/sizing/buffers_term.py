"""The buffers term of the KV memory: what vLLM 0.33's model classes keep on a rank beside their
parameters (`kvcore.models.buffers`), subtracted with the weights, as `determine_available_memory`
sees them in the fall of free memory (docs/config.md, "Buffers").

Where they are, per pipeline stage (each stage its own process, so `get_rope`'s cache is per
stage): a RoPE cache on every stage whose layers have attention, one per distinct config; the
vision tower's on the first stage (`_mark_tower_model` skips the tower on later stages under the
V2 runner); a draft's on the last stage, with its attention layers' scales, its RoPE cache
shared with the target's where get_rope's key is the same (an MTP module's), else its own. vLLM
first raises an EAGLE or MTP draft's `max_position_embeddings` to the target's max_model_len
when every RoPE type of it only sizes the cache (`_maybe_override_draft_max_position_embeddings`,
config/speculative.py): yuhuili's EAGLE-3 draft for Llama-3.1-8B (2,048 positions, default RoPE
at base 10,000) holds 131,072 x 128 x 2 B beside the target's at 131,072 (llama3 at 500,000).
"""

from __future__ import annotations

from kvcore.models.buffers import ATTENTION_KINDS, estimate_buffer_bytes
from kvcore.models.deepseek_v4_buffers import topk_scratch_bytes
from kvcore.models.eagle_draft import DraftModel
from kvcore.models.geometry import ModelGeometry
from kvcore.models.rope_caches import with_positions
from kvcore.sizing.draft_len import shares_target_positions

SCALES = 16     # an attention layer's four float32 scales


def draft_buffer_bytes(draft: DraftModel, target: ModelGeometry, max_model_len: int,
                       layers: range | None = None, batched_tokens: int = 0) -> int:
    """The buffers `draft` adds on a rank of the stage holding the target's `layers` (None:
    all of them); `batched_tokens` (max_num_batched_tokens) sizes a sparse MLA MTP module's
    own top-k scratch."""
    g = draft.geometry
    attn = sum(k in ATTENTION_KINDS for k in g.layer_kinds)
    if not attn:
        return 0
    # (DeepSeek-V3.2's and GLM-5's MTP modules each allocate a topk_indices_buffer as their
    # target's model does: deepseek_mtp.py, deepseek_v32/nvidia/mtp.py)
    scratch = 0 if g.mla is None or g.mla.indexer is None else (
        attn * topk_scratch_bytes(batched_tokens, g.mla.indexer.topk))
    caches = list(g.rope_caches)
    if caches and g.max_position_embeddings < max_model_len and shares_target_positions(draft):
        caches = [with_positions(c, max_model_len) for c in caches]
    # (built in the target's dtype: vLLM's draft model config takes it, whatever its file says)
    caches = [c._replace(dtype=g.dtype) if c.dtype != "float32" else c for c in caches]
    kinds = [k for i, k in enumerate(target.layer_kinds) if layers is None or i in layers]
    shared = ({c.identity() for c in target.rope_caches}
              if any(k in ATTENTION_KINDS for k in kinds) else set())
    own = {c.identity(): c.nbytes for c in caches if c.identity() not in shared}
    return SCALES * attn + sum(own.values()) + scratch


def buffer_bytes(g: ModelGeometry, tp: int, draft: DraftModel | None, max_model_len: int,
                 layers: range | None = None, first: bool = True, last: bool = True,
                 batched_tokens: int = 0) -> int:
    """The buffers on one of `tp` ranks: of the whole model, or of the pipeline stage holding
    `layers` (`first`: the vision tower's; `last`: the draft's); with the scratch vLLM sizes by
    `batched_tokens` (max_num_batched_tokens): Qwen3-VL's deepstack, Gemma 3n's / 4's
    multimodal per-layer embeddings."""
    n = estimate_buffer_bytes(g, tp, layers, first, batched_tokens)
    if draft is not None and last:
        n += draft_buffer_bytes(draft, g, max_model_len, layers, batched_tokens)
    return n


def buffers_text(n: int) -> str:
    """Buffers in a message: MiB from 1 MiB up, bytes below (Kimi Linear's 140 B at TP 1 read
    "0.00 MiB")."""
    return f"{n / 2**20:.2f} MiB" if n >= 1 << 20 else f"{n:,} B"
