"""The specs vLLM 0.33's pipeline stages report where a stage holds no attention layer.

Each stage's worker sizes its own caches: once its layers are built, it asks the platform to
fit its block size to its attention backends (`Platform.update_block_size_for_backend`,
platforms/interface.py, called from v1/executor/multiproc_executor.py's worker start-up). A
stage whose layers are all Mamba-style (a run of Kimi Linear's KDA, Qwen3-Next's Gated
DeltaNet, Nemotron-H's or Jamba's Mamba, LFM2's short convolutions) finds no attention backend
that is not an SSM one (`_find_non_ssm_backends`) and returns before
`_align_hybrid_block_size`: its Mamba layers keep the block the config gave them (the
configured block size, 16 by default, with prefix caching's "align" mode; max_model_len with
"none", model_executor/models/config.py's `MambaModelConfig`) and their page unpadded, while
the stages with attention raise the block and pad the page as the whole model would. A draft's
layers sit on the last stage (`kvcore.sizing.pipeline`) and count there.

The engine core then groups the stages' specs merged (`get_global_kv_cache_groups`,
v1/core/kv_cache_planning.py): the unaligned Mamba layers are padded to the largest page but
keep their block, so they are a bucket of their own. Kimi Linear's tiny config on 4 stages
(KDA alone on stages 0 and 2) is 6 groups of one layer: KDA 0, 3, 4 at block 16, KDA 1 at 512,
MLA 2 and 5 at 512 (tests/data/kimi_linear/pp_answers.json), where one spec for every stage
gave 3 groups of two at 512. With "none" the padded specs are equal again: the same groups.

The alignment reads the stage's layers once more: in "align" mode the block is a multiple of
the Mamba layers' prefill checkpoint alignment, the lcm of what each layer the stage holds
declares (`get_mamba_prefill_checkpoint_alignment`, model_executor/layers/mamba/abstract.py):
64 for Gated DeltaNet layers on FlashInfer's kernel (Hopper's), 1 for a stage holding none. So
Qwen3-Next's full-attention layer alone on a stage (its tiny config on 8 stages) gets block
544 where a stage with GDN layers gets 576 (tests/data/hybrid_pp_stages/answers.json). Not
modelled: a draft's layers on a last stage holding no Mamba layer (that stage keeps the
model's block).
"""

from __future__ import annotations

from kvcore.models.eagle_draft import is_draft_layer
from kvcore.models.geometry import ModelGeometry
from kvcore.models.pp_support import refuse_pp
from kvcore.sizing.pipeline import model_stage_ranges, on_stage
from kvcore.specs import KVCacheSpec, MambaSpec


def stage_layer_names(g: ModelGeometry, names: list[str], pp: int) -> list[list[str]]:
    """The layers (of `names`, `layer_specs`' and a draft's) each of ``pp`` stages holds."""
    refuse_pp(g.name, g.architecture, pp)      # (vLLM's refusals first, as `pipeline_stages`)
    ranges = model_stage_ranges(g, pp)
    return [[n for n in names if on_stage(n, layers, k == pp - 1, g.num_layers)]
            for k, layers in enumerate(ranges)]


def stage_specs(g: ModelGeometry, specs: dict[str, KVCacheSpec],
                attention_free: dict[str, KVCacheSpec], pp: int,
                mamba_free: dict[str, KVCacheSpec] | None = None) -> dict[str, KVCacheSpec]:
    """`specs` (every layer's, in model order, as a stage with attention and Mamba layers
    builds it) with the Mamba layers of every stage holding no attention layer as
    `attention_free` has them (`layer_specs(..., attention_free=True)`), and the attention
    layers of every stage holding no Mamba layer (and no draft's) as `mamba_free` has them
    (`layer_specs(..., gdn_prefill_checkpoint=False)`: the block aligned to no checkpoint)."""
    if pp == 1 or not any(isinstance(s, MambaSpec) for s in specs.values()):
        return specs
    out = dict(specs)
    for names in stage_layer_names(g, list(specs), pp):
        if names and all(isinstance(specs[n], MambaSpec) for n in names):
            out.update((n, attention_free.get(n, specs[n])) for n in names)
        elif mamba_free and not any(isinstance(specs[n], MambaSpec) or is_draft_layer(n)
                                    for n in names):
            out.update((n, mamba_free.get(n, specs[n])) for n in names)
    return out
