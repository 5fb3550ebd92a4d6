"""Qwen3-Next: Gated DeltaNet layers (vLLM keeps their state as a Mamba state) beside full
attention, against vLLM 0.33.0's recorded start-up (tests/data/mamba/gdn_start.json,
record_gdn_start.py there), with FlashInfer's GDN prefill kernel (Hopper: a prefill checkpoint
block, blocks on a 64-token grid) and with the Triton one. Before Qwen3-Next was read, kvcli
sized its 48 layers as 48 full-attention layers (no layer_types in the published config).
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kvcli.app import app
from kvcore.models import layer_specs, load_hf_config, read_hf_config
from kvcore.sizing import blocks_per_request, get_kv_cache_groups
from kvcore.specs import MambaSpec, SizingContext

DATA = Path(__file__).resolve().parent / "data" / "mamba"
CONFIG = DATA / "qwen3-next-80b-a3b.config.json"
CASES = json.loads((DATA / "gdn_start.json").read_text())["cases"]
runner = CliRunner()


@pytest.mark.parametrize("want", CASES, ids=lambda c: f"{c['kernel']}-tp{c['tp']}")
def test_start_up_as_vllm(want) -> None:
    g = read_hf_config(load_hf_config(CONFIG))
    assert g.layer_kinds == tuple("mamba" if t == "linear_attention" else "full"
                                  for t in want["layer_types"])
    specs = layer_specs(g, tp=want["tp"], max_model_len=want["max_model_len"],
                        gdn_prefill_checkpoint=want["kernel"] == "flashinfer")
    groups = get_kv_cache_groups(specs)
    assert [{"kind": "mamba" if isinstance(gr.kv_cache_spec, MambaSpec) else "full",
             "block_size": gr.kv_cache_spec.block_size, "layers": list(gr.layer_names)}
            for gr in groups] == want["groups"]
    mamba = next(gr.kv_cache_spec for gr in groups if isinstance(gr.kv_cache_spec, MambaSpec))
    attn = next(gr.kv_cache_spec for gr in groups
                if not isinstance(gr.kv_cache_spec, MambaSpec))
    ws = want["mamba_spec"]
    ctx = SizingContext(max_model_len=want["max_model_len"])
    assert (attn.block_size, mamba.block_size, attn.page_size_bytes) == (
        want["block_size"], want["mamba_block_size"], want["attention_page_size"])
    assert ([list(s) for s in mamba.shapes], list(mamba.dtypes), mamba.page_size_bytes,
            mamba.real_page_size_bytes, mamba.num_prefill_checkpoint_blocks,
            mamba.prefill_checkpoint_alignment, blocks_per_request(mamba, ctx)) == (
        ws["shapes"], ws["dtypes"], ws["page_size_bytes"], ws["real_page_size_bytes"],
        ws["num_prefill_checkpoint_blocks"], ws["prefill_checkpoint_alignment"],
        ws["max_memory_usage_pages"])


def test_cli_warns_about_the_assumed_kernel() -> None:
    r = runner.invoke(app, ["config", "--model-config", str(CONFIG), "--num-blocks", "100",
                            "--max-model-len", "8192", "--json"])
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    assert d["layer_kinds"] == {"mamba": 36, "full": 12}
    assert {g["block_size"] for g in d["groups"]} == {576}
    assert "Gated DeltaNet layers" in r.stderr and "FlashInfer" in r.stderr


def test_layer_types_key_is_read() -> None:
    cfg = load_hf_config(CONFIG)
    types = ["linear_attention", "full_attention"] * 24
    g = read_hf_config({**cfg, "layer_types": types})
    assert Counter(g.layer_kinds) == {"mamba": 24, "full": 24}
