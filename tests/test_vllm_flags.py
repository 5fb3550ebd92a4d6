"""kvcli's options that `vllm serve` also takes: vLLM 0.33's spellings, value names and
defaults, or a difference the table states (tests/data/vllm_flags.json, its README line).

The table is the contract: every kvcli command that takes one of its options is listed with the
option's names, choices and the default its help shows; a drift (a new command or alias, a
default or a choice changed) fails here until the table, and docs/config.md's section, say it.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import typer.main
from typer.testing import CliRunner

from kvcli.app import app
from kvcore.engine.options import CONFIG_KEYS, KNOBS
from kvcore.sweep.keys import REPLAY_KEYS

TABLE = json.loads((Path(__file__).parent / "data" / "vllm_flags.json").read_text())
ROWS = TABLE["rows"]
ROOT = typer.main.get_command(app)
TRACE = str(Path(__file__).parents[1] / "traces" / "shared-prefix.jsonl")
# the least each command needs to reach its options' checks
BASE = {"replay": ["replay", TRACE, "--json"],
        "config": ["config", "llama-3.1-8b", "--gpu-memory-gib", "80", "--json"],
        "clock explain": ["clock", "explain", "--model", "llama-3.1-8b", "--gpu", "h100-sxm",
                          "--case", "decode=8*1@1024", "--json"]}


def _commands():
    for name, cmd in ROOT.commands.items():
        subs = getattr(cmd, "commands", None)
        yield from (((f"{name} {k}", v) for k, v in subs.items()) if subs else [(name, cmd)])


def _choices(p) -> list[str] | None:
    listed = getattr(p.type_descriptor, "choices", None)
    if listed:
        return [c.value for c in listed]
    return p.metavar.split("|") if p.metavar and "|" in p.metavar else None


def _shown_default(p) -> str | None:
    """The default the help shows: its "[default: X]", as kvcli writes it or typer adds it."""
    said = re.search(r"\[default: (.*)\]$", p.help or "", re.DOTALL)
    if said:
        return " ".join(said.group(1).split())
    if p.is_bool_flag and p.default is False:
        return "off"                # a plain switch: off unless given
    if p.show_default and p.default is not None:
        return str(p.default)
    return None


def _seen(row: dict) -> dict[str, dict]:
    """{command: its option's names, choices, shown default} for every command that takes one
    of the row's names."""
    names = set(row["kvcli_names"])
    out = {}
    for path, cmd in _commands():
        for p in cmd.params:
            flags = [*p.opts, *getattr(p, "secondary_opts", ())]
            if names & set(flags):
                out[path] = {"flags": flags, "choices": _choices(p),
                             "default": _shown_default(p)}
    return out


IDS = [r["vllm"]["flags"][0] for r in ROWS]


@pytest.mark.parametrize("row", ROWS, ids=IDS)
def test_every_command_as_the_table_says(row):
    assert _seen(row) == row["commands"]


@pytest.mark.parametrize("row", ROWS, ids=IDS)
def test_vllm_spellings_choices_and_defaults(row):
    v = row["vllm"]
    for path, c in row["commands"].items():
        # every vLLM spelling is accepted where kvcli takes the option at all
        assert set(v["flags"]) <= set(c["flags"]) or path in row["differs"], path
        if c["choices"] is not None and v["choices"] is not None:
            assert set(c["choices"]) <= set(v["choices"]), path        # vLLM's value names
            assert c["choices"] == v["choices"] or path in row["differs"], path
        assert c["default"] == v["default"] or path in row["differs"], path
    assert set(row["differs"]) <= set(row["commands"])
    for path in row["absent"]:
        assert path in dict(_commands()) and path not in row["commands"], path


@pytest.mark.parametrize("row", [r for r in ROWS if r["key"]], ids=lambda r: r["key"])
def test_sweep_and_config_line_keys(row):
    from kvcore.sweep.spec import spec_from_flags

    key = row["key"]
    assert key in REPLAY_KEYS                               # sweep's --set and spec keys
    assert (key in CONFIG_KEYS) == row["config_line"]       # a trace's config line
    if row["vllm_key"]:                                     # vLLM's name, read as kvcli's
        spec = spec_from_flags("replay", [TRACE], [f"{row['vllm_key']}=2,4"])
        assert [k for k, _ in spec.grid] == [key]
    knob = next(f for f in KNOBS if f.name == key)
    replay = row["commands"].get("replay")
    if knob.metadata["choices"] is not None and replay is not None:
        # the same choices for a sweep's --set and a config line as on the command line
        assert sorted(knob.metadata["choices"]) == sorted(replay["choices"])


def _invoke(path: str, flag: str, value: str):
    args = list(BASE[path])
    if value.startswith("-"):
        extra = value.split()
    else:
        extra = [flag, value]
    return CliRunner().invoke(app, [*args, *extra])


REFUSALS = [(r["vllm"]["flags"][0], x["value"], x["says"], path)
            for r in ROWS for x in r.get("refuse", []) for path in x["commands"]]


@pytest.mark.parametrize("flag,value,says,path", REFUSALS)
def test_a_vllm_value_kvcli_cannot_model_is_refused_saying_why(flag, value, says, path):
    res = _invoke(path, flag, value)
    assert res.exit_code == 2, res.output
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and says in lines[0] and flag in lines[0], res.stderr
    assert "Traceback" not in res.output


ACCEPTED = [(r["vllm"]["flags"][0], x["value"], path)
            for r in ROWS for x in r.get("accept", []) for path in x["commands"]]


@pytest.mark.parametrize("flag,value,path", ACCEPTED)
def test_vllm_values_and_old_spellings_run(flag, value, path):
    res = _invoke(path, flag, value)
    assert res.exit_code == 0, res.stderr


def test_the_replay_reads_vllm_spellings_as_its_own():
    def config(*extra: str) -> dict:
        res = CliRunner().invoke(app, [*BASE["replay"], *extra])
        assert res.exit_code == 0, res.stderr
        return json.loads(res.stdout)["config"]

    assert config("-tp", "2")["tp"] == config("--tp", "2")["tp"] == 2
    assert config("--num-gpu-blocks-override", "100")["num_blocks"] == 100
    assert config("--scheduling-policy", "priority")["policy"] == "priority"
    assert config("--prefix-caching-hash-algo", "xxhash")["hash_algo"] == "xxhash"
    assert config("--kv-cache-dtype", "bf16")["kv_cache_dtype"] == "bfloat16"


def test_config_reads_vllm_names_as_the_old_ones():
    def blocks(*extra: str) -> int:
        res = CliRunner().invoke(app, [*BASE["config"], *extra])
        assert res.exit_code == 0, res.stderr
        return json.loads(res.stdout)["num_blocks"]

    # Llama-3.1-8B on 80 GiB at vLLM's default 0.92: 30,008 blocks of 2 MiB in bf16, 60,017 in
    # fp8 ((80 x 0.92 GiB - 14.96 GiB weights - 32 MiB buffers) // page); 29,189 at 0.9
    assert blocks("--kv-cache-dtype", "bfloat16") == blocks("--kv-cache-dtype", "bf16") == 30_008
    assert blocks("--kv-cache-dtype", "fp8_e5m2") == 60_017
    assert blocks("--dtype", "auto") == 30_008
    # int8 was sized at 1 byte: no vLLM 0.33 --kv-cache-dtype (its int8_per_token_head keeps
    # scales in the page), nor a kvcli spelling the help listed
    res = CliRunner().invoke(app, [*BASE["config"], "--kv-cache-dtype", "int8"])
    assert res.exit_code == 2 and "unknown dtype 'int8'" in res.stderr, res.stderr
    assert blocks("--device-memory-utilization", "0.9") == 29_189
    # (at TP 2 every rank keeps its norms whole, as vLLM builds them: tests/data/weights_census)
    assert blocks("-tp", "2") == blocks("--tensor-parallel-size", "2") == 67_675
    res = CliRunner().invoke(app, [*BASE["config"], "--no-async-scheduling",
                                   "--max-concurrent-batches", "2"])
    assert res.exit_code == 2 and "disagrees with --no-async-scheduling" in res.stderr


def test_the_modelled_kv_dtypes_are_the_clocks():
    from kvcore.clock.kv_dtypes import KV_CACHE_DTYPES as CLOCK
    from kvcore.vllm_values import KV_CACHE_DTYPES, VLLM_KV_CACHE_DTYPES

    assert set(CLOCK) == set(KV_CACHE_DTYPES)
    kv_row = next(r for r in ROWS if r["vllm"]["flags"] == ["--kv-cache-dtype"])
    assert list(VLLM_KV_CACHE_DTYPES) == kv_row["vllm"]["choices"]


def test_replay_sizes_at_the_utilization_given_as_config_does():
    def blocks(*extra: str) -> tuple[int, object]:
        res = CliRunner().invoke(app, [*BASE["replay"], "--model", "llama-3.1-8b",
                                       "--gpu-memory-gib", "80", *extra])
        assert res.exit_code == 0, res.stderr
        d = json.loads(res.stdout)
        return d["num_blocks"], d["config"].get("gpu_memory_utilization")

    # kvcli config's numbers (test_config_reads_vllm_names_as_the_old_ones); the key is in
    # the config only when not the default, vLLM's 0.92
    assert blocks() == (30_008, None)
    assert blocks("--device-memory-utilization", "0.92") == (30_008, None)
    assert blocks("--device-memory-utilization", "0.9") == (29_189, 0.9)
    res = CliRunner().invoke(app, [*BASE["replay"], "--gpu-memory-utilization", "0"])
    assert res.exit_code == 2
    assert res.stderr.strip() == "error: option --gpu-memory-utilization: must be in (0, 1], got 0.0"


def _trace_with(tmp_path, config: dict) -> str:
    lines = Path(TRACE).read_text().splitlines()[:40]
    path = tmp_path / "t.jsonl"
    path.write_text("\n".join([json.dumps({"config": config}), *lines]) + "\n")
    return str(path)


def test_a_config_line_and_a_sweep_read_vllm_names_and_old_spellings(tmp_path):
    from kvcore.sweep.spec import spec_from_flags

    # was refused: "must be auto, bfloat16, ..., got 'bf16'" from --set and a config line,
    # while the command line read bf16; and a config line knew only kvcli's key names
    spec = spec_from_flags("replay", [TRACE], ["kv_cache_dtype=bf16,fp8"])
    assert spec.grid == (("kv_cache_dtype", ("bfloat16", "fp8")),)
    t = _trace_with(tmp_path, {"num_gpu_blocks_override": 120, "scheduling_policy": "priority",
                               "prefix_caching_hash_algo": "xxhash"})
    res = CliRunner().invoke(app, ["replay", t, "--json"])
    assert res.exit_code == 0, res.stderr
    config = json.loads(res.stdout)["config"]
    assert (config["num_blocks"], config["policy"], config["hash_algo"]) == \
        (120, "priority", "xxhash")
    assert config == json.loads(CliRunner().invoke(app, [
        "replay", _trace_with(tmp_path, {"num_blocks": 120, "policy": "priority",
                                         "hash_algo": "xxhash"}), "--json"]).stdout)["config"]
    # an error names the key as the line wrote it
    t = _trace_with(tmp_path, {"num_gpu_blocks_override": -1})
    res = CliRunner().invoke(app, ["replay", t, "--json"])
    assert res.exit_code == 2 and "config.num_gpu_blocks_override" in res.stderr, res.stderr
    t = _trace_with(tmp_path, {"num_blocks": 100, "num_gpu_blocks_override": 120})
    res = CliRunner().invoke(app, ["replay", t, "--json"])
    assert res.exit_code == 2, res.stderr
    assert "'num_blocks' given twice, as 'num_blocks' and as vLLM's " \
        "'num_gpu_blocks_override'" in res.stderr, res.stderr
    t = _trace_with(tmp_path, {"tensor_parallel_size": 2})     # tp is no config line key
    res = CliRunner().invoke(app, ["replay", t, "--json"])
    assert res.exit_code == 2 and "unknown key(s) ['tensor_parallel_size']" in res.stderr


def test_the_scheduler_flags_vllm_has_run_as_the_config_line(tmp_path):
    # --max-num-active-seqs and --long-prefill-token-threshold-adaptive had no flag (a config
    # line or a sweep key only): the same run either way, and not the run without them
    def run(args: list[str], config: dict) -> dict:
        res = CliRunner().invoke(app, ["replay", _trace_with(tmp_path, config), "--num-blocks",
                                       "400", "--json", *args])
        assert res.exit_code == 0, res.stderr
        out = json.loads(res.stdout)
        return {k: out[k] for k in ("hit_tokens", "steps", "config")}

    base = run([], {})
    active = run(["--max-num-active-seqs", "2"], {})
    assert active == run([], {"max_num_active_seqs": 2}) != base
    assert active["config"]["max_num_active_seqs"] == 2
    cap = run(["--long-prefill-token-threshold", "64"], {})
    adaptive = run(["--long-prefill-token-threshold", "64",
                    "--long-prefill-token-threshold-adaptive"], {})
    assert adaptive == run(["--long-prefill-token-threshold", "64"],
                           {"long_prefill_token_threshold_adaptive": True}) != cap
    # without a threshold vLLM's switch changes nothing: the same run, and a warning says so
    res = CliRunner().invoke(app, [*BASE["replay"], "--long-prefill-token-threshold-adaptive"])
    assert res.exit_code == 0, res.stderr
    assert "warning: option long_prefill_token_threshold_adaptive has no effect without " \
        "long_prefill_token_threshold (0: no cap to floor)" in res.stderr, res.stderr
    res = CliRunner().invoke(app, [*BASE["replay"], "--max-num-active-seqs", "200"])
    assert res.exit_code == 2 and "200 is above max_num_seqs 128" in res.stderr, res.stderr
    # 0 ran until "can never be admitted (stalled for 1000 steps)"; vLLM refuses it (ge=1)
    res = CliRunner().invoke(app, [*BASE["replay"], "--max-num-active-seqs", "0"])
    assert res.exit_code == 2, res.stderr
    assert "--max-num-active-seqs: must be a positive integer, got 0" in res.stderr
    res = CliRunner().invoke(app, ["replay", _trace_with(tmp_path, {"max_num_active_seqs": 0}),
                                   "--json"])
    assert res.exit_code == 2 and "config.max_num_active_seqs" in res.stderr, res.stderr
