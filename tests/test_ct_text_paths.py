"""compressed-tensors' refusal of a language-model shard in a multimodal class names the linear
by vLLM's path in that class (`kvcore.models.text_paths`): kvcli said
'model.layers.0.self_attn.o_proj' where vLLM says 'language_model.model.layers.0...' (LLaVA,
Mistral 3, InternVL, Qwen2-Audio, Qwen3.5, ...), 'llm.model.layers.0...' (MiniCPM-V) or
'model.text_model.layers.0...' (Idefics3, SmolVLM). Every recorded refusal of a multimodal
language-model linear is compared (vLLM's words from answers.json)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from census_rows import case_geometry

from kvcore.errors import InputError
from kvcore.sizing import resolve_kv_cache_config

DATA = Path(__file__).parent / "data" / "weights_census"
FOLDERS = ("quant_towers", "quant_towers3", "quant_voxtral")


# (kvcli refuses the voxtral tower's 4 heads at TP 8 first, as vLLM's start-up would; the
# recorder built the class itself)
HEADS_FIRST = {("tiny-voxtral-ct-w4a16", 8)}


def _recorded() -> list[tuple[str, str, int, str]]:
    out = []
    for folder in FOLDERS:
        cases = json.loads((DATA / folder / "answers.json").read_text())["cases"]
        for name, case in cases.items():
            if " " in name or "tp" not in case:     # (a case run with options: the same)
                continue
            for tp, runs in case["tp"].items():
                refused = runs[0].get("refused") or ""
                m = re.search(r"for layer '(language_model\.model|llm\.model|model\.text_model"
                              r"|model)\.layers\.", refused)
                if m and (name, int(tp)) not in HEADS_FIRST:
                    out.append((folder, name, int(tp), refused))
    return out


CASES = _recorded()


def test_the_recorded_refusals_are_all_there():
    assert len(CASES) == 35
    assert {re.search("layer '(.*)[.]layers[.]", r).group(1) for *_, r in CASES} == {
        "language_model.model", "llm.model", "model.text_model", "model"}


@pytest.mark.parametrize(("folder", "name", "tp", "refused"), CASES,
                         ids=[f"{n}-tp{tp}" for _, n, tp, _ in CASES])
def test_a_language_model_shard_is_named_as_vllm_names_it(folder, name, tp, refused):
    cases = json.loads((DATA / folder / "answers.json").read_text())["cases"]
    g = case_geometry(DATA / folder, cases, name)
    with pytest.raises(InputError) as e:
        resolve_kv_cache_config(geometry=g, tensor_parallel_size=tp, gpu_memory_gib=4096,
                                max_model_len=4096)
    # (vLLM's words whole, quoted, in kvcli's line)
    assert f'"{refused.removeprefix("ValueError: ")}"' in e.value.message
