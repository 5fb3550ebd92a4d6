"""``--kv-cache-dtype fp8`` for MiMo-V2 (keys 192 wide, values 128: ``head_size_v``) and Kimi
Linear (MLA layers in fp8, the KDA states keeping bf16 conv and float32 recurrent states)
against vLLM 0.33's own build with CacheConfig(cache_dtype="fp8")
(tests/data/mimo_v2/fp8kv_answers.json, tests/data/kimi_linear/fp8kv_answers.json; their
record_*_fp8kv.py): every layer's spec and each recorded memory's KVCacheConfig."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from kvcli.app import app
from kvcore.models import read_hf_config
from kvcore.models.worker_specs import layer_specs

DATA = Path(__file__).parent / "data"
MIMO = json.loads((DATA / "mimo_v2" / "fp8kv_answers.json").read_text())["cases"]
KIMI = json.loads((DATA / "kimi_linear" / "fp8kv_answers.json").read_text())["cases"]
# (folder, config, TP, the recorded row: specs and planning)
ROWS: list[tuple[str, str, int, dict[str, Any], int]] = [
    ("mimo_v2", n, 1, c, c["max_model_len"]) for n, c in MIMO.items()] + [
    ("kimi_linear", n, int(k[2:]), c[k], c["max_model_len"]) for n, c in KIMI.items()
    for k in c if k.startswith("tp")]
PLANS = [(*r[:3], i) for r in ROWS for i in range(len(r[3]["planning"]))]
GiB = 1 << 30


def _row(folder: str, name: str, tp: int) -> tuple[dict[str, Any], int]:
    return next((r[3], r[4]) for r in ROWS if r[:3] == (folder, name, tp))


@pytest.mark.parametrize(("folder", "name", "tp"), [r[:3] for r in ROWS])
def test_every_cache_spec_is_vllms(folder: str, name: str, tp: int) -> None:
    rec, _ = _row(folder, name, tp)
    g = read_hf_config(json.loads((DATA / folder / f"{name}.config.json").read_text()),
                       source=f"{name}.json")
    specs = layer_specs(g, tp=tp, kv_cache_dtype="fp8")
    assert len(specs) == len(rec["specs"])
    spec: Any
    for r, spec in zip(rec["specs"], specs.values(), strict=True):
        got: tuple[Any, ...] = (type(spec).__name__, spec.page_size_bytes)
        want: tuple[Any, ...] = (r["type"], r["page_size_bytes"])
        if r["type"] == "MambaSpec":
            got += ([list(x) for x in spec.shapes], list(spec.dtypes))
            want += (r["shapes"], r["dtypes"])
        else:
            v = getattr(spec, "head_size_v", None)
            got += (spec.num_kv_heads, spec.head_size, spec.dtype,
                    spec.head_size if v is None else v)
            want += (r["num_kv_heads"], r["head_size"], "fp8",
                     r.get("head_size_v") or r["head_size"])
        assert got == want, r["name"]


@pytest.mark.parametrize(("folder", "name", "tp", "index"), PLANS)
def test_kvcli_config_sizes_as_vllm_planned(folder: str, name: str, tp: int,
                                            index: int) -> None:
    """MiMo-V2-Flash at 20 GiB: 58,254 blocks, 1,604,595 tokens (bf16: 29,127); Kimi Linear
    48B at 20 GiB: block 3,840 at TP 1 (bf16: 1,920), 1,387 blocks; 1,024 at TP 4, 5,201."""
    rec, mml = _row(folder, name, tp)
    plan = rec["planning"][index]
    r = CliRunner().invoke(app, [
        "config", "--model-config", str(DATA / folder / f"{name}.config.json"),
        "--max-model-len", str(mml), "--kv-cache-dtype", "fp8", "--tensor-parallel-size",
        str(tp), "--gpu-memory-gib", repr(plan["available"] / GiB),
        "--gpu-memory-utilization", "1", "--weights-gib", "0", "--json"])
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    assert d["memory"]["available_kv_cache_bytes"] == plan["available"]
    assert (d["num_blocks"], d["kv_cache_tokens"], d["num_tensors"]) == (
        plan["num_blocks"], plan["kv_cache_tokens"], len(plan["tensors"]))
    assert [g["block_size"] for g in d["groups"]] == [g["block_size"] for g in plan["groups"]]
    assert d["block_size"] == plan["engine_block_size"]


def test_the_numbers() -> None:
    assert [p["num_blocks"] for p in MIMO["mimo-v2-flash"]["planning"]] == [58254]
    assert [(KIMI["kimi-linear-48b-a3b"][k]["block_size"],
             KIMI["kimi-linear-48b-a3b"][k]["planning"][0]["num_blocks"])
            for k in ("tp1", "tp4")] == [(3840, 1387), (1024, 5201)]
