"""Engine mode with EAGLE-3 over several KV cache groups (full attention beside sliding windows
or chunked local attention) = vLLM 0.33's schedulers, step for step with their KV events: K
lookahead slots in every group's allocation; lookahead hashes (vLLM's default) over every group;
in the legacy hash mode the EAGLE block drop in the groups holding the draft's layers only (the
config line's `eagle_groups`, vLLM's `is_eagle_group`), or in every group when none is named. The
answers come from tests/data/sched_spec_eagle/oracle_eagle_hybrid.py (the folder's README).
"""

from __future__ import annotations

import json
import random
from collections import Counter
from pathlib import Path

import pytest
from lookup_memo_audit import chain_trace, memo_on_off
from oracle_sched import answer_of, check_spec_case, config_of, replay_recorded

from kvcore.engine.options import ReplayOptions
from kvcore.engine.spec_decode import eagle_group_ids
from kvcore.errors import InputError
from kvcore.hashing import BlockHasher
from kvcore.kv_cache_manager import KVCacheManager
from kvcore.managers.registry import spec_from_group_config
from kvcore.request import Request
from kvcore.sizing.resolve import resolve_kv_cache_config
from kvcore.specs import KVCacheGroupSpec

DATA = Path(__file__).resolve().parent / "data" / "sched_spec_eagle_hybrid"
CASES = sorted(DATA.glob("*seed*.trace.jsonl"))


@pytest.mark.parametrize("trace", CASES, ids=lambda p: p.name[:-12])
def test_eagle_hybrid_case(trace: Path):
    got = check_spec_case(trace)
    assert got[0].config["spec_method"] == "eagle3"
    assert got[0].config.get("eagle_groups") == config_of(trace).get("eagle_groups")


def test_the_cases_are_all_there():
    assert [t.name.split(".")[0] for t in CASES] == [
        "haseed90208", "haseed90210", "haseed90215", "haseed90216", "hseed90207", "hseed90210",
        "hseed90212", "hseed90216"]


def test_a_drop_in_a_chunked_local_group_is_refused_where_vllm_fails():
    """No group flagged, every group drops: vLLM asserts at the first lookup."""
    trace = DATA / "chunked_all_drop.trace.jsonl"
    assert answer_of(trace) == [{"error": "AssertionError: Hybrid KV cache is not supported "
                                          "for eagle + chunked local attention."}]
    with pytest.raises(InputError, match="drops EAGLE's last block in a chunked local "
                                         "attention group") as e:
        replay_recorded(trace)
    assert e.value.field == "config.disable_lookahead_block_hashes"


def _with_config(tmp_path: Path, case: str, **changes) -> Path:
    lines = (DATA / f"{case}.trace.jsonl").read_text().splitlines()
    first = json.loads(lines[0])
    first["config"].update(changes)
    first["config"] = {k: v for k, v in first["config"].items() if v is not None}
    out = tmp_path / f"{case}.trace.jsonl"
    out.write_text("\n".join([json.dumps(first), *lines[1:]]) + "\n")
    return out


@pytest.mark.parametrize("changes, field, message", [
    ({"eagle_groups": [2]}, "config.eagle_groups", "names group 2, past the 2 groups (0 to 1)"),
    ({"eagle_groups": [0], "groups": None}, "config.eagle_groups",
     "names groups of the config line's groups, which it has none of"),
    ({"eagle_groups": [0, 0]}, "config.eagle_groups",
     "must be a non-empty list of distinct group indices (0, 1, ...), got [0, 0]"),
])
def test_eagle_groups_refusals(tmp_path, changes, field, message):
    trace = _with_config(tmp_path, "haseed90208", **changes)
    with pytest.raises(InputError) as e:
        replay_recorded(trace)
    assert (e.value.field, message in str(e.value)) == (field, True), str(e.value)


def test_a_flagged_chunked_local_group_alone_is_refused_too(tmp_path):
    trace = _with_config(tmp_path, "haseed90210", eagle_groups=[1])
    with pytest.raises(InputError, match="chunked local attention group"):
        replay_recorded(trace)


def _manager(use_eagle: bool, flagged=()) -> KVCacheManager:
    groups = [KVCacheGroupSpec(("full",), spec_from_group_config({"type": "full"}, 4)),
              KVCacheGroupSpec(("swa",), spec_from_group_config(
                  {"type": "sliding_window", "sliding_window": 5}, 4))]
    return KVCacheManager(groups, 256, num_blocks=64, use_eagle=use_eagle,
                          eagle_group_ids=flagged)


def test_the_flags_and_the_drop():
    """vLLM's coordinator: flagged groups drop; none flagged, all; lookahead hashes, none."""
    got = []
    for use_eagle, flagged in ((True, ()), (True, (0,)), (False, (0,)), (False, ())):
        c = _manager(use_eagle, flagged).coordinator
        got.append((sorted(c.eagle_group_ids), sorted(c.drop_eagle_group_ids),
                    [m.use_eagle for m in c.single_type_managers],
                    [m.replay_eagle for m in c.single_type_managers]))
    assert got == [([0, 1], [0, 1], [True, True], [True, True]),
                   ([0], [0], [True, False], [True, True]),
                   ([0], [], [False, False], [False, False]),
                   ([], [], [False, False], [False, False])]


def test_a_kept_lookup_watches_the_block_a_drop_looks_past_its_cap():
    """A dropping group looks up one block past the cap (num_tokens - 1): a prompt of exactly
    two blocks reads its second block's hash, which the lookup memo must watch too."""
    kvm = _manager(True)
    h = BlockHasher(4)
    prompt = list(range(1, 9))
    other = Request("c", [*prompt, 50, 51, 52], h)
    head = Request("b", prompt, h)
    kvm.allocate_slots(other, 4)                # caches block 0
    before = [kvm.get_computed_blocks(head)[1] for _ in range(3)]
    other.num_computed_tokens = 4
    kvm.allocate_slots(other, 4)                # caches block 1: now the drop lands on block 1
    assert kvm.lookup_memo is not None
    assert (before, kvm.get_computed_blocks(head)[1]) == ([0, 0, 0], 4)


def test_a_model_pool_flags_the_groups_holding_the_draft_layers():
    """gpt-oss-20b with a Llama EAGLE-3 draft: the draft's layer has another geometry, so a
    group of its own (24, block 16 beside the target's 32); that group is the flagged one."""
    res = resolve_kv_cache_config("gpt-oss-20b", num_blocks=6000, max_model_len=8192,
                                  draft=("eagle3-llama-3.1-8b", "eagle3"))
    groups = list(res.config.kv_cache_groups)
    cfg = ReplayOptions(num_speculative_tokens=2, spec_method="eagle3")
    assert (len(groups), eagle_group_ids(cfg, groups)) == (25, (24,))
    assert groups[24].layer_names == ("draft.layers.24",)
    assert eagle_group_ids(ReplayOptions(num_speculative_tokens=2), groups) == ()
    kvm = KVCacheManager(res.config, 8192, use_eagle=True, eagle_group_ids=(24,))
    c = kvm.coordinator
    assert (sorted(c.drop_eagle_group_ids), [m.use_eagle for m in c.single_type_managers],
            c.eagle_caching[24], kvm.all_groups_plain) == ([24], [False] * 24 + [True], True,
                                                           False)


@pytest.mark.pure_python     # (the audit patches the stack's classes)
def test_the_lookup_memo_keeps_exact_answers_with_the_drop(tmp_path, monkeypatch):
    """Chained conversations over full attention and a sliding window, the drop in every group
    or in group 0: every kept lookup is the full lookup's, and the replays write the same
    bytes with the memo and without it."""
    total: Counter = Counter()
    for seed in range(5):
        rng = random.Random(700 + seed)
        bs = rng.choice([4, 8])
        cfg = {"block_size": bs, "num_blocks": rng.choice([40, 70, 120]),
               "max_num_seqs": rng.choice([2, 4, 16]),
               "max_num_batched_tokens": rng.choice([32, 128]),
               "policy": rng.choice(["fcfs", "priority"]),
               "groups": [{"type": "full"},
                          {"type": "sliding_window", "sliding_window": bs * 2 + 1}],
               "num_speculative_tokens": rng.choice([1, 2, 3]), "spec_acceptance_rate": 0.6,
               "spec_method": "eagle3", "disable_lookahead_block_hashes": True,
               **({"eagle_groups": [0]} if seed % 2 else {})}
        trace = chain_trace(tmp_path / f"c{seed}.jsonl", rng, cfg)
        for asyn in (False, True):
            opts = ReplayOptions(async_scheduling=asyn, arrivals="step", skip_bad=True,
                                 given=frozenset({"async_scheduling"}))
            total += memo_on_off(trace, opts, "jsonl", monkeypatch)
    assert total["kept"] > 0.5 * total["lookups"] > 0, total
