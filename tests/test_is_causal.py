"""A config's ``is_causal`` as vLLM 0.33 reads it (tests/data/is_causal/: README.md): llama.py's,
qwen2.py's, qwen3.py's, gemma3.py's, apertus.py's and qwen3_next.py's attention layers become
EncoderOnlyAttention, with no KV cache, where it is false or null. kvcli sized them all as
decoders (a gte-Qwen2-7B-like pooling config: 69,501 blocks at 80 GiB); it refuses them now,
and reads the classes that ignore the key as before."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from kv_census_rows import ROWS

from kvcore.errors import InputError
from kvcore.models import layer_specs, read_hf_config

DATA = Path(__file__).resolve().parent / "data" / "is_causal"
CASES = json.loads((DATA / "answers.json").read_text())


def test_twenty_seven_cases_recorded() -> None:
    assert len(CASES) == 27 and not any("error" in c for c in CASES.values())


@pytest.mark.parametrize("case", sorted(CASES))
def test_refused_where_vllms_attention_keeps_no_cache(case: str) -> None:
    arch, value = case.split(" is_causal=")
    cfg = {**ROWS[arch]["config"], "is_causal": json.loads(value)}
    vllm = CASES[case]
    attention_gone = not {"FullAttentionSpec", "SlidingWindowSpec"} & set(vllm["types"])
    if not attention_gone:
        assert len(layer_specs(read_hf_config(cfg))) == vllm["n_specs"]
        return
    with pytest.raises(InputError) as e:
        read_hf_config(cfg, source="config.json")
    assert str(e.value) == (
        f"config.json: field 'is_causal': {value}: vLLM 0.33 builds "
        f"{ROWS[arch]['config']['model_type']}'s attention layers bidirectional (encoder-only) "
        "then, which keep no KV cache at all; kvcli does not model that (sizing them as a "
        "decoder's would not be vLLM's cache)")


def test_a_wrappers_text_config_names_it_by_its_path() -> None:
    cfg = ROWS["Gemma3ForConditionalGeneration"]["config"]
    cfg = {**cfg, "text_config": {**cfg["text_config"], "is_causal": False}}
    with pytest.raises(InputError) as e:
        read_hf_config(cfg, source="config.json")
    assert e.value.field == "text_config.is_causal"
