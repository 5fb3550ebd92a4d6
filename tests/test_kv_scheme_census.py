"""The KV cache dtype vLLM 0.33's attention layers take for a quantised checkpoint
(tests/data/weights_census/kv_scheme/answers.json): a compressed-tensors kv_cache_scheme's
``auto`` is fp8 where an Attention gets the quant_config (not MLA, not Jamba's), its schemes and
fp8_e5m2 with fp8 checkpoints refused in vLLM's words (`kvcore.models.kv_cache_quant`)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kvcli.app import app
from kvcore.errors import InputError
from kvcore.models.hf_config import read_hf_config
from kvcore.models.quantization import auto_kv_dtype
from kvcore.sizing import resolve_kv_cache_config

DATA = Path(__file__).parent / "data"
HERE = DATA / "weights_census" / "kv_scheme"
CASES = json.loads((HERE / "answers.json").read_text())["cases"]


def _g(name: str):
    return read_hf_config(json.loads((HERE / name).read_text()), source=str(HERE / name))


@pytest.mark.parametrize("key", sorted(CASES))
@pytest.mark.parametrize("kv", ["auto", "fp8_e5m2"])
def test_the_layers_kv_dtype_is_vllms(key: str, kv: str) -> None:
    want = CASES[key][kv]
    g = _g(key.rsplit("/", 1)[1])
    if "refused" in want:
        with pytest.raises(InputError) as e:
            auto_kv_dtype(g, kv)
        assert f"\"{want['refused'].split(': ', 1)[1]}\"" in str(e.value)
        return
    (layers,) = {k.split(" ")[1] for k in want["layers"]}
    assert auto_kv_dtype(g, kv) == layers


def test_llama_3_1_8b_w8a8_with_a_kv_scheme_gets_the_fp8_pool() -> None:
    g = _g("llama-3-1-8b-ct-w8a8-kv-fp8.config.json")
    fp8 = resolve_kv_cache_config(geometry=g, gpu_memory_gib=80, max_model_len=8192)
    bf16 = resolve_kv_cache_config(geometry=g, gpu_memory_gib=80, max_model_len=8192,
                                   kv_cache_dtype="bfloat16")
    # (33,334 before: the model dtype's blocks)
    assert (fp8.kv_cache_dtype, fp8.config.num_blocks) == ("fp8", 66_668)
    assert (bf16.kv_cache_dtype, bf16.config.num_blocks) == ("bfloat16", 33_334)


INT8_LINE = ("field 'quantization_config.kv_cache_scheme': vLLM refuses it: \"Currently "
             "supported kv cache quantization is num_bits=8, type=float, however received "
             "num_bits=8, type=int\"")
E5M2_LINE = ("option --kv-cache-dtype: is fp8_e5m2, and vLLM 0.33 refuses it for this "
             "checkpoint: \"fp8_e5m2 kv-cache is not supported with fp8 checkpoints.\"")


@pytest.mark.parametrize(("case", "extra", "line"), [
    ("llama-ct-w8a8-kv-int8", [], INT8_LINE),
    ("llama-fp8", ["--kv-cache-dtype", "fp8_e5m2"], E5M2_LINE),
])
def test_the_cli_names_the_field_or_option(case: str, extra: list[str], line: str) -> None:
    path = HERE / f"{case}.config.json"
    res = CliRunner().invoke(app, ["config", "--model-config", str(path),
                                   "--gpu-memory-gib", "80", *extra])
    assert res.exit_code == 2
    where = f"{path}: " if not extra else ""
    assert res.stderr == f"error: {where}{line}\n"
    assert res.stdout == ""


def test_the_clock_times_fp8_and_perf_py_reads_the_engine_cores_dtype() -> None:
    # (the worker's Attention writes fp8 into its CacheConfig: the engine core's at TP 1, where
    # the worker shares its process; at TP 2 the engine core keeps auto, the model dtype)
    from kvcore.clock.gpus import find_gpu
    from kvcore.clock.roofline import RooflineClock
    from kvcore.clock.vllm_count import vllm_shape

    g = _g("llama-3-1-8b-ct-w8a8-kv-fp8.config.json")
    clock = RooflineClock(g, find_gpu("H100"), tp=2)
    assert (clock.kv_cache_dtype, clock.ws.kv_bytes) == ("fp8", 1)
    assert vllm_shape(g).cache_byte_size == 1
    assert vllm_shape(g, tp=2).cache_byte_size == 2
    assert vllm_shape(g, tp=2, kv_cache_dtype="fp8").cache_byte_size == 1
    assert vllm_shape(_g("deepseek-v3-ct-fp8-kv-fp8.config.json")).cache_byte_size == 2
