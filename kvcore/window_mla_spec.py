"""vLLM 0.33's `SlidingWindowMLASpec`: a sliding window over MLA-format states, one latent
vector a state (no separate V), its page rounded up to an alignment. DeepSeek-V4 keeps one on
every layer (the 128-token window of its attention, fp8_ds_mla: 584 B a token) and one for
each compressor's states (float32 kv and score states over a window of 8 or 128 tokens).

Its manager is the sliding window's (`kind` "sliding_window", as vLLM's registry maps it).
The fields beside `SlidingWindowSpec`'s, as on `kvcore.specs.MLAAttentionSpec`:

* ``tokens_per_state``: tokens one stored state covers (a block holds block / it states);
* ``state_content_bytes``: the bytes of a state where the format packs them (fp8_ds_mla's
  584), None for the head's natural bytes;
* ``alignment``: the page rounded up to it (576 for fp8_ds_mla, 512 otherwise);
* ``block_stride_alignment``: vLLM's ``MultipleOf(n)``, the largest kernel block its backend
  takes, as n tokens (None: none). A block larger than n is split into kernel blocks the
  packing keeps whole; DeepSeek-V4's compressed caches take 256 at block 256: no padding.
"""

from __future__ import annotations

from dataclasses import dataclass

from kvcore.specs import DTYPE_BYTES, SlidingWindowSpec
from kvcore.state_pages import aligned_page, state_page


@dataclass(frozen=True, slots=True)
class SlidingWindowMLASpec(SlidingWindowSpec):
    cache_dtype_str: str | None = None
    tokens_per_state: int = 1
    state_content_bytes: int | None = None
    alignment: int | None = None
    block_stride_alignment: int | None = None
    model_version: str | None = None

    @property
    def real_page_size_bytes(self) -> int:
        return state_page(self, self.head_size * DTYPE_BYTES[self.dtype])

    @property
    def page_size_bytes(self) -> int:
        return aligned_page(self)
