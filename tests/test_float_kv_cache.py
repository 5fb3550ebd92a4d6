"""A float16 or bfloat16 KV cache other than the model's dtype: vLLM 0.33 refuses it for every
model before building a layer (`VllmConfig._reject_mismatched_float_kv_cache`, config/vllm.py);
kvcli sized it (Llama-3.1-8B, bfloat16, with a float16 cache: 30,008 blocks on 80 GiB)."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from kvcli.app import app

TRACE = "traces/multiturn-chat.jsonl"


def _run(*args: str) -> tuple[int, str]:
    r = CliRunner().invoke(app, list(args))
    return r.exit_code, r.stderr.strip()


@pytest.mark.parametrize(("dtype", "kv", "allowed"), [
    ("auto", "float16", "`auto` or `bfloat16`"),     # (the checkpoint's bfloat16)
    ("float16", "bfloat16", "`auto` or `float16`"),
    ("float32", "bfloat16", "`auto`"),
    ("auto", "fp16", "`auto` or `bfloat16`"),        # (kvcli's older spelling of float16)
])
def test_config_refuses_a_16_bit_cache_other_than_the_models(dtype: str, kv: str,
                                                             allowed: str) -> None:
    code, err = _run("config", "llama-3.1-8b", "--gpu-memory-gib", "80", "--dtype", dtype,
                     "--kv-cache-dtype", kv)
    model = "bfloat16" if dtype == "auto" else dtype
    cache = "float16" if kv == "fp16" else kv
    words = (f"error: option --kv-cache-dtype: vLLM 0.33 refuses it: 'kv_cache_dtype="
             f"\"{cache}\" is incompatible with dtype=\"{model}\". Please set "
             f"`--kv-cache-dtype` to {allowed}.'")
    assert (code, err) == (2, words)


def test_replay_refuses_it_too() -> None:
    code, err = _run("replay", TRACE, "--model", "llama-3.1-8b", "--num-blocks", "512",
                     "--kv-cache-dtype", "float16")
    assert code == 2 and err.endswith("'kv_cache_dtype=\"float16\" is incompatible with "
                                      "dtype=\"bfloat16\". Please set `--kv-cache-dtype` to "
                                      "`auto` or `bfloat16`.'")


@pytest.mark.parametrize(("dtype", "kv", "blocks"), [
    ("auto", "bfloat16", "30,008"), ("float16", "float16", "30,008"), ("auto", "fp8", "60,017")])
def test_the_models_own_dtype_and_fp8_still_size(dtype: str, kv: str, blocks: str) -> None:
    r = CliRunner().invoke(app, ["config", "llama-3.1-8b", "--gpu-memory-gib", "80", "--dtype",
                                 dtype, "--kv-cache-dtype", kv])
    assert r.exit_code == 0 and f"num_blocks = {blocks} =" in r.stdout
