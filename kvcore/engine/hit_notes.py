"""Start-up notes on a hit rate that is 0 by construction (`kvcore.engine.startup` adds them to
the replay's warnings): they need the KV cache groups, which the option warnings run before.

* Every prompt is shorter than the hit grid plus one token: a hit is whole units of the grid
  and leaves a prompt's last token to compute. The grid is the coordinator's hit alignment
  (`kvcore.coordinator`): the block size with one group; with several, the groups' lcm, or the
  hash block where Mamba partial hits are on. (A hybrid Mamba model's attention block is raised
  to fit its state, 1,312 tokens for Nemotron-Nano: `block_size` 16 said nothing while every
  prompt of a chat trace was below it.)
* Cache mode with a Mamba group that writes no prefill checkpoint (Mamba1: Jamba): a state is
  cached only where a step's computation ends on its block's end; cache mode computes a prompt
  in one piece, so hardly any prompt leaves a state to hit (Jamba on the multiturn sample: 0.0,
  0.80 in engine mode, whose prefill chunks end on block boundaries).
"""

from __future__ import annotations

import math
from typing import Any

from kvcore.prefix_match import partial_hash_hits
from kvcore.specs import MambaSpec, kind_of


def no_hit_note(cfg: Any, max_prompt_tokens: int, groups: list, hash_block_size: int,
                offloading: bool) -> str | None:
    specs = [g.kv_cache_spec for g in groups]
    if not cfg.enable_prefix_caching or not specs:
        return None
    sizes = sorted({s.block_size for s in specs})
    partial = len(specs) > 1 and partial_hash_hits(specs, hash_block_size, True)
    grid = hash_block_size if partial else math.lcm(*sizes)
    # (the CPU tier may load a whole prompt: a prompt of one block can hit there)
    if not 0 < max_prompt_tokens <= grid - (1 if offloading else 0):
        return None
    tail = (f"every prompt's tokens (at most {max_prompt_tokens:,}): a hit ends on a multiple "
            "of it and leaves a prompt's last token to compute, so no prompt can hit and the hit "
            "rate is 0 by construction")
    if partial:     # (vLLM's partial hash hits: hits end on the unit, inside a block)
        return f"prefix_match_unit {grid:,}, where a hit here can end, is at least {tail}"
    if len(specs) == 1:
        return (f"block_size {grid:,} is at least every prompt's tokens (at most "
                f"{max_prompt_tokens:,}): a hit is whole blocks and leaves a prompt's last token "
                "to compute, so no prompt can hit and the hit rate is 0 by construction")
    kinds = ", ".join(dict.fromkeys(f"{kind_of(s)} {s.block_size:,}" for s in specs))
    unit = ("; a --prefix-match-unit (vLLM's partial hash hits) lets a hit end inside a block"
            if cfg.prefix_match_unit is None and any(isinstance(s, MambaSpec) for s in specs)
            else "")
    return (f"{grid:,} tokens, where a hit here ends (the groups' blocks: {kinds}), is at least "
            f"{tail}{unit}")


def cache_mode_mamba_note(cfg: Any, groups: list) -> str | None:
    # (a Mamba2 or GDN group writes a checkpoint inside the chunk, at the last block boundary
    # before its last token: Nemotron-Nano and Qwen3-Next hit as in engine mode; Jamba's
    # Mamba1 layers write none)
    if cfg.mode != "cache" or not cfg.enable_prefix_caching or not any(
            isinstance(s := g.kv_cache_spec, MambaSpec) and not s.num_prefill_checkpoint_blocks
            for g in groups):
        return None
    return ("cache mode computes each prompt in one piece, and a Mamba state is cached only "
            "where a step ends on its block's end: hardly any prompt leaves a state to hit, so "
            "the hit rate is near 0 by construction; engine mode (its prefill chunks end on "
            "block boundaries) gives the hit rate vllm serve would")
