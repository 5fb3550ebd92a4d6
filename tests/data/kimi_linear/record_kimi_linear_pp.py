# ruff: noqa
"""Dev tool (not a test): what vLLM 0.33 builds of Kimi Linear on each pipeline stage (the
tiny config at TP 1 and 2, the published one at TP 1 and 4; PP 2 and 4, every stage) and the
KVCacheConfig its engine core plans over all the stages' specs -> pp_answers.json, for
tests/test_kimi_linear_pp.py. From the project root:

    R=~/.cache/vllm-oracle
    ulimit -v 16000000; HF_HUB_OFFLINE=1 VLLM_LOGGING_LEVEL=ERROR \\
        PYTHONPATH=$R/src:tests/data/mtp_draft/oracle_stubs_vision \\
        flock /tmp/vllm-build.lock nice -n 19 $R/venv/bin/python \\
        tests/data/kimi_linear/record_kimi_linear_pp.py [CONFIG ...]

kl_build.py builds each stage (its substitutions, and the pipeline group's size and rank set
as ../mimo_v2/record_mimo_pp.py's `set_pp` sets them). Per stage: the decoder layers
(`get_pp_indices`), the parameters' and buffers' bytes by dtype, each KV cache layer's spec
type, block size and page. Then the engine core's road (../deepseek_v4/record_dsv4.py's
`planning`, with every stage a worker): the layout, `get_global_kv_cache_groups` over the
stages' specs, `get_kv_cache_configs` with AVAILABLE bytes on every worker; per worker its
groups' layers and block sizes, its tensors and the common block count.
"""
import json, sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import kl_build as b
from vllm.config import set_current_vllm_config
from vllm.distributed import parallel_state
from vllm.distributed.kv_transfer.kv_connector.utils import get_current_attn_backends
from vllm.distributed.utils import get_pp_indices
from vllm.v1.attention.backends.utils import (get_supported_kv_cache_layouts,
                                              resolve_kv_cache_layout)
from vllm.v1.core import kv_cache_planning as P

# config -> (max_model_len, TP sizes, available KV cache bytes on each worker)
CASES = {"tiny-kimi-linear": (4096, (1, 2), 256 << 20),
         "kimi-linear-48b-a3b": (1048576, (1, 4), 20 << 30)}
PPS = (2, 4)


def set_pp(size, rank):
    pp = parallel_state._PP
    pp.world_size, pp.rank_in_group = size, rank
    pp.ranks = list(range(size))
    pp.rank = rank


def plan(vc, specs_list, available):
    with set_current_vllm_config(vc):
        backends = get_current_attn_backends(vc)
        names = [lay.name for lay in get_supported_kv_cache_layouts(backends)]
        vc.cache_config.kv_cache_layout = None
        merged = [s for specs in specs_list for s in specs.values()]
        layout = resolve_kv_cache_layout(vc, [names], merged)
        vc.cache_config.kv_cache_layout = layout.name
        groups = P.get_global_kv_cache_groups(vc, specs_list)
        kcs = P.get_kv_cache_configs(vc, specs_list, [available] * len(specs_list), groups)
    return {"available": available, "layout": layout.name,
            "global_groups": [{"layers": len(g.layer_names),
                               "spec": type(g.kv_cache_spec).__name__,
                               "block_size": g.kv_cache_spec.block_size,
                               "page_size_bytes": g.kv_cache_spec.page_size_bytes}
                              for g in groups],
            "workers": [{"num_blocks": kc.num_blocks,
                         "groups": [{"layers": list(g.layer_names),
                                     "spec": type(g.kv_cache_spec).__name__,
                                     "block_size": g.kv_cache_spec.block_size,
                                     "page_size_bytes": g.kv_cache_spec.page_size_bytes}
                                    for g in kc.kv_cache_groups],
                         "tensors": [{"size": t.size, "layers": len(t.layers)}
                                     for t in kc.kv_cache_tensors]} for kc in kcs]}


def main():
    b.rc.rqn.rmm_main_env()
    b.install()
    path = HERE / "pp_answers.json"
    out = json.loads(path.read_text()) if path.exists() else {"cases": {}}
    out["substitutions"] = b.SUBSTITUTIONS + ["pipeline group: size and rank set"]
    group = parallel_state._PP
    saved = (group.world_size, group.rank_in_group, group.ranks, group.rank)
    for name in sys.argv[1:] or list(CASES):
        cfg = json.loads((HERE / f"{name}.config.json").read_text())
        mml, tps, available = CASES[name]
        n = cfg.get("num_hidden_layers")
        case = out["cases"][name] = {"max_model_len": mml}
        for tp in tps:
            for pp in PPS:
                stages, specs_list, vc = [], [], None
                for rank in range(pp):
                    set_pp(pp, rank)
                    model, vc, specs = b.build(b.model_config(cfg, mml), tp, 0)
                    specs_list.append(specs)
                    stages.append({
                        "layers": list(get_pp_indices(n, rank, pp)),
                        "param_bytes_by_dtype": b.rc.by_dtype(list(model.parameters())),
                        "buffer_bytes_by_dtype": b.rc.by_dtype(list(model.buffers())),
                        "specs": {k: [type(s).__name__, s.block_size, s.page_size_bytes]
                                  for k, s in specs.items()}})
                    del model
                    print(name, f"TP {tp} PP {pp} stage {rank}", stages[-1]["layers"],
                          file=sys.stderr, flush=True)
                group.world_size, group.rank_in_group, group.ranks, group.rank = saved
                case[f"tp{tp}-pp{pp}"] = {"stages": stages,
                                          "planning": plan(vc, specs_list, available)}
        path.write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
