"""The length a model runs at when no --max-model-len is given, and the longest one it takes,
as vLLM 0.33 derives them from config.json (`_get_and_verify_max_len`,
`derive_max_model_len_and_key`): RoPE scaling, LongRoPE, legacy RoPE names, the length keys."""

from __future__ import annotations

import json
from pathlib import Path

from test_config_cli import ok, run

from kvcore.engine.replay import ReplayOptions, replay


def test_the_default_max_model_len_is_vllms_scaled_one(tmp_path) -> None:
    """vLLM runs at max_position_embeddings times a linear or dynamic RoPE factor when no
    max_model_len is given, and at a LongRoPE model's original_max_position_embeddings (it sized
    at 4,096 and 131,072: 4x too few and 32x too many tokens a request)."""
    cfg = {"model_type": "llama", "num_hidden_layers": 4, "num_attention_heads": 8,
           "num_key_value_heads": 2, "hidden_size": 512, "intermediate_size": 1024,
           "vocab_size": 1000, "max_position_embeddings": 4096, "torch_dtype": "float16"}
    p = tmp_path / "config.json"
    for rope, want in (({"type": "linear", "factor": 4}, 16384),
                       ({"rope_type": "dynamic", "factor": 2.0}, 8192),
                       ({"rope_type": "yarn", "factor": 4.0}, 4096),
                       (None, 4096)):
        p.write_text(json.dumps({**cfg, "rope_scaling": rope}))
        d = ok("--model-config", str(p), "--num-blocks", "100000")
        assert (d["max_model_len"], d["max_model_len_fits"]) == (want, want), rope
        assert d["max_concurrency"] == 100000 / (want // 16)
    # (a factor a frequency: head_dim 64 / 2, or vLLM cannot build it)
    longrope = {"type": "longrope", "short_factor": [1.0] * 32, "long_factor": [2.0] * 32}
    phi3 = {**cfg, "max_position_embeddings": 131072, "original_max_position_embeddings": 4096,
            "rope_scaling": longrope}
    p.write_text(json.dumps(phi3))
    d = ok("--model-config", str(p), "--num-blocks", "100000")
    # it runs at 4,096, but 131,072 is accepted and fits (max_model_len_fits said 4,096)
    assert (d["max_model_len"], d["max_model_len_fits"]) == (4096, 131072)
    # vLLM reads the legacy "su" as LongRoPE (it ran at 131,072)
    p.write_text(json.dumps({**phi3, "rope_scaling": {**longrope, "type": "su"}}))
    assert ok("--model-config", str(p), "--num-blocks", "100000")["max_model_len"] == 4096
    # a longer one is still accepted up to max_position_embeddings, without a note
    r = run("--model-config", str(p), "--num-blocks", "100000", "--max-model-len", "131072")
    assert r.exit_code == 0 and "VLLM_ALLOW_LONG_MAX_MODEL_LEN" not in r.output
    for factor in (0, -2, 1e300):
        p.write_text(json.dumps({**cfg, "rope_scaling": {"type": "linear", "factor": factor}}))
        r = run("--model-config", str(p), "--num-blocks", "100")
        assert r.exit_code == 2 and r.stderr.startswith(f"error: {p}: field 'rope_scaling': a "
                                                        "RoPE scaling factor of "), r.output


def test_the_length_keys_are_vllms(tmp_path) -> None:
    """The smallest length key wins; a config's model_max_length overrides them all (Command-R:
    8,192 positions, run at 131,072, not 8,192); telechat3-yarn is YaRN (its factor unused)."""
    from kvcore.models.context_limit import context_limit, default_len

    assert default_len({"model_max_length": 131072}, 8192) == 131072
    assert context_limit({"model_max_length": 131072}, 8192) == 131072
    assert default_len({"seq_length": 2048}, 32768) == 2048
    assert default_len({"seq_length": 65536, "n_positions": None}, 32768) == 32768
    assert default_len({"rope_scaling": {"type": "linear", "factor": 2}, "max_seq_len": 1000},
                       4096) == 2000
    assert default_len({"rope_scaling": {"rope_type": "telechat3-yarn", "factor": 4}},
                       4096) == 4096
    # a float length is vLLM's too (it ran at 4,096: the float was passed over)
    assert default_len({"max_seq_len": 1024.0}, 4096) == 1024
    assert default_len({"model_max_length": 8192.0}, 4096) == 8192
    cfg = {"model_type": "cohere", "num_hidden_layers": 4, "num_attention_heads": 8,
           "num_key_value_heads": 2, "hidden_size": 512, "intermediate_size": 1024,
           "vocab_size": 1000, "max_position_embeddings": 8192, "model_max_length": 131072,
           "torch_dtype": "float16"}
    p = tmp_path / "config.json"
    p.write_text(json.dumps(cfg))
    assert ok("--model-config", str(p), "--num-blocks", "100000")["max_model_len"] == 131072
    # a length no run can have is blamed on its key, not on RoPE (a factor of 1.0)
    for key, value in (("model_max_length", 10**30), ("model_max_length", float("inf")),
                       ("max_seq_len", 0.5)):
        p.write_text(json.dumps({**cfg, "model_max_length": None, key: value}))
        r = run("--model-config", str(p), "--num-blocks", "100000")
        assert r.exit_code == 2 and r.stderr == (f"error: {p}: field '{key}': {key} "
                                                 f"{value!r}: not a length vLLM can run "
                                                 "at\n"), r.stderr


def test_a_max_model_len_past_the_models_is_said():
    """vLLM refuses max_model_len 200,000 for Llama-3.1-8B (131,072) unless
    VLLM_ALLOW_LONG_MAX_MODEL_LEN=1; kvcli sized it without a word."""
    s = replay(str(Path(__file__).parents[1] / "traces" / "shared-prefix.jsonl"),
               ReplayOptions(model="llama-3.1-8b", max_model_len=200_000))
    assert ("max_model_len 200,000 is above llama-3.1-8b's 131,072 (max_position_embeddings, "
            "RoPE-scaled): vLLM 0.33 refuses it unless VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 "
            "(positions past it give NaNs under RoPE)") in s.warnings
    s = replay(str(Path(__file__).parents[1] / "traces" / "shared-prefix.jsonl"),
               ReplayOptions(model="llama-3.1-8b", max_model_len=131_072))
    assert not any("max_position_embeddings" in w for w in s.warnings)


def test_the_long_context_limit_is_vllms_rope_scaled_one():
    """vLLM multiplies max_position_embeddings by a linear or dynamic RoPE factor (not YaRN's,
    Llama 3's, ...), and takes a larger model_max_length: 4,096 x 4 accepts 16,384."""
    from kvcore.models.context_limit import context_limit

    assert context_limit({"rope_scaling": {"rope_type": "linear", "factor": 4.0}}, 4096) == 16384
    assert context_limit({"rope_scaling": {"type": "dynamic", "factor": 2}}, 4096) == 8192
    assert context_limit({"rope_scaling": {"rope_type": "yarn", "factor": 4.0}}, 4096) == 4096
    assert context_limit({"rope_scaling": {"rope_type": "llama3", "factor": 8.0}}, 8192) == 8192
    assert context_limit({"model_type": "gemma3_text",
                          "rope_scaling": {"rope_type": "linear", "factor": 8.0}}, 131072) == \
        131072
    assert context_limit({"rope_parameters": {"full_attention": {"rope_type": "linear",
                                                                 "factor": 2.0},
                                              "sliding_attention": {"rope_type": "default"}}},
                         1000) == 2000
    assert context_limit({"model_max_length": 9000}, 4096) == 9000

