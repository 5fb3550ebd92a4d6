# ruff: noqa
"""Dev tool (not a test): vLLM 0.33's multimodal towers beside Gemma 3n's, Gemma 4's and
LFM2's text models (Gemma3nForConditionalGeneration, Gemma4ForConditionalGeneration,
Lfm2VlForConditionalGeneration), rank by rank at TP 1, 2, 4 and 8 (-> answers.json), for
tests/test_gemma_mm_towers.py.

    pip install --no-deps --target /tmp/timm_pkg timm==1.0.31   # (Gemma 3n's MobileNetV5)
    ulimit -v 16000000; HF_HUB_OFFLINE=1 VLLM_LOGGING_LEVEL=ERROR \\
        PYTHONPATH=$ORACLE_HOME/src:tests/data/mtp_draft/oracle_stubs_vision:/tmp/timm_pkg \\
        $ORACLE_HOME/venv/bin/python tests/data/weights_gemma_mm/record_towers.py [CASE ...]

(ORACLE_HOME=~/.cache/vllm-oracle; from the project root.) Each case's class is built by
vLLM's own `initialize_model` on the meta device (../weights_census/record_census.py's
substitutions and the KV-spec census's), every rank; its parameters and buffers are summed by
top-level module (language_model, vision_tower, audio_tower, embed_vision, embed_audio,
multi_modal_projector), by dtype, and the tensors the class allocates outside both (Gemma's
`per_layer_embeddings`) are listed with their shapes. A case ``<base> <flag> <value>`` passes
the multimodal option to ModelConfig as `vllm serve` does.
"""

import importlib.util, json, sys, tempfile, time, traceback
from pathlib import Path

HERE = Path(__file__).resolve().parent
_spec = importlib.util.spec_from_file_location(
    "record_kv_specs", HERE.parent / "kv_spec_census" / "record_kv_specs.py")
rks = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(rks)
rc = rks.rc

import torch
from vllm.config import (CacheConfig, DeviceConfig, LoadConfig, ModelConfig, ParallelConfig,
                         VllmConfig, set_current_vllm_config)
from vllm.model_executor.model_loader.utils import initialize_model
from vllm.platforms import current_platform
from vllm.utils.torch_utils import set_default_torch_dtype
from vllm.v1.attention.backends.registry import AttentionBackendEnum

TPS = (1, 2, 4, 8)
PLAN = json.loads((HERE.parent / "sched_gemma" / "planning.json").read_text())
CONFIGS = json.loads((HERE / "configs.json").read_text())


def text(spec):
    """A text model's config: a sched_gemma planning row's (``from``), a file's (LFM2's, its
    architecture kept: vLLM's LFM2-VL builds the text model it names), or ``inline``."""
    if "file" in spec:
        return json.loads((HERE.parent / spec["file"]).read_text())
    if "inline" in spec:        # (Gemma 4 Unified's text model: its config class's defaults)
        return dict(spec["inline"])
    cfg = dict(PLAN[spec["from"]]["config"])
    cfg.pop("architectures", None)
    return cfg


def group(name):
    return name.split(".", 1)[0]


def build(mc, tp, rank):
    rc.set_tp(tp, rank)
    vc = VllmConfig(model_config=mc, parallel_config=ParallelConfig(),
                    cache_config=CacheConfig(), device_config=DeviceConfig(device="cpu"),
                    load_config=LoadConfig(load_format="dummy", device="meta"))
    with set_current_vllm_config(vc), set_default_torch_dtype(mc.dtype), torch.device("meta"):
        model = initialize_model(vc)
    params, bufs = {}, {}
    for n, p in model.named_parameters():
        g = params.setdefault(group(n), {"numel": 0, "bytes_by_dtype": {}})
        g["numel"] += p.numel()
        k = rc.rdm.dt(p.dtype)
        g["bytes_by_dtype"][k] = g["bytes_by_dtype"].get(k, 0) + p.numel() * p.element_size()
    for n, b in model.named_buffers():
        owner, _, leaf = n.rpartition(".")
        mod = model.get_submodule(owner) if owner else model
        kind = "persistent" if leaf not in mod._non_persistent_buffers_set else "non_persistent"
        g = bufs.setdefault(group(n), {})
        k = f"{kind} {rc.rdm.dt(b.dtype)}"
        g[k] = g.get(k, 0) + b.numel() * b.element_size()
    extra = {k: [list(v.shape), rc.rdm.dt(v.dtype)] for k, v in vars(model).items()
             if isinstance(v, torch.Tensor)}
    return {"params": params, "buffers": bufs, "plain_tensors": extra,
            "scheduler_max_num_batched_tokens": vc.scheduler_config.max_num_batched_tokens}


def record(name, cfg, mm, tps=TPS):
    current_platform.get_attn_backend_cls = (
        lambda *a, **k: AttentionBackendEnum.FLASH_ATTN.get_path())
    tmp = Path(tempfile.mkdtemp())
    (tmp / "config.json").write_text(json.dumps(cfg))
    mc = ModelConfig(model=str(tmp), skip_tokenizer_init=True, seed=0, max_model_len=4096,
                     **(mm or {}))
    out = {"dtype": rc.rdm.dt(mc.dtype), "mm_options": mm, "tp": {}}
    mmc = mc.multimodal_config
    out["multimodal_config"] = None if mmc is None else {
        "language_model_only": mmc.language_model_only,
        "mm_encoder_tp_mode": mmc.mm_encoder_tp_mode,
        "limits": {m: mmc.get_limit_per_prompt(m) for m in ("image", "video", "audio")}}
    for tp in tps:
        ranks = []
        for rank in range(tp):
            t0 = time.perf_counter()
            try:
                ranks.append(build(mc, tp, rank))
            except Exception as e:
                ranks.append({"refused": f"{type(e).__name__}: {e}"[:400],
                              "traceback_tail": traceback.format_exc().splitlines()[-4:]})
            print(name, f"TP {tp} rank {rank}", "refused" if "refused" in ranks[-1] else "ok",
                  f"{time.perf_counter() - t0:.1f} s", file=sys.stderr, flush=True)
            if "refused" in ranks[-1]:
                break
        out["tp"][str(tp)] = ranks
    rc.set_tp(1, 0)
    return out


def full_config(spec):
    cfg = {k: v for k, v in spec.items() if k != "text"}
    cfg["text_config"] = text(spec["text"])
    return cfg


def cases():
    out = {}
    for name, spec in CONFIGS["configs"].items():
        out[name] = (name, None)
        for opt in CONFIGS["options"].get(name, []):
            flag, value = opt
            shown = "" if value is True else " " + json.dumps(value, separators=(",", ":"))
            key = f"{name} {flag}{shown}"
            out[key] = (name, {flag[2:].replace("-", "_"): value})
    return out


def main():
    rc.rqn.rmm_main_env()
    path = HERE / "answers.json"
    answers = json.loads(path.read_text()) if path.exists() else {"cases": {}}
    answers["substitutions"] = rc.SUBSTITUTIONS
    todo = cases()
    for name in sys.argv[1:] or [n for n in todo if n not in answers["cases"]]:
        base, mm = todo[name]
        cfg = full_config(CONFIGS["configs"][base])
        try:
            # (an option's case at TP 1 and 2: its towers are whole or split as the base's)
            answers["cases"][name] = record(name, cfg, mm, TPS if mm is None else TPS[:2])
        except Exception as e:
            answers["cases"][name] = {"refused": f"{type(e).__name__}: {e}"[:600]}
            print(name, "refused", e, file=sys.stderr, flush=True)
        answers["cases"] = dict(sorted(answers["cases"].items()))
        path.write_text(json.dumps(answers, indent=1) + "\n")


if __name__ == "__main__":
    main()
