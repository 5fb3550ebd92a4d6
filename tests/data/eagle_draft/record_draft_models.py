"""Record what vLLM 0.33 builds for an EAGLE / EAGLE-3 draft model: its parameters, the
KV cache specs of its attention layers, its dtype and max_model_len (-> answers.json).

A development tool, never run by the tests: it imports the real vLLM from the oracle's
environment and needs no weights (every module is built on the meta device). From the
project root:

    ulimit -v 12000000; HF_HUB_OFFLINE=1 VLLM_LOGGING_LEVEL=ERROR \
        PYTHONPATH=$HOME/.cache/vllm-oracle/src timeout 600 \
        ~/.cache/vllm-oracle/venv/bin/python tests/data/eagle_draft/record_draft_models.py

README.md beside it says what is vLLM's own code and what this script substitutes.
"""
# ruff: noqa
import dataclasses, json, os, sys, traceback
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")     # the configs are local config.json dirs
os.environ.setdefault("VLLM_LOGGING_LEVEL", "ERROR")

import importlib.abc, importlib.machinery, importlib.util, types

SUBSTITUTIONS = []
if importlib.util.find_spec("compressed_tensors") is None:
    # vLLM's V2 EAGLE loader imports the online-quantization module (for a quantized
    # lm_head copy), which imports compressed_tensors at import time; the oracle venv lacks
    # it (vLLM pins compressed-tensors==0.17.0). These drafts are unquantized: no code of
    # that package runs. An import-only placeholder, as shared/oracle/tool/perf.py does.
    class _Any(type):
        def __getattr__(cls, name):
            if name.startswith("__"):
                raise AttributeError(name)
            return _Any(name, (), {"__init__": lambda self, *a, **k: None})
        def __iter__(cls):
            return iter(())
        def __getitem__(cls, key):
            return cls

    class _Mod(types.ModuleType):
        def __getattr__(self, name):
            if name.startswith("__"):
                raise AttributeError(name)
            return _Any(name, (), {"__init__": lambda self, *a, **k: None})

    class _Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
        def find_spec(self, fullname, path=None, target=None):
            if fullname.split(".")[0] == "compressed_tensors":
                return importlib.machinery.ModuleSpec(fullname, self, is_package=True)
        def create_module(self, spec):
            m = _Mod(spec.name)
            m.__path__ = []
            return m
        def exec_module(self, module):
            pass

    sys.meta_path.append(_Finder())
    SUBSTITUTIONS.append("compressed_tensors: an import-only placeholder (package absent)")

import torch
import vllm
from vllm.config import (DeviceConfig, LoadConfig, ModelConfig, ParallelConfig,
                         SpeculativeConfig, VllmConfig, set_current_vllm_config)
from vllm.config.vllm import get_layers_from_vllm_config
from vllm.distributed.parallel_state import (ensure_model_parallel_initialized,
                                             init_distributed_environment)
from vllm.model_executor.layers.attention_layer_base import AttentionLayerBase
from vllm.model_executor.model_loader.utils import initialize_model
from vllm.platforms import current_platform
from vllm.utils.torch_utils import set_default_torch_dtype
from vllm.v1.attention.backends.registry import AttentionBackendEnum
from vllm.v1.core.kv_cache_planning import get_global_kv_cache_groups
from vllm.v1.worker.gpu import attn_utils
from vllm.v1.worker.gpu.spec_decode.eagle import utils as eagle_utils

HERE = Path(__file__).resolve().parent
K = 3                                             # num_speculative_tokens
CASES = [("1-llama31-8b-eagle3", "eagle3"), ("2-llama31-8b-eagle", "eagle"),
         ("3-llama31-70b-eagle3", "eagle3"), ("4-llama31-8b-eagle3-2layers", "eagle3"),
         ("5-llama31-8b-eagle3-kv4-hd64", "eagle3")]
# The only substitution: vLLM's "unspecified" CPU platform names no attention backend, so
# Attention.__init__ would raise "Invalid attention backend for None". We answer what
# CudaPlatform picks first on an H100 (SM90) for these non-MLA bf16 layers: FLASH_ATTN.
BACKEND = AttentionBackendEnum.FLASH_ATTN
current_platform.get_attn_backend_cls = lambda *a, **k: BACKEND.get_path()
SUBSTITUTIONS.append("attention backend: FLASH_ATTN named for the CPU's unspecified platform")
if not torch.accelerator.is_available():     # the loader's cache release after loading
    torch.accelerator.empty_cache = lambda: None
    SUBSTITUTIONS.append("torch.accelerator.empty_cache: a no-op (no accelerator on this CPU)")


def dt(x):
    return str(x).replace("torch.", "")


def tensors(module, target):
    """Every named parameter and buffer: name -> shape, dtype (buffers: persistent flag;
    `alias_of`: the same tensor object under an earlier name, or the target's)."""
    out, groups, by_dtype, seen = {}, {}, {}, {}
    tseen = {id(t): "target:" + n for n, t in list(target.named_parameters())
             + list(target.named_buffers())}
    items = [(n, p, None) for n, p in module.named_parameters(remove_duplicate=False)]
    for name, b in module.named_buffers(remove_duplicate=False):
        owner, _, leaf = name.rpartition(".")
        mod = module.get_submodule(owner) if owner else module
        items.append((name, b, leaf not in mod._non_persistent_buffers_set))
    for name, t, persistent in items:
        e = {"shape": list(t.shape), "dtype": dt(t.dtype)}
        if persistent is not None:
            e.update(buffer=True, persistent=persistent)
        alias = seen.get(id(t)) or tseen.get(id(t))
        if alias:
            e["alias_of"] = alias
        seen.setdefault(id(t), name)
        out[name] = e
        if alias:
            continue                        # counted once, under its first name
        key = ".".join(name.split(".")[:2]) if name.startswith("model.") else name.split(".")[0]
        if persistent is False:
            key += " (non-persistent buffers)"
        groups[key] = groups.get(key, 0) + t.numel()
        if persistent is None:
            by_dtype[e["dtype"]] = by_dtype.get(e["dtype"], 0) + t.numel() * t.element_size()
    return {"tensors": out, "numel_by_group": groups,
            "param_numel": sum(t.numel() for t in module.parameters()),
            "param_bytes_by_dtype": by_dtype}


def spec_json(s):
    d = {"type": type(s).__name__}
    for f in dataclasses.fields(s):
        v = getattr(s, f.name)
        if f.name == "kv_cache_specs":       # UniformTypeKVCacheSpecs: its distinct members
            members = {}
            for m in v.values():
                j = json.dumps(spec_json(m), sort_keys=True)
                members[j] = members.get(j, 0) + 1
            v = [{"layers": n, "spec": json.loads(j)} for j, n in members.items()]
        elif isinstance(v, torch.dtype):
            v = dt(v)
        elif not isinstance(v, (int, float, bool, str, type(None))):
            v = repr(v)
        d[f.name] = v
    d["page_size_bytes"] = s.page_size_bytes
    return d


def load_draft_spied(target, vc, with_params=True):
    """The V2 runner's EAGLE / MTP load path (spec_decode/eagle/utils.py load_eagle_model), real,
    a spy on get_model recording the draft as built, before the sharing replaces anything:
    (the draft, {"before": its tensors (when ``with_params``), "flags": its has_own_* flags})."""
    built = {}
    real_get_model = eagle_utils.get_model

    def spy(**kw):
        m = real_get_model(**kw)
        if with_params:
            built["before"] = tensors(m, target)
        built["flags"] = {f: getattr(m, f, None) for f in ("has_own_embed_tokens", "has_own_lm_head")}
        return m

    eagle_utils.get_model = spy
    try:
        with set_current_vllm_config(vc):
            draft = eagle_utils.load_eagle_model(target, vc)
    finally:
        eagle_utils.get_model = real_get_model
    return draft, built


def build(case, method):
    d = HERE / case
    mc = ModelConfig(model=str(d / "target"), skip_tokenizer_init=True, seed=0)
    pc = ParallelConfig()
    sc = SpeculativeConfig(method=method, model=str(d / "draft"), num_speculative_tokens=K,
                           target_model_config=mc, target_parallel_config=pc)
    vc = VllmConfig(model_config=mc, parallel_config=pc, speculative_config=sc,
                    device_config=DeviceConfig(device="cpu"),
                    load_config=LoadConfig(load_format="dummy", device="meta"))
    dm = sc.draft_model_config
    rec = {"method": sc.method, "num_speculative_tokens": sc.num_speculative_tokens,
           "target": {"architectures": list(mc.architectures), "dtype": dt(mc.dtype),
                      "max_model_len": mc.max_model_len},
           "draft": {"architectures": list(dm.architectures), "dtype": dt(dm.dtype),
                     "config_torch_dtype": json.loads((d / "draft/config.json").read_text())
                     .get("torch_dtype"), "max_model_len": dm.max_model_len},
           "cache_block_size": vc.cache_config.block_size,
           "attention_backend": BACKEND.name + " (substituted; see README)"}
    # The target, as the runner loads it first (meta device, the target's dtype), so its
    # attention layers are registered before the draft's, as in a real engine.
    with set_current_vllm_config(vc), set_default_torch_dtype(mc.dtype), torch.device("meta"):
        target = initialize_model(vc)
    rec["target"]["class"] = type(target).__name__
    target_names = set(get_layers_from_vllm_config(vc, AttentionLayerBase))
    # The V2 runner's EAGLE load path (spec_decode/eagle/utils.py load_eagle_model), real:
    # get_model(draft overrides, draft load config, the draft ModelConfig) with the dummy
    # loader on the meta device, then the embed_tokens / lm_head sharing. A spy on get_model
    # records the draft as built, before the sharing replaces anything.
    draft, built = load_draft_spied(target, vc)
    rec["draft"]["class"] = type(draft).__name__
    hf = dm.hf_config
    rec["draft"]["hf_config"] = {k: getattr(hf, k, None) for k in (
        "hidden_size", "num_hidden_layers", "num_attention_heads", "num_key_value_heads",
        "head_dim", "intermediate_size", "vocab_size", "draft_vocab_size", "target_layer_count",
        "max_position_embeddings", "rope_parameters")}
    rec["params"] = built["before"]
    tmods = {id(m): n for n, m in target.named_modules()}
    tparams = {id(q) for q in target.parameters()}
    rec["after_dummy_load_sharing"] = {
        "has_own_flags_after_dummy_load": built["flags"],
        "modules_now_the_targets": {n: tmods[id(m)] for n, m in draft.named_modules()
                                    if n and id(m) in tmods and "." not in n.replace("model.", "", 1)},
        "param_numel_not_the_targets": sum(p.numel() for p in draft.parameters()
                                           if id(p) not in tparams),
    }
    # What speculator.load_model does next, then the V2 runner's get_kv_cache_spec.
    all_layers = get_layers_from_vllm_config(vc, AttentionLayerBase)
    draft_names = set(all_layers) - target_names
    for n in draft_names:
        all_layers[n].is_draft_layer = True
    specs = attn_utils.get_kv_cache_spec(vc)
    tspecs = [specs[n] for n in sorted(target_names) if n in specs]
    rec["kv_specs"] = {n: dict(spec_json(specs[n]), draft_layer=True)
                       for n in sorted(draft_names) if n in specs}
    rec["kv_specs_target_summary"] = {
        "num_layers": len(tspecs), "first": spec_json(tspecs[0]),
        "all_equal": all(s == tspecs[0] for s in tspecs),
        "draft_specs_equal_target_spec": {n: specs[n] == tspecs[0] for n in sorted(draft_names)}}
    rec["kv_specs_source"] = "vllm/v1/worker/gpu/attn_utils.py get_kv_cache_spec(vllm_config)"
    # The engine core's grouping of those specs (kv_cache_planning.get_global_kv_cache_groups).
    rec["kv_cache_groups"] = [
        {"num_layers": len(g.layer_names), "spec": spec_json(g.kv_cache_spec),
         "draft_layers": sorted(set(g.layer_names) & draft_names),
         "is_eagle_group": g.is_eagle_group}
        for g in get_global_kv_cache_groups(vc, [specs])]
    rec["use_eagle_block_drop"] = sc.use_eagle_block_drop()
    rec["enable_prefix_caching"] = vc.cache_config.enable_prefix_caching
    rec["use_v2_model_runner"] = vc.use_v2_model_runner
    return rec


def main():
    import socket
    with socket.socket() as sock:                  # a free port for the 1-rank gloo group
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with set_current_vllm_config(VllmConfig(device_config=DeviceConfig(device="cpu"))):
        init_distributed_environment(world_size=1, rank=0, local_rank=0, backend="gloo",
                                     distributed_init_method=f"tcp://127.0.0.1:{port}")
        ensure_model_parallel_initialized(1, 1)
    answers = {"vllm_version": vllm.__version__, "torch": torch.__version__,
               "substitutions": SUBSTITUTIONS, "cases": {}}
    for case, method in CASES:
        try:
            answers["cases"][case] = build(case, method)
        except (ValueError, NotImplementedError) as e:   # vLLM refused: record its words
            answers["cases"][case] = {"method": method, "refused": f"{type(e).__name__}: {e}",
                                      "traceback_tail": traceback.format_exc().splitlines()[-6:]}
        print(case, "refused" if "refused" in answers["cases"][case] else "ok", file=sys.stderr)
    (HERE / "answers.json").write_text(json.dumps(answers, indent=1) + "\n")


if __name__ == "__main__":
    main()
