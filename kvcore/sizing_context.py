"""`SizingContext`: the engine settings a KV cache spec is sized against (vLLM's `VllmConfig`,
reduced to what the specs read). `kvcore.specs` re-exports it."""

from __future__ import annotations

from dataclasses import dataclass, replace

# vLLM 0.33's SchedulerConfig class default (what `vllm serve` starts from before a device
# picks another); the one default of kvcli's scheduler, replay, config and sizing API.
DEFAULT_MAX_NUM_BATCHED_TOKENS = 2048
# vLLM 0.33's CacheConfig default: the fraction of GPU memory vLLM may use (weights, activations,
# KV cache). The one default of kvcli's config, replay and sizing API, so that a sizing from
# --gpu-memory-gib alone gives the blocks `vllm serve` would.
DEFAULT_GPU_MEMORY_UTILIZATION = 0.92


@dataclass(frozen=True, slots=True)
class SizingContext:
    """The engine settings that decide how much one request may hold (vLLM's VllmConfig, reduced).

    ``max_in_flight_tokens`` is vLLM 0.33's bound on tokens scheduled but not yet settled:
    ``max_concurrent_batches * max_num_batched_tokens`` (2 batches with async scheduling, vLLM's
    default; 1 without). Sliding-window and chunked-local layers reserve for it.
    """

    max_model_len: int
    max_num_batched_tokens: int = DEFAULT_MAX_NUM_BATCHED_TOKENS
    max_concurrent_batches: int = 1
    max_num_encoder_input_tokens: int = 0
    mamba_cache_mode: str = "align"  # "align" (prefix caching on) or "none"

    @property
    def max_in_flight_tokens(self) -> int:
        return self.max_concurrent_batches * self.max_num_batched_tokens

    def with_max_model_len(self, n: int) -> SizingContext:
        return replace(self, max_model_len=n)
