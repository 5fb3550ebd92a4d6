# ruff: noqa
"""Dev tool (not a test): what vLLM 0.33 builds for Nemotron-NAS (DeciLMForCausalLM,
model_executor/models/nemotron_nas.py) per config.json here, from the stand-in config class
nas_config.py: each KV cache layer's spec, vLLM's KV cache groups and KVCacheConfig on given
memories (../deepseek_v4/record_dsv4.py's `planning`: the engine core's road), and the weights
of TP ranks 0 and N-1 at TP 1, 2, 4, 8 -> answers.json. A config vLLM refuses keeps its error.
From the project root:

    R=~/.cache/vllm-oracle
    ulimit -v 16000000; HF_HUB_OFFLINE=1 VLLM_LOGGING_LEVEL=ERROR \\
        PYTHONPATH=$R/src:tests/data/mtp_draft/oracle_stubs_vision \\
        flock /tmp/vllm-build.lock nice -n 19 $R/venv/bin/python \\
        tests/data/nemotron_nas/record_nas.py [CONFIG ... | --pp CONFIG ...]
"""
import importlib.util, json, re, sys, tempfile, textwrap, time, traceback
from pathlib import Path

HERE = Path(__file__).resolve().parent
_spec = importlib.util.spec_from_file_location(
    "record_kv_specs", HERE.parent / "kv_spec_census" / "record_kv_specs.py")
rks = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(rks)                   # vLLM imported, the census's substitutions
rc = rks.rc
sys.path[:0] = [str(HERE), str(HERE.parent / "deepseek_v4")]
import nas_config
nas_config.register()
import record_dsv4                              # (its `planning` and `weights` rows)

import torch
from vllm.config import (CacheConfig, DeviceConfig, LoadConfig, ModelConfig, ParallelConfig,
                         VllmConfig, set_current_vllm_config)
from vllm.model_executor.model_loader.utils import initialize_model
from vllm.platforms import current_platform
from vllm.utils.torch_utils import set_default_torch_dtype
from vllm.v1.attention.backends.registry import AttentionBackendEnum
from vllm.v1.worker.gpu import attn_utils

GIB = 1 << 30
# config -> (max_model_len, [available bytes per rank, ...])
CASES = {"tiny-nas-a": (4096, [64 << 20, GIB]),
         "tiny-nas-b": (8192, [64 << 20, GIB]),
         "super-49b-v1_5": (131072, [20 * GIB, 60 * GIB]),
         "ultra-253b-v1": (131072, [20 * GIB, 60 * GIB]),
         # (the same config at TP N, rank 0's specs, planned on what `kvcli config
         # --gpu-memory-gib 80 --tensor-parallel-size N` leaves for the KV cache)
         "tiny-nas-linear-attn": (4096, []), "tiny-nas-linear-ffn": (4096, []),
         "tiny-nas-no-attn": (4096, [])}
AT_80_GIB = {"super-49b-v1_5": {4: 54_058_672_982, 8: 66_525_193_046},
             "ultra-253b-v1": {8: 15_639_339_622}}
TPS = (1, 2, 4, 8)


def model_config(cfg, mml):
    tmp = Path(tempfile.mkdtemp())
    (tmp / "config.json").write_text(json.dumps(cfg))
    return ModelConfig(model=str(tmp), skip_tokenizer_init=True, seed=0, max_model_len=mml)


def build(mc, tp=1, rank=0):
    current_platform.get_attn_backend_cls = (
        lambda *a, **k: AttentionBackendEnum.FLASH_ATTN.get_path())
    rc.set_tp(tp, rank)
    vc = VllmConfig(model_config=mc, parallel_config=ParallelConfig(),
                    cache_config=CacheConfig(enable_prefix_caching=True),
                    device_config=DeviceConfig(device="cpu"),
                    load_config=LoadConfig(load_format="dummy", device="meta"))
    try:
        with set_current_vllm_config(vc), set_default_torch_dtype(mc.dtype), \
                torch.device("meta"):
            model = initialize_model(vc)
            specs = attn_utils.get_kv_cache_spec(vc)
    finally:
        rc.set_tp(1, 0)
    return model, vc, specs


def refused(e):
    """vLLM's error, wrapped at 90 characters, and where it was raised."""
    where = traceback.extract_tb(e.__traceback__)[-1]
    return {"refused": textwrap.wrap(f"{type(e).__name__}: {e}"[:400], 90),
            "raised_at": f"{where.filename.split('/vllm/')[-1]}:{where.lineno}"}


def record(name):
    cfg = json.loads((HERE / f"{name}.config.json").read_text())
    mml, availables = CASES[name]
    try:
        mc = model_config(cfg, mml)
        model, vc, specs = build(mc)
    except Exception as e:
        return refused(e)
    tiny = name.startswith("tiny")
    out = {"class": type(model).__name__, "max_model_len": mml,
           "block_size": vc.cache_config.block_size,
           "total_num_kv_heads": mc.get_total_num_kv_heads(),
           "num_attention_layers": mc.get_num_layers_by_block_type(vc.parallel_config),
           "specs": [record_dsv4.spec_row(n, s) for n, s in specs.items()],
           "planning": [record_dsv4.planning(vc, specs, a) for a in availables],
           "param_numel_by_name": ({n: p.numel() for n, p in model.named_parameters()} if tiny
                                   else rc.pattern_numel(model)), "tp": {}}
    del model
    for tp in TPS:
        ranks = []
        for rank in sorted({0, tp - 1}):
            t0 = time.perf_counter()
            try:
                m, _, sp = build(model_config(cfg, mml), tp, rank)
                ranks.append({"rank": rank, **record_dsv4.weights(m),
                              "specs": [record_dsv4.spec_row(n, s) for n, s in sp.items()]
                              if rank == 0 else None})
                if rank == 0 and tp in AT_80_GIB.get(name, {}):
                    ranks[-1]["planning_80_gib"] = record_dsv4.planning(
                        build(model_config(cfg, mml))[1], sp, AT_80_GIB[name][tp])
            except Exception as e:       # vLLM's own refusal (a head count TP does not divide)
                ranks.append({"rank": rank, **refused(e)})
            print(name, f"TP {tp} rank {rank}", f"{time.perf_counter() - t0:.1f} s",
                  file=sys.stderr, flush=True)
            if "refused" in ranks[-1]:
                break
        out["tp"][str(tp)] = ranks
    return out


def record_pp(name):
    """Each pipeline stage (TP 1 and 2, PP 2 and 4) as ../weights_census/dsv32_pp/ records
    them: the process's PP group set to the stage (../longcat_pp's `set_pp`), its layers
    (`get_pp_indices`), weights, buffers and KV cache layers."""
    from vllm.distributed import parallel_state
    from vllm.distributed.utils import get_pp_indices
    cfg = json.loads((HERE / f"{name}.config.json").read_text())
    group, out = parallel_state._PP, {}
    saved = (group.world_size, group.rank_in_group, group.ranks, group.rank)
    for tp in (1, 2):
        for pp in (2, 4):
            stages = []
            for rank in range(pp):
                group.world_size, group.rank_in_group, group.ranks, group.rank = (
                    pp, rank, list(range(pp)), rank)
                m, _, sp = build(model_config(cfg, 4096), tp, 0)
                stages.append({"layers": list(get_pp_indices(cfg["num_hidden_layers"], rank,
                                                             pp)),
                               **record_dsv4.weights(m), "kv_layers": list(sp)})
            out[f"tp{tp}-pp{pp}"] = stages
            print(name, f"TP {tp} PP {pp}", file=sys.stderr, flush=True)
    group.world_size, group.rank_in_group, group.ranks, group.rank = saved
    return out


def main():
    rc.rqn.rmm_main_env()
    if sys.argv[1:2] == ["--pp"]:       # (pipeline stages -> answers_pp.json)
        path = HERE / "answers_pp.json"
        path.write_text(json.dumps({n: record_pp(n) for n in sys.argv[2:]}, indent=1) + "\n")
        return
    path = HERE / "answers.json"
    answers = json.loads(path.read_text()) if path.exists() else {"cases": {}}
    answers["substitutions"] = [
        "every one of ../kv_spec_census/record_kv_specs.py's (its answers.json lists them)",
        "nemotron-nas: nas_config.DeciLMConfig, the stand-in for the remote-code config class",
        "attention backend: FLASH_ATTN (an H100's default for these layers)"]
    for name in sys.argv[1:] or list(CASES):
        answers["cases"][name] = record(name)
        path.write_text(json.dumps(answers, indent=1) + "\n")


if __name__ == "__main__":
    main()
