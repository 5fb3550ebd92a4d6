"""A pipeline stage recorded from vLLM 0.33 (a census's ``cases[name]["tpNppM"][stage]``:
its decoder layers, parameter bytes and buffers by dtype) against kvcli's, shared by
tests/test_step3_pp.py, test_dsv32_pp.py, test_mimo_v2_pp.py and test_kimi_linear_pp.py."""

from __future__ import annotations

from kvcore.models.geometry import ModelGeometry
from kvcore.models.weights import estimate_weights_bytes
from kvcore.sizing.buffers_term import buffer_bytes
from kvcore.sizing.pipeline import stage_ranges


def assert_stage_is_vllms(g: ModelGeometry, key: str, stage: int, rec: dict,
                          max_model_len: int = 4096) -> tuple[int, int]:
    """The stage's layers, weights and buffers (at the max_model_len recorded) equal vLLM's;
    the TP and PP sizes `key` names. Buffers by dtype, or by name and then dtype."""
    tp, pp = int(key[2]), int(key.split("pp")[1])
    r = stage_ranges(g.num_layers, pp)[stage]
    assert [r.start, r.stop] == rec["layers"]
    first, last = stage == 0, stage == pp - 1
    assert estimate_weights_bytes(g, tp, (r, first, last)) \
        == sum(rec["param_bytes_by_dtype"].values())
    buffers = rec["buffer_bytes_by_dtype"].values()
    assert buffer_bytes(g, tp, None, max_model_len, r, first, last) == sum(
        sum(b.values()) if isinstance(b, dict) else b for b in buffers)
    return tp, pp
