"""A count option every command takes (--pipeline-parallel-size, --tensor-parallel-size,
--max-num-seqs, --block-size) is refused in one wording by each: `kvcli config` said "must be
positive" (the sizing layer's check) where `kvcli replay` said "must be a positive integer",
`kvcli calibrate` said typer's "Input should be greater than or equal to 1", and replay named
its tensor-parallel size `--tp`, an option it does not have. A trace config line's integer past
64 bits (orjson reads it as a float) was shown as 1.1805916207174113e+21."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from kvcli.app import app
from kvcore.errors import InputError
from kvcore.sizing.resolve import resolve_kv_cache_config

runner = CliRunner()
SIZED = ["--model", "llama-3.1-8b", "--gpu-memory-gib", "80"]


@pytest.fixture(scope="module")
def trace(tmp_path_factory):
    path = tmp_path_factory.mktemp("wording") / "t.jsonl"
    path.write_text("".join(json.dumps({"prompt_token_ids": [i, 2, 3, 4], "output_length": 2})
                            + "\n" for i in range(3)))
    return str(path)


def _commands(trace: str) -> dict[str, list[str]]:
    return {"config": ["config", "llama-3.1-8b", "--gpu-memory-gib", "80"],
            "config --layers": ["config", "--layers", "4", "--kv-heads", "8", "--head-dim",
                                "128", "--gpu-memory-gib", "80"],
            "replay": ["replay", trace, *SIZED],
            "cluster": ["cluster", trace, *SIZED, "--replicas", "2"]}


@pytest.mark.parametrize("option, value, flag", [
    ("--pipeline-parallel-size", "0", "--pipeline-parallel-size"),
    ("-pp", "-1", "--pipeline-parallel-size"),
    ("--tensor-parallel-size", "0", "--tensor-parallel-size"),
    ("-tp", "-2", "--tensor-parallel-size"),
    ("--max-num-seqs", "0", "--max-num-seqs"),
    ("--block-size", "0", "--block-size"),
])
@pytest.mark.parametrize("command", ["config", "config --layers", "replay", "cluster"])
def test_a_count_option_is_refused_in_one_wording(trace, command, option, value, flag):
    r = runner.invoke(app, [*_commands(trace)[command], option, value])
    assert r.exit_code == 2, r.output
    assert r.stderr.strip() == f"error: option {flag}: must be a positive integer, got {value}"


@pytest.mark.parametrize("args, line", [
    (["clock", "explain", "--model", "llama-3.1-8b", "--case", "decode=64*1@4097", "--tp", "0"],
     "option --tensor-parallel-size: must be a positive integer, got 0"),
    (["calibrate", "-o", "cal.json", "--model", "llama-3.1-8b", "--tp", "0"],
     "option --tensor-parallel-size: must be a positive integer, got 0"),
    (["calibrate", "-o", "cal.json", "--model", "llama-3.1-8b", "--block-size", "0"],
     "option --block-size: must be a positive integer, got 0"),
    (["calibrate", "-o", "cal.json", "--model", "llama-3.1-8b", "--block-size", "4097"],
     "option --block-size: must be at most 4,096, got 4097"),
    (["config", "--layers", "4", "--kv-heads", "0", "--head-dim", "128", "--num-blocks", "9"],
     "option --kv-heads: must be a positive integer, got 0"),
])
def test_the_other_commands_say_it_the_same(args, line):
    r = runner.invoke(app, args)
    assert r.exit_code == 2, r.output
    assert r.stderr.strip() == f"error: {line}"


@pytest.mark.parametrize("key", ["num_speculative_tokens", "max_num_seqs", "block_size"])
def test_a_config_line_integer_past_64_bits_is_shown_as_one(tmp_path, key):
    path = tmp_path / "t.jsonl"
    path.write_text(json.dumps({"config": {key: 2**70}}) + "\n"
                    + json.dumps({"prompt_token_ids": [1, 2, 3], "output_length": 2}) + "\n")
    r = runner.invoke(app, ["replay", str(path), *SIZED])
    assert r.exit_code == 2, r.output
    assert r.stderr.strip() == (
        f"error: {path}:1: field 'config.{key}': must be a 64-bit integer (below 2**63 in "
        "size), got 1.18059e+21 (an integer this large reads as a float)")


@pytest.mark.parametrize("value", [1, 0, -3])
def test_max_model_len_below_2_is_refused_by_the_api_in_the_commands_words(value):
    # (the API said 'must be positive, got 0' and sized max_model_len 1)
    r = runner.invoke(app, ["config", "llama-3.1-8b", "--gpu-memory-gib", "80",
                            "--max-model-len", str(value)])
    assert r.exit_code == 2, r.output
    assert r.stderr.strip() == f"error: option --max-model-len: must be >= 2, got {value}"
    with pytest.raises(InputError) as err:
        resolve_kv_cache_config("llama-3.1-8b", gpu_memory_gib=80, max_model_len=value)
    assert (err.value.field, err.value.message) == ("max_model_len", f"must be >= 2, got {value}")
