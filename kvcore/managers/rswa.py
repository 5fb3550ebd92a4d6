"""Reference sliding window attention, R-SWA (vLLM 0.33's `RSWAManager`).

The prompt (an image and its text) stays visible to every generated token; of the generated
tokens only the last ``rswa_window`` are. The group is full attention in all else (its blocks
are cached, hit and sized as full attention's: prompt + window never exceed max_model_len, so
no admission cap), but each step frees the gap between the two:

    blocks [cdiv(prompt, bs), max(prompt, processed - rswa_window) // bs)

(``processed``: computed tokens less those in flight), nulling their entries, from the last
down to the first entry already null, as a sliding window does. A block the prompt ends inside
is kept. Without the prompt length (vLLM's callers always pass it) nothing is skipped.
A later request may still hit a freed gap block while the pool keeps it cached.
"""

from __future__ import annotations

from kvcore.managers.full_attention import FullAttentionManager
from kvcore.specs import RSWASpec, cdiv


class RSWAManager(FullAttentionManager):
    # (frees blocks during the request: the coordinator calls its remove_skipped_blocks; it
    # states no `tokens_to_skip_block`, so decode windows never count its steps as quiet)
    skips_tokens = True

    def _finish_init(self) -> None:
        spec = self.kv_cache_spec
        assert isinstance(spec, RSWASpec)
        self.rswa_window = spec.rswa_window

    def remove_skipped_blocks(self, request_id: str, processed_computed_tokens: int,
                              num_prompt_tokens: int | None = None) -> None:
        if num_prompt_tokens is None:
            return      # (full attention's: nothing skipped)
        blocks = self.req_to_blocks.get(request_id)
        if blocks is None:
            return
        bs = self.block_size
        first = cdiv(num_prompt_tokens, bs)
        last = min(max(num_prompt_tokens, processed_computed_tokens - self.rswa_window) // bs,
                   len(blocks))
        self._null_range(blocks, first, last)
