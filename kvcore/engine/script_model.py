"""A model's KV cache groups in place of an op script's ``groups`` (`kvcli script --model`,
`--model-config` or explicit layers), and the caller's overrides of the script's config."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kvcore.engine.op_script import ScriptConfig
from kvcore.errors import InputError
from kvcore.mm_options import MMOptions
from kvcore.models.pangu_sinks import refuse_sink_run

if TYPE_CHECKING:
    from kvcore.sizing.result import SizingResult


def _positive(name: str, v: int | None) -> None:
    if v is not None and v < 1:
        raise InputError(f"must be >= 1, got {v}", field=name)


GEOMETRY_KEYS = ("kv_heads", "head_dim", "sliding_window", "sliding_layers",
                  "attention_chunk_size", "chunked_layers")


def with_model(cfg: ScriptConfig, *, model: str | None = None, model_config: str | None = None,
               layers: int | None = None, gpu_memory_gib: float | None = None,
               num_blocks: int | None = None, block_size: int | None = None,
               max_model_len: int | None = None, mm: MMOptions | None = None,
               **geometry) -> ScriptConfig:
    """`cfg` with the caller's overrides applied (they beat the script's config).

    Without a model only ``block_size``, ``num_blocks`` and ``max_model_len`` change. With one
    (``model`` preset, ``model_config`` path, or ``layers`` + ``geometry``: kv_heads, head_dim,
    sliding_window, sliding_layers, attention_chunk_size, chunked_layers) its KV cache groups
    replace ``groups`` (sized at ``block_size`` by `kvcore.sizing`, which may raise a group's
    block size to unify page sizes), ``num_blocks`` comes from ``gpu_memory_gib`` when given,
    and ``max_model_len`` is the model's unless the caller or the script sets it. ``mm``:
    vLLM's multimodal serving options, which change the model's weights and so only a pool
    sized from ``gpu_memory_gib`` (elsewhere, or where the model ignores them, `mm_notes` says
    so). Raises `InputError` (exit 2) for a combination that makes no sense.
    """
    for name, v in (("block_size", block_size), ("num_blocks", num_blocks),
                    ("max_model_len", max_model_len)):
        _positive(name, v)
    extra = [k for k in GEOMETRY_KEYS if geometry.get(k) is not None]
    if extra and layers is None:
        raise InputError("describes a model's layers: give it with layers (and kv_heads, "
                         "head_dim), or use a model preset", field=extra[0])
    has_model = model is not None or model_config is not None or layers is not None
    if gpu_memory_gib is not None and not has_model:
        raise InputError("needs a model (a preset, a config.json or explicit layers) to size "
                         "num_blocks from", field="gpu_memory_gib")
    if gpu_memory_gib is not None and num_blocks is not None:
        raise InputError("give num_blocks or gpu_memory_gib, not both", field="num_blocks")
    if block_size is not None:
        cfg.block_size = block_size
    if num_blocks is not None:
        cfg.num_blocks = num_blocks
    if max_model_len is not None:
        cfg.max_model_len = max_model_len
    mm = mm or MMOptions()
    if gpu_memory_gib is None:
        why = ("no effect on the pool unless it is sized from a model's gpu_memory_gib (they "
               "change the model's weights)")
        cfg.mm_notes = tuple((k, why) for k in mm.given_fields)
    if not has_model:
        return cfg
    keep_len = max_model_len is not None or "max_model_len" in cfg.given
    try:
        res = _resolve(cfg, model, model_config, layers, gpu_memory_gib, block_size, keep_len,
                       mm, geometry)
    except InputError as err:
        if err.field != "block_size" or block_size is not None or cfg.where is None:
            raise
        # (the script's own block_size refused: its file and line, as a trace's config line)
        raise InputError(err.message, path=cfg.where[0], line=cfg.where[1],
                         field="config.block_size") from None
    # (a script runs vLLM's KVCacheManager, which vLLM 0.33 cannot build over sink attention)
    refuse_sink_run(res.geometry, "model" if model else "model_config")
    if gpu_memory_gib is not None and res.mm is not None:
        cfg.mm_notes = res.mm.notes
    cfg.specs = list(res.config.kv_cache_groups)
    cfg.groups = [group_config(g.kv_cache_spec) for g in cfg.specs]
    cfg.num_blocks = res.config.num_blocks
    cfg.max_model_len = res.ctx.max_model_len
    cfg.model = model or model_config or "custom geometry"
    return cfg


def _resolve(cfg: ScriptConfig, model: str | None, model_config: str | None,
             layers: int | None, gpu_memory_gib: float | None, block_size: int | None,
             keep_len: bool, mm: MMOptions, geometry: dict) -> SizingResult:
    from kvcore.sizing.resolve import resolve_kv_cache_config

    return resolve_kv_cache_config(
        model, model_config=model_config, layers=layers,
        gpu_memory_gib=gpu_memory_gib, block_size=sizing_block(cfg, block_size),
        max_model_len=cfg.max_model_len if keep_len else None, max_concurrent_batches=1,
        num_blocks=None if gpu_memory_gib is not None else cfg.num_blocks,
        check_memory=False, mm=mm if gpu_memory_gib is not None else None,
        **{k: geometry.get(k) for k in GEOMETRY_KEYS})  # type: ignore[arg-type]


def sizing_block(cfg: ScriptConfig, given: int | None) -> int | None:
    """The block size a model is sized at: the caller's or the script's, None (vLLM's default
    16, raised for a sparse MLA model) where neither gave one. A given 16 stays given (it
    read as unset, so a sparse MLA model ran at 64 where `kvcli config` refuses 16)."""
    return cfg.block_size if given is not None or "block_size" in cfg.given else None


def group_config(spec) -> dict:
    """An op-script-style description of a group spec: type, block size, window or chunk."""
    from kvcore.group_specs import kind_of

    first = getattr(spec, "first_spec", spec)   # uniform-type groups: their first layer's spec
    d: dict[str, Any] = {"type": kind_of(spec), "block_size": spec.block_size}
    for key in ("sliding_window", "attention_chunk_size"):
        if getattr(first, key, None):
            d[key] = getattr(first, key)
    return d
