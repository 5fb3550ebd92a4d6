"""A replay reads its model's config.json once: the start-up's sizing reads it and hands the
geometry on (`StartUp.geometry`) to the clock and the start-up warnings, which read it again
before (three times with the roofline clock and an MLA model's block-size note)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kvcore.engine.options import ReplayOptions
from kvcore.engine.replay import replay
from kvcore.models import hf_config
from kvcore.models.presets import PRESETS


@pytest.mark.parametrize(("more", "clock"), [
    ({}, "linear"),
    # the roofline clock on the model; vLLM picks FLASHMLA's 64 there: the note says so
    ({"gpu": "h100", "kv_cache_dtype": "fp8"}, "roofline"),
])
def test_config_json_is_read_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                  more: dict, clock: str) -> None:
    model = tmp_path / "config.json"
    model.write_text(json.dumps(PRESETS["deepseek-v2-lite"][1]))
    trace = tmp_path / "t.jsonl"
    trace.write_text("".join(json.dumps({"timestamp": i, "input_length": 40, "output_length": 2})
                             + "\n" for i in range(3)))
    reads: list[str] = []
    real = hf_config.read_json

    def counted(path: str):
        reads.append(path)
        return real(path)

    monkeypatch.setattr(hf_config, "read_json", counted)
    opts = {"model_config": str(model), "num_blocks": 256, "max_model_len": 4096, **more}
    s = replay(str(trace), ReplayOptions(**opts, given=frozenset(opts)))
    assert reads == [str(model)]
    # the geometry handed on still says what the model needs said: its MLA block size
    assert sum("uses MLA" in w for w in s.warnings) == 1, s.warnings
    assert (s.to_dict().get("clock") or {"name": "linear"})["name"] == clock
