# ruff: noqa
"""Dev tool (not a test): what vLLM 0.33 builds of LongCat-Flash on each pipeline stage (TP 1,
PP 2, 3 and 5, every stage) -> answers.json, for tests/test_longcat_pp.py.

    ulimit -v 16000000; HF_HUB_OFFLINE=1 VLLM_LOGGING_LEVEL=ERROR \\
        PYTHONPATH=$HOME/.cache/vllm-oracle/src:tests/data/mtp_draft/oracle_stubs_vision \\
        timeout 3000 ~/.cache/vllm-oracle/venv/bin/python \\
        tests/data/weights_census/longcat_pp/record_longcat_pp.py

../record_census.py's `build` (its substitutions, listed in the output) with the pipeline
group's size and rank set as its `set_tp` sets the tensor-parallel group's: `make_layers` then
builds the stage's decoder layers (`get_pp_indices`), the first stage the embedding, the last
the final norm and the LM head. Per stage: the decoder layers, the parameters' bytes by dtype,
the buffers (its KV cache holds 2 MLA caches a decoder layer, as at PP 1).
"""
import importlib.util, json, sys, tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
spec = importlib.util.spec_from_file_location("record_census", HERE.parent / "record_census.py")
rc = importlib.util.module_from_spec(spec)
spec.loader.exec_module(rc)
from vllm.distributed import parallel_state
from vllm.distributed.utils import get_pp_indices

PPS = (2, 3, 5)


def set_pp(size, rank):
    pp = parallel_state._PP
    pp.world_size, pp.rank_in_group = size, rank
    # (is_first_rank / is_last_rank compare the process's rank with the group's ranks)
    pp.ranks = list(range(size))
    pp.rank = rank


def main():
    rc.rqn.rmm_main_env()
    cfg = json.loads((HERE / "longcat-flash-l5.config.json").read_text())
    d = Path(tempfile.mkdtemp())
    (d / "config.json").write_text(json.dumps(cfg))
    # (the MLA backend record() names: TRITON_MLA for an H100's FLASH_ATTN_MLA)
    backend = rc.AttentionBackendEnum.TRITON_MLA
    rc.current_platform.get_attn_backend_cls = lambda *a, **k: backend.get_path()
    mc = rc.ModelConfig(model=str(d), skip_tokenizer_init=True, seed=0, max_model_len=4096)
    out = {"vllm_version": rc.vllm.__version__, "substitutions": rc.SUBSTITUTIONS + [
        "pipeline group: size and rank set as set_tp sets the TP group's; TRITON_MLA"],
        "pp": {}}
    group = parallel_state._PP
    saved = (group.world_size, group.rank_in_group, group.ranks, group.rank)
    for pp in PPS:
        stages = []
        for rank in range(pp):
            set_pp(pp, rank)
            rec = rc.build(d, mc, 1, 0, False)
            rec["layers"] = list(get_pp_indices(cfg["num_layers"], rank, pp))
            stages.append(rec)
            print(f"PP {pp} stage {rank}", rec["layers"], file=sys.stderr, flush=True)
        out["pp"][str(pp)] = stages
    group.world_size, group.rank_in_group, group.ranks, group.rank = saved
    (HERE / "answers.json").write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
