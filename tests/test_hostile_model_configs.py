"""A hostile campaign over `--model-config` files: real configs (tests/data, the presets)
mutated (keys removed, wrong types, zeros, negatives, odd shapes), each run through `kvcli
config`, `replay` and `clock explain`. Each finding minimised to one config: a refusal is one
line naming the file and the key, exit code 2, never a traceback nor a nonsense size."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_hostile_options import refused

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data"


def config_file(tmp_path: Path, base: str, **changes) -> str:
    """``base`` (a config.json under tests/data) with ``changes`` set (None: the key removed)."""
    cfg = json.loads((DATA / base).read_text())
    for key, value in changes.items():
        if value is None:
            cfg.pop(key, None)
        else:
            cfg[key] = value
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    return str(path)


def config_refused(path: str, key: str, message: str) -> None:
    """`kvcli config` refuses ``path`` in one line naming it and ``key``."""
    refused(["config", "--model-config", path, "--gpu-memory-gib", "80"],
            f"error: {path}: field '{key}': {message}")


# -- a layer type that is a list ([["x"], ...]) was looked up in the table of names:
# TypeError: unhashable type: 'list', a traceback from config, replay and clock explain -------

@pytest.mark.parametrize("base, key, message", [
    ("perf_cases/models/llama-3.1-8b.config.json", "layer_types", "unknown layer type ['x']"),
    ("mamba/granite-4.0-h-tiny-style.config.json", "layer_types", "unknown layer type ['x']"),
    ("mamba/qwen3-next-80b-a3b.config.json", "layer_types",
     "'layer_types' must list 48 of linear_attention, full_attention"),
    ("mamba/nemotron-nano-9b-v2.config.json", "layer_types",
     "expected a list of attention, full_attention, linear_attention, mamba, mlp, moe"),
])
def test_a_layer_type_that_is_a_list_is_refused(tmp_path, base, key, message):
    n = json.loads((DATA / base).read_text()).get("num_hidden_layers") or 56
    types = ["full_attention"] * n
    types[1] = ["x"]
    config_refused(config_file(tmp_path, base, **{key: types}), key, message)


# -- quantization_config: a string, a number or a list was read as unquantised without a word
# (vLLM's .get fails on it); a quant_method that is a list raised TypeError: unhashable type in
# clock explain; an unknown method was sized unquantised where vLLM refuses it --------------

LLAMA = "perf_cases/models/llama-3.1-8b.config.json"


@pytest.mark.parametrize("quant, key, message", [
    ("fp8", "quantization_config", "must be an object, got 'fp8'"),
    ([1], "quantization_config", "must be an object, got [1]"),
    ({"quant_method": ["fp8"]}, "quantization_config.quant_method",
     "must be a string, got ['fp8']"),
    ({"quant_method": 8}, "quantization_config.quant_method", "must be a string, got 8"),
    ({"quant_method": "zzz"}, "quantization_config.quant_method",
     ("unknown quantization method 'zzz'; see vLLM's QUANTIZATION_METHODS "
     "(model_executor/layers/quantization) for the 30 vLLM 0.33 methods")),
])
def test_an_odd_quantization_config_is_refused(tmp_path, quant, key, message):
    path = config_file(tmp_path, LLAMA, quantization_config=quant)
    config_refused(path, key, message)
    refused(["clock", "explain", "--model-config", path, "--gpu", "h100-sxm", "--case",
             "prefill=512"], f"error: {path}: field '{key}': {message}")


def test_quant_method_is_read_lower_cased_as_vllm_reads_it(tmp_path):
    from kvcore.models.hf_config import load_hf_config, read_hf_config

    cfg = load_hf_config(config_file(tmp_path, LLAMA))
    read = {q: read_hf_config({**cfg, "quantization_config": {"quant_method": q}}).quantization
            for q in ("FP8", "Compressed_Tensors", "")}
    assert read == {"FP8": "fp8", "Compressed_Tensors": "compressed-tensors", "": None}
    assert read_hf_config({**cfg, "quantization_config": {"bits": 4}}).quantization is None


# -- an integer of 5,000 digits: Python's json and tomllib raise a bare ValueError (past
# int's 4,300-digit limit), a traceback from a config.json, a calibration file and a sweep
# spec, JSON or TOML ---------------------------------------------------------------------------

BIG = "9" * 5000
TRACE = str(ROOT / "traces" / "shared-prefix.jsonl")


@pytest.mark.parametrize("name, text, args", [
    ("config.json", '{"model_type": "llama",\n "num_hidden_layers": BIG}',
     ["config", "--model-config", "{f}", "--gpu-memory-gib", "80"]),
    ("cal.json", '{\n"schema": BIG}',
     ["clock", "explain", "--model", "llama-3.1-8b", "--calibration", "{f}", "--case",
      "prefill=512"]),
    ("spec.json", '{"traces": ["TRACE"],\n "grid": {"num_blocks": [BIG]}}',
     ["sweep", "{f}"]),
    ("spec.toml", 'traces = ["TRACE"]\n[grid]\nnum_blocks = [BIG]\n',
     ["sweep", "{f}"]),
])
def test_a_number_of_5000_digits_is_refused_at_its_line(tmp_path, name, text, args):
    path = tmp_path / name
    path.write_text(text.replace("BIG", BIG).replace("TRACE", TRACE))
    line = 3 if name == "spec.toml" else 2
    refused([a.replace("{f}", str(path)) for a in args],
            f"error: {path}:{line}: a number of more than 4,300 digits: no value kvcli reads "
            "is that long")
    assert sorted(p.name for p in tmp_path.iterdir()) == [name]       # (no results file)


# -- Mamba sizes of 0 or less were read: a mamba_d_conv of 0 sized a conv state of -1 rows
# ("state -1x1024 x 2 B + ..."), a page of negative bytes padded to a positive one; Jamba's
# mamba_dt_rank went through int(): 'x', nan, [8] were tracebacks, -8 a size; an attention
# offset of 8 (or '4') made every Jamba layer Mamba, where transformers refuses it ---------

JAMBA = "perf_cases/models/jamba-v0.1.config.json"
NEMOTRON = "mamba/nemotron-nano-9b-v2.config.json"


@pytest.mark.parametrize("base, key, value, message", [
    (JAMBA, "mamba_d_conv", 0, "expected an integer >= 1, got 0"),
    (JAMBA, "mamba_d_state", -1, "expected a non-negative integer below 2^63, got -1"),
    (JAMBA, "mamba_expand", 0, "expected an integer >= 1, got 0"),
    (JAMBA, "mamba_dt_rank", "x", "expected a non-negative integer below 2^63, got 'x'"),
    (JAMBA, "mamba_dt_rank", [8], "expected a non-negative integer below 2^63, got [8]"),
    (JAMBA, "mamba_dt_rank", -8, "expected a non-negative integer below 2^63, got -8"),
    (JAMBA, "attn_layer_offset", 8, "expected an integer below attn_layer_period (8), got 8"),
    (JAMBA, "attn_layer_offset", "4",
     "expected an integer below attn_layer_period (8), got '4'"),
    (JAMBA, "expert_layer_offset", 2,
     "expected an integer below expert_layer_period (2), got 2"),
    (NEMOTRON, "conv_kernel", 0, "expected an integer >= 1, got 0"),
    (NEMOTRON, "n_groups", 0, "expected an integer >= 1, got 0"),
    ("mamba/granite-4.0-h-tiny-style.config.json", "mamba_n_groups", 0,
     "expected an integer >= 1, got 0"),
    ("mamba/falcon-h1-7b.config.json", "mamba_d_head", 0, "expected an integer >= 1, got 0"),
])
def test_a_mamba_size_below_one_is_refused(tmp_path, base, key, value, message):
    config_refused(config_file(tmp_path, base, **{key: value}), key, message)


def test_falcon_h1_takes_mamba_expand_times_hidden_size_or_refuses_it(tmp_path):
    from kvcore.models.hf_config import load_hf_config, read_hf_config

    path = config_file(tmp_path, "mamba/falcon-h1-7b.config.json", mamba_d_ssm=None)
    cfg = {**load_hf_config(path), "mamba_d_ssm": None}
    assert read_hf_config({**cfg, "mamba_expand": 1.5}).mamba.d_inner == 1.5 * cfg["hidden_size"]
    for bad in ("2", 0, float("nan")):
        with pytest.raises(Exception, match="mamba_expand") as err:
            read_hf_config({**cfg, "mamba_expand": bad}, source=path)
        assert err.type.__name__ == "InputError"
    jamba = load_hf_config(config_file(tmp_path, JAMBA))
    assert read_hf_config({**jamba, "mamba_dt_rank": "auto"}).mamba.dt_rank == 256
    assert read_hf_config({**jamba, "attn_layer_offset": -1}).layer_kinds == ("mamba",) * 32


# -- the rest of the campaign's findings: a bad rope_parameters factor was blamed on
# rope_scaling; a model_type that is not a string was read as an unknown type ---------------

def test_a_bad_rope_factor_names_the_key_given(tmp_path):
    llama = "perf_cases/models/llama-3.1-8b.config.json"
    bad = {"rope_type": "linear", "factor": 1e308}
    for key in ("rope_parameters", "rope_scaling"):
        path = config_file(tmp_path, llama, **{"rope_scaling": None, key: bad})
        config_refused(path, key, "a RoPE scaling factor of 1e+308 makes the model's length "
                       "inf: it must be a positive number")


@pytest.mark.parametrize("value", [8, ["llama"], {"a": 1}])
def test_a_model_type_that_is_not_a_string_is_refused(tmp_path, value):
    path = config_file(tmp_path, "perf_cases/models/llama-3.1-8b.config.json", model_type=value)
    config_refused(path, "model_type", f"must be a string, got {value!r}")
