"""`ReplayOptions`: one list of knobs, what the caller gave over the trace's config line over the
defaults, the scheduler's and the clock's settings built by field name."""

import math

import pytest

from kvcli.replay_options import replay_options
from kvcore.engine.cost import CostModel
from kvcore.engine.options import (
    CLOCK_FIELDS,
    CONFIG_KEYS,
    KNOBS,
    OFFLOAD_FIELDS,
    SPEC_FIELDS,
    ReplayOptions,
    build,
    resolve,
)
from kvcore.engine.scheduler import SchedulerConfig
from kvcore.errors import InputError


def test_defaults_come_from_the_classes_that_use_them():
    d = ReplayOptions()
    assert (d.step_overhead_ms, d.prefill_ms_per_token, d.decode_ms_per_seq) == \
        (CostModel().step_overhead_ms, CostModel().prefill_ms_per_token,
         CostModel().decode_ms_per_seq)
    assert (d.max_num_seqs, d.max_num_batched_tokens, d.policy) == (128, 2048, "fcfs")
    assert build(CostModel, d, user_set=False) == CostModel()
    s = build(SchedulerConfig, ReplayOptions(max_num_seqs=7, policy="priority"),
              max_model_len=99)
    assert (s.max_num_seqs, s.policy, s.max_model_len, s.max_num_batched_tokens) == \
        (7, "priority", 99, 2048)


def test_given_over_the_trace_config_over_the_defaults():
    trace_cfg = {"block_size": 32, "max_num_seqs": 4, "kv_events": True}
    # the CLI: exactly what the user typed, even a value equal to the default
    user = replay_options({"block_size": 16, "num_blocks": None, "mode": None})
    assert user.given == {"block_size"}
    got = resolve(user, trace_cfg)
    assert (got.block_size, got.max_num_seqs, got.num_blocks) == (16, 4, None)
    assert got.given == {"block_size"}                 # resolve returns the same type
    # a Python caller: the fields that differ from their defaults
    assert ReplayOptions(max_num_seqs=8, mode="cache").given == {"max_num_seqs", "mode"}
    assert resolve(ReplayOptions(), trace_cfg).block_size == 32
    # the config line may set only the scheduler/cache fields
    assert "step_overhead_ms" not in CONFIG_KEYS and "block_size" in CONFIG_KEYS
    with pytest.raises(InputError, match=r"unknown key\(s\) \['warmup'\]"):
        resolve(ReplayOptions(), {"warmup": 0.5}, path="t.jsonl", config_line=1)


def test_to_dict_is_the_settings_in_field_order():
    d = ReplayOptions().to_dict()
    # the CPU tier's settings only when it is on, the clock's only when one is given: outputs
    # without them stay as they were (and prefix_match_unit's and hash_seed's only when set)
    # (and gpu_memory_utilization's only when not the default, vLLM 0.33's 0.92;
    # performance_mode's only when not vLLM's balanced, pipeline_parallel_size's when not 1,
    # speculative decoding's only when on, the shared-prefix Mamba checkpoint's only when on,
    # the multimodal serving options' only when given)
    assert list(d) == [f.name for f in KNOBS if f.name not in OFFLOAD_FIELDS
                       and f.name not in CLOCK_FIELDS
                       and f.name not in ("prefix_match_unit", "gpu_memory_utilization",
                                          "hash_seed", "performance_mode",
                                          "pipeline_parallel_size",
                                          "enable_mamba_shared_prefix_checkpoint",
                                          "limit_mm_per_prompt", "language_model_only",
                                          "mm_encoder_tp_mode", *SPEC_FIELDS)]
    on = ReplayOptions(num_speculative_tokens=2, spec_acceptance_rate=0.5).to_dict()
    assert [on["num_speculative_tokens"], on["spec_acceptance_rate"], on["spec_seed"]] == \
        [2, 0.5, 0]
    assert ReplayOptions(performance_mode="throughput").to_dict()["performance_mode"] == \
        "throughput"
    assert ReplayOptions(prefix_match_unit=16).to_dict()["prefix_match_unit"] == 16
    assert ReplayOptions(hash_seed="0").to_dict()["hash_seed"] == "0"
    assert ReplayOptions(pipeline_parallel_size=2).to_dict()["pipeline_parallel_size"] == 2
    assert ReplayOptions(gpu_memory_utilization=0.9).to_dict()["gpu_memory_utilization"] == 0.9
    assert "gpu_memory_utilization" not in ReplayOptions(gpu_memory_utilization=0.92).to_dict()
    assert "given" not in d and list(d)[:3] == ["mode", "block_size", "num_blocks"]
    on = ReplayOptions(kv_offloading_size=8.0, tp=2, prefix_match_unit=16,
                       gpu_memory_utilization=0.9, hash_seed="0",
                       performance_mode="interactivity", pipeline_parallel_size=2,
                       num_speculative_tokens=1, spec_acceptance_rate=0.5,
                       spec_method="eagle3", spec_model="eagle3-llama-3.1-8b",
                       eagle_groups=(0,), enable_mamba_shared_prefix_checkpoint=True,
                       limit_mm_per_prompt='{"image": 0}', language_model_only=True,
                       mm_encoder_tp_mode="data").to_dict()
    assert list(on) == [f.name for f in KNOBS] and on["eviction_policy"] == "lru"
    assert on["tp"] == 2 and on["gpu"] is None and on["clock"] is None


@pytest.mark.parametrize("field, value, message", [
    ("mode", "fast", "must be engine or cache, got 'fast'"),
    ("arrivals", "now", "must be timestamp, ignore or step, got 'now'"),
    ("policy", "lifo", "must be fcfs or priority, got 'lifo'"),
    ("hash_algo", "md5", "unknown hash 'md5'"),
    ("block_size", 0, "must be a positive integer, got 0"),
    ("max_num_seqs", 2.5, "must be a positive integer, got 2.5"),
    ("num_blocks", 1, "must be >= 2 (block 0 is the null block), got 1"),
    # (said 'must be >= 2 (block 0 is the null block), got 2.5': the wrong rule)
    ("num_blocks", 2.5, "must be an integer, got 2.5"),
    ("num_blocks", 1e18, "must be an integer, got 1e+18"),
    ("max_model_len", 4096.0, "must be an integer, got 4096.0"),
    ("max_model_len", 1, "must be >= 2, got 1"),
    ("long_prefill_token_threshold", -1, "must be >= 0, got -1"),
    ("watermark", 1.0, "must be in [0, 1), got 1.0"),
    ("warmup", math.nan, "must be in [0, 1), got nan"),
    ("step_overhead_ms", -1.0, "must be >= 0, got -1.0"),
    ("decode_ms_per_seq", math.nan, "must be >= 0, got nan"),
    # an hour a step at most: 1e308 made the clock infinite and every latency null
    ("decode_ms_per_seq", 1e308, "must be at most 3,600,000, got 1e+308"),
    ("step_overhead_ms", 3_600_001, "must be at most 3,600,000, got 3600001"),
    ("prefill_ms_per_token", 1e300, "must be at most 3,600,000, got 1e+300"),
])
def test_each_rule_names_its_field(field, value, message):
    with pytest.raises(InputError) as e:
        resolve(ReplayOptions(**{field: value}), {})
    assert e.value.field == field and str(e.value).endswith(message)


def test_every_knob_has_one_cli_option():
    from kvcli.replay_options import CHECKED_ONLY, OPTIONS

    # set only by a trace's config line (the oracle's), or by Python callers
    not_on_the_cli = {"max_steps", "groups", "eagle_groups"}
    # and vLLM's flags read, checked and not kept (--kv-offloading-backend: native only)
    # and vLLM's --speculative-config, read into the speculative decoding knobs
    assert set(OPTIONS) - set(CHECKED_ONLY) - {"speculative_config"} == \
        {f.name for f in KNOBS} - not_on_the_cli
    assert not set(CHECKED_ONLY) & {f.name for f in KNOBS}


def test_the_commands_take_the_options_they_were_given(tmp_path):
    """A value on the command line beats the trace's config line; one left out does not."""
    import json

    from typer.testing import CliRunner

    from kvcli.app import app

    trace = tmp_path / "t.jsonl"
    trace.write_text('{"config": {"block_size": 8, "max_num_seqs": 3}}\n'
                     '{"id": "a", "prompt_token_ids": [1, 2, 3, 4, 5, 6, 7, 8, 9], '
                     '"output_length": 2}\n')
    for cmd in ("replay", "stats"):
        res = CliRunner().invoke(app, [cmd, str(trace), "--json", "--max-num-seqs", "128",
                                       "--scheduler-reserve-full-isl", "--arrivals", "ignore"])
        assert res.exit_code == 0, res.output
        doc = json.loads(res.stdout)
        if cmd == "replay":
            cfg = doc["config"]
            assert (cfg["block_size"], cfg["max_num_seqs"], cfg["arrivals"]) == (8, 128, "ignore")
        else:
            assert doc["source"]["block_size"] == 8 and doc["reuse"]["requests"] == 1


def test_a_bad_value_from_the_config_line_names_the_file_and_line():
    with pytest.raises(InputError) as e:
        resolve(ReplayOptions(), {"block_size": 0}, path="t.jsonl", config_line=1)
    assert str(e.value) == "t.jsonl:1: field 'config.block_size': must be a positive integer, got 0"
    with pytest.raises(InputError) as e:       # a value the user gave is the option's
        resolve(ReplayOptions(block_size=0), {"block_size": 16}, path="t.jsonl", config_line=1)
    assert e.value.path is None and e.value.field == "block_size"


def test_one_default_for_max_num_batched_tokens():
    """vLLM 0.33's SchedulerConfig default, 2048, everywhere: replay, config, the sizing API
    (once 8192) and the sizing context."""
    import inspect

    from kvcore.sizing import resolve_kv_cache_config
    from kvcore.specs import SizingContext

    sig = inspect.signature(resolve_kv_cache_config).parameters["max_num_batched_tokens"]
    assert sig.default == ReplayOptions().max_num_batched_tokens == 2048
    assert SizingContext(max_model_len=1).max_num_batched_tokens == 2048


def test_a_config_line_null_is_the_default_only_where_that_is_none():
    # (refused as 'got None', Python's spelling, where the default is a value)
    for key in ("block_size", "max_num_seqs", "enable_prefix_caching", "policy"):
        with pytest.raises(InputError) as e:
            resolve(ReplayOptions(), {key: None}, path="t.jsonl", config_line=1)
        assert str(e.value) == (f"t.jsonl:1: field 'config.{key}': is null: leave the key out "
                                "for the option's default (a null stands for it only where the "
                                "default is none)")
    # vLLM's spelling of num_blocks, named as the line spells it
    with pytest.raises(InputError) as e:
        resolve(ReplayOptions(), {"num_gpu_blocks_override": 8, "max_num_batched_tokens": None},
                path="t.jsonl", config_line=1)
    assert e.value.field == "config.max_num_batched_tokens"
    got = resolve(ReplayOptions(), {"num_gpu_blocks_override": None, "max_model_len": None,
                                    "hash_seed": None, "prefix_cache_retention_interval": None})
    assert (got.num_blocks, got.max_model_len, got.hash_seed) == (None, None, None)
    # (retention's null is a value of its own: dense, not its default 0)
    assert ReplayOptions().prefix_cache_retention_interval == 0
    assert got.prefix_cache_retention_interval is None
