"""kvcli's buffer estimate (`kvcore.models.buffers`) against what vLLM 0.33.0's own model
classes register, for every census case at TP 1, 2, 4 and 8, every rank recorded
(tests/data/weights_census/answers.json, `buffer_bytes_by_dtype`: RoPE caches, attention
scales, Gemma's normalizer, Falcon-H1's mup vector, vision towers' buffers, under vLLM's
multimodal serving options too). Mamba2's `conv_weights` is a view of its conv1d weight, no
memory of its own: the recorded conv1d weights' bytes are taken off."""

from __future__ import annotations

import pytest

from kvcore.models.buffers import estimate_buffer_bytes
from kvcore.specs import DTYPE_BYTES
from tests.census_rows import built_ranks
from tests.test_weights_census import CASES, _geometry


def _views(name: str, tp: int) -> int:
    """The bytes of the Mamba2 conv weights `conv_weights` views (rank 0's names)."""
    g = _geometry(name)
    if g.mamba is None or g.mamba.version != "mamba2":
        return 0
    names = CASES[name]["tp"][str(tp)][0]["param_numel_by_name"]
    return sum(v for k, v in names.items() if k.endswith("conv1d.weight")) * DTYPE_BYTES[g.dtype]


@pytest.mark.parametrize(("name", "tp", "rank"), built_ranks(CASES))
def test_buffer_bytes_per_rank_equal_vllms(name: str, tp: int, rank: int) -> None:
    rec = CASES[name]["tp"][str(tp)][rank]["buffer_bytes_by_dtype"]
    recorded = sum(b for by_dtype in rec.values() for b in by_dtype.values())
    assert estimate_buffer_bytes(_geometry(name), tp) == recorded - _views(name, tp)


@pytest.mark.parametrize(("name", "expected"), [
    ("llama-3.1-8b", 33_554_944),            # 131,072 x 128 x 2 B + 32 layers x 16 B
    ("gemma-3-27b", 301_989_888 + 2 + 32_768 + 992),   # two RoPEs, normalizer, SigLIP ids
    ("gpt-oss-20b", 33_554_432 + 384),       # float32 YaRN: 4,096 x 32 rows x 64
    ("deepseek-v3", 20_971_520 + 976),       # YaRN 4,096 x 40 rows x 64 (qk_rope_head_dim)
    ("jamba-v0.1", 64)])                     # no RoPE: 4 attention layers' scales
def test_buffer_terms(name: str, expected: int) -> None:
    assert estimate_buffer_bytes(_geometry(name)) == expected
