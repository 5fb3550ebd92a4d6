"""A refused key of a wrapper's text config is named by its path in the file
(`kvcore.models.text_key_paths`): kvcli said field 'moe_num_shared_experts' of Aria's
``text_config.moe_num_shared_experts``, 'num_key_value_heads' of Qwen3-ASR's
``thinker_config.text_config.num_key_value_heads``; the wrapper's own keys keep their names."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kvcli.app import app

runner = CliRunner()
DATA = Path(__file__).parent / "data" / "weights_census"
INT = "expected a non-negative integer below 2^63, got 'x'"


def _heads(kv: int, heads: int) -> str:
    return (f"{kv} KV heads do not divide the {heads} attention heads (num_attention_heads), "
            "as vLLM's attention layer requires")


@pytest.mark.parametrize("config, where, key, value, field, message", [
    ("mm_cohere/aria", ["text_config"], "moe_num_shared_experts", "x",
     "text_config.moe_num_shared_experts", INT),
    ("mm_cohere/aria", ["text_config"], "num_hidden_layers", ...,
     "text_config.num_hidden_layers",
     "missing 'num_hidden_layers', needed to size the KV cache (model_type 'aria_text')"),
    ("mm_cohere/aria", ["text_config"], "model_type", 5, "text_config.model_type",
     "must be a string, got 5"),
    ("mm_audio2/qwen3-asr-0_6b", ["thinker_config", "text_config"], "num_key_value_heads", 5,
     "thinker_config.text_config.num_key_value_heads", _heads(5, 16)),
    ("mm_omni/qwen2.5-omni-3b", ["thinker_config", "text_config"], "hidden_size", None,
     "thinker_config.text_config.hidden_size",     # (a null over the class default)
     "missing 'hidden_size', needed to size the KV cache (model_type 'qwen2')"),
    ("mm_ocr/deepseek-ocr-2", ["language_config"], "n_shared_experts", "x",
     "language_config.n_shared_experts", INT),
    ("mm_ocr/glm-ocr", ["text_config"], "num_nextn_predict_layers", "x",
     "text_config.num_nextn_predict_layers", INT),
    ("internvl_chat/internvl2_5-8b", ["llm_config"], "num_key_value_heads", 5,
     "llm_config.num_key_value_heads", _heads(5, 32)),
    # (the wrapper's own keys: as they were)
    ("mm_cohere/aria", ["vision_config"], "hidden_size", "x", "vision_config.hidden_size",
     "expected an integer >= 1, got 'x'"),
    ("mm_cohere/aria", [], "model_type", 5, "model_type", "must be a string, got 5"),
    ("mm_cohere/aria", [], "torch_dtype", "x", "torch_dtype", "unsupported dtype 'x'"),
])
def test_a_text_key_is_named_by_its_path(tmp_path, config, where, key, value, field, message):
    cfg = json.loads((DATA / f"{config}.config.json").read_text())
    part = cfg
    for w in where:
        part = part[w]
    if value is ...:
        del part[key]
    else:
        part[key] = value
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    r = runner.invoke(app, ["config", "--model-config", str(path), "--gpu-memory-gib", "80"])
    assert r.exit_code == 2, r.output
    assert r.stderr.strip() == f"error: {path}: field '{field}': {message}"
