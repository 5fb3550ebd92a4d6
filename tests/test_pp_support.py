"""vLLM 0.33 refuses pipeline parallelism for a model whose class lacks `SupportsPP`
(tests/data/pp_support: the registry's own answer, class by class)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kvcore.errors import InputError
from kvcore.models.pp_support import NO_PP
from kvcore.sizing import resolve_kv_cache_config

DATA = Path(__file__).parent / "data"
ANSWERS = json.loads((DATA / "pp_support" / "answers.json").read_text())


def test_the_set_is_the_registrys_answer() -> None:
    assert NO_PP == {a for a, v in ANSWERS.items() if v is False}
    assert (len(ANSWERS), len(NO_PP)) == (415, 102)
    assert ANSWERS["LlamaForCausalLM"] is True and ANSWERS["MambaForCausalLM"] is True


@pytest.mark.parametrize(("config", "arch"), [
    ("mamba_only/tiny-mamba2.config.json", "Mamba2ForCausalLM"),
    ("sched_gemma/gemma3n_small.json", "Gemma3nForCausalLM"),
])
def test_kvcli_refuses_stages_where_vllm_does(config: str, arch: str) -> None:
    path = str(DATA / config)
    with pytest.raises(InputError) as e:
        resolve_kv_cache_config(model_config=path, num_blocks=1000, max_model_len=256,
                                pipeline_parallel_size=2)
    assert e.value.field == "pipeline_parallel_size"
    assert f"({arch}) cannot be split into stages" in str(e.value)
    assert "Supported models implement the `SupportsPP` interface." in str(e.value)
    # (one stage is no pipeline: planned)
    assert resolve_kv_cache_config(model_config=path, num_blocks=1000,
                                   max_model_len=256).config.num_blocks == 1000


def test_a_model_vllm_splits_is_planned_in_stages() -> None:
    r = resolve_kv_cache_config(model_config=str(DATA / "mamba_only/tiny-mamba1.config.json"),
                                num_blocks=1000, max_model_len=256, pipeline_parallel_size=2)
    assert len(r.stages) == 2
