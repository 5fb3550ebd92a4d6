"""A Nemotron-H config with a ``sliding_window`` slides every attention layer: vLLM 0.33's
nemotron_h.py hands the config's window to each attention layer (recorded from vLLM's class on
the meta device: tests/data/mamba/nemotron-h-window.census.json); kvcli read them as full."""

from __future__ import annotations

import json
from pathlib import Path

from kv_census_rows import kvcli_specs, same, vllm_specs

ROW = json.loads((Path(__file__).parent / "data" / "mamba" /
                  "nemotron-h-window.census.json").read_text())


def test_kvcli_builds_vllms_sliding_specs() -> None:
    ours = kvcli_specs(ROW, "NemotronHForCausalLM")
    assert not isinstance(ours, Exception), ours
    assert [s[0] for s in vllm_specs(ROW)] == ["MambaSpec", "SlidingWindowSpec"] * 2
    assert same(ours, vllm_specs(ROW)), (ours, vllm_specs(ROW))


def test_without_a_window_the_layers_attend_fully() -> None:
    row = {**ROW, "config": {**ROW["config"], "sliding_window": None}}
    ours = kvcli_specs(row, "NemotronHForCausalLM")
    assert not isinstance(ours, Exception)
    assert [s[0] for s in ours] == ["MambaSpec", "FullAttentionSpec"] * 2
