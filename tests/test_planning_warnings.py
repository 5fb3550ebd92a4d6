"""vLLM 0.33's own warnings as it plans the KV cache groups (`kvcore.sizing.grouping`'s `warn`):
padding layers, --disable-hybrid-kv-cache-manager's promotion and the full-allocation fallback,
word for word and in vLLM's order, against its logger (tests/data/planning_warnings/), and
where `kvcli config` and a replay say them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kvcli.app import app
from kvcore.sizing.grouping import FALLBACK_WORDS, HYBRID_DISABLED_WORDS, get_kv_cache_groups
from kvcore.specs import FullAttentionSpec, KVCacheSpec, MLAAttentionSpec, SlidingWindowSpec

DATA = Path(__file__).parent / "data"
CASES = json.loads((DATA / "planning_warnings" / "answers.json").read_text())
GEMMA3 = DATA / "perf_cases" / "models" / "gemma-3-27b.config.json"


def _spec(kind: str, kv: int, head: int) -> KVCacheSpec:
    if kind == "full":
        return FullAttentionSpec(16, kv, head, "bfloat16")
    if kind == "mla":
        return MLAAttentionSpec(16, kv, head, "bfloat16")
    return SlidingWindowSpec(16, kv, head, "bfloat16", sliding_window=1024)


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_warnings_and_groups_are_vllms(name: str) -> None:
    case, said = CASES[name], []
    specs = {f"layers.{i}": _spec(*layer) for i, layer in enumerate(case["layers"])}
    groups = get_kv_cache_groups(specs, disable_hybrid=case["disable_hybrid"],
                                 warn=said.append)
    assert [len(g.layer_names) for g in groups] == case["groups"]
    assert said == case["warnings"]


def test_the_recordings_cover_each_warning() -> None:
    said = {w for c in CASES.values() for w in c["warnings"]}
    assert {HYBRID_DISABLED_WORDS, FALLBACK_WORDS} <= said
    assert "Add 8 padding layers, may waste at most 15.38% KV cache memory" in said
    assert not CASES["llama-like/disable-hybrid"]["warnings"]


def _kvcli(*args: str) -> tuple[dict, str]:
    r = CliRunner().invoke(app, [*args, "--json"])
    assert r.exit_code == 0, r.output
    return json.loads(r.stdout), r.stderr


def test_kvcli_config_says_them_first() -> None:
    # Gemma 3 27B: 52 sliding layers in groups of 10, the last 8 short (vLLM's log line)
    d, err = _kvcli("config", "--model-config", str(GEMMA3), "--gpu-memory-gib", "80")
    padding = "Add 8 padding layers, may waste at most 15.38% KV cache memory"
    assert d["warnings"] == [padding]
    assert err == f"warning: {padding}\n"
    d, _ = _kvcli("config", "--model-config", str(GEMMA3), "--gpu-memory-gib", "80",
                  "--max-model-len", "8192", "--disable-hybrid-kv-cache-manager")
    assert d["warnings"] == [HYBRID_DISABLED_WORDS]


def test_a_replay_says_them_with_its_own() -> None:
    trace = DATA.parent.parent / "traces" / "multiturn-chat.jsonl"
    d, _ = _kvcli("replay", str(trace), "--model-config", str(GEMMA3), "--num-blocks", "20000",
                  "--max-model-len", "8192")
    assert d["warnings"][0] == "Add 8 padding layers, may waste at most 15.38% KV cache memory"
