"""The max_model_len vLLM 0.33 runs a target at beside an EAGLE, EAGLE-3 or MTP draft.

The draft's own length is its config's, derived as a target's is (`ModelConfig` of the draft:
`max_position_embeddings` times a linear or dynamic factor, YaRN's and Llama 3's as given;
`default_max_model_len`), then capped at the target's (`_maybe_override_draft_max_model_len`,
config/speculative.py). Where every RoPE type of the draft only sizes its cache (default,
linear, llama3, ntk, proportional) vLLM raises the draft's `max_position_embeddings` to the
target's length instead (`draft_shares_target_positions`: `kvcore.sizing.buffers_term`);
otherwise the V2 model runner, 0.33's default, cannot skip speculation past the draft's length
and `VllmConfig._limit_max_model_len_to_draft` lowers the target's max_model_len to the draft's,
with a warning. The target's length before it is what the scheduler's defaults were drawn from
(`SchedulerConfig` is built before `VllmConfig`). An MTP draft is the target's own config: its
length is the target's default one. Recorded: tests/data/draft_max_len.
"""

from __future__ import annotations

from typing import NamedTuple

from kvcore.models.eagle_draft import DraftModel
from kvcore.models.geometry import ModelGeometry


class DraftLimit(NamedTuple):
    """A target's max_model_len lowered to its draft's."""
    draft: int          # the draft's max_model_len: the target's now
    target: int         # the target's before

    def warning(self) -> str:
        """vLLM's warning, word for word."""
        return (f"The draft model's max_model_len ({self.draft}) is smaller than the target "
                f"model's ({self.target}) and the V2 model runner can't skip speculation for "
                f"longer sequences; reducing max_model_len to {self.draft}.")


def shares_target_positions(draft: DraftModel) -> bool:
    """Whether vLLM raises the draft's positions to the target's length (every RoPE type of
    it only sizes the cache) rather than lowering the target's."""
    return all(c.per_position is not None for c in draft.geometry.rope_caches)


def limit_to_draft(draft: DraftModel | None, max_model_len: int
                   ) -> tuple[int, DraftLimit | None]:
    """The target's max_model_len beside `draft` (None: none) where `max_model_len` was asked
    for (or defaulted to), and the lowering if it is one."""
    if draft is None or shares_target_positions(draft):
        return max_model_len, None
    own = min(draft.geometry.default_max_model_len, max_model_len)
    return own, DraftLimit(own, max_model_len) if own < max_model_len else None


def longest_accepted(g: ModelGeometry, draft: DraftModel | None, max_model_len: int) -> int:
    """The longest max_model_len vLLM runs `g` at (its RoPE-scaled limit, not its default: a
    LongRoPE model runs at 4,096 by default, but 131,072 fits its memory), `max_model_len`
    running; beside a draft that lowers a longer one, the draft's own length at most."""
    longest = max(max_model_len, g.context_limit or g.max_position_embeddings)
    if draft is None or shares_target_positions(draft):
        return longest
    return min(longest, max(max_model_len, draft.geometry.default_max_model_len))
