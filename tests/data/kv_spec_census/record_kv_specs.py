"""Record vLLM 0.33's per-layer KV cache specs for every text-generation, multimodal and
Transformers-backend architecture of its registry (-> answers.json), for
tests/test_kv_spec_census.py.

A development tool, never run by the tests: the real vLLM from the oracle's environment, no
weights, no GPU. Per architecture: a tiny config.json (census_configs.py: the config class's
defaults, the text model cut to a few layers keeping its pattern), vLLM's own model class built
by `initialize_model` on the meta device at TP 1, and the specs the GPU model runner collects
(`vllm/v1/worker/gpu/attn_utils.py get_kv_cache_spec`: every AttentionLayerBase layer of the
static forward context, a layer with a `kv_sharing_target_layer_name` skipped, encoder-only
layers giving none), with the backend's customisation. From the project root:

    ulimit -v 16000000; HF_HUB_OFFLINE=1 VLLM_LOGGING_LEVEL=ERROR \\
        PYTHONPATH=$ORACLE_HOME/src:tests/data/mtp_draft/oracle_stubs_vision \\
        timeout 1500 $ORACLE_HOME/venv/bin/python \\
        tests/data/kv_spec_census/record_kv_specs.py [--shard I/N] [ARCH ...]

(ORACLE_HOME=~/.cache/vllm-oracle.) With --shard each process records every N-th architecture
into answers.I.json; `--merge` folds the parts into answers.json. It imports
../weights_census/record_census.py (and through it the draft recorders) for every substitution
those make (attention backends named for the CPU's platform, the MoE kernel choice, ...: listed
in answers.json) and adds the hybrid models' block-size alignment CudaPlatform does. An
architecture that is not built within TIMEOUT_S seconds, or that vLLM refuses, is recorded
with the reason.
"""
# ruff: noqa
import importlib.abc, importlib.machinery, importlib.util, json, re, signal, sys, tempfile, time, traceback
from pathlib import Path

HERE = Path(__file__).resolve().parent
_spec = importlib.util.spec_from_file_location(
    "record_census", HERE.parent / "weights_census" / "record_census.py")
rc = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(rc)                    # vLLM imported, every substitution applied
sys.path.insert(0, str(HERE))
import census_configs
# InternVLChatModel's remote-code config class, rewritten (its README), for model_type
# internvl_chat
sys.path.insert(0, str(HERE.parent / "weights_census" / "internvl_chat"))
import internvl_chat_config
internvl_chat_config.register()
# MiniCPM-V's, Phi-3-vision's and Phi-4-multimodal's, rewritten the same way
sys.path.insert(0, str(HERE.parent / "weights_census" / "mm_minicpm_idefics_phi"))
import remote_configs
remote_configs.register()
# ERNIE-4.5-VL's (its -PT checkpoints' ernie4_5_moe_vl), rewritten the same way
sys.path.insert(0, str(HERE.parent / "weights_census" / "mm_ernie"))
import ernie_config
ernie_config.register()
import keye_config       # (Keye-VL's, the same way)
keye_config.register()
# Nemotron Nano VL V2's (with its tokenizer stand-in) and Molmo's, rewritten the same way
sys.path.insert(0, str(HERE.parent / "weights_census" / "mm_nemo"))
import molmo_config
import nemo_vl_config
molmo_config.register()
nemo_vl_config.register()
# MiniCPM-o's and Intern-S1-Pro's, rewritten the same way (../weights_census/mm_audio/)
sys.path[:0] = [f"{HERE.parent}/weights_census/mm_{d}" for d in "audio ocr towers12 molmo2".split()]
import interns1_pro_config, molmo2_config, ocr_stand_ins as ocr, kv_stand_ins as ks
import minicpmo_config
minicpmo_config.register()
interns1_pro_config.register(), molmo2_config.register()   # (Molmo2's: mm_molmo2/)
# InternLM2's remote config class: internvl_chat_config's rewrite (LlamaConfig and its bias)
from transformers import AutoConfig
AutoConfig.register("internlm2", internvl_chat_config.InternLM2Config, exist_ok=True)

import torch
import vllm
from vllm.config import (CacheConfig, DeviceConfig, LoadConfig, ModelConfig, ParallelConfig,
                         VllmConfig, set_current_vllm_config)
from vllm.model_executor.model_loader.utils import initialize_model
from vllm.model_executor.models import registry
from vllm.platforms import current_platform
from vllm.platforms.interface import Platform
from vllm.utils.torch_utils import set_default_torch_dtype
from vllm.v1.attention.backends.flash_attn import FlashAttentionBackend
from vllm.v1.attention.backends.registry import AttentionBackendEnum
from vllm.v1.worker.gpu import attn_utils

TIMEOUT_S = 30
# (DeepSeek-VL2's timm SigLIP is built on the CPU whatever the device, 20-30 s on two cores)
SLOW_S = {"DeepseekVLV2ForCausalLM": 150}
# The registry inspects a model class in a subprocess (to keep CUDA out of the parent,
# registry.py:1122-1125): a fresh interpreter importing vLLM per architecture, longer than
# TIMEOUT_S on two cores. There is no CUDA here: the same inspection in this process.
registry._LazyRegisteredModel.inspect_model_cls = (
    lambda self: registry._ModelInfo.from_model_cls(self.load_model_cls()))
# Gemma 3n's sparse GELU computes its threshold's normal quantile with .item() when built
# (activation.py:339), which a meta tensor cannot answer: the constructor runs on the CPU
# (a float kept on the module; no parameter, buffer or KV spec).
from vllm.model_executor.layers import activation
_sparse_init = activation.GeluAndMulSparse.__init__
def _on_cpu(f, *a, **k):
    with torch.device("cpu"):
        return f(*a, **k)
def _sparse_init_cpu(self, *a, **k):
    _on_cpu(_sparse_init, self, *a, **k)
activation.GeluAndMulSparse.__init__ = _sparse_init_cpu
# Constructors that compute a constant with .item() / .tolist() on a tensor they make (XIELU's
# beta, Bloom's ALiBi slopes): run on the CPU (a float or list kept; no parameter changes)
activation.XIELU.__init__ = (lambda f: lambda self, *a, **k: _on_cpu(f, self, *a, **k))(
    activation.XIELU.__init__)
from vllm.model_executor.models import bloom
bloom._get_alibi_slopes = (lambda f: lambda *a, **k: _on_cpu(f, *a, **k))(bloom._get_alibi_slopes)
# NewGELU / QuickGELU bind vLLM's compiled kernel where the platform is a CPU (the MoE
# substitution says it is), absent without vllm._C: built as on a platform without it
def _no_kernel(f):
    def init(self, *a, **k):
        saved, current_platform.is_cpu = current_platform.is_cpu, lambda: False
        try:
            f(self, *a, **k)
        finally:
            current_platform.is_cpu = saved
    return init
activation.NewGELU.__init__ = _no_kernel(activation.NewGELU.__init__)
activation.QuickGELU.__init__ = _no_kernel(activation.QuickGELU.__init__)
# mistral_common (Pixtral's tokenizer and audio helpers, imported by llava.py, mistral3.py,
# voxtral.py at import time) is absent: the draft recorders' import-only placeholder
class _Placeholder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Any mistral_common module: its attributes are classes that accept anything."""
    def find_spec(self, fullname, path=None, target=None):
        if fullname.split(".")[0] == "mistral_common":
            return importlib.machinery.ModuleSpec(fullname, self, is_package=True)
    def create_module(self, spec):
        m = type(sys)(spec.name)
        m.__path__ = []
        m.__getattr__ = lambda name: (_ for _ in ()).throw(AttributeError(name)) if (
            name.startswith("__")) else type(name, (), {"__init__": lambda self, *a, **k: None})
        return m
    def exec_module(self, module):
        pass
if importlib.util.find_spec("mistral_common") is None:
    sys.meta_path.append(_Placeholder())
# DeepSeek-V3.2's indexer (and its kin) keep the platform's device_type, empty on the CPU's
# unspecified platform: the meta device, as every other tensor here.
current_platform.device_type = "meta"
# record_qwen3_next_mtp makes every model's Mamba prefill checkpoint alignment FlashInfer's
# GDN one (64), for Qwen3-Next; the platform's block-size alignment runs before any layer is
# built, where vLLM's own function answers 1 for the other hybrids (abstract.py:98-113)
from vllm.model_executor.layers.mamba import abstract
_gdn_alignment = abstract.get_mamba_prefill_checkpoint_alignment
# DeepSeek-VL2 looks its image token's id up in the tokenizer as it is built (deepseek_vl2.py);
# no tokenizer files here: a stand-in whose vocab holds that token (an int; no tensor)
import types
from vllm.model_executor.models import deepseek_vl2 as _dsvl2
_dsvl2.cached_tokenizer_from_config = lambda mc: types.SimpleNamespace(
    vocab={_dsvl2._IMAGE_TOKEN: 128815})
ocr.register(_dsvl2.cached_tokenizer_from_config)   # (DeepSeek-OCR's the same; dots.ocr's config)
# Intern-S1-Pro's FoPE selects its frequencies with a boolean mask (torch.nonzero), which the
# meta device cannot size: computed on the CPU, then moved to the meta device (the same values)
from vllm.model_executor.layers.rotary_embedding.fope import FourierRotaryEmbedding
_fope_inv_freq = FourierRotaryEmbedding._compute_inv_freq
def _fope_inv_freq_on_cpu(self, base):
    with torch.device("cpu"):
        return _fope_inv_freq(self, base).to("meta")
FourierRotaryEmbedding._compute_inv_freq = _fope_inv_freq_on_cpu
GDN_TYPES = ("qwen3_next", "qwen3_5", "qwen3_5_moe", "qwen3_5_text", "qwen3_5_moe_text")
SUBSTITUTIONS = list(rc.SUBSTITUTIONS) + internvl_chat_config.SUBSTITUTIONS + ocr.SUBSTITUTIONS + (
    remote_configs.SUBSTITUTIONS) + ernie_config.SUBSTITUTIONS + (
    keye_config.SUBSTITUTIONS) + nemo_vl_config.SUBSTITUTIONS + (
    molmo_config.SUBSTITUTIONS) + minicpmo_config.SUBSTITUTIONS + molmo2_config.SUBSTITUTIONS + (
    interns1_pro_config.SUBSTITUTIONS) + census_configs.SUBSTITUTIONS + ks.SUBSTITUTIONS + [
    "FoPE's inverse frequencies (FourierRotaryEmbedding._compute_inv_freq: a boolean "
    "selection, torch.nonzero, which the meta device cannot size) computed on the CPU, then "
    "moved to the meta device",
    "model_type internlm2: internvl_chat_config.py's InternLM2Config (LlamaConfig and its bias; "
    "InternLM2's checkpoints bring it as remote code) registered with AutoConfig",
    "hybrid models: Platform.update_block_size_for_backend(vc) once the layers are built, as "
    "a worker calls it (until 2026-12-08 _align_hybrid_block_size before the build)",
    "model registry: a class inspected in this process (no CUDA here), not a subprocess",
    "platform device_type: meta (DeepSeek-V3.2's indexer asks for it)",
    "Mamba prefill checkpoint alignment at block-size alignment: FlashInfer's 64 for Gated "
    "DeltaNet models (Hopper), 1 for the others (vLLM's own answer before any layer is built)",
    "Gemma 3n's GeluAndMulSparse, XIELU (Apertus) and Bloom's ALiBi slopes computed on the "
    "CPU (constants read with .item() / .tolist())",
    "NewGELU / QuickGELU: no compiled kernel bound (vllm._C absent)",
    "mistral_common: an import-only placeholder (package absent)",
    "DeepSeek-VL2: cached_tokenizer_from_config a stand-in whose vocab holds <image>",
    "attention backend: TRITON_MLA where the model config uses MLA, FLASH_ATTN elsewhere",
    "sparse MLA (a config with index_topk: DeepSeek-V3.2, GLM-5): FLASH_ATTN_MLA_SPARSE, the "
    "first sparse backend CudaPlatform accepts on an H100/H200 with a bf16 cache "
    "(platforms/cuda.py _get_backend_priorities), and the block size "
    "Platform.update_block_size_for_backend picks for it and the indexer's backend (64)"]
ANOTHER_HELPER = ("MambaForCausalLM", "Mamba2ForCausalLM", "FalconMambaForCausalLM",
                  "Zamba2ForCausalLM", "Lfm2ForCausalLM")


class Timeout(Exception):
    pass


def _alarm(*_):
    raise Timeout("not built within its time bound")


def architectures():
    return (list(registry._TEXT_GENERATION_MODELS) + list(registry._MULTIMODAL_MODELS)
            + list(registry._TRANSFORMERS_SUPPORTED_MODELS))   # (the Transformers backend's)


def spec_json(name, s):
    d = rc.rdm.spec_json(s)
    m = re.search(r"layers\.(\d+)\.", name)
    return {"name": name, "layer": int(m.group(1)) if m else None, **d}


def build(arch, cfg):
    tmp = Path(tempfile.mkdtemp())
    ks.write_config(tmp, cfg)      # (config.json; Pixtral's: its params.json)
    mc = ModelConfig(model=str(tmp), skip_tokenizer_init=True, seed=0, trust_remote_code=False)
    sparse = mc.use_mla and hasattr(mc.hf_text_config, "index_topk")
    backend = (AttentionBackendEnum.FLASH_ATTN_MLA_SPARSE if sparse
               else AttentionBackendEnum.TRITON_MLA if mc.use_mla
               else AttentionBackendEnum.FLASH_ATTN)
    current_platform.get_attn_backend_cls = lambda *a, **k: backend.get_path()
    vc = VllmConfig(model_config=mc, parallel_config=ParallelConfig(),
                    cache_config=CacheConfig(enable_prefix_caching=True),
                    device_config=DeviceConfig(device="cpu"),
                    load_config=LoadConfig(load_format="dummy", device="meta"))
    rc.set_tp(1, 0)
    with set_current_vllm_config(vc), set_default_torch_dtype(mc.dtype), torch.device("meta"):
        model = initialize_model(vc)
        if mc.is_hybrid:    # (a worker's order: uniproc_executor.py:75, after the build)
            gdn = getattr(mc.hf_text_config, "model_type", "") in GDN_TYPES
            abstract.get_mamba_prefill_checkpoint_alignment = (
                _gdn_alignment if gdn else lambda vc: 1)
            Platform.update_block_size_for_backend(vc)
            abstract.get_mamba_prefill_checkpoint_alignment = _gdn_alignment
        elif sparse:   # (the CUDA platform's block-size pass, after the layers name backends)
            Platform.update_block_size_for_backend(vc)
        specs = attn_utils.get_kv_cache_spec(vc)
        shared = attn_utils.get_shared_kv_cache_layers(vc)
    return {"class": type(model).__name__, "dtype": rc.rdm.dt(mc.dtype),
            "max_model_len": mc.max_model_len, "block_size": vc.cache_config.block_size,
            "use_mla": mc.use_mla, "is_hybrid": mc.is_hybrid,
            "is_attention_free": mc.is_attention_free,
            "specs": [spec_json(n, s) for n, s in specs.items()],
            "kv_sharing": dict(shared)}


def record(arch, reverse):
    cfg, why = census_configs.make_config(arch, reverse)
    if cfg is None:
        return {"skipped": why}
    out = {"config": cfg}
    signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(SLOW_S.get(arch, TIMEOUT_S))
    t0 = time.perf_counter()
    try:
        out.update(build(arch, cfg))
    except BaseException as e:
        if isinstance(e, KeyboardInterrupt):
            raise
        out["skipped"] = f"{type(e).__name__}: {e}"[:500]
        out["traceback_tail"] = traceback.format_exc().splitlines()[-3:]
    finally:
        signal.alarm(0)
    print(arch, "skipped" if "skipped" in out else f"{len(out['specs'])} specs",
          f"{time.perf_counter() - t0:.1f} s", file=sys.stderr, flush=True)
    return out


def merge():
    parts = sorted(HERE.glob("answers.*.json"))
    out = {"vllm_version": vllm.__version__, "torch": torch.__version__,
           "substitutions": SUBSTITUTIONS, "another_helper": list(ANOTHER_HELPER),
           "architectures": {}}
    old = HERE / "answers.json"          # (a rerun of some architectures updates them)
    if old.exists():
        out["architectures"].update(json.loads(old.read_text())["architectures"])
    for p in parts:
        out["architectures"].update(json.loads(p.read_text())["architectures"])
    out["architectures"] = {a: out["architectures"][a] for a in architectures()
                            if a in out["architectures"]}
    (HERE / "answers.json").write_text(json.dumps(out, indent=1) + "\n")
    for p in parts:
        p.unlink()


def main():
    args = sys.argv[1:]
    if args == ["--merge"]:
        return merge()
    shard, n = 0, 1
    if args[:1] == ["--shard"]:
        shard, n = (int(x) for x in args[1].split("/"))
        args = args[2:]
    rc.rqn.rmm_main_env()
    reverse = census_configs._reverse_auto_mappings()
    names = args or architectures()[shard::n]
    path = HERE / f"answers.{shard}.json"
    done = json.loads(path.read_text()) if path.exists() else {"architectures": {}}
    for arch in names:
        done["architectures"][arch] = record(arch, reverse)
        path.write_text(json.dumps(done, indent=1) + "\n")


if __name__ == "__main__":
    main()
