"""Dev tool (not a test, not run by CI): the deepstack scratch tensors vLLM 0.33's
Qwen3VLForConditionalGeneration (and its MoE subclass) allocates when it is built
(`deepstack_input_embeds`: a plain list, no parameter or buffer, so the census's by-dtype counts
miss it), under two max_num_batched_tokens and with the tower skipped (-> deepstack.json).
From the project root:

    ulimit -v 16000000; HF_HUB_OFFLINE=1 VLLM_LOGGING_LEVEL=ERROR \\
        PYTHONPATH=$HOME/.cache/vllm-oracle/src:tests/data/mtp_draft/oracle_stubs_vision \\
        ~/.cache/vllm-oracle/venv/bin/python tests/data/qwen_vl/record_deepstack.py

It imports ../weights_census/record_census.py for its substitutions and builds the model there
as it does (initialize_model on the meta device, TP 1).
"""
# ruff: noqa
import importlib.util, json, sys, tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
_spec = importlib.util.spec_from_file_location(
    "record_census", HERE.parent / "weights_census" / "record_census.py")
rc = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(rc)

import torch
from vllm.config import (CacheConfig, DeviceConfig, LoadConfig, ModelConfig, ParallelConfig,
                         SchedulerConfig, VllmConfig, set_current_vllm_config)
from vllm.model_executor.model_loader.utils import initialize_model
from vllm.utils.torch_utils import set_default_torch_dtype


def build(cfg, tokens, mm):
    tmp = Path(tempfile.mkdtemp())
    (tmp / "config.json").write_text(json.dumps(cfg))
    mc = ModelConfig(model=str(tmp), skip_tokenizer_init=True, seed=0, max_model_len=4096, **mm)
    rc.set_tp(1, 0)
    vc = VllmConfig(model_config=mc, parallel_config=ParallelConfig(), cache_config=CacheConfig(),
                    scheduler_config=SchedulerConfig(max_num_batched_tokens=tokens,
                                                     max_model_len=4096, is_encoder_decoder=False),
                    device_config=DeviceConfig(device="cpu"),
                    load_config=LoadConfig(load_format="dummy", device="meta"))
    with set_current_vllm_config(vc), set_default_torch_dtype(mc.dtype), torch.device("meta"):
        model = initialize_model(vc)
    ts = getattr(model, "deepstack_input_embeds", None) or []
    return {"max_num_batched_tokens": vc.scheduler_config.max_num_batched_tokens,
            "mm_options": mm, "tensors": [[list(t.shape), str(t.dtype)] for t in ts],
            "bytes": sum(t.numel() * t.element_size() for t in ts)}


def main():
    rc.rqn.rmm_main_env()
    out = {}
    for name in ("qwen3-vl-8b-instruct", "qwen3-vl-30b-a3b-instruct"):
        cfg = json.loads((HERE / f"{name}.config.json").read_text())
        out[name] = [build(cfg, t, {}) for t in (2048, 8192)]
        out[name].append(build(cfg, 8192, {"language_model_only": True}))
        print(name, out[name], file=sys.stderr, flush=True)
    (HERE / "deepstack.json").write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
