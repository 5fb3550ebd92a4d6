"""Hostile options and inputs found by a robustness audit of config, gen, clock, script, sweep
and cluster: each is one line `error: ...` on stderr and exit code 2, without a traceback."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from kvcli.app import app

ROOT = Path(__file__).resolve().parents[1]
MT = str(ROOT / "traces" / "multiturn-chat.jsonl")
runner = CliRunner()


def refused(args: list[str], start: str, *words: str) -> str:
    """Run kvcli; assert exit 2 and one stderr line starting with `start` and holding `words`."""
    res = runner.invoke(app, args)
    assert res.exit_code == 2, (res.exit_code, res.output, res.exception)
    assert "Traceback" not in res.stderr and res.stdout == ""
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1, res.stderr
    assert lines[0].startswith(start), lines[0]
    for w in words:
        assert w in lines[0], lines[0]
    return lines[0]


# -- a CPU tier of 1e300 GiB overflowed when made bytes (OverflowError) --------------------------

@pytest.mark.parametrize("value", ["1e300", "inf", "2e6"])
def test_config_cpu_tier_is_bounded(value):
    refused(["config", "llama-3.1-8b", "--gpu-memory-gib", "80", "--kv-offloading-size", value],
            "error: option --kv-offloading-size: must be at most 1,048,576 GiB (1 PiB), got ")


def test_replay_cpu_tier_is_bounded():
    refused(["replay", MT, "--kv-offloading-size", "1e300"],
            "error: option --kv-offloading-size: must be at most 1,048,576 GiB (1 PiB), "
            "got 1e+300")


# -- a config.json's zero sizes and periods divided by zero; billions of layers ran out of memory

def _config_json(tmp_path: Path, **over) -> str:
    import json

    cfg = {"model_type": "llama", "num_hidden_layers": 32, "num_attention_heads": 32,
           "hidden_size": 4096, "num_key_value_heads": 8, "max_position_embeddings": 8192,
           "torch_dtype": "bfloat16", **over}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    return str(path)


@pytest.mark.parametrize("over, said", [
    ({"num_hidden_layers": 0}, ("field 'num_hidden_layers': expected an integer >= 1 and <= "
                               "100,000, got 0")),
    ({"num_hidden_layers": 10**10}, ("field 'num_hidden_layers': expected an integer >= 1 and "
                                    "<= 100,000, got 10000000000")),
    ({"num_attention_heads": 0}, "field 'num_attention_heads': expected an integer >= 1, got 0"),
    ({"hidden_size": 0}, "field 'hidden_size': expected an integer >= 1, got 0"),
    ({"num_key_value_heads": 0}, "field 'num_key_value_heads': expected an integer >= 1, got 0"),
    # (vLLM's attention layer asserts it; the cache was sized with 3 KV heads all the same)
    ({"num_key_value_heads": 3}, ("field 'num_key_value_heads': 3 KV heads do not divide the 32 "
                                 "attention heads (num_attention_heads), as vLLM's attention "
                                 "layer requires")),
    ({"num_attention_heads": 8192}, ("field 'head_dim': hidden_size 4096 over "
                                    "num_attention_heads 8192 leaves no head_dim")),
    ({"model_type": "gemma3_text", "sliding_window_pattern": 0},
     "field 'sliding_window_pattern': expected an integer >= 1, got 0"),
    ({"model_type": "jamba", "attn_layer_period": 0},
     "field 'attn_layer_period': expected an integer >= 1, got 0"),
    ({"model_type": "jamba", "expert_layer_period": 0},
     "field 'expert_layer_period': expected an integer >= 1, got 0"),
])
def test_config_json_sizes_are_positive(tmp_path, over, said):
    path = _config_json(tmp_path, **over)
    refused(["config", "--model-config", path, "--num-blocks", "1000", "--max-model-len",
             "1024"], f"error: {path}: {said}")


# -- explicit geometry: a negative window was sized as if real; a billion layers never returned;
# -- with a preset, --kv-heads and the window options were silently ignored

GEOMETRY = ["config", "--layers", "32", "--kv-heads", "8", "--head-dim", "128",
            "--max-model-len", "1024", "--num-blocks", "1000"]


@pytest.mark.parametrize("args, said", [
    (["--sliding-window", "-5"], "error: option --sliding-window: must be >= 0 (0: none), got -5"),
    (["--attention-chunk-size", "-64"],
     "error: option --attention-chunk-size: must be >= 0 (0: none), got -64"),
    (["--layers", "1000000000"], ("error: option --layers: must be at most 100,000, got "
                                 "1,000,000,000")),
])
def test_explicit_geometry_is_bounded(args, said):
    assert refused([*GEOMETRY, *args], said) == said


@pytest.mark.parametrize("flag, value", [("--kv-heads", "0"), ("--head-dim", "64"),
                                         ("--sliding-window", "128"),
                                         ("--chunked-layers", "1:1")])
def test_geometry_flags_need_layers(flag, value):
    refused(["config", "llama-3.1-8b", "--gpu-memory-gib", "80", flag, value],
            f"error: option {flag}: describes a model's layers: give it with layers (and "
            "kv_heads, head_dim), or use a model preset")


# -- kvcli script: a config's hash or a Mamba group's state_size of the wrong type raised
# -- TypeError with a traceback; a negative state_size was taken

def _ops(tmp_path: Path, **config) -> str:
    import json

    path = tmp_path / "t.ops.jsonl"
    path.write_text(json.dumps({"config": {"block_size": 4, "num_blocks": 6, **config}}) + "\n"
                    + json.dumps({"op": "new", "id": "a", "prompt": list(range(10))}) + "\n")
    return str(path)


@pytest.mark.parametrize("config, said", [
    ({"hash": [1]}, ("field 'hash': unknown hash [1] (one of sha256, sha256_cbor, xxhash, "
                    "xxhash_cbor)")),
    ({"groups": [{"type": "mamba", "state_size": [1]}]},
     "field 'state_size': must be a positive integer, got [1]"),
    ({"groups": [{"type": "mamba", "state_size": None}]},
     "field 'state_size': must be a positive integer, got None"),
    ({"groups": [{"type": "mamba", "state_size": -3}]},
     "field 'state_size': must be a positive integer, got -3"),
    # a misspelt or misplaced key ran the group without it, and a group's own block size was
    # dropped, without a word
    ({"groups": [{"type": "sliding_window", "sliding_window": 8, "window": 4}]},
     ("field 'window': not a key of a sliding_window group (it takes type, block_size, "
      "sliding_window)")),
    ({"groups": [{"type": "full", "checkpoint": True}]},
     "field 'checkpoint': not a key of a full group (it takes type, block_size)"),
    ({"groups": [{"type": "full", "sliding_window": 8}]},
     "field 'sliding_window': not a key of a full group (it takes type, block_size)"),
    ({"groups": [{"type": "full"}, {"type": "swa", "sliding_window": 8, "block_size": 16}]},
     ("field 'groups': a swa group's block_size 16 is not the script's 4: its groups run at "
      "the script's block_size")),
])
def test_script_config_types(tmp_path, config, said):
    path = _ops(tmp_path, **config)
    refused(["script", path], f"error: {path}:1: {said}")


def test_script_mamba_state_size_defaults_to_one(tmp_path):
    res = runner.invoke(app, ["script", _ops(tmp_path, groups=[{"type": "mamba"}])])
    assert res.exit_code == 0, res.output


def test_script_groups_as_an_event_header_names_them_paste_back(tmp_path):
    # (the header writes every group's block size and a null window)
    groups = [{"type": "full_attention", "block_size": 4, "sliding_window": None},
              {"type": "sliding_window", "block_size": 4, "sliding_window": 8}]
    res = runner.invoke(app, ["script", _ops(tmp_path, groups=groups)])
    assert res.exit_code == 0, res.output


# -- kvcli cluster: a metrics interval of 1e-300 ms never moved the clock (hung); NaN sampled
# -- nothing and an infinite KV event lag was taken, silently

@pytest.mark.parametrize("args, said", [
    (["--metrics-interval-ms", "1e-300"],
     "option --metrics-interval-ms: must be 0 (no samples) or at least 0.001 ms, got 1e-300"),
    (["--metrics-interval-ms", "nan"],
     "option --metrics-interval-ms: must be a finite number >= 0, got nan"),
    (["--kv-event-lag-ms", "inf"], ("option --kv-event-lag-ms: must be a finite number >= 0, "
                                   "got inf")),
    (["--kv-event-lag-ms", "-1"], ("option --kv-event-lag-ms: must be a finite number >= 0, "
                                  "got -1.0")),
])
def test_cluster_time_options(args, said):
    refused(["cluster", MT, *args], f"error: {said}")


# -- kvcli script: a request past max_model_len (blocks of 4, max_model_len 10: three blocks)
# -- raised IndexError in cache_full_blocks; vLLM caches the slice of its table it has (the
# -- fixture tests/data/oracle_fresh/past-max-model-len), and fails itself with KV events on

def test_script_past_max_model_len(tmp_path):
    import json

    plain = _ops(tmp_path, max_model_len=10, num_blocks=20)
    lines = [json.loads(x) for x in Path(plain).read_text().splitlines()]
    lines[1]["prompt"] = list(range(1, 31))
    Path(plain).write_text("".join(json.dumps(x) + "\n" for x in lines))
    res = runner.invoke(app, ["script", plain])
    assert res.exit_code == 0, res.output
    first = json.loads(res.stdout.splitlines()[0])
    assert (first["ok"], first["block_table"], first["computed"]) == (True, [[1, 2, 3]], 30)
    assert json.loads(res.stdout.splitlines()[-1])["cached_block_hashes"] == 3
    lines[0]["config"]["kv_events"] = True
    Path(plain).write_text("".join(json.dumps(x) + "\n" for x in lines))
    refused(["script", plain], f"error: {plain}:2: field 'kv_events': a request of 30 tokens "
            "fills 7 blocks but max_model_len gave it 3: vLLM 0.33 fails here with KV cache "
            "events on (IndexError in cache_full_blocks)")


# -- a tensor-parallel size that does not divide the attention heads: vLLM refuses to start
# -- (ModelConfig.verify_with_parallel_config); kvcli sized it, rc 0

@pytest.mark.parametrize("tp", ["3", "1000000"])
def test_tensor_parallel_must_divide_the_heads(tp):
    refused(["config", "llama-3.1-8b", "--gpu-memory-gib", "80", "--tp", tp],
            "error: option --tensor-parallel-size: llama-3.1-8b's 32 attention heads must be "
            f"divisible by it, as vLLM requires; got {tp}")
    res = runner.invoke(app, ["config", "llama-3.1-8b", "--gpu-memory-gib", "80", "--tp", "8"])
    assert res.exit_code == 0, res.output
    # explicit geometry names no attention head count: only its KV heads are checked
    # (test_config_cli.test_kv_heads_and_tensor_parallel_must_divide_one_another)
    res = runner.invoke(app, ["config", "--layers", "4", "--kv-heads", "8", "--head-dim", "128",
                              "--num-blocks", "100", "--max-model-len", "1024", "--tp", "16"])
    assert res.exit_code == 0, res.output


# -- kvcli gen: an option only another kind reads was dropped silently (gen shared-prefix
# -- --turns 3 wrote a trace without turns, rc 0)

@pytest.mark.parametrize("args, said", [
    (["shared-prefix", "--turns", "3"], "--turns: shared-prefix does not take it (only multiturn)"),
    (["multiturn", "--groups", "2"], "--groups: multiturn does not take it (only shared-prefix)"),
    (["b2b", "--system-tokens", "5"],
     "--system-tokens: b2b does not take it (only shared-prefix and multiturn)"),
    (["shared-prefix", "--tenants", "3"], "--tenants: shared-prefix does not take it (only b2b)"),
    # (one rate has no stages: the same trace, byte for byte, unsaid)
    (["b2b", "--stage-s", "5"],
     "--stage-s: needs a ramp of --qps stages (e.g. 3,10,30); one rate has none"),
])
def test_gen_refuses_another_kinds_options(args, said):
    refused(["gen", *args], f"error: option {said}")
    # the kind's own options, and a default left alone, still pass
    res = runner.invoke(app, ["gen", "multiturn", "--conversations", "2", "--turns", "2",
                              "--system-tokens", "32"])
    assert res.exit_code == 0, res.output


# -- a trace whose first line is a JSON list was read as Azure's CSV (its comma), and the
# -- message asked for a CSV header

@pytest.mark.parametrize("command", ["curve", "replay"])
def test_a_json_list_line_is_not_csv(tmp_path, command):
    path = tmp_path / "t.jsonl"
    path.write_text("[1, 2]\n")
    refused([command, str(path)], f"error: {path}:1: expected a JSON object")


# -- kvcli sweep: nine --set of ten values (10^9 jobs) were all made and checked before the
# -- first ran: minutes of a growing memory, never a job

def test_a_sweep_grid_is_bounded(tmp_path):
    sets = [f"num_blocks={','.join(str(n) for n in range(1000, 1010))}",
            f"max_num_seqs={','.join(str(n) for n in range(1, 11))}",
            f"max_num_batched_tokens={','.join(str(n) for n in range(2048, 2058))}",
            f"step_overhead_ms={','.join(str(n) for n in range(1, 11))}",
            f"long_prefill_token_threshold={','.join(str(n) for n in range(0, 100, 10))}",
            f"decode_ms_per_seq={','.join(str(n) for n in range(1, 11))}"]
    args = ["sweep", "--trace", MT, "--results", str(tmp_path / "r.jsonl")]
    for s in sets:
        args += ["--set", s]
    refused(args, "error: option --set: 1,000,000 jobs (1 trace(s) x 10 num_blocks x 10 "
            "max_num_seqs x 10 max_num_batched_tokens x 10 step_overhead_ms x 10 "
            "long_prefill_token_threshold x 10 decode_ms_per_seq) is more than the limit of "
            "100,000 a sweep")
    spec = tmp_path / "s.toml"
    spec.write_text(f'traces = ["{MT}"]\n[grid]\nnum_blocks = {list(range(1000, 1400))}\n'
                    f"max_num_seqs = {list(range(1, 301))}\n")
    refused(["sweep", str(spec)], f"error: {spec}: field 'grid': 120,000 jobs (1 trace(s) x "
            "400 num_blocks x 300 max_num_seqs) is more than the limit of 100,000 a sweep")
    assert not (tmp_path / "r.jsonl").exists()


# -- the CPU tier's options without a tier (--offload-load-steps 5, --num-layers 4) were dropped
# -- from the config without a word, exit 0

def test_tier_options_without_a_tier_warn():
    import json

    res = runner.invoke(app, ["replay", MT, "--mode", "cache", "--offload-load-steps", "5",
                              "--num-layers", "4", "--json"])
    assert res.exit_code == 0, res.output
    said = ("option(s) load_steps, num_layers: no effect without a CPU tier (kv_offloading_size "
            "or kv_offloading_size_chunks)")
    assert json.loads(res.stdout)["warnings"] == [said]
    assert res.stderr == f"warning: {said}\n"
    res = runner.invoke(app, ["replay", MT, "--mode", "cache", "--offload-load-steps", "5",
                              "--kv-offloading-size-chunks", "64", "--json"])
    assert res.exit_code == 0, res.output
    said = ("option(s) load_steps: no effect in cache mode (no time: a load or a store "
            "completes at once; only prompt chunks are offered)")    # (a tier, but no time)
    assert json.loads(res.stdout)["warnings"] == [said]
