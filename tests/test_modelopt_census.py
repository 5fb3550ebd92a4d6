"""ModelOpt checkpoints against vLLM 0.33.0's own model classes on the meta device, as an H100
builds them (tests/data/weights_census/modelopt/answers.json: Llama-3.1-8B, a tiny Llama,
Qwen3-MoE, Mixtral and DeepSeek-V3 (MLA) under FP8, FP8_PER_CHANNEL_PER_TOKEN, FP8_PB_WO, NVFP4
W4A16_NVFP4 and MXFP8, at TP 1, 2, 4 and 8, every rank): the bytes a rank holds
(`kvcore.models.modelopt_rank`), vLLM's refusals word for word (fbgemm_fp8's too), and what is
left with the warning (MIXED_PRECISION)."""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kvcli.app import app
from kvcore.errors import InputError
from kvcore.models.hf_config import read_hf_config
from kvcore.models.hf_quant_file import with_quant_file
from kvcore.models.int_quant_rank import unquantised_method
from kvcore.models.quantization import auto_kv_dtype
from kvcore.models.weights import estimate_weights_bytes
from kvcore.sizing.resolve import resolve_kv_cache_config
from tests.census_rows import built_ranks, vllms_words

DATA = Path(__file__).parent / "data"
HERE = DATA / "weights_census" / "modelopt"
CASES = json.loads((HERE / "answers.json").read_text())["cases"]
runner = CliRunner()
# (a float16 model under MXFP8: refused once the dtype is known, `--dtype` applied)
DTYPE_REFUSED = "weights_census/modelopt/llama-modelopt-mxfp8.config.json"


def _config(name: str) -> dict:
    """The case's config.json, with its NAME.hf_quant_config.json (if any) read from beside it
    as kvcli reads a checkpoint folder's (`kvcore.models.hf_quant_file`)."""
    cfg = json.loads((DATA / name).read_text())
    beside = DATA / name.replace(".config.json", ".hf_quant_config.json")
    if not beside.exists():
        return cfg
    with tempfile.TemporaryDirectory() as d:
        shutil.copy(beside, Path(d) / "hf_quant_config.json")
        return with_quant_file(cfg, str(Path(d) / "config.json"))


def _refused(case: dict) -> str | None:
    return case.get("refused") or case["tp"]["1"][0].get("refused")


BUILT = built_ranks({n: c for n, c in CASES.items() if "refused" not in c},
                    label=lambda n: n.split("/")[-1])
AT_EVERY_TP = [pytest.param(n, _refused(c), id=n.split("/")[-1])
               for n, c in CASES.items() if n != DTYPE_REFUSED and _refused(c)]
AT_SOME_TP = [pytest.param(n, int(tp), c["tp"][tp][0]["refused"], id=f"{n.split('/')[-1]}-tp{tp}")
              for n, c in CASES.items() if not _refused(c)
              for tp in c["tp"] if "refused" in c["tp"][tp][0]]


@pytest.mark.parametrize(("name", "tp", "rank"), BUILT)
def test_bytes_per_rank_equal_vllms(name: str, tp: int, rank: int) -> None:
    rec = CASES[name]["tp"][str(tp)][rank]
    g = read_hf_config(_config(name), name=name)
    assert estimate_weights_bytes(g, tp) == sum(rec["param_bytes_by_dtype"].values())
    assert unquantised_method(g) is None


@pytest.mark.parametrize(("name", "refused"), AT_EVERY_TP)
def test_a_config_vllm_refuses_is_refused_with_its_words(name: str, refused: str) -> None:
    with pytest.raises(InputError) as e:
        read_hf_config(_config(name), name=name)
    assert e.value.message.endswith(f'"{vllms_words(refused)}"')
    assert e.value.field.startswith("quantization_config.")


@pytest.mark.parametrize(("name", "tp", "refused"), AT_SOME_TP)
def test_a_tp_vllm_refuses_is_refused_naming_the_option(name: str, tp: int, refused: str) -> None:
    g = read_hf_config(_config(name), name=name)
    with pytest.raises(InputError) as e:
        resolve_kv_cache_config(geometry=g, tensor_parallel_size=tp, gpu_memory_gib=80,
                                max_model_len=4096)
    assert e.value.field == "tensor_parallel_size"
    assert f'"{vllms_words(refused)}"; got {tp}' in e.value.message


def test_the_census_draws_each_refusal() -> None:
    words = sorted({vllms_words(p.values[-1])[:30] for p in AT_EVERY_TP + AT_SOME_TP})
    assert words == ["Cannot find the config file fo", "FP8_PB_WO requires in divisibl",
                     "MIXED_PRECISION quant_algo req", "MXFP8 MoE requires intermediat",
                     "MXFP8 requires input size divi", "Mixed quant_algo within fused ",
                     "ModelOpt currently only suppor",
                     "The quantization method fbgemm",
                     "Unknown ModelOpt quant algo: M",
                     "Unsupported model when in feat"]


def test_the_methods_vllm_resolves() -> None:
    got = {n.split("/")[-1].removesuffix(".config.json"): c["quantization"]
           for n, c in CASES.items() if "quantization" in c and not _refused(c)}
    for name, method in got.items():
        assert read_hf_config(_config(f"weights_census/modelopt/{name}.config.json")
                              ).quantization == method, name
    assert got["llama-modelopt-nvfp4-legacy"] == "modelopt_fp4"
    assert got["llama-3-1-8b-modelopt-fp8-legacy"] == "modelopt"


def test_what_an_nvfp4_linear_and_its_experts_hold() -> None:
    # uint8 [n, k / 2], fp8 [n, k / 16], float32 global and input scales a shard; W4A16's
    # input scale in the model dtype; the experts' scales a projection and an expert
    rec = CASES["weights_census/modelopt/qwen3-moe-modelopt-nvfp4.config.json"]["tp"]["1"][0]
    names = rec["param_numel_by_name"]
    assert names["model.layers.*.self_attn.qkv_proj.weight"] == 2 * 2048 * 1024 // 2
    assert names["model.layers.*.self_attn.qkv_proj.weight_scale"] == 2 * 2048 * 1024 // 16
    assert names["model.layers.*.mlp.experts.routed_experts.w13_weight_scale_2"] == 2 * 8 * 2
    w4a16 = CASES["weights_census/modelopt/llama-modelopt-w4a16-nvfp4.config.json"]["tp"]["1"][0]
    nvfp4 = CASES["weights_census/modelopt/llama-modelopt-nvfp4.config.json"]["tp"]["1"][0]
    assert w4a16["param_bytes_by_dtype"]["float16"] - nvfp4["param_bytes_by_dtype"]["float16"] \
        == 2 * 7 * 2


def test_a_tied_head_keeps_the_scales_its_quant_method_made() -> None:
    # (tie_weights swaps the weight for the embedding's; NVFP4's fp8 group scales stay)
    rec = CASES["weights_census/modelopt/llama-modelopt-nvfp4-tied.config.json"]["tp"]["1"][0]
    names = rec["param_numel_by_name"]
    assert "lm_head.weight" not in names and names["lm_head.weight_scale"] == 1024 * 1024 // 16
    cfg = _config("weights_census/modelopt/llama-modelopt-nvfp4-tied.config.json")
    untied = estimate_weights_bytes(read_hf_config({**cfg, "tie_word_embeddings": False}))
    head = 1024 * 1024 // 2 + 1024 * 1024 // 16 + 2 * 4
    assert estimate_weights_bytes(read_hf_config(cfg)) == untied - head + 65_536 + 2 * 4


def test_the_exclude_list_as_vllm_matches_it() -> None:
    # "model.layers.0.self_attn*" (split into the path and path.*) leaves layer 0's qkv_proj
    # and o_proj unquantised, its attention scales kept; "*layers.1.mlp.down_proj" a glob
    rec = CASES["weights_census/modelopt/llama-modelopt-fp8-exclude.config.json"]["tp"]["1"][0]
    names = rec["param_numel_by_name"]
    assert names["model.layers.*.self_attn.qkv_proj.weight_scale"] == 3
    assert names["model.layers.*.mlp.down_proj.weight_scale"] == 1
    assert names["model.layers.*.self_attn.attn.k_scale"] == 2
    cfg = _config("weights_census/modelopt/llama-modelopt-fp8.config.json")
    cfg["quantization_config"]["ignore"] = ["model.layers.0.self_attn.q_proj"]
    with pytest.raises(InputError) as e:
        read_hf_config(cfg, source="c.json")
    assert (e.value.field, e.value.path) == ("quantization_config.exclude_modules", "c.json")
    assert e.value.message.startswith("names some but not all shards of model.layers.0."
                                      "self_attn.qkv_proj, and vLLM refuses to build it: ")
    assert e.value.message.endswith('"Detected some but not all shards of model.layers.0.'
                                    'self_attn.qkv_proj are quantized. All shards of fused '
                                    'layers to have the same precision."')


def test_a_dtype_vllm_refuses_is_refused_naming_the_key_or_the_option() -> None:
    refused = vllms_words(_refused(CASES[DTYPE_REFUSED]) or "")
    assert refused == ("torch.float16 is not supported for quantization method modelopt_mxfp8. "
                       "Supported dtypes: [torch.bfloat16]")
    g = read_hf_config(_config(DTYPE_REFUSED), source="c.json")
    with pytest.raises(InputError) as e:
        resolve_kv_cache_config(geometry=g, gpu_memory_gib=80, max_model_len=4096)
    assert (e.value.path, e.value.field) == ("c.json", "torch_dtype")
    assert e.value.message == f'is float16, and vLLM refuses to build it: "{refused}"'
    with pytest.raises(InputError) as e:
        resolve_kv_cache_config(geometry=g, gpu_memory_gib=80, max_model_len=4096,
                                dtype="half")
    assert e.value.field == "dtype" and e.value.message.endswith(f'"{refused}"; got float16')
    # (--dtype bfloat16 is what vLLM serves it in)
    resolve_kv_cache_config(geometry=g, gpu_memory_gib=80, max_model_len=4096, dtype="bfloat16")


def test_mixed_precision_block_fp8_is_counted_unquantised_with_the_warning() -> None:
    # (block-FP8 experts take Fp8MoEMethod's block config: not sized)
    cfg = _config("weights_census/modelopt/llama-modelopt-fp8.config.json")
    cfg["quantization_config"] |= {"quant_algo": "MIXED_PRECISION", "quantized_layers": {
        "model.layers.0.mlp.down_proj": {"quant_algo": "FP8_PB_WO"}}}
    g = read_hf_config(cfg)
    assert (g.quantization, unquantised_method(g)) == ("modelopt_mixed", "modelopt_mixed")


def test_what_mixed_precision_gives_each_module() -> None:
    # FP8 attention, NVFP4 experts, the router and head unquantised; the attention's scales
    # with a KV cache algorithm only, never MLA's
    rec = CASES["weights_census/modelopt/qwen3-moe-modelopt-mixed.config.json"]["tp"]["1"][0]
    names = rec["param_numel_by_name"]
    assert names["model.layers.*.self_attn.qkv_proj.input_scale"] == 2 * 3
    assert names["model.layers.*.mlp.experts.routed_experts.w13_weight_scale_2"] == 2 * 8 * 2
    # (the router and head in bfloat16, as where the FP8 checkpoint excludes them)
    assert rec["param_bytes_by_dtype"]["bfloat16"] == CASES[
        "weights_census/modelopt/qwen3-moe-modelopt-fp8.config.json"]["tp"]["1"][0][
        "param_bytes_by_dtype"]["bfloat16"]
    mla = CASES["weights_census/modelopt/deepseek-v3-modelopt-mixed.config.json"]["tp"]["1"][0]
    assert not any("k_scale" in n for n in mla["param_numel_by_name"])
    # (hf_quant_config.json's table: layer 0's o_proj NVFP4, layer 1's down_proj a scale a
    # row; the head listed FP8 but excluded first: unquantised)
    file = CASES["weights_census/modelopt/llama-modelopt-mixed-file.config.json"]["tp"]["1"][0]
    names = file["param_numel_by_name"]
    assert names["model.layers.*.self_attn.o_proj.weight_scale_2"] == 1
    assert names["model.layers.*.mlp.down_proj.weight_scale"] == 1024
    assert "lm_head.input_scale" not in names and names["lm_head.weight"] == 1024 * 1024


def test_hf_quant_config_json_beside_config_json_is_read(tmp_path: Path) -> None:
    # (ModelOpt <= 0.29's layout: vLLM takes the file as a quantization_config-less
    # config.json's; the bytes are the legacy case's, which vLLM built from the same object)
    cfg = _config("weights_census/modelopt/llama-modelopt-nvfp4-legacy.config.json")
    (tmp_path / "hf_quant_config.json").write_text(json.dumps(cfg.pop("quantization_config")))
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    res = runner.invoke(app, ["config", "--model-config", str(tmp_path / "config.json"),
                              "--gpu-memory-gib", "80", "--tp", "2", "--json"])
    assert res.exit_code == 0, res.output
    rec = CASES["weights_census/modelopt/llama-modelopt-nvfp4-legacy.config.json"]["tp"]["2"][0]
    assert round(json.loads(res.stdout)["memory"]["weights_gib"] * 2**30) == \
        sum(rec["param_bytes_by_dtype"].values()) == 8_005_760
    assert res.stderr == ""


@pytest.mark.parametrize("name", [n for n, c in CASES.items()
                                  if "kv_cache_dtype_auto" in c and not _refused(c)])
def test_kv_cache_dtype_auto_is_what_vllm_resolves_it_to(name: str) -> None:
    want = CASES[name]["kv_cache_dtype_auto"]
    g = read_hf_config(_config(name), name="m")
    if want == "nvfp4":
        with pytest.raises(InputError) as e:
            auto_kv_dtype(g, "auto")
        assert e.value.field == "kv_cache_dtype" and "nvfp4" in e.value.message
    else:
        assert auto_kv_dtype(g, "auto") == want
    assert auto_kv_dtype(g, "bfloat16") == "bfloat16"


def test_the_llama_8b_fp8_example() -> None:
    # 14.96 GiB (16,060,522,496 B, bfloat16) and 30,008 blocks of a bfloat16 KV cache before:
    # vLLM holds 9,081,202,688 B and makes --kv-cache-dtype auto fp8_e4m3 (its kv_cache_scheme)
    g = read_hf_config(_config("weights_census/modelopt/llama-3-1-8b-modelopt-fp8.config.json"))
    assert estimate_weights_bytes(g, 1) == 9_081_202_688
    for kv, blocks in (("auto", 66_673), ("bfloat16", 33_336)):
        res = runner.invoke(app, ["config", "--model-config",
                                  str(HERE / "llama-3-1-8b-modelopt-fp8.config.json"),
                                  "--gpu-memory-gib", "80", "--max-model-len", "8192",
                                  "--kv-cache-dtype", kv, "--json"])
        assert res.exit_code == 0, res.output
        doc = json.loads(res.stdout)
        assert (doc["num_blocks"], doc["kv_cache_dtype"]) == (blocks, kv.replace(
            "auto", "fp8_e4m3"))
        assert doc["memory"]["weights_unquantised_method"] is None and res.stderr == ""


def test_the_cli_refuses_a_tp_in_one_line() -> None:
    res = runner.invoke(app, ["config", "--model-config",
                              str(HERE / "llama-modelopt-nvfp4-narrow.config.json"), "--tp", "2",
                              "--gpu-memory-gib", "80"])
    assert res.exit_code == 2, res.output
    assert res.stdout == "" and "Traceback" not in res.stderr
    assert res.stderr == (
        "error: option --tensor-parallel-size: llama's ModelOpt NVFP4 input shard does not fit "
        "at it (layer 0's down_proj), and vLLM refuses to build it: \"Unsupported model when in "
        "features size is not multiple of 16\"; got 2\n")


def test_gemma_3s_tower_stays_unquantised_and_the_language_model_is_sized() -> None:
    # (vLLM's ModelOpt skips vision_tower / vision_model prefixes; the language model's list
    # is matched at language_model.model.layers.N; Qwen3.5's tower at visual. quantised and
    # sized: weights_census/quant_towers/qwen3-5-vl-modelopt-fp8, equal to vLLM's)
    name = "weights_census/modelopt/gemma-3-mm-modelopt-fp8.config.json"
    g = read_hf_config(_config(name), name=name)
    assert unquantised_method(g) is None
    assert [estimate_weights_bytes(g, tp) for tp in (1, 8)] == [22_928_512, 4_833_408]
    assert CASES[name]["tp"]["1"][0]["param_bytes_by_dtype"]["bfloat16"] == 10_345_488
    qwen = json.loads((DATA / "weights_census" / "fp8" / "qwen3-5-vl-fp8.config.json").read_text())
    qwen["quantization_config"] = {"quant_method": "modelopt", "quant_algo": "FP8"}
    assert unquantised_method(read_hf_config(qwen)) is None
