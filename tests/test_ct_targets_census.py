"""compressed-tensors targets that are class names or reach the embedding and the LM head,
against vLLM 0.33.0's classes (tests/data/weights_census/quant_rules/, the ``-ct-class-`` and
``-ct-embed-`` / ``-ct-head-`` cases; every rank is also checked by
tests/test_quant_rules_census.py): what vLLM matches (`kvcore.models.ct_groups`), what the
embedding holds (`kvcore.models.ct_quant.embedding_bytes`), and what is still warned of."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kvcore.errors import InputError
from kvcore.models.hf_config import read_hf_config
from kvcore.models.int_quant_rank import unquantised_method
from kvcore.models.weights import estimate_weights_bytes

HERE = Path(__file__).parent / "data" / "weights_census" / "quant_rules"
CASES = json.loads((HERE / "answers.json").read_text())["cases"]


def _case(name: str) -> dict:
    return CASES[f"weights_census/quant_rules/{name}.config.json"]["tp"]["1"][0]


def _config(name: str) -> dict:
    return json.loads((HERE / f"{name}.config.json").read_text())


def _bytes(name: str, cfg: dict | None = None) -> int:
    g = read_hf_config(cfg or _config(name), name=name)
    assert unquantised_method(g) is None
    return estimate_weights_bytes(g, 1)


@pytest.mark.parametrize(("name", "packed"), [
    # (a target inside the class name, any case: every linear class holds "linear";
    # "ParallelLinear" all but GateLinear; a decoder layer's class name matches no module)
    ("llama-ct-class-qkv", {"self_attn.qkv_proj"}),
    ("llama-ct-class-parallel", {"self_attn.qkv_proj", "self_attn.o_proj", "mlp.gate_up_proj",
                                 "mlp.down_proj"}),
    ("llama-ct-class-lower", {"self_attn.qkv_proj", "self_attn.o_proj", "mlp.gate_up_proj",
                              "mlp.down_proj"}),
    ("llama-ct-class-decoder", set()),
    ("qwen3-moe-ct-class-parallel", {"self_attn.qkv_proj", "self_attn.o_proj"})])
def test_a_class_name_target_takes_the_modules_whose_class_holds_it(
        name: str, packed: set[str]) -> None:
    names = _case(name)["param_numel_by_name"]
    assert {n.removeprefix("model.layers.*.").removesuffix(".weight_packed")
            for n in names if n.endswith("weight_packed")} == packed
    assert _bytes(name) == sum(_case(name)["param_bytes_by_dtype"].values())


def test_the_embedding_and_head_as_vllm_matches_them() -> None:
    # llama.py gives its embedding no path: "re:.*embed_tokens" and "model.embed_tokens" miss
    # it, the class name "Embedding" (VocabParallelEmbedding) reaches it; qwen3_moe.py's is
    # model.embed_tokens; "lm_head" names the head, "Linear" reaches neither
    packed = {n: {k.split(".weight_packed")[0] for k in _case(n)["param_numel_by_name"]
                  if k.endswith("weight_packed") and "layers" not in k}
              for n in ("llama-ct-embed-head", "llama-ct-embed-channel",
                        "llama-ct-class-embedding", "llama-ct-class-lm-head",
                        "llama-ct-head-ignored", "qwen3-moe-ct-embed-head")}
    assert packed == {"llama-ct-embed-head": {"lm_head"}, "llama-ct-embed-channel": set(),
                      "llama-ct-class-embedding": {"model.embed_tokens"},
                      "llama-ct-class-lm-head": {"lm_head"}, "llama-ct-head-ignored": set(),
                      "qwen3-moe-ct-embed-head": {"model.embed_tokens", "lm_head"}}
    # CompressedTensorsEmbeddingWNA16Int: int32 [1024, 1024 / 8], float16 scales [1024,
    # 1024 / 128], int64 shape [2], for 1024 x 1024 float16
    plain = _bytes("llama-ct-head-ignored")
    assert _bytes("llama-ct-class-embedding") == plain - 2 * 1024 * 1024 + (
        1024 * 128 * 4 + 1024 * 8 * 2 + 16) == 13_461_684


def test_an_lm_head_takes_its_targets_scheme() -> None:
    # (W8A8 int8 on the head: an int8 weight, float32 scales a row; it was 46,147,584 B with
    # the warning for vLLM's 24,205,348)
    assert _bytes("llama-ct-head-int8") == sum(_case("llama-ct-head-int8")[
        "param_bytes_by_dtype"].values()) == 24_205_348


def test_the_embedding_under_w8a8_int8_is_packed_weight_only() -> None:
    # (vLLM asks the embedding's weights alone to be int and group- or channel-wise: 8-bit
    # packs of 4, a float16 scale a row; the inputs' int8 scheme ignored)
    names = _case("llama-ct-class-embedding-int8")["param_numel_by_name"]
    assert names["model.embed_tokens.weight_packed"] == 1024 * 1024 // 4
    assert names["model.embed_tokens.weight_scale"] == 1024
    assert _bytes("llama-ct-class-embedding-int8") == sum(_case(
        "llama-ct-class-embedding-int8")["param_bytes_by_dtype"].values())


def test_fp8_weights_on_the_embedding_are_refused_with_vllms_words() -> None:
    # (compressed_tensors.py get_quant_method; not recorded: its words read from the source)
    cfg = _config("llama-ct-class-embedding-int8")
    group = cfg["quantization_config"]["config_groups"]["group_0"]
    group["weights"] |= {"type": "float"}
    group["input_activations"] |= {"type": "float"}
    group["format"] = "float-quantized"
    with pytest.raises(InputError) as e:
        read_hf_config(cfg, source="c.json")
    assert (e.value.path, e.value.field) == ("c.json", "quantization_config.config_groups")
    assert e.value.message == (
        "a config group reaches the embedding (no path) with fp8 channel-wise weights, and "
        "vLLM refuses to build it: \"compressed-tensors embeddings only support weight-only "
        "INT group/channel (WNA16) quantization\"")


def test_what_is_still_counted_unquantised_with_the_warning() -> None:
    # a tied LM head a target reaches (not recorded), class names on a model whose modules'
    # classes kvcli does not list (DeepSeek's MLA)
    cfg = _config("llama-ct-class-lm-head")
    g = read_hf_config({**cfg, "tie_word_embeddings": True})
    assert unquantised_method(g) == "compressed-tensors"
    mla = json.loads((HERE.parent / "int_quant" / "deepseek-v3-ct-w4a16.config.json")
                     .read_text())
    mla["quantization_config"]["config_groups"]["group_0"]["targets"] = ["ParallelLinear"]
    assert unquantised_method(read_hf_config(mla)) == "compressed-tensors"
