"""A hit rate of 0 by construction is said with the KV cache groups at hand
(`kvcore.engine.hit_notes`): a hybrid Mamba model's attention block raised past every prompt
(Nemotron-Nano's 1,312 tokens, Qwen3-Next's 576: `block_size` 16 said nothing), and cache mode
on a Mamba1 model (Jamba: its states are cached only where a step ends on a block's end)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kvcore.engine.options import ReplayOptions
from kvcore.engine.replay import replay

CHAT = str(Path(__file__).resolve().parents[1] / "traces" / "multiturn-chat.jsonl")
TAIL = ("every prompt's tokens (at most 500): a hit is whole blocks and leaves a prompt's last "
        "token to compute, so no prompt can hit and the hit rate is 0 by construction")
GRID = ("every prompt's tokens (at most {n}): a hit ends on a multiple of it and leaves a "
        "prompt's last token to compute, so no prompt can hit and the hit rate is 0 by "
        "construction")


@pytest.fixture
def short(tmp_path) -> str:
    path = tmp_path / "t.jsonl"
    path.write_text("".join(f'{{"prompt_token_ids": {list(range(400)) + [1000 + i] * 100}, '
                            '"output_length": 2}\n' for i in range(4)))
    return str(path)


# vLLM's own, first, as it plans Nemotron-Nano-9B-v2's groups: 27 Mamba layers in fours
NANO_PADDING = "Add 1 padding layers, may waste at most 3.70% KV cache memory"


def _warned(trace: str, **kw) -> tuple[float, list[str]]:
    s = replay(trace, ReplayOptions(num_blocks=4096, max_model_len=4096, **kw))
    return s.hit_rate, [w for w in s.warnings if not w.startswith("uncalibrated")]


@pytest.mark.parametrize("model, grid, groups", [
    ("nemotron-nano-9b-v2", "1,312", "mamba 1,312, full 1,312"),
    ("qwen3-next-80b-a3b", "576", "mamba 576, full 576")])
def test_a_raised_attention_block_past_every_prompt_is_said(short, model, grid, groups):
    said = (f"{grid} tokens, where a hit here ends (the groups' blocks: {groups}), is at least "
            f"{GRID.format(n=500)}; a --prefix-match-unit (vLLM's partial hash hits) lets a hit "
            "end inside a block")
    hit, warned = _warned(short, model=model)
    assert hit == 0.0 and said in warned
    assert not any("by construction" in w for w in _warned(short, model=model,
                                                           prefix_match_unit=16)[1])


def test_a_partial_hit_unit_past_every_prompt_is_named_as_the_grid(tmp_path):
    # (it was credited to the groups' blocks of 1,312 tokens, or said as block_size 16)
    t = tmp_path / "t.jsonl"
    t.write_text("".join(f'{{"prompt_token_ids": {list(range(20)) + [100 + i]}, '
                         '"output_length": 2}\n' for i in range(3)))
    _, warned = _warned(str(t), model="nemotron-nano-9b-v2", prefix_match_unit=32)
    assert warned == [NANO_PADDING, (f"prefix_match_unit 32, where a hit here can end, is at least "
                      f"{GRID.format(n=21)}")]


def test_one_group_keeps_the_block_size_words(short):
    hit, warned = _warned(short, block_size=512)
    assert hit == 0.0 and warned == [f"block_size 512 is at least {TAIL}"]
    assert _warned(short, block_size=256)[1] == []


def test_cache_mode_on_a_mamba1_model_is_said():
    said = ("cache mode computes each prompt in one piece, and a Mamba state is cached only "
            "where a step ends on its block's end: hardly any prompt leaves a state to hit, so "
            "the hit rate is near 0 by construction; engine mode (its prefill chunks end on "
            "block boundaries) gives the hit rate vllm serve would")
    kw = {"model": "jamba-v0.1", "num_blocks": 8192, "max_model_len": 8192}
    s = replay(CHAT, ReplayOptions(mode="cache", **kw))
    assert s.hit_rate == 0.0 and said in s.warnings
    # a Mamba2 model writes a checkpoint inside the prompt: it hits in cache mode, unwarned
    s = replay(CHAT, ReplayOptions(mode="cache", **{**kw, "model": "nemotron-nano-9b-v2"}))
    assert s.hit_rate > 0.4 and said not in s.warnings


@pytest.mark.parametrize("kw, said", [
    # (with num_blocks and the linear clock a model's run was byte for byte the same, unsaid)
    ({"model": "llama-3.1-8b", "num_blocks": 2048, "tp": 8},
     ("option tp has no effect here: with the pool not sized from gpu_memory_gib, no GPU clock "
     "(gpu or calibration) and no CPU tier, nothing depends on it")),
    ({"model": "llama-3.1-8b", "num_blocks": 2048, "tp": 2, "kv_cache_dtype": "fp8"},
     ("options kv_cache_dtype, tp have no effect here: with the pool not sized from "
     "gpu_memory_gib, no GPU clock (gpu or calibration) and no CPU tier, nothing depends on "
     "them")),
    ({"tp": 2}, "option tp has no effect without a model (model or model_config) or a CPU tier"),
    ({"prefix_match_unit": 8, "enable_prefix_caching": False},
     ("option prefix_match_unit has no effect with prefix caching off and no CPU tier: no block "
     "is hashed")),
])
def test_options_nothing_reads_are_said(kw, said):
    s = replay(CHAT, ReplayOptions(max_model_len=8192, **kw, given=frozenset(kw)))
    assert said in s.warnings


@pytest.mark.parametrize("kw", [
    {"model": "llama-3.1-8b", "num_blocks": 2048, "tp": 2, "gpu": "h100-sxm"},     # the clock
    {"model": "llama-3.1-8b", "gpu_memory_gib": 80.0, "kv_cache_dtype": "fp8"},    # the pool
    {"model": "llama-3.1-8b", "num_blocks": 2048, "tp": 2, "kv_offloading_size": 4.0},
    # a hybrid Mamba model's attention block is its state's page: they size it (Qwen3-Next:
    # 576 tokens at tp 1, 320 at tp 4, and the hits follow)
    {"model": "qwen3-next-80b-a3b", "num_blocks": 20000, "tp": 4},
    {"model": "nemotron-nano-9b-v2", "num_blocks": 20000, "kv_cache_dtype": "fp8"},
])
def test_options_a_run_reads_are_not(kw):
    s = replay(CHAT, ReplayOptions(max_model_len=8192, **kw, given=frozenset(kw)))
    assert not any("no effect" in w for w in s.warnings), s.warnings


def test_a_config_lines_groups_beside_a_model_are_said_and_dropped(tmp_path):
    # (the model's groups ran, and the run's config showed the line's one full group)
    t = tmp_path / "t.jsonl"
    t.write_text('{"config": {"block_size": 4, "groups": [{"type": "full_attention", '
                 '"block_size": 4, "sliding_window": null}]}}\n'
                 '{"prompt_token_ids": [1, 2, 3, 4, 5, 6, 7, 8, 9], "output_length": 2}\n')
    kw = {"model": "gpt-oss-20b", "max_model_len": 100, "num_blocks": 64}
    s = replay(str(t), ReplayOptions(**kw, given=frozenset(kw)))
    assert s.config["groups"] is None
    assert (f"option groups (the trace's config line, {t}:1) has no effect with a model "
            "(gpt-oss-20b): its layers give the KV cache groups") in s.warnings


def _line(tmp_path, config: dict, head: int = 400, tail: int = 100) -> str:
    """A trace of 4 prompts of `head` shared tokens and `tail` their own behind a config
    line."""
    path = tmp_path / "t.jsonl"
    rows = "".join(f'{{"prompt_token_ids": {list(range(head)) + [1000 + i] * tail}, '
                   '"output_length": 2}\n' for i in range(4))
    path.write_text(json.dumps({"config": config}) + "\n" + rows)
    return str(path)


def test_a_config_lines_block_size_is_named_with_its_file_and_line(tmp_path):
    t = _line(tmp_path, {"block_size": 512})
    at = f" (the trace's config line, {t}:1)"
    assert _warned(t)[1] == [f"block_size 512{at} is at least {TAIL}"]
    # a flag over the line's value is the flag's: no mark
    assert _warned(t, given=frozenset({"block_size"}), block_size=1024)[1] == [
        f"block_size 1,024 is at least {TAIL}"]


def test_a_config_lines_partial_unit_is_named_with_its_file_and_line(tmp_path):
    t = _line(tmp_path, {"prefix_match_unit": 32}, head=20, tail=1)
    _, warned = _warned(t, model="nemotron-nano-9b-v2")
    assert warned == [NANO_PADDING, (
        f"prefix_match_unit 32 (the trace's config line, {t}:1), where a hit here can end, is "
        f"at least {GRID.format(n=21)}")]


def test_a_config_lines_groups_and_block_size_are_named_in_the_groups_words(tmp_path):
    groups = [{"type": "full"}, {"type": "sliding_window", "sliding_window": 64}]
    t = _line(tmp_path, {"groups": groups, "num_gpu_blocks_override": 4096, "block_size": 512})
    s = replay(t, ReplayOptions(max_model_len=4096))
    assert [w for w in s.warnings if not w.startswith("uncalibrated")] == [
        (f"512 tokens, where a hit here ends (the groups' blocks: full 512, sliding_window 512; "
         f"block_size, groups (the trace's config line, {t}:1)), is at least "
         f"{GRID.format(n=500)}")]
    # a hybrid Mamba model's raised block is not block_size's doing: unmarked
    t = _line(tmp_path, {"block_size": 16})
    assert _warned(t, model="nemotron-nano-9b-v2")[1][1].startswith(
        "1,312 tokens, where a hit here ends (the groups' blocks: mamba 1,312, full 1,312), is")
