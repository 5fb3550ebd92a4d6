# ruff: noqa
"""Dev tool (not a test): what vLLM 0.33 builds of a Mamba hybrid's pipeline stages (Jamba's
Mamba1, Granite 4.0-H's Mamba2, Qwen3-Next's Gated DeltaNet: the census's tiny 8-layer
configs, ../kv_spec_census/answers.json) and the KVCacheConfig its engine core plans over all
the stages' specs -> answers.json, for tests/test_hybrid_pp_stages.py. From the project root:

    R=~/.cache/vllm-oracle
    (ulimit -v 16000000; HF_HUB_OFFLINE=1 VLLM_LOGGING_LEVEL=ERROR \\
        PYTHONPATH=$R/src:tests/data/mtp_draft/oracle_stubs_vision \\
        flock /tmp/vllm-build.lock nice -n 10 $R/venv/bin/python \\
        tests/data/hybrid_pp_stages/record_hybrid_pp.py)

Each stage is built as ../kimi_linear/record_kimi_linear_pp.py builds Kimi Linear's (the
pipeline group's size and rank set, `initialize_model` on the meta device, then the platform's
`update_block_size_for_backend` as a worker calls it once its layers are built, then the specs
as the GPU runner collects them), with the census's substitutions (../kv_spec_census/) and:
the attention backend FLASH_ATTN (an H100's for these bf16 full-attention layers); vLLM's own
`get_mamba_prefill_checkpoint_alignment` (the census's environment answers FlashInfer's 64 for
every model: restored here, it reads the stage's built layers); Qwen3-Next's GDN layers given
FlashInfer's prefill checkpoint alignment (64) once built, the attribute their __init__ sets on
Hopper (the CPU picks Triton's kernel), as ../mtp_draft/record_qwen3_next_mtp.py does. Prefix
caching on ("align"), and off ("none") for Jamba; max_model_len 4,096 (Granite's config: its
2,048); TP 1; PP 2, 4 and 8.
Planning: ../kimi_linear/record_kimi_linear_pp.py's `plan` with 1 GiB on every worker.
`--cuts` (alone) records two hybrid classes cut to Mamba layers alone on one stage (`cuts`).
"""
import json, sys
from pathlib import Path

# (before the census's environment replaces it with FlashInfer's constant 64)
from vllm.model_executor.layers.mamba import abstract
VLLMS_ALIGNMENT = abstract.get_mamba_prefill_checkpoint_alignment

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "kimi_linear"))
import kl_build                                   # the census's substitutions (dsv4_build)
import record_kimi_linear_pp as K                 # its set_pp and plan
import torch
from vllm.config import (CacheConfig, DeviceConfig, KernelConfig, LoadConfig, ParallelConfig,
                         VllmConfig, set_current_vllm_config)
from vllm.distributed import parallel_state
from vllm.distributed.utils import get_pp_indices
from vllm.model_executor.layers.mamba.gdn import qwen_gdn_linear_attn as gdn
from vllm.model_executor.model_loader.utils import initialize_model
from vllm.platforms import current_platform
from vllm.platforms.interface import Platform
from vllm.utils.torch_utils import set_default_torch_dtype
from vllm.v1.attention.backends.gdn_attn import FLASHINFER_GDN_CHECKPOINT_ALIGNMENT
from vllm.v1.attention.backends.registry import AttentionBackendEnum
from vllm.v1.worker.gpu import attn_utils

b = kl_build.b
CENSUS = json.loads((HERE.parent / "kv_spec_census" / "answers.json").read_text())
ARCHS = {"jamba": "JambaForCausalLM", "granite-4.0-h": "GraniteMoeHybridForCausalLM",
         "qwen3-next": "Qwen3NextForCausalLM"}
MML, PPS, AVAILABLE = 4096, (2, 4, 8), 1 << 30
SUBSTITUTIONS = ["the census's (../kv_spec_census/answers.json lists them), and:",
                 "attention backend FLASH_ATTN (an H100's for bf16 full attention)",
                 "get_mamba_prefill_checkpoint_alignment: vLLM's own (the census's answers 64)",
                 "Qwen3-Next's GDN layers: FlashInfer's checkpoint alignment 64, as on Hopper",
                 "pipeline group: size and rank set"]


def restore_alignment():
    abstract.get_mamba_prefill_checkpoint_alignment = VLLMS_ALIGNMENT
    gdn.get_mamba_prefill_checkpoint_alignment = VLLMS_ALIGNMENT


def build(mc, prefix_caching):
    vc = VllmConfig(model_config=mc, parallel_config=ParallelConfig(),
                    cache_config=CacheConfig(enable_prefix_caching=prefix_caching),
                    kernel_config=KernelConfig(enable_jit_warmup=False),
                    device_config=DeviceConfig(device="cpu"),
                    load_config=LoadConfig(load_format="dummy", device="meta"))
    with set_current_vllm_config(vc), set_default_torch_dtype(mc.dtype), torch.device("meta"):
        model = initialize_model(vc)
        for layer in vc.compilation_config.static_forward_context.values():
            if isinstance(layer, gdn.QwenGatedDeltaNetAttention) and prefix_caching:
                layer._checkpoint_alignment = FLASHINFER_GDN_CHECKPOINT_ALIGNMENT
        Platform.update_block_size_for_backend(vc)     # (the worker's, after load_model)
        specs = attn_utils.get_kv_cache_spec(vc)
    return model, vc, specs


def row(s):
    out = [type(s).__name__, s.block_size, s.page_size_bytes]
    if type(s).__name__ == "MambaSpec":
        out += [s.page_size_padded, s.num_prefill_checkpoint_blocks,
                s.prefill_checkpoint_alignment]
    return out


def cuts(out):
    """`--cuts`: the size fuzz's hybrid classes cut to Mamba layers alone (../size_fuzz/
    cases.json s0-0288, Granite 4.0-H's 3 Mamba layers, and s0-0028, Qwen3-Next's one GDN
    layer; TP 1, max_model_len 2,048) on one stage, built as the stages above: a worker
    holding no attention layer whatever its pipeline size. `cuts_none`: the same with prefix
    caching off (Mamba "none" mode), its own key since."""
    fuzz = {c["id"]: c for c in json.loads((HERE.parent / "size_fuzz" / "cases.json")
                                           .read_text())}
    for key, caching in (("cuts", True), ("cuts_none", False)):
        out[key] = {}
        for cid in ("s0-0288", "s0-0028"):
            cfg = fuzz[cid]["config"]
            K.set_pp(1, 0)
            model, vc, specs = build(b.model_config(cfg, 2048), caching)
            out[key][cid] = {"config": cfg, "max_model_len": 2048,
                             "block_size": vc.cache_config.block_size,
                             "mamba_block_size": vc.cache_config.mamba_block_size,
                             "specs": {k: row(s) for k, s in specs.items()}}
            print(key, cid, out[key][cid]["specs"], file=sys.stderr, flush=True)


def main():
    b.rc.rqn.rmm_main_env()
    restore_alignment()
    backend = AttentionBackendEnum.FLASH_ATTN.get_path()
    current_platform.get_attn_backend_cls = lambda *a, **k: backend
    path = HERE / "answers.json"
    out = json.loads(path.read_text()) if path.exists() else {"cases": {}}
    out["substitutions"] = SUBSTITUTIONS
    if sys.argv[1:] == ["--cuts"]:
        cuts(out)
        path.write_text(json.dumps(out, indent=1) + "\n")
        return
    group = parallel_state._PP
    saved = (group.world_size, group.rank_in_group, group.ranks, group.rank)
    for name in sys.argv[1:] or list(ARCHS):
        cfg = CENSUS["architectures"][ARCHS[name]]["config"]
        mml = min(MML, cfg["max_position_embeddings"])     # (Granite's 2,048)
        case = out["cases"][name] = {"architecture": ARCHS[name], "config": cfg,
                                     "max_model_len": mml}
        n = cfg["num_hidden_layers"]
        for caching in (True, False) if name == "jamba" else (True,):
            for pp in PPS:
                stages, specs_list, vc = [], [], None
                for rank in range(pp):
                    K.set_pp(pp, rank)
                    model, vc, specs = build(b.model_config(cfg, mml), caching)
                    specs_list.append(specs)
                    stages.append({"layers": list(get_pp_indices(n, rank, pp)),
                                   "block_size": vc.cache_config.block_size,
                                   "mamba_block_size": vc.cache_config.mamba_block_size,
                                   "specs": {k: row(s) for k, s in specs.items()}})
                    del model
                    print(name, caching, f"PP {pp} stage {rank}", stages[-1]["specs"],
                          file=sys.stderr, flush=True)
                group.world_size, group.rank_in_group, group.ranks, group.rank = saved
                key = f"pp{pp}" + ("" if caching else "-none")
                case[key] = {"stages": stages, "planning": K.plan(vc, specs_list, AVAILABLE)}
        path.write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
