"""Options a run would not read, and empty names, found by an adversarial pass over the
commands: each was accepted and silently did nothing (or read '' as "none given"); each is now
one line `error: option --X: ...` on stderr, exit code 2, no output file."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from kvcli.app import app
from kvcore.sizing.grouping import HYBRID_DISABLED_WORDS

ROOT = Path(__file__).resolve().parents[1]
SP = str(ROOT / "traces" / "shared-prefix.jsonl")
runner = CliRunner()


def refused(args: list[str], line: str) -> None:
    res = runner.invoke(app, args)
    assert res.exit_code == 2, (res.exit_code, res.output)
    assert res.stdout == "" and res.stderr == line + "\n", res.stderr


def test_events_format_without_an_events_stream(tmp_path):
    # --events-format vllm with no --events wrote nothing and said nothing
    refused(["replay", SP, "--events-format", "vllm"],
            "error: option --events-format: needs --events PATH (it chooses that stream's "
            "format; --kv-events-endpoint publishes vLLM's batches whatever it is)")
    refused(["replay", SP, "--events-format", "vllm", "--explain", "0"],
            "error: option --explain: writes no other output (--events-format given)")
    ev = tmp_path / "ev.jsonl"
    assert runner.invoke(app, ["replay", SP, "--events-format", "vllm", "--events",
                               str(ev)]).exit_code == 0 and ev.stat().st_size > 0


def test_steps_in_cache_mode(tmp_path):
    # cache mode runs no engine step: the file was left empty without a word
    out = tmp_path / "steps.jsonl"
    refused(["replay", SP, "--mode", "cache", "--steps", str(out)],
            "error: option --steps: engine mode only: cache mode runs no engine steps (the "
            "file would stay empty)")
    assert not out.exists()


@pytest.mark.parametrize("flag", ["--model", "--model-config", "--gpu", "--calibration"])
@pytest.mark.parametrize("command", ["replay", "cluster"])
def test_an_empty_name_is_not_none_given(command, flag):
    # '' (an unset shell variable) ran the replay without a model, a GPU or a calibration
    refused([command, SP, flag, ""],
            f"error: option {flag}: must be a non-empty name or path, got ''")


@pytest.mark.parametrize("flag", ["--requests", "--steps"])
def test_an_empty_output_path(flag):
    # said "option --requests: . is a folder, not a file" (Path('') is '.')
    refused(["replay", SP, flag, ""], f"error: option {flag}: an empty path")


def test_config_options_of_something_not_there():
    # both printed the model's table as if they were not given
    refused(["config", "llama-3.1-8b", "--gpu-memory-gib", "80", "--kv-offloading-block-size",
             "32"], "error: option --kv-offloading-block-size: needs --kv-offloading-size (the "
            "CPU tier it sizes the chunks of)")
    geometry = ["config", "--layers", "4", "--kv-heads", "8", "--head-dim", "128",
                "--gpu-memory-gib", "80"]
    for extra in ([], ["--attention-chunk-size", "0"]):     # 0: none, as --sliding-window 0
        refused([*geometry, *extra, "--chunked-layers", "0"],
                "error: option --chunked-layers: needs an attention_chunk_size")
    res = runner.invoke(app, [*geometry, "--attention-chunk-size", "64", "--chunked-layers", "0",
                              "--json"])
    assert res.exit_code == 0 and '"chunked_local"' in res.stdout.replace(" ", "")


NO_MEMORY = ("option(s) --gpu-memory-utilization, --weights-gib, --activation-gib: no effect "
             "without --gpu-memory-gib (the pool is --num-blocks, not sized from memory)")


# vLLM's own, as it plans Gemma 3 27B's groups: 52 sliding layers in groups of 10
GEMMA3_PADDING = "Add 8 padding layers, may waste at most 15.38% KV cache memory"


@pytest.mark.parametrize(("args", "said"), [
    (["llama-3.1-8b", "--num-blocks", "10000", "--gpu-memory-utilization", "0.5",
      "--weights-gib", "3", "--activation-gib", "2"], [NO_MEMORY]),
    (["llama-3.1-8b", "--num-blocks", "10000", "--disable-hybrid-kv-cache-manager",
      "--no-pad-pages"], [("option(s) --disable-hybrid-kv-cache-manager, --no-pad-pages: no "
                           "effect on llama-3.1-8b, whose layers are all full (one kind: "
                           "nothing to pad or to keep apart)")]),
    (["llama-3.1-8b", "--num-blocks", "10000", "--max-concurrent-batches", "1",
      "--no-async-scheduling"],
     [("option(s) --max-concurrent-batches, --no-async-scheduling: no block count of "
       "llama-3.1-8b's depends on it: only sliding-window and chunked-local groups reserve "
       "blocks for the tokens in flight (the scheduler line and max_in_flight_tokens follow "
       "it)")]),
    # the budget and what derives it: the same blocks, only the scheduler line and in-flight
    # (vLLM's own first: 27 Mamba layers in groups of 4, the last short by 1)
    (["nemotron-nano-9b-v2", "--num-blocks", "10000", "--max-num-batched-tokens", "16384",
      "--no-enable-chunked-prefill", "--max-num-seqs", "2"],
     ["Add 1 padding layers, may waste at most 3.70% KV cache memory",
      ("option(s) --max-num-batched-tokens, --no-enable-chunked-prefill, --max-num-seqs: no "
       "block count of nemotron-nano-9b-v2's depends on it: only sliding-window and "
       "chunked-local groups reserve blocks for the tokens in flight (the scheduler line and "
       "max_in_flight_tokens follow it)")]),
    (["gemma-3-27b", "--num-blocks", "10000", "--no-enable-prefix-caching"],
     [GEMMA3_PADDING,
      ("option --no-enable-prefix-caching: no effect on gemma-3-27b's sizing (only a Mamba "
       "model's cache and a --prefix-match-unit depend on it here; a replay's hits do)")]),
    (["llama-3.1-8b", "--num-blocks", "10000", "--kv-offloading-backend", "native"],
     [("option --kv-offloading-backend: no effect without --kv-offloading-size (the CPU tier "
      "it moves)")]),
    (["llama-3.1-8b", "--num-blocks", "10000", "--prefix-match-unit", "16",
      "--no-enable-prefix-caching"],
     [("option --prefix-match-unit: no effect with prefix caching off and no CPU tier (no block "
      "is hashed)")]),
    (["--layers", "32", "--kv-heads", "8", "--head-dim", "128", "--gpu-memory-gib", "80"],
     [("weights estimated from --layers, --kv-heads and --head-dim alone (0.25 GiB: no MLP, no "
      "vocabulary), so the KV memory is overstated: give --weights-gib")]),
    # where they do act, nothing is said (but vLLM's own warning of the hybrid manager off)
    (["gpt-oss-20b", "--num-blocks", "10000", "--max-concurrent-batches", "1",
      "--disable-hybrid-kv-cache-manager", "--max-num-batched-tokens", "4096"],
     [HYBRID_DISABLED_WORDS]),
    (["llama-3.1-8b", "--gpu-memory-gib", "80", "--weights-gib", "3", "--prefix-match-unit",
      "16"], []),
    (["--layers", "32", "--kv-heads", "8", "--head-dim", "128", "--gpu-memory-gib", "80",
      "--weights-gib", "15"], []),
    # a default restated (2 batches in flight: vLLM's async scheduling) is not an option unread
    (["llama-3.1-8b", "--num-blocks", "10000", "--async-scheduling"], []),
    (["llama-3.1-8b", "--num-blocks", "10000", "--max-concurrent-batches", "2"], []),
])
def test_config_says_what_changed_nothing(args, said):
    """Each printed the same table as without it, and said nothing (the JSON too)."""
    import json

    res = runner.invoke(app, ["config", *args, "--max-model-len", "4096", "--json"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["warnings"] == said
    assert res.stderr == "".join(f"warning: {w}\n" for w in said)


@pytest.mark.parametrize(("args", "line"), [
    # each policy's rows came twice, and its exact runs ran twice
    (["--policies", "lru,optimal,LRU"], "error: option --policies: policy 'lru' named twice"),
    # the model only turns --capacity-gib into blocks: without it, dropped without a word
    (["--model", "llama-3.1-8b"],
     "error: option --model: has no effect without capacity_gib (it turns GiB into blocks)"),
    # a row each, and for every policy but one-pass LRU a whole replay each: bounded
    (["--capacities", ",".join(map(str, range(1, 10_002)))],
     "error: option --capacities: 10,001 capacities is more than the limit of 10,000 a curve"),
    # two equal rows, and each other policy's exact run twice, as for a policy named twice
    (["--capacities", "5,6,5"], "error: option --capacities: 5 named twice"),
    (["--capacity-tokens", "160,160"], "error: option --capacity-tokens: 160 named twice"),
])
def test_curve_refuses(args, line):
    refused(["curve", SP, *args], line)


@pytest.mark.parametrize("command", [["script"], ["bench", "--ops"]])
def test_an_op_key_no_op_reads(tmp_path, command):
    # 'num_new_tokens' (for num_tokens) ran the op without it: the whole prompt, silently
    ops = tmp_path / "a.ops.jsonl"
    ops.write_text('{"config": {"groups": [{"type": "full"}], "block_size": 4, '
                   '"num_blocks": 8}}\n{"op": "new", "id": "a", "prompt": [1, 2, 3], '
                   '"num_new_tokens": 1}\n')
    refused([*command, str(ops)],
            f"error: {ops}:2: field 'num_new_tokens': unknown key(s) ['num_new_tokens'] for op "
            "'new' (it takes id, num_tokens, op, prompt)")


@pytest.mark.parametrize("command", [
    ["clock", "explain", "--case", "decode=64*1@4097", "--gpu", "h100"],
    ["calibrate", "--gpu", "-o", "cal.json"]])
def test_a_preset_and_a_config_json_together(tmp_path, command):
    # the preset won and the config.json was dropped without a word (replay refuses the pair)
    cfg = tmp_path / "config.json"
    cfg.write_text('{"num_hidden_layers": 4, "num_attention_heads": 8, "num_key_value_heads": 8,'
                   ' "hidden_size": 1024, "head_dim": 128, "max_position_embeddings": 8192, '
                   '"vocab_size": 32000, "intermediate_size": 4096}')
    args = [str(tmp_path / a) if a == "cal.json" else a for a in command]
    refused([*args, "--model", "llama-3.1-8b", "--model-config", str(cfg)],
            "error: option --model: give a model preset or a model config (config.json), not "
            "both")
    assert not (tmp_path / "cal.json").exists()


def test_listen_with_the_publisher_as_its_replay_socket():
    # the replay socket asked the publisher's PUB socket, which never answers; nothing said
    refused(["events", "listen", "tcp://127.0.0.1:5999", "--replay-endpoint",
             "tcp://127.0.0.1:5999", "--idle-timeout-s", "1"],
            "error: option --replay-endpoint: the same endpoint as the publisher's (ENDPOINT): "
            "the replay socket is another one")


def test_config_list_with_a_model():
    # printed the presets' table and sized nothing, as if MODEL were not given
    refused(["config", "--list", "llama-3.1-8b"], "error: option --list: lists the presets: not "
            "with a MODEL ('llama-3.1-8b'); drop --list to size it")
    assert runner.invoke(app, ["config", "--list"]).exit_code == 0
