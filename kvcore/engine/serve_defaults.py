"""The token budget and `max_num_seqs` that `vllm serve` starts with on a GPU.

`SchedulerConfig`'s own defaults are 2,048 tokens and 128 sequences (vLLM 0.33
`config/scheduler.py`), and they are what kvcli runs when it knows no GPU. But `vllm serve`
does not start from them: `EngineArgs.get_batch_defaults` (`engine/arg_utils.py`) picks by the
device (its total memory, and its name for the A100), for the OpenAI server:

| the GPU                                        | budget | max_num_seqs |
|------------------------------------------------|--------|--------------|
| 160 GiB or more (B200, B300, MI300X)           | 16,384 | 1,024        |
| 70 GiB or more, not an A100 (H100, H200)       |  8,192 | 1,024        |
| anything else (A100, L40S, L4)                 |  2,048 |   256        |

(the `LLM` class and the CPU platform have other tables; kvcli models the server). So when a
run names its GPU (`gpu`, or the GPU a calibration file was measured on), kvcli starts from
that row where the user set neither value; `sched_limits` then applies vLLM's rules over it
(at least `max_model_len` with chunked prefill off, at most `max_num_seqs` x `max_model_len`,
`max_num_seqs` at most the budget), as `vllm serve` does after `get_batch_defaults`.
"""

from __future__ import annotations

from kvcore.clock.gpus import Gpu, find_gpu
from kvcore.engine.options import ReplayOptions

GIB = 1 << 30
BATCH_OPTIONS = frozenset({"max_num_batched_tokens", "max_num_seqs"})


def batch_defaults(gpu: Gpu) -> tuple[int, int]:
    """(max_num_batched_tokens, max_num_seqs) `vllm serve` starts with on the preset ``gpu``.
    Its memory is the datasheet's (10^9 bytes); CUDA reports a little less (79.1 GiB for an
    H100's "80 GB"), on the same side of each threshold for every preset."""
    return device_batch_defaults(gpu.mem_gb * 1e9, gpu.label)


def device_batch_defaults(total_memory: float, name: str) -> tuple[int, int]:
    """The same for a device as CUDA describes it: its total memory in bytes and its name
    (`kvcli bench --gpu --trace` replays with the defaults of the GPU it times)."""
    if total_memory >= 160 * GIB:
        return 16384, 1024
    if total_memory >= 70 * GIB and "a100" not in name.lower():
        return 8192, 1024
    return 2048, 256


def named_gpu(cfg: ReplayOptions) -> Gpu | None:
    """The GPU a run names: `gpu`'s preset, else the one its calibration file was measured on
    (None for a file measured on a CPU, or no GPU named)."""
    if cfg.gpu:
        return find_gpu(cfg.gpu)
    if cfg.calibration:
        from kvcore.clock.calibration import CPU_NAME_PREFIX, read_calibration
        from kvcore.errors import InputError

        try:
            cal = read_calibration(cfg.calibration)
        except InputError:
            return None     # (the clock refuses the file, after its own usage checks)
        if not str(cal.doc["gpu"]["name"]).startswith(CPU_NAME_PREFIX):
            return cal.gpu
    return None


def unnamed_note(cfg: ReplayOptions, user: set[str] | frozenset[str]) -> str | None:
    """The warning for an engine run that sizes its pool from a GPU's memory but names no GPU,
    and leaves a batch default to kvcli (None when that is not the case)."""
    if (cfg.mode != "engine" or cfg.gpu_memory_gib is None or named_gpu(cfg) is not None
            or BATCH_OPTIONS <= user):
        return None
    return UNNAMED_NOTE


# (SchedulerConfig's defaults are no `vllm serve`'s on any GPU: a memory given is a GPU meant)
UNNAMED_NOTE = ("max_num_batched_tokens and max_num_seqs start from vLLM's SchedulerConfig "
                "defaults (2,048 and 128) with no GPU named; vllm serve starts from its GPU's: "
                "8,192 and 1,024 on an H100 or H200, 2,048 and 256 on an A100, L40S or L4, "
                "16,384 and 1,024 on a B200 (name the GPU with gpu, or give them)")
