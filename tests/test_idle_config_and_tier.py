"""Options accepted and then unread, found by probing every replay option in every mode (with
and without each, the JSON compared): a trace's config line's scheduler keys in cache mode, its
hash keys with prefix caching off, a sync-load budget under one chunk were each the same run as
without them, unsaid; and the hash options were said to have no effect where a CPU tier's end
state lists the hashes. Each is now one line in the summary's warnings (or none where it acts)."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from kvcli.app import app

ROOT = Path(__file__).resolve().parents[1]
MT = ROOT / "traces" / "multiturn-chat.jsonl"
SP = str(ROOT / "traces" / "shared-prefix.jsonl")
runner = CliRunner()
# what changes between runs that read the same: the echo, the wall time, the notes
_ECHO = ("config", "wall_time_s", "warnings", "trace")


def _replay(*args: str) -> dict:
    r = runner.invoke(app, ["replay", *args, "--json"])
    assert r.exit_code == 0, r.output
    return json.loads(r.stdout)


def _same_run(a: dict, b: dict) -> bool:
    return {k: v for k, v in a.items() if k not in _ECHO} == \
        {k: v for k, v in b.items() if k not in _ECHO}


def _lined(tmp_path: Path, config: dict, n: int = 40) -> tuple[str, str]:
    """The first `n` requests of the multi-turn sample with and without a config line."""
    with open(MT) as f:
        head = "".join(line for _, line in zip(range(n), f))
    lined, plain = tmp_path / "lined.jsonl", tmp_path / "plain.jsonl"
    lined.write_text(json.dumps({"config": config}) + "\n" + head)
    plain.write_text(head)
    return str(lined), str(plain)


def test_a_config_lines_scheduler_keys_in_cache_mode_are_said(tmp_path):
    # the oracle's cases carry the scheduler's settings: in cache mode they were read, then
    # left unread without a word (the same flags were said)
    lined, plain = _lined(tmp_path, {"max_num_seqs": 4, "policy": "priority",
                                     "async_scheduling": False, "watermark": 0.3})
    args = ["--mode", "cache", "--num-blocks", "600"]
    by_line, alone = _replay(lined, *args), _replay(plain, *args)
    assert by_line["warnings"] == [
        (f"option(s) async_scheduling, max_num_seqs, policy (the trace's config line, {lined}:1): "
         "no effect in cache mode (no scheduler, no clock; requests run one at a time)")]
    assert _same_run(by_line, alone)
    # a flag beside them is named apart (the user looks for each in its own place)
    assert _replay(lined, *args, "--max-num-batched-tokens", "64")["warnings"] == [
        ("option(s) max_num_batched_tokens; async_scheduling, max_num_seqs, policy (the trace's "
         f"config line, {lined}:1): no effect in cache mode (no scheduler, no clock; requests "
         "run one at a time)")]
    # (the watermark acts in cache mode: each request is admitted as a waiting one)
    small = ["--mode", "cache", "--num-blocks", "300", "--skip-bad"]
    assert not _same_run(_replay(plain, *small, "--watermark", "0.6"), _replay(plain, *small))


def test_a_config_lines_hash_keys_with_prefix_caching_off_are_said(tmp_path):
    lined, plain = _lined(tmp_path, {"enable_prefix_caching": False, "hash_algo": "sha256_cbor"})
    by_line = _replay(lined, "--num-blocks", "600")
    assert by_line["warnings"][0] == (
        f"option hash_algo (the trace's config line, {lined}:1) has no effect with prefix "
        "caching off and no CPU tier: no block is hashed")
    assert _same_run(by_line, _replay(plain, "--num-blocks", "600", "--no-enable-prefix-caching"))


TIER = ["--num-blocks", "600", "--kv-offloading-size", "0.5"]


def test_a_sync_load_budget_under_one_chunk_is_said():
    # a load is one 16-token chunk at least, 2,097,152 bytes of the default geometry: a budget
    # under it took no load into the step, as 0 does
    short = _replay(str(MT), *TIER, "--offload-sync-load-budget-bytes", "2097151")
    assert [w for w in short["warnings"] if "sync" in w] == [
        ("option sync_load_budget_bytes has no effect: 2,097,151 bytes is less than the least "
        "load, one chunk of 16 tokens (2,097,152 bytes): every load stays asynchronous")]
    assert _same_run(short, _replay(str(MT), *TIER))
    enough = _replay(str(MT), *TIER, "--offload-sync-load-budget-bytes", "2097152")
    assert not [w for w in enough["warnings"] if "sync" in w]
    assert enough["offload"]["load_jobs"] != short["offload"]["load_jobs"]


def test_the_hash_options_with_a_cpu_tier_show_in_its_end_state():
    # the summary's policy_state_end lists the tier's chunk keys (block hashes): the option
    # changed them and was said to have no effect
    plain = _replay(SP, "--num-blocks", "200", "--kv-offloading-size", "0.5")
    hashed = _replay(SP, "--num-blocks", "200", "--kv-offloading-size", "0.5",
                     "--hash-algo", "sha256_cbor")
    assert not [w for w in hashed["warnings"] if "hash" in w]
    assert hashed["offload"]["policy_state_end"] != plain["offload"]["policy_state_end"]
    # a cluster shows no replica's tier state: there it changes nothing shown, and is said
    r = runner.invoke(app, ["cluster", SP, "--num-blocks", "200", "--kv-offloading-size", "0.5",
                            "--hash-algo", "sha256_cbor", "--json"])
    assert r.exit_code == 0, r.output
    assert ("option(s) hash_algo: no effect here: no event stream shows a block hash (they "
            "change no hit and no step)") in json.loads(r.stdout)["warnings"]
