"""A ModelOpt checkpoint's KV cache algorithm as `--kv-cache-dtype auto` (vLLM 0.33's
resolve_kv_cache_dtype_string): the clock times the cache the pool is sized in, and the perf.py
count reads the dtype vLLM resolved (tests/data/weights_census/modelopt/answers.json's
`kv_cache_dtype_auto`)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kvcore.clock.gpus import find_gpu
from kvcore.clock.roofline import RooflineClock
from kvcore.clock.vllm_count import vllm_shape
from kvcore.models.hf_config import read_hf_config

HERE = Path(__file__).parent / "data" / "weights_census" / "modelopt"


def _g(case: str):
    return read_hf_config(json.loads((HERE / f"{case}.config.json").read_text()))


def test_the_clock_and_perf_count_read_the_cache_vllm_resolves() -> None:
    fp8, plain = _g("llama-3-1-8b-modelopt-fp8"), _g("llama-modelopt-fp8-no-kv")
    clock = RooflineClock(fp8, find_gpu("H100"))
    assert (clock.kv_cache_dtype, clock.ws.kv_bytes) == ("fp8_e4m3", 1)
    assert RooflineClock(fp8, find_gpu("H100"), kv_cache_dtype="bfloat16").ws.kv_bytes == 2
    assert RooflineClock(plain, find_gpu("H100")).kv_cache_dtype == "auto"
    assert vllm_shape(fp8).cache_byte_size == 1
    assert vllm_shape(plain).cache_byte_size == 2


def test_an_mla_models_block_size_note_names_the_resolved_cache(tmp_path: Path) -> None:
    # (FLASHMLA for an fp8 cache on Hopper: the checkpoint's FP8 KV algorithm picks it)
    from typer.testing import CliRunner

    from kvcli.app import app

    trace = tmp_path / "t.jsonl"
    trace.write_text('{"timestamp": 0, "input_length": 100, "output_length": 5}\n')
    res = CliRunner().invoke(app, [
        "replay", str(trace), "--model-config", str(HERE / "deepseek-v3-modelopt-fp8.config.json"),
        "--gpu-memory-gib", "80", "--max-model-len", "4096", "--gpu", "H100"])
    assert res.exit_code == 0, res.output
    assert ("warning: deepseek_v3 uses MLA: on H100 with kv_cache_dtype fp8_e4m3 vLLM 0.33 picks "
            "FLASHMLA, block_size 64; sized at block_size 16: give block_size 64\n") in res.stderr


def test_a_bad_field_in_hf_quant_config_json_names_that_file(tmp_path: Path) -> None:
    # (the whole quantization_config from the file; a mixed table from it: the file and its key)
    from kvcore.errors import InputError
    from kvcore.models.config_file import _read

    for case, key, value, field in (
            ("llama-modelopt-nvfp4-file", "quant_algo", "INT4_AWQ", "quantization.quant_algo"),
            ("llama-modelopt-mixed-file", "quantized_layers", {},
             "quantization.quantized_layers")):
        d = tmp_path / case
        d.mkdir()
        (d / "config.json").write_text((HERE / f"{case}.config.json").read_text())
        q = json.loads((HERE / f"{case}.hf_quant_config.json").read_text())
        q["quantization"][key] = value
        (d / "hf_quant_config.json").write_text(json.dumps(q))
        with pytest.raises(InputError) as e:
            _read(str(d / "config.json"))
        assert (e.value.path, e.value.field) == (str(d / "hf_quant_config.json"), field)
