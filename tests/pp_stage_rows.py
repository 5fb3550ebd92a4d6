"""A pipeline stage recorded from vLLM 0.33 (a census's ``cases[name]["tpNppM"][stage]``:
its decoder layers, parameter bytes and buffers by dtype) against kvcli's, shared by
tests/test_step3_pp.py and tests/test_dsv32_pp.py."""

from __future__ import annotations

from kvcore.models.geometry import ModelGeometry
from kvcore.models.weights import estimate_weights_bytes
from kvcore.sizing.buffers_term import buffer_bytes
from kvcore.sizing.pipeline import stage_ranges


def assert_stage_is_vllms(g: ModelGeometry, key: str, stage: int, rec: dict) -> tuple[int, int]:
    """The stage's layers, weights and buffers (at max_model_len 4096, as recorded) equal
    vLLM's; the TP and PP sizes `key` names."""
    tp, pp = int(key[2]), int(key.split("pp")[1])
    r = stage_ranges(g.num_layers, pp)[stage]
    assert [r.start, r.stop] == rec["layers"]
    first, last = stage == 0, stage == pp - 1
    assert estimate_weights_bytes(g, tp, (r, first, last)) \
        == sum(rec["param_bytes_by_dtype"].values())
    assert buffer_bytes(g, tp, None, 4096, r, first, last) == sum(
        sum(b.values()) for b in rec["buffer_bytes_by_dtype"].values())
    return tp, pp
