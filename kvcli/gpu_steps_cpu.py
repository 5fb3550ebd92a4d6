"""`kvcli bench --gpu --trace --device cpu`: the run under Triton's interpreter (the tests'; its
times describe the CPU). What it may ask of this machine is bounded before it starts: the steps
it times (`MAX_CPU_SAMPLE_STEPS`, an estimate said first) and the pool it allocates on the host
(`check_host_pool`)."""

from __future__ import annotations

from typing import Any

# --device cpu runs each kernel under Triton's interpreter: ~80 us a key per KV head (17 s a
# kernel for the chat sample's 26,609-key step, 8 KV heads, on a busy 2-core machine), so
# --sample-steps 10,000 ran for days without a word. The CPU run is the tests' (its times mean
# nothing): at most the default's 32 steps, and the kernels and an estimate said first.
MAX_CPU_SAMPLE_STEPS = 32
CPU_S_PER_KEY_HEAD = 80e-6


def cpu_estimate(cap: Any, timed: list[int], num_kv_heads: int, dtypes: int) -> str:
    """The line ``--device cpu`` says before timing: how many kernels (``dtypes`` cache dtypes
    each), and about how long."""
    from kernels.cases import keys_read

    kernels = len(cap.steps) * len(timed) * dtypes * 2      # x 2 strategies
    keys = sum(keys_read(st.seq_lens, cap.groups[g].sliding_window)
               for st in cap.steps for g in timed)
    secs = keys * num_kv_heads * CPU_S_PER_KEY_HEAD * dtypes * 2
    about = f"{secs / 60:,.0f} min" if secs >= 90 else f"{secs:,.0f} s"
    return (f"--device cpu: {kernels} kernel(s) to time ({len(cap.steps)} step(s) x "
            f"{len(timed)} group(s) x {dtypes} cache dtypes x 2 strategies) under "
            f"Triton's interpreter: about {about}")


def pool_host_bytes(num_blocks: int, block_size: int, num_kv_heads: int, head_dim: int,
                    q_dtype: str) -> dict[str, int]:
    """Host bytes the CPU run's pool takes at its peak, per cache dtype: one copy
    (`kernels.steps.make_pool`) of ``[num_blocks, 2, page, Hkv, D]``, q's dtype for bf16; an fp8
    cache is drawn in float32 and then cast (`kernels.cases.random_kv`): 4 + 1 bytes a value.
    The dtypes run one after the other, each pool freed before the next."""
    values = num_blocks * 2 * block_size * num_kv_heads * head_dim
    q_size = {"fp32": 4}.get(q_dtype, 2)
    return {"bf16": values * q_size, "fp8": values * (4 + 1)}


def check_host_pool(trace: Any, num_blocks: int, block_size: int, num_kv_heads: int,
                    head_dim: int, q_dtype: str) -> None:
    """``--device cpu`` allocates the replay's whole pool on the host: refused (`InputError`,
    naming the trace's num_blocks) when its peak cannot fit the memory left (2,000,000 blocks
    asked torch for 131 GB in bf16, 262 GB in fp8). A GPU's pool is sized within its memory
    (`kernels.timing.copies_for`); a single copy that does not fit is that dtype's error."""
    from kvcore.host_memory import GiB, check_fits

    by = pool_host_bytes(num_blocks, block_size, num_kv_heads, head_dim, q_dtype)
    kv, need = max(by.items(), key=lambda x: x[1])
    given = "num_blocks" in trace.config_keys
    where = "its config line" if given else "add it to the trace's config line"
    check_fits(need, f"--device cpu allocates the replay's whole KV pool on the host: "
               f"{num_blocks:,} blocks x {block_size} tokens x {num_kv_heads} KV heads x "
               f"{head_dim} need ~{need / GiB:,.1f} GiB for its {kv} copy; lower num_blocks "
               f"({where}) or time it on a GPU (--device cuda)", field="num_blocks",
               path=trace.label, line=trace.config_line if given else None)
