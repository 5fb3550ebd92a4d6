# ruff: noqa
"""Dev tool (not a test): what vLLM 0.33 builds of Step3 (Step3-VL and its text model) and
Step-3.5 on each pipeline stage (TP 1 and 2, PP 2, 3 and 4, every stage) -> answers.json, for
tests/test_step3_pp.py.

    ulimit -v 16000000; HF_HUB_OFFLINE=1 VLLM_LOGGING_LEVEL=ERROR \\
        PYTHONPATH=$HOME/.cache/vllm-oracle/src:tests/data/mtp_draft/oracle_stubs_vision \\
        timeout 3000 ~/.cache/vllm-oracle/venv/bin/python \\
        tests/data/weights_census/step3_pp/record_step3_pp.py [CASE ...]

../longcat_pp/record_longcat_pp.py's way: ../record_census.py's `build` (its substitutions,
listed in the output) with the pipeline group's size and rank set as its `set_tp` sets the
tensor-parallel group's. Per stage: the decoder layers (`get_pp_indices`), the parameters'
bytes by dtype, the buffers.
"""
import importlib.util, json, sys, tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
spec = importlib.util.spec_from_file_location("record_longcat_pp",
                                              HERE.parent / "longcat_pp" / "record_longcat_pp.py")
rlp = importlib.util.module_from_spec(spec)
spec.loader.exec_module(rlp)
rc, set_pp = rlp.rc, rlp.set_pp
from vllm.distributed import parallel_state
from vllm.distributed.utils import get_pp_indices

PPS = (2, 3, 4)
TPS = (1, 2)
# (the configs: ../quant_step3's, unquantised; Step3's with its text config's
# tie_word_embeddings written, which Step3TextConfig does not default and step3_text.py reads
# on every stage but the first)
CASES = {"tiny-step3": ("tiny-step3-fp8", None), "tiny-step3-text": ("tiny-step3-text-fp8", None),
         "tiny-step3p5": ("tiny-step3p5-fp8", None),
         "tiny-step3-tie-false": ("tiny-step3-fp8", False),
         "tiny-step3-text-tie-false": ("tiny-step3-text-fp8", False),
         "tiny-step3-text-tie-true": ("tiny-step3-text-fp8", True)}


def config(name):
    base, tie = CASES[name]
    cfg = json.loads((HERE.parent / "quant_step3" / f"{base}.config.json").read_text())
    cfg.pop("quantization_config")
    if tie is not None:
        (cfg.get("text_config") or cfg)["tie_word_embeddings"] = tie
    return cfg


def main():
    rc.rqn.rmm_main_env()
    backend = rc.AttentionBackendEnum.FLASH_ATTN
    rc.current_platform.get_attn_backend_cls = lambda *a, **k: backend.get_path()
    out = {"vllm_version": rc.vllm.__version__, "substitutions": rc.SUBSTITUTIONS + [
        "pipeline group: size and rank set as set_tp sets the TP group's; FLASH_ATTN"],
        "cases": {}}
    group = parallel_state._PP
    saved = (group.world_size, group.rank_in_group, group.ranks, group.rank)
    path = HERE / "answers.json"
    if path.exists():       # (the cases not named kept)
        out["cases"] = json.loads(path.read_text())["cases"]
    for name in sys.argv[1:] or CASES:
        cfg = config(name)
        d = Path(tempfile.mkdtemp())
        (d / "config.json").write_text(json.dumps(cfg))
        mc = rc.ModelConfig(model=str(d), skip_tokenizer_init=True, seed=0, max_model_len=4096)
        n = (cfg.get("text_config") or cfg)["num_hidden_layers"]
        case = out["cases"][name] = {}
        for tp in TPS:
            for pp in PPS:
                stages = []
                for rank in range(pp):
                    set_pp(pp, rank)
                    try:
                        rec = rc.build(d, mc, tp, 0, False)
                    except Exception as e:
                        rec = {"refused": f"{type(e).__name__}: {e}"[:400]}
                    rec["layers"] = list(get_pp_indices(n, rank, pp))
                    stages.append(rec)
                    print(name, f"TP {tp} PP {pp} stage {rank}", rec["layers"],
                          "refused" if "refused" in rec else "ok", file=sys.stderr, flush=True)
                case[f"tp{tp}-pp{pp}"] = stages
        group.world_size, group.rank_in_group, group.ranks, group.rank = saved
    rc.set_tp(1, 0)
    path.write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
