"""DeepSeek-V4 (vLLM 0.33's DeepseekV4ForCausalLM and its vision wrapper): kvcli refuses to size
it, in one line naming what it lacks; and the rules its recording (tests/data/deepseek_v4/,
vLLM's own build and planning) follows, which a kvcli that sizes it must reproduce: the page of
each cache, the packed groups and their pool block, the scheduler's and the hash's block."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kvcli.app import app
from kvcore.errors import InputError
from kvcore.models import read_hf_config

DATA = Path(__file__).parent / "data" / "deepseek_v4"
CASES = json.loads((DATA / "answers.json").read_text())["cases"]
CONFIGS = ("tiny-dsv4", "deepseek-v4-flash")
FP8_DS_MLA_TOKEN = 584     # (448 B NoPE + 128 B RoPE + 8 B of scales a token)
PAGE_ALIGNMENT = 576       # (every DeepSeek-V4 page is rounded up to it)


def _round_up(n: int, unit: int) -> int:
    return -(-n // unit) * unit


@pytest.mark.parametrize("arch", ["DeepseekV4ForCausalLM", "DeepseekV4ForConditionalGeneration"])
def test_deepseek_v4_is_refused_naming_what_kvcli_lacks(arch: str) -> None:
    """Before: the config was refused for its first layer type ('heavily_compressed_attention'
    unknown), a word about a field rather than about the cache kvcli cannot model."""
    cfg = {**json.loads((DATA / "deepseek-v4-flash.config.json").read_text()),
           "architectures": [arch]}
    with pytest.raises(InputError) as e:
        read_hf_config(cfg, source="dsv4.json")
    assert e.value.field == "architectures"
    assert e.value.message.startswith(f"{arch}: vLLM 0.33 serves it with compressed sparse "
                                      "attention: a 128-token sliding-window MLA cache")
    assert "(specs of compressed states, groups of mixed pages, that packing)" in e.value.message


def test_a_config_naming_no_architecture_is_refused_by_its_model_type() -> None:
    """Before: refused for its first layer type ('heavily_compressed_attention' unknown)."""
    cfg = json.loads((DATA / "tiny-dsv4.config.json").read_text())
    del cfg["architectures"]
    with pytest.raises(InputError) as e:
        read_hf_config(cfg, source="dsv4.json")
    assert e.value.field == "model_type"
    assert e.value.message.startswith("'deepseek_v4' (vLLM's DeepseekV4ForCausalLM): vLLM 0.33 "
                                      "serves it with compressed sparse attention")


def test_kvcli_config_refuses_it_in_one_line_with_exit_code_2() -> None:
    path = DATA / "tiny-dsv4.config.json"
    r = CliRunner().invoke(app, ["config", "--model-config", str(path), "--gpu-memory-gib", "80"])
    assert r.exit_code == 2
    lines = r.output.strip().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith(f"error: {path}: field 'architectures': DeepseekV4ForCausalLM: ")


@pytest.mark.parametrize("name", CONFIGS)
def test_recorded_pages_follow_the_fp8_ds_mla_rules(name: str) -> None:
    """Latent caches (the sliding window's and the compressed one's): 584 bytes a state, a
    256-token block holding 256 / tokens_per_state states; the indexer's 132-byte keys and the
    fp32 compressor states: their natural bytes; every page rounded up to 576 bytes."""
    for s in CASES[name]["specs"]:
        states = s["block_size"] // s["tokens_per_state"]
        per_state = (FP8_DS_MLA_TOKEN if s["state_content_bytes"] else
                     s["head_size"] * (4 if s["dtype"] == "float32" else 1))
        assert s["page_size_bytes"] == _round_up(states * per_state, PAGE_ALIGNMENT), s["name"]
    by_role = {s["name"].split("attn", 1)[1]: s for s in CASES[name]["specs"]}
    assert by_role[".swa_cache"]["page_size_bytes"] == 37440           # 64 x 584 -> 37440
    assert by_role[".compressor.state_cache"]["sliding_window"] in (8, 128)


@pytest.mark.parametrize("name", CONFIGS)
def test_recorded_groups_pack_into_one_block_of_the_widest_page(name: str) -> None:
    specs = {s["name"]: s for s in CASES[name]["specs"]}
    for plan in CASES[name]["planning"]:
        if "refused" in plan:
            continue
        pages = [g["page_size_bytes"] for g in plan["groups"]]
        for g in plan["groups"]:     # a group's page: its layers' pages side by side
            assert g["page_size_bytes"] == sum(specs[n]["page_size_bytes"] for n in g["layers"])
        assert {t["block_stride"] for t in plan["tensors"]} == {max(pages)}
        assert plan["num_blocks"] == plan["available"] // max(pages)
        sizes = [g["block_size"] for g in plan["groups"]]
        assert plan["scheduler_block_size"] == math.lcm(*sizes) == 256
        assert plan["hash_block_size"] == math.gcd(*sizes) == 4
        assert plan["managers"] == ["SlidingWindowManager"] * 2 + ["FullAttentionManager"] + [
            "SlidingWindowManager"] * 2


def test_flash_numbers_as_vllm_planned_them() -> None:
    """DeepSeek-V4-Flash at max_model_len 1M: 43 layers, 169 caches in 5 groups; 20 GiB a rank
    holds 22,338 blocks of 961,344 bytes (the 63-layer MLA group's page)."""
    flash = CASES["deepseek-v4-flash"]
    assert len(flash["specs"]) == 169
    plan = flash["planning"][0]
    assert [(g["block_size"], len(g["layers"]), g["page_size_bytes"]) for g in plan["groups"]] == [
        (64, 22, 823680), (64, 21, 786240), (256, 63, 961344), (8, 23, 755136), (4, 40, 829440)]
    assert (plan["available"], plan["num_blocks"], plan["kv_cache_tokens"]) == (
        20 << 30, 22338, 4048235)
    assert flash["tp"]["1"][0]["param_numel"] == 284_328_196_055
