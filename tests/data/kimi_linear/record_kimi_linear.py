# ruff: noqa
"""Dev tool (not a test): what vLLM 0.33 builds for Kimi Linear (KimiLinearForCausalLM) per
config.json here: each KV cache layer's spec, vLLM's KV cache groups and KVCacheConfig on given
memories (the engine core's road: ../deepseek_v4/record_dsv4.py's planning), and the weights
per rank at TP 1, 2, 4, 8 -> answers.json. From the project root:

    R=~/.cache/vllm-oracle
    ulimit -v 16000000; HF_HUB_OFFLINE=1 VLLM_LOGGING_LEVEL=ERROR \\
        PYTHONPATH=$R/src:tests/data/mtp_draft/oracle_stubs_vision \\
        nice -n 19 $R/venv/bin/python tests/data/kimi_linear/record_kimi_linear.py [CONFIG ...]

kl_build.py builds the model (its substitutions listed in answers.json).
"""
import json, sys, time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import kl_build as b
import record_dsv4 as r             # (its spec rows, planning and weights; same build module)

# config -> (max_model_len, [available bytes per rank, ...], TP sizes planned beside TP 1)
# (54,410,669,402: 80 GiB x 0.92 less a TP 4 rank's weights and buffers, as recorded below)
CASES = {"kimi-linear-48b-a3b": (1048576, [20 << 30, 60 << 30, 54_410_669_402], (4,)),
         "tiny-kimi-linear": (4096, [64 << 20, 1 << 30], (2,)),
         # (Kimi-K3's class over tiny's text config with K3's full-rank KDA gate and attention
         # residuals, and a one-layer vision tower)
         "tiny-kimi-k3": (4096, [64 << 20, 1 << 30], (2,))}
TPS = (1, 2, 4, 8)


def spec_row(name, s):
    """record_dsv4's row; a MambaSpec has dtypes (below), not a dtype."""
    row = {"name": name, "type": type(s).__name__,
           "dtype": b.rc.rdm.dt(s.dtype) if hasattr(s, "dtype") else None,
           "mamba_type": str(getattr(s, "mamba_type", None))}
    for f in r.FIELDS:
        row[f] = getattr(s, f, None)
    return row


def planned(cfg, mml, tp, availables):
    model, vc, specs = b.build(b.model_config(cfg, mml), tp, 0)
    rows = {"block_size": vc.cache_config.block_size,
            "mamba_block_size": vc.cache_config.mamba_block_size,
            "mamba_cache_mode": vc.cache_config.mamba_cache_mode,
            "mamba_page_size_padded": vc.cache_config.mamba_page_size_padded,
            "specs": [spec_row(n, s) | {"shapes": [list(x) for x in getattr(s, "shapes", ())],
                                          "dtypes": [b.rc.rdm.dt(d) for d in
                                                     getattr(s, "dtypes", ())],
                                          "num_prefill_checkpoint_blocks":
                                              getattr(s, "num_prefill_checkpoint_blocks", None)}
                      for n, s in specs.items()],
            "planning": [r.planning(vc, specs, a) for a in availables]}
    return model, rows


def record(name):
    cfg = json.loads((HERE / f"{name}.config.json").read_text())
    mml, availables, plan_tps = CASES[name]
    model, tp1 = planned(cfg, mml, 1, availables)
    out = {"class": type(model).__name__, "module": type(model).__module__,
           "max_model_len": mml, "tp1": tp1, "param_numel_by_name": b.rc.pattern_numel(model),
           "planned_at_tp": {}, "tp": {}}
    del model
    for tp in plan_tps:
        out["planned_at_tp"][str(tp)] = planned(cfg, mml, tp, availables)[1]
    for tp in TPS:
        ranks = []
        for rank in range(tp):
            t0 = time.perf_counter()
            try:
                ranks.append(r.weights(b.build(b.model_config(cfg, mml), tp, rank)[0],
                                       detail=rank == 0))
            except Exception as e:       # vLLM's own refusal (a head count TP does not divide)
                ranks.append({"refused": f"{type(e).__name__}: {e}"[:400]})
            print(name, f"TP {tp} rank {rank}", f"{time.perf_counter() - t0:.1f} s",
                  file=sys.stderr, flush=True)
            if "refused" in ranks[-1]:
                break
        out["tp"][str(tp)] = ranks
    return out


def main():
    b.rc.rqn.rmm_main_env()
    b.install()
    path = HERE / "answers.json"
    answers = json.loads(path.read_text()) if path.exists() else {"cases": {}}
    answers["substitutions"] = b.SUBSTITUTIONS
    for name in sys.argv[1:] or list(CASES):
        answers["cases"][name] = record(name)
        path.write_text(json.dumps(answers, indent=1) + "\n")


if __name__ == "__main__":
    main()
