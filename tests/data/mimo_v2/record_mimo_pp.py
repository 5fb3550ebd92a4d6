# ruff: noqa
"""Dev tool (not a test): what vLLM 0.33 builds of MiMo-V2 on each pipeline stage (TP 1 and 2,
PP 2 and 3, every stage) -> pp_answers.json, for tests/test_mimo_v2_pp.py. From the project
root:

    R=~/.cache/vllm-oracle
    ulimit -v 16000000; HF_HUB_OFFLINE=1 VLLM_LOGGING_LEVEL=ERROR \\
        PYTHONPATH=$R/src:tests/data/mtp_draft/oracle_stubs_vision \\
        flock /tmp/vllm-build.lock nice -n 19 $R/venv/bin/python \\
        tests/data/mimo_v2/record_mimo_pp.py [CONFIG ...]

mimo_build.py builds each stage (its substitutions, and the pipeline group's size and rank set
as ../weights_census/longcat_pp/record_longcat_pp.py's `set_pp` sets them). Per stage: the
decoder layers (`get_pp_indices`), the parameters' and buffers' bytes by dtype, and the KV
cache specs the stage's layers give (names and page bytes). max_model_len 4096.
"""
import json, sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import mimo_build as b
from vllm.distributed import parallel_state
from vllm.distributed.utils import get_pp_indices

CONFIGS = ("tiny-mimo-v2", "tiny-mimo-v2-fp8", "tiny-mimo-v2-tied")
TPS, PPS = (1, 2), (2, 3)


def set_pp(size, rank):
    pp = parallel_state._PP
    pp.world_size, pp.rank_in_group = size, rank
    # (is_first_rank / is_last_rank compare the process's rank with the group's ranks)
    pp.ranks = list(range(size))
    pp.rank = rank


def main():
    b.rc.rqn.rmm_main_env()
    b.install()
    path = HERE / "pp_answers.json"
    out = json.loads(path.read_text()) if path.exists() else {"cases": {}}
    out["substitutions"] = b.SUBSTITUTIONS + ["pipeline group: size and rank set"]
    group = parallel_state._PP
    saved = (group.world_size, group.rank_in_group, group.ranks, group.rank)
    for name in sys.argv[1:] or CONFIGS:
        cfg = json.loads((HERE / f"{name}.config.json").read_text())
        case = out["cases"][name] = {}
        for tp in TPS:
            for pp in PPS:
                stages = []
                for rank in range(pp):
                    set_pp(pp, rank)
                    model, vc, specs = b.build(b.model_config(cfg, 4096), tp, 0)
                    stages.append({
                        "layers": list(get_pp_indices(cfg["num_hidden_layers"], rank, pp)),
                        "param_bytes_by_dtype": b.rc.by_dtype(list(model.parameters())),
                        "buffer_bytes_by_dtype": b.rc.by_dtype(list(model.buffers())),
                        "specs": {n: s.page_size_bytes for n, s in specs.items()}})
                    del model
                    print(name, f"TP {tp} PP {pp} stage {rank}", stages[-1]["layers"],
                          file=sys.stderr, flush=True)
                case[f"tp{tp}-pp{pp}"] = stages
        group.world_size, group.rank_in_group, group.ranks, group.rank = saved
        path.write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
