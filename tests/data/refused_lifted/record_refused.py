# ruff: noqa
"""Dev tool (not a test): what vLLM 0.33 builds for the classes kvcli refused by name, per
config.json here: each KV cache layer's spec, vLLM's KV cache groups and KVCacheConfig on the
memories given (the engine core's road), and the weights per rank at TP 1, 2, 4, 8
-> answers.json. From the project root:

    R=~/.cache/vllm-oracle
    ulimit -v 16000000; HF_HUB_OFFLINE=1 VLLM_LOGGING_LEVEL=ERROR \\
        PYTHONPATH=$R/src:tests/data/mtp_draft/oracle_stubs_vision \\
        flock /tmp/vllm-build.lock nice -n 19 $R/venv/bin/python \\
        tests/data/refused_lifted/record_refused.py [CONFIG ...]

The build and the rows are ../deepseek_v4/'s (dsv4_build.build, record_dsv4's spec_row,
planning and weights; its DeepSeek-V4-only install() not run); stand_ins.py registers the
config classes the checkpoints bring as remote code.
"""
import json, sys, textwrap, time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent / "deepseek_v4")]
import record_dsv4 as r         # (imports dsv4_build: vLLM, the census's substitutions)
import stand_ins
from vllm.v1.attention.backends.registry import AttentionBackendEnum as E

b = r.b
GIB = 1 << 30
# config -> (max_model_len, [available bytes per rank, ...])
CASES = {"sarvam-105b": (4096, [70 * GIB]),
         "tiny-sarvam-mla": (4096, [1 * GIB]),
         "tiny-sarvam-mla-noq": (4096, [1 * GIB]),
         "tiny-longcat-ngram": (4096, [1 * GIB]), "longcat-flash-lite": (4096, [50 * GIB]),
         "tiny-longcat-ngram-notype": (4096, []), "tiny-longcat-no-ngram": (4096, []),
         "tiny-rnj1": (4096, [1 * GIB]), "rnj-1": (32768, [60 * GIB]),
         "tiny-rnj1-norope": (4096, []),
         "tiny-rnj1-partial": (4096, []), "tiny-domyn-edge": (4096, [1 * GIB]),
         "pangu-pro-moe-v2": (32768, [60 * GIB]), "tiny-pangu-v2-sink": (2048, [1 * GIB]),
         "tiny-pangu-v2-sinkv": (4096, [1 * GIB]),
         "iquest-loopcoder-40b": (32768, [60 * GIB]), "tiny-iquest-loop": (4096, [1 * GIB]),
         "tiny-iquest-loop3": (4096, [1 * GIB]),
         "tiny-iquest-loop-defaults": (4096, [1 * GIB]),
         "dory-defaults": (8192, [20 * GIB]), "tiny-dory": (4096, [1 * GIB]),
         "tiny-dory-last": (2048, [1 * GIB]), "tiny-dory-loop4": (2048, [1 * GIB]),
         "unlimited-ocr": (8192, [20 * GIB, 60 * GIB]), "tiny-unlimited-ocr": (4096, [1 * GIB]),
         "tiny-unlimited-ocr-nowindow": (4096, [1 * GIB])}
# the backend a case is built with where it is not the default pick (Rnj1's chunked layers
# assert TRITON_ATTN: `vllm serve --attention-backend TRITON_ATTN`); a case named
# "<config> default" is built with the default pick, to record vLLM's refusal (alone in its
# run: vLLM caches the backend a layer's arguments got)
BACKENDS = dict.fromkeys(("tiny-rnj1", "rnj-1", "tiny-rnj1-norope", "tiny-rnj1-partial"),
                         "TRITON_ATTN")
TPS = (1, 2, 4, 8)


def pick_backend(selected_backend, attn_selector_config, num_heads=None):
    """The backend by what the layer asks (its selector config's use_mla), as CUDA's
    get_attn_backend_cls does: TRITON_MLA for an MLA layer (the census's; block 16 as an
    H100's FLASH_ATTN_MLA), FLASH_ATTN otherwise, the backend named where one is."""
    if selected_backend is not None:
        return selected_backend.get_path()
    return (E.TRITON_MLA if attn_selector_config.use_mla else E.FLASH_ATTN).get_path()


def _spec_row(name, spec):
    """record_dsv4's row, with an RSWASpec's window (Unlimited-OCR's)."""
    row = r.spec_row(name, spec)
    return {**row, "rswa_window": spec.rswa_window} if hasattr(spec, "rswa_window") else row


def record(name):
    base = name.split(" ")[0]
    cfg = json.loads((HERE / f"{base}.config.json").read_text())
    named = BACKENDS.get(name)
    b.current_platform.get_attn_backend_cls = (
        pick_backend if named is None else lambda *a, **k: getattr(E, named).get_path())
    mml, availables = CASES.get(name, (CASES[base][0], []))
    try:
        model, vc, specs = b.build(b.model_config(cfg, mml))
    except Exception as e:          # vLLM's own refusal, kept (wrapped at 90 characters)
        return {"refused": textwrap.wrap(f"{type(e).__name__}: {e}"[:600], 90)}
    out = {"class": type(model).__name__, "module": type(model).__module__,
           "attention_backend": named or "by the layer (pick_backend)",
           "max_model_len": mml, "block_size": vc.cache_config.block_size,
           "cache_dtype": vc.cache_config.cache_dtype,
           "use_mla": vc.model_config.use_mla,
           # (what a class's config hook leaves: Unlimited-OCR's turns caching off)
           "enable_prefix_caching": vc.cache_config.enable_prefix_caching,
           "configured_backend": str(vc.attention_config.backend),
           "specs": [_spec_row(n, s) for n, s in specs.items()],
           "planning": [r.planning(vc, specs, a) for a in availables],
           "param_numel_by_name": b.rc.pattern_numel(model), "tp": {}}
    del model
    for tp in TPS:
        ranks = []
        for rank in range(tp):
            t0 = time.perf_counter()
            try:
                ranks.append(r.weights(b.build(b.model_config(cfg, mml), tp, rank)[0],
                                       detail=rank == 0))
            except Exception as e:       # vLLM's own refusal (a head count TP does not divide)
                ranks.append({"refused": textwrap.wrap(f"{type(e).__name__}: {e}"[:400], 90)})
            print(name, f"TP {tp} rank {rank}", f"{time.perf_counter() - t0:.1f} s",
                  file=sys.stderr, flush=True)
            if "refused" in ranks[-1]:
                break
        out["tp"][str(tp)] = ranks
    return out


def main():
    b.rc.rqn.rmm_main_env()
    stand_ins.register()
    path = HERE / "answers.json"
    answers = json.loads(path.read_text()) if path.exists() else {"cases": {}}
    answers["substitutions"] = [*b.SUBSTITUTIONS[:1], *stand_ins.SUBSTITUTIONS,
                                "2. the backend by the layer's use_mla (pick_backend)"]
    for name in sys.argv[1:] or list(CASES):
        answers["cases"][name] = record(name)
        path.write_text(json.dumps(answers, indent=1) + "\n")


if __name__ == "__main__":
    main()
