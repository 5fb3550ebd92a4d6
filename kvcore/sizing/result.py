"""`SizingResult`: what `resolve_kv_cache_config` gives: the `KVCacheConfig`, the sizing context,
the model as vLLM builds it, the memory it was planned in and the figures `kvcli config`, the
replay and the CPU tier read of it (pipeline stages, a draft, the multimodal serving options).
"""

from __future__ import annotations

from dataclasses import dataclass

from kvcore.models.eagle_draft import DraftModel
from kvcore.models.geometry import ModelGeometry
from kvcore.models.mm_serving import MMState
from kvcore.sizing.config import Capacity
from kvcore.sizing.draft_len import DraftLimit
from kvcore.sizing.pipeline import PipelineStage
from kvcore.specs import KVCacheConfig, KVCacheGroupSpec, SizingContext


@dataclass(frozen=True, slots=True)
class SizingResult:
    config: KVCacheConfig
    ctx: SizingContext
    geometry: ModelGeometry
    available_bytes: int      # KV cache memory per worker
    weights_bytes: int        # per worker
    weights_estimated: bool
    capacity: Capacity
    kv_cache_dtype: str       # resolved ("auto" -> the model dtype)
    prefix_match_unit: int | None = None      # vLLM's, as given (kvcore.prefix_match)
    enable_prefix_caching: bool = True
    # with pipeline parallelism: each stage's planning (`kvcore.sizing.pipeline`); the fields
    # above are then those of the stage that sets the pool (the fewest blocks)
    stages: tuple[PipelineStage, ...] = ()
    # a speculative-decoding draft's layers and weights beside the model's (`eagle_draft`);
    # weights_bytes counts both (vLLM's "Model loading took")
    draft: DraftModel | None = None
    draft_weights_bytes: int = 0
    # the multimodal serving options' outcome (`kvcore.models.mm_serving`); `geometry` is the
    # model as vLLM builds it under them (a tower skipped, or whole on every rank)
    mm: MMState | None = None
    # with stages: the index of the one that sets the pool (the fewest blocks, the first of
    # equals), whose fields the ones above are
    pool_stage: int | None = None
    buffers_bytes: int = 0    # per worker, beside the weights (0 with weights_gib: in it)
    draft_limit: DraftLimit | None = None     # max_model_len lowered to a draft's (ctx's)
    # vLLM's warnings as it plans the groups, word for word (`kvcore.sizing.grouping`)
    planning_warnings: tuple[str, ...] = ()

    @property
    def bytes_per_block(self) -> int:
        return self.capacity.bytes_per_block

    @property
    def rank0_groups(self) -> list[KVCacheGroupSpec]:
        """The groups vLLM's scheduler plans with (`generate_scheduler_kv_cache_config`: rank
        0's KV cache config): with pipeline stages the first stage's projection of the model's
        groups, else the groups. The CPU tier sizes its chunk from them."""
        return self.stages[0].groups if self.stages else list(self.config.kv_cache_groups)
