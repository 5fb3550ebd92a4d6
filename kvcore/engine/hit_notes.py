"""Start-up notes on a hit rate that is 0 by construction (`kvcore.engine.startup` adds them to
the replay's warnings): they need the KV cache groups, which the option warnings run before.

* Every prompt is shorter than the hit grid plus one token: a hit is whole units of the grid
  and leaves a prompt's last token to compute. The grid is the coordinator's hit alignment
  (`kvcore.prefix_match.cache_hit_alignment`): the block size with one group; with several,
  the groups' lcm, or the hash block where Mamba partial hits are on. (A hybrid Mamba model's attention block is raised
  to fit its state, 1,312 tokens for Nemotron-Nano: `block_size` 16 said nothing while every
  prompt of a chat trace was below it.)
* Cache mode with a Mamba group that writes no prefill checkpoint (Mamba1: Jamba): a state is
  cached only where a step's computation ends on its block's end; cache mode computes a prompt
  in one piece, so hardly any prompt leaves a state to hit (Jamba on the multiturn sample: 0.0,
  0.80 in engine mode, whose prefill chunks end on block boundaries).

A value the trace's config line set (no flag) is marked with that line's FILE:LINE and named as
the line spells it (`refusal.where_set`, `named`): the user looks for it in the file.
"""

from __future__ import annotations

import math
from typing import Any

from kvcore.engine.refusal import named, where_set
from kvcore.group_specs import kind_of
from kvcore.prefix_match import cache_hit_alignment
from kvcore.specs import MambaSpec
from kvcore.traces import Trace


def no_hit_note(cfg: Any, trace: Trace, groups: list, offloading: bool) -> str | None:
    specs = [g.kv_cache_spec for g in groups]
    max_prompt_tokens = trace.max_prompt_tokens
    if not cfg.enable_prefix_caching or not specs:
        return None
    grid = cache_hit_alignment(specs, cfg.prefix_match_unit, True)
    # (the CPU tier may load a whole prompt: a prompt of one block can hit there)
    if not 0 < max_prompt_tokens <= grid - (1 if offloading else 0):
        return None
    lcm = math.lcm(*(s.block_size for s in specs))
    unit = ""
    # (the option set the block only where a group's block is it: a hybrid Mamba model raises
    # its attention block past a block_size 16, which the config line's mark would then blame)
    sized = cfg.block_size in {s.block_size for s in specs}
    if len(specs) == 1:
        at = where_set(cfg, trace, "block_size") if sized else ""
        head, hit = f"block_size {grid:,}{at} is", "a hit is whole blocks"
    elif grid < lcm:        # (vLLM's partial hash hits: hits end on the unit, inside a block)
        head, hit = (f"prefix_match_unit {grid:,}{where_set(cfg, trace, 'prefix_match_unit')}, "
                     "where a hit here can end, is"), "a hit ends on a multiple of it"
    else:
        kinds = ", ".join(dict.fromkeys(f"{kind_of(s)} {s.block_size:,}" for s in specs))
        # (a model's layers give the groups: a config line's groups have no effect then)
        shaping = [k for k in ("block_size", "groups") if where_set(cfg, trace, k)
                   and (sized if k == "block_size" else not (cfg.model or cfg.model_config))]
        if shaping:
            kinds = f"{kinds}; {named(shaping, trace, cfg)}"
        head, hit = f"{grid:,} tokens, where a hit here ends (the groups' blocks: {kinds}), is", \
            "a hit ends on a multiple of it"
        if cfg.prefix_match_unit is None and any(isinstance(s, MambaSpec) for s in specs):
            unit = ("; a --prefix-match-unit (vLLM's partial hash hits) lets a hit end inside "
                    "a block")
    return (f"{head} at least every prompt's tokens (at most {max_prompt_tokens:,}): {hit} and "
            "leaves a prompt's last token to compute, so no prompt can hit and the hit rate is 0 "
            f"by construction{unit}")


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
