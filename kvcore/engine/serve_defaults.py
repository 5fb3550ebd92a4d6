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
from kvcore.engine.scheduler import SchedulerConfig

GIB = 1 << 30
BATCH_OPTIONS = ("max_num_batched_tokens", "max_num_seqs")
# (kvcore's SchedulerConfig holds vLLM's class defaults: 2,048 and 128)
SCHEDULER_CONFIG = {o: getattr(SchedulerConfig(), o) for o in BATCH_OPTIONS}
# The rows as a person reads them (the presets' names; `tests/test_serve_defaults.py` checks
# each preset against `device_batch_defaults`): (which GPUs, budget, max_num_seqs).
ROWS = (("an H100 or H200", 8192, 1024), ("a B200 or MI300X", 16384, 1024),
        ("an A100, L40S, L4 or GB10", 2048, 256))


def rows_text(*options: str) -> str:
    """The rows in words for ``options`` (of `BATCH_OPTIONS`): "8,192 on an H100 or H200,
    ...", or "8,192 and 1,024 on ..." for both; for help texts and warnings."""
    at = [BATCH_OPTIONS.index(o) for o in options]
    return ", ".join(" and ".join(f"{(row[1], row[2])[k]:,}" for k in at) + f" on {row[0]}"
                     for row in ROWS)


def batch_defaults(gpu: Gpu) -> tuple[int, int]:
    """(max_num_batched_tokens, max_num_seqs) `vllm serve` starts with on the preset ``gpu``.
    Its memory is the datasheet's (10^9 bytes); CUDA reports a little less (79.1 GiB for an
    H100's "80 GB"), on the same side of each threshold for every preset."""
    return device_batch_defaults(gpu.mem_gb * 1e9, gpu.label)


def device_batch_defaults(total_memory: float, name: str,
                          capability: tuple[int, int] | None = None) -> tuple[int, int]:
    """The same for a device as CUDA describes it: its total memory in bytes, its name and
    compute capability (a GB10, 12.1, has the memory but stays on the small row, as an A100)."""
    if total_memory >= 160 * GIB:
        return 16384, 1024
    if total_memory >= 70 * GIB and "a100" not in name.lower() and capability != (12, 1):
        return 8192, 1024
    return 2048, 256


def named_defaults(cfg: ReplayOptions) -> tuple[int, int] | None:
    """`vllm serve`'s batch defaults on the GPU a run names: `gpu`'s preset, else the GPU its
    calibration file was measured on (None: no GPU named, or a file measured on a CPU)."""
    if cfg.gpu:
        return batch_defaults(find_gpu(cfg.gpu))
    if cfg.calibration:
        from kvcore.clock.calibration import CPU_NAME_PREFIX, read_calibration
        from kvcore.errors import InputError

        try:
            cal = read_calibration(cfg.calibration)
        except InputError:
            return None     # (the clock refuses the file, after its own usage checks)
        gpu = cal.doc["gpu"]
        if not str(gpu["name"]).startswith(CPU_NAME_PREFIX):
            cc = str(gpu.get("cc") or "").partition(".")
            capability = (int(cc[0]), int(cc[2])) if cc[0].isdigit() and cc[2].isdigit() \
                else None
            return device_batch_defaults(cal.gpu.mem_gb * 1e9, str(gpu["name"]), capability)
    return None


def idle_mode_reason(mode: str, given: set[str] | frozenset[str]) -> str | None:
    """Why `performance_mode` ``mode`` changes nothing, with the options ``given`` (their
    field names); None where it acts. vLLM's interactivity mode sizes CUDA graphs, which no
    clock here models; throughput doubles only the batch defaults; balanced is the default
    (restated, nothing is said, as for any default). `kvcli replay` and `kvcli config` word
    their warnings around it."""
    if mode == "interactivity":
        return "it changes only vLLM's CUDA graphs, which kvcli does not model"
    if mode == "throughput" and set(BATCH_OPTIONS) <= given:
        return ("throughput doubles only the batch defaults, and max_num_batched_tokens and "
                "max_num_seqs are given")
    return None


def unnamed_note(cfg: ReplayOptions, user: set[str] | frozenset[str]) -> str | None:
    """The warning for an engine run whose pool is sized from a GPU's memory but that names no
    GPU and leaves a batch default to kvcli: SchedulerConfig's, which no `vllm serve` on a
    GPU starts with (a memory given is a GPU meant). None when that is not the case."""
    left = [o for o in BATCH_OPTIONS if o not in user]
    if (cfg.mode != "engine" or cfg.gpu_memory_gib is None or "num_blocks" in user
            or not left or named_defaults(cfg) is not None):
        return None
    return (f"{' and '.join(left)} {'start' if len(left) > 1 else 'starts'} from vLLM's "
            f"SchedulerConfig default{'s' if len(left) > 1 else ''} "
            f"({' and '.join(f'{SCHEDULER_CONFIG[o]:,}' for o in left)}) with no GPU named; "
            f"vllm serve starts from its GPU's: {rows_text(*left)} (option gpu names it)")
