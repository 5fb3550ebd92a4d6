"""Record what vLLM 0.33 builds for every kvcli preset and every typed-in config.json under
tests/data (mla/, sliding/, mamba/; Qwen3.5's multimodal ones under mtp_draft/): per
tensor-parallel size (1, 2, 4, 8) and per rank, the parameters each worker holds (count, bytes
by dtype, quantised tensors as created) and its buffers (-> answers.json).

A development tool, never run by the tests: it imports the real vLLM from the oracle's
environment and needs no weights (every module is built on the meta device, by vLLM's own
`initialize_model`). From the project root:

    ulimit -v 16000000; HF_HUB_OFFLINE=1 VLLM_LOGGING_LEVEL=ERROR \\
        PYTHONPATH=$HOME/.cache/vllm-oracle/src:tests/data/mtp_draft/oracle_stubs_vision \\
        timeout 3000 ~/.cache/vllm-oracle/venv/bin/python \\
        tests/data/weights_census/record_census.py [CASE ...]

It imports ../mtp_draft/record_qwen3_next_mtp.py (and through it record_mtp_models.py and
../eagle_draft/record_draft_models.py) for their substitutions (an attention backend named
for the CPU's platform, the MoE kernel choice, the GDN layers' device), adds its own (the
tensor-parallel group's size and rank, the fp8 GEMM kernel's choice) and lists every one in
answers.json; README.md beside it says why each leaves the tensors vLLM makes unchanged.

`--mm` records the multimodal serving options' cases (MM_CASES: a case named
``<base> <flag> <value>``, its options passed to vLLM's ModelConfig as `vllm serve`'s flags
pass them, and the multimodal config vLLM resolved from them kept beside the builds); a
CASE named so outside MM_CASES (``'weights_census/x.config.json --language-model-only'``,
``'... --limit-mm-per-prompt {"image":0}'``) is built the same way (fp8/README.md).
"""
# ruff: noqa
import importlib.util, json, re, sys, tempfile, time, traceback
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
_spec = importlib.util.spec_from_file_location(
    "record_qwen3_next_mtp", HERE.parent / "mtp_draft" / "record_qwen3_next_mtp.py")
rqn = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(rqn)                   # vLLM imported, every substitution applied
rmm, rdm = rqn.rmm, rqn.rdm

import torch
import vllm
from vllm.config import (CacheConfig, DeviceConfig, LoadConfig, ModelConfig, ParallelConfig,
                         VllmConfig, set_current_vllm_config)
from vllm.distributed import parallel_state
from vllm.model_executor.layers.quantization import fp8
from vllm.model_executor.model_loader.utils import initialize_model
from vllm.platforms import current_platform
from vllm.utils.torch_utils import set_default_torch_dtype
from vllm.v1.attention.backends.registry import AttentionBackendEnum

sys.path.insert(0, str(ROOT))
from kvcore.models.presets import PRESETS

SUBSTITUTIONS = list(rqn.SUBSTITUTIONS) + [
    s for s in rmm.SUBSTITUTIONS if "MLA" in s or "compute_units" in s]
# The fp8 linear method picks its GEMM kernel per platform after create_weights has made the
# layer's tensors (fp8.py:313-352); the CPU's platform has none without vllm._C. A kernel holds
# no tensor of the layer's until process_weights_after_loading, which is not run here.
fp8.init_fp8_linear_kernel = lambda **kw: None
SUBSTITUTIONS.append("fp8 linear: no GEMM kernel chosen (after create_weights; holds no tensor)")
SUBSTITUTIONS.append("tensor-parallel group: world_size and rank_in_group set on the one "
                     "process's group (parallel_state._TP) before each build; "
                     "ParallelConfig.tensor_parallel_size 1")
# gpt-oss's attention sinks: FLASH_ATTN's impl asserts that its kernel takes sinks (FA3 on
# Hopper does), through a name its module imports only with the GPU kernels; the sinks
# parameter is the model's own (gpt_oss.py), whatever the backend.
from vllm.v1.attention.backends import flash_attn as _fa
_fa.flash_attn_supports_sinks = lambda: True
SUBSTITUTIONS.append("FLASH_ATTN: flash_attn_supports_sinks() true (FA3 on Hopper; gpt-oss)")
SUBSTITUTIONS.append("sparse MLA (index_topk: DeepSeek-V3.2, GLM-5): attention backend "
                     "FLASH_ATTN_MLA_SPARSE (an H100's with a bf16 cache) and the platform's "
                     "device_type meta (its top-k indices buffer is made there)")
# gpt-oss's MXFP4 experts: the backend is chosen per platform (fused_moe/oracle/mxfp4.py:
# 651-760) and decides the sizes create_weights pads to (mxfp4_round_up_hidden_size_and_
# intermediate_size, :837-916). On an H100 (SM90) FlashInfer's TRT-LLM kernels (SM100) and
# AITER (ROCm) do not apply, and OAI's Triton kernels come next: TRITON, whose padding is the
# intermediate size per rank rounded up to 64.
from vllm.model_executor.layers.fused_moe.oracle.mxfp4 import Mxfp4MoeBackend
from vllm.model_executor.layers.fused_moe.experts.gpt_oss_triton_kernels_moe import (
    OAITritonMxfp4ExpertsMonolithic)
from vllm.model_executor.layers.quantization import mxfp4 as _mxfp4
_mxfp4.select_mxfp4_moe_backend = lambda *a, **k: (Mxfp4MoeBackend.TRITON,
                                                   OAITritonMxfp4ExpertsMonolithic)
SUBSTITUTIONS.append("MXFP4 MoE backend: TRITON (an H100's first that applies; its padding: "
                     "the intermediate size per rank rounded up to 64)")
# Qwen2-VL's vision MLP's QuickGELU looks up vLLM's compiled kernel (torch.ops._C.gelu_quick)
# when it is constructed, on the CPU's platform too; vllm._C is absent here. The op is a
# function, no tensor: the module holds no parameter or buffer either way.
from vllm.model_executor.layers import activation as _act
_act.QuickGELU.__init__ = lambda self: _act.CustomOp.__init__(self)
SUBSTITUTIONS.append("QuickGELU: no compiled kernel looked up when constructed (holds no "
                     "tensor; Qwen2-VL's vision MLP)")
TPS = (1, 2, 4, 8)
# Qwen2-VL's, Qwen2.5-VL's and Qwen3-VL's published configs (../qwen_vl/): the options on one
# of each tower
QWEN_VL_MM = ("qwen2-vl-7b-instruct", "qwen2.5-vl-7b-instruct", "qwen3-vl-8b-instruct")
QWEN3_5_VL = ("11-tiny-qwen3-5-vl", "12-tiny-qwen3-5-moe-vl", "15-qwen3-5-defaults",
              "16-qwen3-5-moe-defaults")


# The multimodal serving options that change what a rank builds (ModelConfig's InitVars, as
# `vllm serve --limit-mm-per-prompt ... --language-model-only --mm-encoder-tp-mode ...` set
# them): for Gemma 3 and the four Qwen3.5 multimodal configs; a limit for a modality the model
# lacks (Gemma 3's video) and the options on a text-only model (vLLM builds no multimodal
# config for it) too
MM_BASES = ("gemma-3-27b", *(f"mtp_draft/{c}/target/config.json" for c in QWEN3_5_VL),
            *(f"qwen_vl/{c}.config.json" for c in QWEN_VL_MM))
MM_OPTIONS = (("--limit-mm-per-prompt", {"image": 0}),
              ("--limit-mm-per-prompt", {"image": 0, "video": 0}),
              ("--language-model-only", True),
              ("--mm-encoder-tp-mode", "data"))
MM_CASES = {f"{base} {flag} {json.dumps(v, separators=(',', ':')) if isinstance(v, dict) else v}"
            .replace(" True", ""): (base, flag, v)
            for base in MM_BASES for flag, v in MM_OPTIONS}
MM_CASES.update({f"gemma-3-27b --limit-mm-per-prompt {{\"video\":0}}": (
    "gemma-3-27b", "--limit-mm-per-prompt", {"video": 0}),
    f"llama-3.1-8b --limit-mm-per-prompt {{\"image\":0}}": (
    "llama-3.1-8b", "--limit-mm-per-prompt", {"image": 0}),
    "llama-3.1-8b --language-model-only": ("llama-3.1-8b", "--language-model-only", True)})


def mm_kwargs(flag, value):
    return {flag[2:].replace("-", "_"): value}


def parse_mm(name):
    """A case named ``<base> <flag> [<value>]`` outside MM_CASES (the fp8 census's: its
    configs with the options), or a plain base."""
    base, _, rest = name.partition(" --")
    if not rest:
        return name, None, None
    flag, _, value = ("--" + rest).partition(" ")
    return base, flag, json.loads(value) if value.startswith("{") else (value or True)


def cases():
    out = {name: cfg for name, (_, cfg) in PRESETS.items()}
    # (weights_census/: configs written for the census itself, e.g. Qwen MoE layers made
    # dense by mlp_only_layers and decoder_sparse_step)
    for sub in ("mla", "sliding", "mamba", "weights_census", "qwen_vl", "sparse_mla"):
        for p in sorted((ROOT / "tests" / "data" / sub).glob("*.config.json")):
            out[f"{sub}/{p.name}"] = json.loads(p.read_text())
    # Qwen3.5's multimodal configs (record_qwen3_5.py built them at TP 1 only): its vision
    # tower's shards at TP 2, 4 and 8
    for case in QWEN3_5_VL:
        p = ROOT / "tests" / "data" / "mtp_draft" / case / "target" / "config.json"
        out[f"mtp_draft/{case}/target/config.json"] = json.loads(p.read_text())
    return out


def set_tp(size, rank):
    tp = parallel_state._TP
    tp.world_size, tp.rank_in_group = size, rank


def by_dtype(ts):
    out = {}
    for t in ts:
        k = rdm.dt(t.dtype)
        out[k] = out.get(k, 0) + t.numel() * t.element_size()
    return out


def pattern_numel(model):
    """Parameters by name with layer indices folded (model.layers.*.x), for reading causes."""
    out = {}
    for n, p in model.named_parameters():
        k = re.sub(r"\.layers\.\d+\.", ".layers.*.", n)
        out[k] = out.get(k, 0) + p.numel()
    return out


def build(d, mc, tp, rank, detail):
    set_tp(tp, rank)
    vc = VllmConfig(model_config=mc, parallel_config=ParallelConfig(),
                    cache_config=CacheConfig(), device_config=DeviceConfig(device="cpu"),
                    load_config=LoadConfig(load_format="dummy", device="meta"))
    with set_current_vllm_config(vc), set_default_torch_dtype(mc.dtype), torch.device("meta"):
        model = initialize_model(vc)
    params = list(model.parameters())
    bufs = {}
    for name, b in model.named_buffers():
        owner, _, leaf = name.rpartition(".")
        mod = model.get_submodule(owner) if owner else model
        key = "persistent" if leaf not in mod._non_persistent_buffers_set else "non_persistent"
        bufs.setdefault(key, []).append(b)
    rec = {"param_numel": sum(p.numel() for p in params),
           "param_bytes_by_dtype": by_dtype(params),
           "buffer_bytes_by_dtype": {k: by_dtype(v) for k, v in sorted(bufs.items())}}
    if detail:
        rec["class"] = type(model).__name__
        rec["param_numel_by_name"] = pattern_numel(model)
    return rec


def record(name, cfg, tps, mm=None):
    # (a wrapper's MLA text model, Kimi-VL's: its text_config's kv_lora_rank; DeepSeek-VL2's
    # language_config's)
    mla = cfg.get("kv_lora_rank") or (cfg.get("text_config") or cfg.get("language_config")
                                      or {}).get("kv_lora_rank")
    # (sparse MLA, a config with index_topk: the backend an H100 picks, as the KV-spec census)
    backend = (AttentionBackendEnum.FLASH_ATTN_MLA_SPARSE if mla and "index_topk" in cfg
               else AttentionBackendEnum.TRITON_MLA if mla else AttentionBackendEnum.FLASH_ATTN)
    current_platform.get_attn_backend_cls = lambda *a, **k: backend.get_path()
    # (DeepSeek-V3.2's model makes its top-k indices buffer on the platform's device_type,
    # empty on the CPU's unspecified platform: the meta device, as every other tensor here)
    current_platform.device_type = "meta" if "index_topk" in cfg else ""
    tmp = Path(tempfile.mkdtemp())
    (tmp / "config.json").write_text(json.dumps(cfg))
    mc = ModelConfig(model=str(tmp), skip_tokenizer_init=True, seed=0, max_model_len=4096,
                     **(mm or {}))
    out = {"dtype": rdm.dt(mc.dtype), "quantization": mc.quantization,
           "attention_backend": backend.name + " (substituted; see README)", "tp": {}}
    if mm is not None:
        mmc = mc.multimodal_config
        out["mm_options"] = mm
        out["multimodal_config"] = None if mmc is None else {
            "language_model_only": mmc.language_model_only,
            "mm_encoder_tp_mode": mmc.mm_encoder_tp_mode,
            "limits": {m: mmc.get_limit_per_prompt(m) for m in ("image", "video", "audio")}}
    for tp in tps:
        ranks = []
        for rank in range(tp):
            t0 = time.perf_counter()
            try:
                ranks.append(build(tmp, mc, tp, rank, detail=rank == 0))
            except Exception as e:       # vLLM's own refusal (a head count TP does not divide)
                ranks.append({"refused": f"{type(e).__name__}: {e}"[:400],
                              "traceback_tail": traceback.format_exc().splitlines()[-4:]})
            print(name, f"TP {tp} rank {rank}", "refused" if "refused" in ranks[-1] else "ok",
                  f"{time.perf_counter() - t0:.1f} s", file=sys.stderr, flush=True)
            if "refused" in ranks[-1]:
                break
        out["tp"][str(tp)] = ranks
    set_tp(1, 0)
    return out


def main():
    rqn.rmm_main_env()
    path = HERE / "answers.json"
    answers = (json.loads(path.read_text()) if path.exists() else
               {"vllm_version": vllm.__version__, "torch": torch.__version__, "cases": {}})
    answers["substitutions"] = SUBSTITUTIONS
    todo = cases()
    names = sys.argv[1:] or list(todo)
    if names == ["--mm"]:
        names = list(MM_CASES)
    for name in names:
        base, flag, value = MM_CASES.get(name, None) or parse_mm(name)
        try:
            answers["cases"][name] = record(name, todo[base], TPS,
                                            None if flag is None else mm_kwargs(flag, value))
        except Exception as e:           # the config refused before any build
            answers["cases"][name] = {"refused": f"{type(e).__name__}: {e}"[:600]}
            print(name, "refused", file=sys.stderr, flush=True)
        answers["cases"] = dict(sorted(answers["cases"].items()))
        path.write_text(json.dumps(answers, indent=1) + "\n")


if __name__ == "__main__":
    main()
