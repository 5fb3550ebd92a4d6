"""The multimodal classes whose tower kvcli does not count say so: one warning, on stderr and in
`kvcli config`'s JSON ``warnings`` (and a replay's), that the KV memory is over-estimated by
the tower's weights. The classes are vLLM 0.33's registry's `_MULTIMODAL_MODELS`
(tests/data/multimodal_classes/answers.json, recorded by record_multimodal_classes.py there)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from kvcli.app import app
from kvcore.models.multimodal_classes import MULTIMODAL_CLASSES

DATA = Path(__file__).parent / "data"
runner = CliRunner()
# (a Voxtral config with a Llama-2-7B-shaped text model, its audio_config giving the
# downsample_factor vLLM reads and is_causal: its causal Whisper encoder (vLLM's
# WhisperCausalEncoder) and adapter are not counted; the non-causal one is)
UNCOUNTED: dict[str, Any] = {"architectures": ["VoxtralForConditionalGeneration"],
             "model_type": "voxtral", "torch_dtype": "float16",
             "text_config": {"model_type": "llama", "hidden_size": 4096,
                             "intermediate_size": 11008, "num_hidden_layers": 32,
                             "num_attention_heads": 32, "num_key_value_heads": 32,
                             "vocab_size": 32064, "max_position_embeddings": 4096},
             "audio_config": {"model_type": "voxtral_encoder", "downsample_factor": 4,
                              "is_causal": True}}
SAID = ("voxtral's multimodal tower (VoxtralForConditionalGeneration's vision "
        "or audio encoder and its projector) is not counted: kvcli does not model it, so its "
        "weights are the language model's alone and the KV memory is over-estimated by the "
        "tower's weights: give the weights' known size (--weights-gib), or --num-blocks, or "
        "--gpu-memory-gib less the tower's size")


def test_the_table_is_vllms_registry() -> None:
    recorded = json.loads((DATA / "multimodal_classes" / "answers.json").read_text())
    assert MULTIMODAL_CLASSES == set(recorded["architectures"])
    assert len(MULTIMODAL_CLASSES) == 127


def _config(tmp_path: Path, cfg: dict) -> str:
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    return str(tmp_path / "config.json")


def test_an_uncounted_tower_is_said_once(tmp_path: Path) -> None:
    res = runner.invoke(app, ["config", "--model-config", _config(tmp_path, UNCOUNTED),
                              "--gpu-memory-gib", "80", "--json"])
    assert res.exit_code == 0, res.output
    assert res.stderr == f"warning: {SAID}\n"
    doc = json.loads(res.stdout)
    assert doc["warnings"] == [SAID] and doc["num_blocks"] == 7_813


def test_nothing_said_where_vllm_builds_no_tower_or_the_weights_are_given(tmp_path: Path) -> None:
    path = _config(tmp_path, UNCOUNTED)
    res = runner.invoke(app, ["config", "--model-config", path, "--gpu-memory-gib", "80",
                              "--language-model-only", "--json"])
    assert json.loads(res.stdout)["warnings"] == [(
        "option --language-model-only: no effect on kvcli's count of voxtral, whose "
        "VoxtralForConditionalGeneration tower it does not count either way")]
    for more in (["--weights-gib", "14"], ["--num-blocks", "300"]):
        res = runner.invoke(app, ["config", "--model-config", path, "--gpu-memory-gib", "80",
                                  *more, "--json"])
        assert res.exit_code == 0, res.output
        assert json.loads(res.stdout)["warnings"] == []


def test_counted_towers_and_text_models_say_nothing(tmp_path: Path) -> None:
    for case in ("qwen_vl/qwen2.5-vl-7b-instruct.config.json",
                 "qwen_vl/qwen3-vl-8b-instruct.config.json"):
        res = runner.invoke(app, ["config", "--model-config", str(DATA / case),
                                  "--gpu-memory-gib", "80", "--json"])
        assert res.exit_code == 0 and json.loads(res.stdout)["warnings"] == [], res.output
    text = {**UNCOUNTED["text_config"], "architectures": ["LlamaForCausalLM"]}
    res = runner.invoke(app, ["config", "--model-config", _config(tmp_path, text),
                              "--gpu-memory-gib", "80", "--json"])
    assert json.loads(res.stdout)["warnings"] == []


def test_replay_says_it_too(tmp_path: Path) -> None:
    trace = tmp_path / "t.jsonl"
    trace.write_text('{"timestamp": 0, "input_length": 100, "output_length": 5}\n')
    res = runner.invoke(app, ["replay", str(trace), "--model-config", _config(tmp_path, UNCOUNTED),
                              "--gpu-memory-gib", "80", "--json"])
    assert res.exit_code == 0, res.output
    # (a replay names its options by field, and takes no weights size)
    said = SAID.replace("the weights' known size (--weights-gib), or --num-blocks, or "
                        "--gpu-memory-gib", "num_blocks, or gpu_memory_gib")
    assert said in json.loads(res.stdout)["warnings"]
