# ruff: noqa
"""Dev tool (not a test): what vLLM 0.33 derives for method "mtp" with several MTP modules,
DeepSeek-V3's `num_nextn_predict_layers` and Qwen3.5's `mtp_num_hidden_layers` (tiny configs of
tiny-deepseek-v3/ and ../mtp_draft/10-tiny-qwen3-5-moe/, the key set to N, written under
WORKDIR): whether `use_multi_module_mtp()` holds and the prefill and hash lookaheads the
scheduler gets (block 16, prefix caching on). Prints one line per probe (-> probe_multi_module.out).

    R=~/.cache/vllm-oracle; HF_HUB_OFFLINE=1 VLLM_LOGGING_LEVEL=ERROR PYTHONPATH=$R/src \\
        $R/venv/bin/python tests/data/sched_spec_mtp/probe_multi_module.py WORKDIR
"""
import json, os, sys
from pathlib import Path
os.environ.setdefault("HF_HUB_OFFLINE", "1")
from vllm.config import ModelConfig, ParallelConfig, SpeculativeConfig, VllmConfig, DeviceConfig, CacheConfig
HERE = Path(__file__).resolve().parent
T = HERE.parent / "mtp_draft" / "10-tiny-qwen3-5-moe" / "target" / "config.json"
D = HERE / "tiny-deepseek-v3" / "config.json"
WORK = Path(sys.argv[1])
for label, src, key in (("qwen3_5_moe", T, "mtp_num_hidden_layers"), ("deepseek_v3", D, "num_nextn_predict_layers")):
    base = json.loads(src.read_text())
    for n, k in ((1, 2), (2, 1), (2, 2), (2, 4), (3, 3)):
        cfg = dict(base)
        if "text_config" in cfg and key in cfg["text_config"]:
            cfg["text_config"] = dict(cfg["text_config"], **{key: n})
        else:
            cfg[key] = n
        d = WORK / f"{label}-{n}"; d.mkdir(parents=True, exist_ok=True)
        (d / "config.json").write_text(json.dumps(cfg))
        try:
            mc = ModelConfig(model=str(d), dtype="float16", seed=0, skip_tokenizer_init=True, max_model_len=4096)
            sp = SpeculativeConfig(method="mtp", num_speculative_tokens=k, target_model_config=mc, target_parallel_config=ParallelConfig())
            vc = VllmConfig(model_config=mc, parallel_config=ParallelConfig(), speculative_config=sp,
                            cache_config=CacheConfig(block_size=16, enable_prefix_caching=True), device_config=DeviceConfig(device="cpu"))
            hf = sp.draft_model_config.hf_config
            out = dict(n_predict=getattr(hf, "n_predict", None), nextn=getattr(hf, "num_nextn_predict_layers", None),
                       arch=sp.draft_model_config.architectures, multi=sp.use_multi_module_mtp(),
                       prefill=vc.num_prefill_lookahead_tokens, hash=vc.num_hash_lookahead_tokens)
        except Exception as e:
            out = {"refused": f"{type(e).__name__}: {(e.errors()[0]['msg'] if hasattr(e, 'errors') else str(e))[:200]}"}
        print(label, key, n, "K", k, json.dumps(out), flush=True)
