"""`OffloadConfig`: the CPU tier's size and rules, as vLLM 0.33 derives them.

vLLM's `--kv-offloading-size GiB` becomes ``cpu_bytes_to_use = GiB * 2**30``; the tier holds
``int(cpu_bytes_to_use) // kv_bytes_per_chunk`` chunks, a chunk being ``blocks_per_chunk`` GPU
blocks rounded up to the 4 KiB page (`v1/kv_offload/cpu/spec.py`). ``blocks_per_chunk`` is the
offload block size (tokens, a multiple of the GPU block size) over the GPU block size; left out,
1. Bytes per GPU block come from the KV geometry of the one full-attention group
(2 x block_size x KV heads x head size x dtype bytes x layers; Llama-3-8B at TP 1 by default:
128 KiB a token).

The size is the engine's, over every tensor-parallel rank: a chunk holds each rank's share of
its blocks (`CPUOffloadingSpec`: ``worker_kv_bytes_per_block x world_size``), except an MLA
model's, whose latent every rank holds whole: vLLM keeps one copy of it (its replicated layout,
single-node ``mp`` executor on CUDA, the executor vLLM picks for TP on one node).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from kvcore.errors import InputError
from kvcore.host_memory import MAX_GIB

PAGE = 4096                    # mmap.PAGESIZE on the hosts vLLM runs on
GIB = 1 << 30
DTYPE_BYTES = {"float16": 2, "bfloat16": 2, "float32": 4, "float8_e4m3fn": 1}


def kv_bytes_per_block(block_size: int, num_layers: int, num_kv_heads: int, head_size: int,
                       kv_dtype: str) -> int:
    return 2 * block_size * num_kv_heads * head_size * DTYPE_BYTES[kv_dtype] * num_layers


def tier_copies(tp: int, mla: bool, pp: int = 1) -> int:
    """How many ranks' copies of a block a chunk holds: one for an MLA model (every rank holds
    the same latent), else one a rank: ``tp`` x ``pp`` (vLLM's world size; its replicated MLA
    layout wants no pipeline stages, `offloading/config.py:197-206`, so then one a rank too)."""
    return 1 if mla and pp == 1 else tp * pp


def chunk_bytes(block_bytes: int, blocks_per_chunk: int) -> int:
    return -(-block_bytes * blocks_per_chunk // PAGE) * PAGE


@dataclass(frozen=True, slots=True)
class OffloadConfig:
    num_chunks: int
    block_size: int                 # GPU tokens per block
    blocks_per_chunk: int
    kv_bytes_per_block: int         # one rank's (what a rank's transfer moves)
    # what the sync-load budget charges a hit token: vLLM sums every offloaded group's block
    # over its tokens (`offloading/scheduler.py:326-330`), where a chunk's bytes are one
    # aliased block id's (jamba-v0.1: 8 x 16,384 = 131,072, not 16,384)
    kv_bytes_per_token: int
    gib: float                      # the size asked for (what vLLM got as --kv-offloading-size)
    policy: str = "lru"
    prompt_only: bool = True        # vLLM's offload_prompt_only: decode KV is never stored
    store_threshold: int = 0        # < 2: off; N: a chunk is stored on its N-th offer
    max_tracker_size: int = 64_000
    sync_load_budget_bytes: int = 0  # 0: every load is asynchronous
    load_steps: int = 1             # the fake worker: engine steps an async load takes
    store_steps: int = 1            # ... and a store, from its submission
    # on the simulated clock instead: bytes per ms each way (None: the step counts above)
    bandwidth: float | None = None
    copies: int = 1                 # ranks' copies of a block in a chunk (`tier_copies`)
    # what a transfer moves for one GPU block of each offloaded group, in group order (its
    # layers' unpadded pages: `options.copy_bytes_per_block`); empty: kv_bytes_per_block
    group_copy_bytes: tuple[int, ...] = ()
    # the groups holding an EAGLE/MTP draft's layers (vLLM's `is_eagle_group`, with drafts
    # on): their trailing chunk is volatile (`eagle.py`); none flagged, no group's is
    eagle_groups: tuple[int, ...] = ()

    @property
    def tokens_per_chunk(self) -> int:
        return self.blocks_per_chunk * self.block_size

    @property
    def kv_bytes_per_chunk(self) -> int:
        """A chunk's bytes in the tier: every copy, rounded up to the page."""
        return chunk_bytes(self.kv_bytes_per_block * self.copies, self.blocks_per_chunk)


def blocks_per_chunk_of(offload_block_size: int | None, block_size: int,
                        field: str = "offload_block_size") -> int:
    if offload_block_size is None:
        return 1
    if offload_block_size <= 0 or offload_block_size % block_size:
        raise InputError(f"must be a multiple of the block size {block_size}, got "
                         f"{offload_block_size}", field=field)
    return offload_block_size // block_size


def chunks_of(gib: float, kv_bytes_per_chunk: int, field: str = "kv_offloading_size") -> int:
    """vLLM's chunk count for ``gib`` GiB (> 0). Under a chunk it is 0, and vLLM 0.33 runs
    that tier (`CPUOffloadingManager` guards its gauges for 0 chunks; the worker falls back to
    empty tensors, `v1/kv_offload/cpu/spec.py:185`): every store fails (`empty_tier_note`)."""
    if not gib <= MAX_GIB:         # NaN, infinities and 1e300 would not make bytes
        raise InputError(f"must be at most {MAX_GIB:,.0f} GiB (1 PiB), got {gib:g}", field=field)
    return int(gib * GIB) // kv_bytes_per_chunk


def empty_tier_note(cfg: OffloadConfig) -> str | None:
    """The warning for a tier of 0 chunks (None when it holds one)."""
    if cfg.num_chunks:
        return None
    return (f"kv_offloading_size {cfg.gib!r} GiB holds no chunk of {cfg.kv_bytes_per_chunk:,} "
            f"bytes (one needs {cfg.kv_bytes_per_chunk / GIB:.6g} GiB): vLLM 0.33 runs a CPU "
            "tier of 0 chunks, every store fails and nothing is loaded")


def gib_of_chunks(n: int, kv_bytes_per_chunk: int) -> float:
    """The size that makes vLLM derive exactly ``n`` chunks (the oracle's
    ``kv_offloading_size_chunks``), within `MAX_GIB` as ``kv_offloading_size`` is."""
    gib = n * kv_bytes_per_chunk / GIB
    if gib > MAX_GIB:
        # (10**17 chunks failed the assert below, the float losing the count: a traceback;
        # the bound that held them was kv_offloading_size's, naming that option)
        raise InputError(f"{n:,} chunks of {kv_bytes_per_chunk:,} bytes are {gib:.6g} GiB, more "
                         f"than the limit of {MAX_GIB:,.0f} GiB (1 PiB)",
                         field="kv_offloading_size_chunks")
    assert int(gib * GIB) // kv_bytes_per_chunk == n
    return gib


def cpu_kv_cache_size_tokens(num_chunks: int, blocks_per_chunk: int, groups: Sequence,
                             max_model_len: int | None) -> int | None:
    """vLLM's `CPUOffloadingInfo.cpu_kv_cache_size_tokens` (`kv_offload/cpu/common.py`): the
    tokens the tier holds for requests of ``max_model_len`` tokens, each offloaded group (a
    `KVCacheGroupSpec`) needing its chunks of one such request, a windowed or Mamba group its
    window's chunks at most; None without a max_model_len or a group. Not the chunks' token
    slots (``num_chunks`` x tokens a chunk) unless one full-attention group's chunk divides
    max_model_len. (``groups`` a sequence: the managers' tuple or the config's; a `list`
    annotation made the compiled build refuse the tuple.)"""
    from kvcore.offload.hybrid_groups import group_infos

    if not max_model_len or max_model_len <= 0 or not groups:
        return None
    per_request = 0
    for g in groups:
        tpc = g.kv_cache_spec.block_size * blocks_per_chunk
        need = -(-max_model_len // tpc)
        window = group_infos([g], [tpc])[0].window
        per_request += need if window is None else min(need, window)
    return num_chunks * max_model_len // per_request
