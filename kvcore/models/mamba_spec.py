"""The `MambaSpec` vLLM 0.33 builds for a model's Mamba layers (`MambaBase.get_kv_cache_spec`,
model_executor/layers/mamba/abstract.py), and the attention block size a hybrid model gets so
that an attention page holds a Mamba state (`Platform._align_hybrid_block_size`).

Speculative decoding (``num_speculative_tokens`` K of any method) changes the spec two ways:
``num_speculative_blocks`` = K (the state after each draft token has a block: a request
holds K more), and, for the layers whose state calculator takes ``num_spec`` (Mamba2's
``mamba2_state_shape`` and Gated DeltaNet's ``gated_delta_net_state_shape``, not Jamba's
Mamba1), a conv state K rows longer, so a larger page and possibly a larger hybrid block.
Checked against vLLM for Qwen3-Next's MTP (tests/data/mtp_draft/qwen3_next_answers.json).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from kvcore.errors import InputError
from kvcore.models.qwen3_next import FLASHINFER_GDN_CHECKPOINT_ALIGNMENT
from kvcore.prefix_match import checkpoint_grid
from kvcore.specs import DTYPE_BYTES, MambaSpec, cdiv

if TYPE_CHECKING:       # (geometry imports this module)
    from kvcore.models.geometry import MambaGeometry, ModelGeometry

# FlashAttention's smallest kernel block (vLLM: MultipleOf(16)); hybrid block sizes step by it.
ATTENTION_KERNEL_BLOCK_ALIGNMENT = 16
NO_KV_KINDS = ("mamba", "mlp")
# Platform._align_hybrid_block_size's block step for a hybrid MLA model (TRT-LLM / FlashInfer
# MLA decode kernels: 128 / kernel block)
MLA_HYBRID_ALIGNMENT = 128  # layers whose pages are not attention pages


def mamba_state(m: MambaGeometry, dtype: str, tp: int, num_spec: int = 0
                ) -> tuple[tuple[tuple[int, ...], ...], tuple[str, ...]]:
    """vLLM's `MambaStateShapeCalculator` for one worker: (conv state, SSM state) shapes.

    mamba1: conv (d_conv - 1, d_inner/tp), SSM (d_inner/tp, d_state).
    mamba2: conv (d_conv - 1 + num_spec, (d_inner + 2*n_groups'*d_state)/tp), SSM (n_heads/tp,
    d_head, d_state), n_groups' = n_groups rounded so every head shard has its group.
    gdn: conv (d_conv - 1 + num_spec, (2*key heads*key dim + value heads*value dim)/tp), SSM
    (value heads/tp, value dim, key dim).
    ``num_spec``: speculative decoding's K. Both states in the model dtype (vLLM's
    mamba_cache_dtype "auto"), the SSM state in ``ssm_dtype`` where the model's config hook
    sets one.
    """
    shapes: tuple[tuple[int, ...], ...]
    if m.version == "mamba1":
        shapes = ((m.d_conv - 1, m.d_inner // tp), (m.d_inner // tp, m.d_state))
    elif m.version == "short_conv":     # (LFM2's: one conv state, no conv rows for drafts)
        return ((m.d_conv - 1, m.d_inner // tp),), (dtype,)
    elif m.version in ("gdn", "kda"):
        # gated_delta_net_state_shape: conv over q, k (key heads) and v (value heads); the
        # recurrent state (value heads, value dim, key dim); Kimi's KDA (kda_state_shape) the
        # same with as many key heads as value heads, all head_dim wide
        conv_dim = 2 * m.n_groups * m.d_state + m.n_heads * m.d_head
        shapes = ((m.d_conv - 1 + num_spec, conv_dim // tp),
                  (m.n_heads // tp, m.d_head, m.d_state))
    else:
        groups = m.n_groups + (0 if m.n_groups % tp == 0 else tp - m.n_groups)
        conv_dim = m.d_inner + 2 * groups * m.d_state
        shapes = ((m.d_conv - 1 + num_spec, conv_dim // tp),
                  (m.n_heads // tp, m.d_head, m.d_state))
    return shapes, (dtype, m.ssm_dtype or dtype)


def hybrid_block_size(attn_page_per_token: int, mamba_page: int, block_size: int,
                      checkpoint_align: int = 1, mla: bool = False) -> int:
    """The attention block size vLLM picks so that one attention page holds a Mamba state
    (a multiple of the layers' prefill checkpoint alignment in align mode: 64 for FlashInfer's
    Gated DeltaNet kernel; of 128 beside MLA layers, whose decode kernels want it)."""
    kernel = max(ATTENTION_KERNEL_BLOCK_ALIGNMENT, block_size, MLA_HYBRID_ALIGNMENT if mla else 1)
    align = math.lcm(kernel, checkpoint_align)
    needed = align * cdiv(mamba_page, align * attn_page_per_token)
    needed = ATTENTION_KERNEL_BLOCK_ALIGNMENT * cdiv(needed, ATTENTION_KERNEL_BLOCK_ALIGNMENT)
    return max(block_size, needed)


def model_mamba_spec(g: ModelGeometry, *, block_size: int, kv_heads: int, kv_dtype: str,
                     tp: int, max_model_len: int | None, mamba_cache_mode: str,
                     gdn_prefill_checkpoint: bool, prefix_match_unit: int | None,
                     num_speculative_tokens: int,
                     attention_free: bool | None = None) -> tuple[MambaSpec, int]:
    """(the Mamba layers' spec, the attention block size) for one worker of model `g`, which
    has Mamba layers (`kvcore.models.worker_specs.layer_specs` says what each keyword means).
    ``attention_free``: the worker holds no attention layer (a pipeline stage of Mamba layers
    alone, `kvcore.sizing.stage_specs`): no alignment, the Mamba block the configured one;
    None: as `g`'s own layers say (`holds_attention`)."""
    assert g.mamba is not None          # (layer_specs asks only of a model with Mamba layers)
    if g.mamba.version == "mamba2":
        _mamba2_tp(g, tp)
    k = num_speculative_tokens
    shapes, dtypes = mamba_state(g.mamba, g.dtype, tp,
                                 0 if g.mamba.version in ("mamba1", "short_conv") else k)
    page = MambaSpec(block_size, shapes=shapes, dtypes=dtypes).page_size_bytes
    gdn = (g.mamba.version == "gdn" and mamba_cache_mode == "align"
           and gdn_prefill_checkpoint)
    padded = None
    if attention_free is None:
        attention_free = not holds_attention(g)
    # (and only a hybrid class: `model_config.is_hybrid`, which no Mamba-only class is, a
    # draft's attention layers beside it or not)
    from kvcore.models.mamba_only import MAMBA_ONLY_TYPES  # (it imports geometry, as we)

    if not attention_free and g.model_type not in MAMBA_ONLY_TYPES:
        # (an MLA page: one latent a token; Kimi Linear's)
        per_token = (g.mla.latent_size if g.mla else 2 * kv_heads * g.head_dim) * \
            DTYPE_BYTES[kv_dtype]
        block_size = hybrid_block_size(per_token, page, block_size,
                                       FLASHINFER_GDN_CHECKPOINT_ALIGNMENT if gdn else 1,
                                       mla=g.mla is not None)
        attn_page = block_size * per_token
        padded = attn_page if attn_page != page else None
    mamba_bs = block_size if mamba_cache_mode == "align" else (max_model_len or block_size)
    # vLLM's MambaMixer2 (Mamba2 models) writes a prefill checkpoint inside a chunk: one
    # block for it, at any token offset; Jamba's MambaMixer declares none; a Gated
    # DeltaNet layer on FlashInfer's kernel (assumed: Hopper) one on the Mamba block grid.
    ckpt = g.mamba.version == "mamba2" or gdn
    spec = MambaSpec(mamba_bs, shapes=shapes, dtypes=dtypes, page_size_padded=padded,
                     # (KDA's backend is vLLM's GDN one)
                     mamba_type="gdn" if g.mamba.version == "kda" else g.mamba.version,
                     num_speculative_blocks=k,
                     num_prefill_checkpoint_blocks=int(ckpt),
                     prefill_checkpoint_alignment=(
                         checkpoint_grid(prefix_match_unit,
                                         FLASHINFER_GDN_CHECKPOINT_ALIGNMENT, mamba_bs)
                         if gdn else 1) if ckpt else None)
    return spec, block_size


def holds_attention(g: ModelGeometry) -> bool:
    """Whether a worker of `g` (pipeline size 1, no draft) holds an attention layer, which is
    what vLLM 0.33 aligns a hybrid's block by: each worker, once its layers are built, asks the
    platform to fit the block to its attention backends (`update_block_size_for_backend`,
    platforms/interface.py, from v1/executor/uniproc_executor.py and multiproc_executor.py),
    which returns before `_align_hybrid_block_size` where `_find_non_ssm_backends` finds none.
    So a hybrid class (Qwen3-Next, Jamba, Nemotron-H, Granite 4.0-H) cut to Mamba layers alone
    keeps the configured block and an unpadded page, as the Mamba-only classes do
    (tests/data/size_fuzz: s0-0288, Granite 4.0-H's 3 Mamba2 layers, block 16 and 4,229,120 B
    pages). Zamba2's caches are its shared blocks' uses."""
    return (any(k not in NO_KV_KINDS for k in g.layer_kinds)
            or bool(g.zamba and g.zamba.uses))


def _mamba2_tp(g: ModelGeometry, tp: int) -> None:
    """vLLM's MambaMixer2 asserts, in its order, for every Mamba2 model (attention-free or
    hybrid: Falcon-H1, Granite 4.0-H, Nemotron-H build the same mixer): TP divides the heads,
    then the groups unless there is one, then (its gated norm's) the intermediate size. Checked
    against vLLM's builds at TP 2 and 4 (tests/data/mamba_only/tp_refusals.json): a hidden size
    TP does not divide builds (the mixer splits the intermediate size, not the hidden)."""
    m = g.mamba
    assert m is not None
    groups_why = ("If tensor parallel world size does not divide num_groups, then num_groups "
                  "must equal 1.")
    for ok, why in ((m.n_heads % tp == 0, "Tensor parallel world size must divide num heads."),
                    (m.n_groups % tp == 0 or m.n_groups == 1, groups_why),
                    (m.d_inner % tp == 0, "Tensor parallel world size must divide hidden size.")):
        if not ok:
            raise InputError(f"{g.name}'s Mamba2 layers do not split over it, and vLLM refuses "
                             f"to build them: \"{why}\"; got {tp}", field="tensor_parallel_size")
