"""vLLM's scheduler limits at start-up, applied to an engine replay's options.

`vllm serve` derives two defaults from what the user set (`EngineArgs`, vLLM 0.33
`engine/arg_utils.py`), then `SchedulerConfig.verify_max_model_len` refuses four combinations
(`config/scheduler.py`). kvcli replayed those combinations without a word, and with
`--max-num-batched-tokens 64` alone it ran 128 sequences where vLLM runs 64: a silent
difference. Here, in vLLM's order:

0. where the run names its GPU, that GPU's `vllm serve` defaults for whichever of the budget
   and `max_num_seqs` the user did not set (`serve_defaults`; else SchedulerConfig's), doubled
   with `performance_mode` "throughput";
1. the token budget, when the user did not set it: with chunked prefill off, at least
   `max_model_len` (so a whole prompt fits one step); then at most
   `max_num_seqs * max_model_len`;
2. `max_num_seqs`, when the user did not set it: at most the budget;
3. refused (an `InputError` naming the option, or the trace's config line): a budget below
   `max_model_len` with chunked prefill off, a budget below `max_num_seqs`,
   `max_num_active_seqs` above `max_num_seqs`, a long-prefill threshold above `max_model_len`.

"Set" means given on the command line or in the trace's config line. Without a model or
`--max-model-len` kvcli has no `max_model_len` (no limit), and the rules that use it are left
out. `kvcli config` describes what `vllm serve` would start with: it applies the same rules
(`serve_limits`, its `--gpu` naming the GPU), so that config and replay never disagree on the
same settings (its scheduler line says where the values come from). The
scheduler oracle's recorded cases build `SchedulerConfig` directly, which applies 3 and not
1-2; none of them sets what 1-2 would change.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from kvcore.engine import serve_defaults
from kvcore.engine.options import ReplayOptions, resolve
from kvcore.engine.refusal import refusal
from kvcore.engine.spec_decode import lookahead_tokens
from kvcore.traces import Trace


def serve_limits(*, max_num_seqs: int | None, max_num_batched_tokens: int | None,
                 max_model_len: int | None, enable_chunked_prefill: bool,
                 gpu: str | None = None, performance_mode: str = "balanced",
                 spec_method: str | None = None,
                 num_speculative_tokens: int | None = None) -> ReplayOptions:
    """What `vllm serve` starts with (`kvcli config`): the options, None where not given,
    checked as a replay checks them, with vLLM's defaults filled in (``gpu``'s batch defaults
    where named); raises what vLLM refuses, naming the option. (``max_model_len`` None: the
    rules that need it wait; the speculative method and K: its lookahead slots.)"""
    values: dict[str, Any] = {
        "max_model_len": max_model_len, "enable_chunked_prefill": enable_chunked_prefill,
        "max_num_seqs": max_num_seqs, "max_num_batched_tokens": max_num_batched_tokens,
        "gpu": gpu, "performance_mode": performance_mode, "spec_method": spec_method,
        "num_speculative_tokens": num_speculative_tokens}
    given = {k: v for k, v in values.items() if v is not None}
    cfg = resolve(ReplayOptions(**given, given=frozenset(given)), {})
    return apply(cfg, None)


def apply(cfg: ReplayOptions, trace: Trace | None) -> ReplayOptions:
    """`cfg` with vLLM's start-up defaults filled in (engine mode); raises what vLLM refuses.
    ``trace``: its config line's values count as set (None: the options alone)."""
    if cfg.mode != "engine":
        return cfg
    user = (cfg.given or frozenset()) | set(trace.config_keys if trace is not None else ())
    fill: dict = {}
    budget, seqs, model_len = cfg.max_num_batched_tokens, cfg.max_num_seqs, cfg.max_model_len
    if not set(serve_defaults.BATCH_OPTIONS) <= user:
        # vllm serve's own defaults on the run's GPU come first (`serve_defaults`; none named:
        # SchedulerConfig's), doubled in throughput mode; a value the user set stays. (From
        # the defaults, not the value in `cfg`, which a first call may have filled already.)
        named = serve_defaults.named_defaults(cfg)
        base = named or tuple(serve_defaults.SCHEDULER_CONFIG[o]
                              for o in serve_defaults.BATCH_OPTIONS)
        times = 2 if cfg.performance_mode == "throughput" else 1
        budget = budget if "max_num_batched_tokens" in user else times * base[0]
        seqs = seqs if "max_num_seqs" in user else times * base[1]
    if "max_num_batched_tokens" not in user and model_len is not None:
        if not cfg.enable_chunked_prefill:
            budget = max(model_len, budget)
        budget = min(seqs * model_len, budget)
    if "max_num_seqs" not in user:
        seqs = min(seqs, budget)
    if budget != cfg.max_num_batched_tokens:
        fill["max_num_batched_tokens"] = budget
    if seqs != cfg.max_num_seqs:
        fill["max_num_seqs"] = seqs
    out = dataclasses.replace(cfg, **fill) if fill else cfg
    _verify(out, trace)
    return out


def _verify(cfg: ReplayOptions, trace: Trace | None) -> None:
    budget, seqs, model_len = cfg.max_num_batched_tokens, cfg.max_num_seqs, cfg.max_model_len
    refused = "vLLM refuses this at start-up"
    if model_len is not None and not cfg.enable_chunked_prefill and budget < model_len:
        raise refusal(cfg, trace, "max_num_batched_tokens",
                      f"{budget} is below max_model_len {model_len} with chunked prefill off: "
                      f"{refused} (a prompt must fit one step)",
                      ("max_model_len", "enable_chunked_prefill"))
    if budget < seqs:
        raise refusal(cfg, trace, "max_num_batched_tokens",
                      f"{budget} is below max_num_seqs {seqs}: {refused} (left unset, "
                      "max_num_seqs follows the budget down)", ("max_num_seqs",))
    active = cfg.max_num_active_seqs
    if active is not None and active > seqs:
        raise refusal(cfg, trace, "max_num_active_seqs",
                      f"{active} is above max_num_seqs {seqs}: {refused}", ("max_num_seqs",))
    threshold = cfg.long_prefill_token_threshold
    if model_len is not None and threshold > model_len:
        raise refusal(cfg, trace, "long_prefill_token_threshold",
                      f"{threshold} is above max_model_len {model_len}: {refused}",
                      ("max_model_len",))
    # (VllmConfig._set_max_num_scheduled_tokens: an EAGLE-style drafter writes KV past the
    # scheduled tokens, num_lookahead_tokens = K slots, which a step must have room beyond)
    k = lookahead_tokens(cfg)
    if k and budget <= k:
        raise refusal(cfg, trace, "max_num_batched_tokens",
                      f"{budget} leaves no token to schedule beside {cfg.spec_method}'s {k} "
                      f"lookahead slots: {refused} ('VllmConfig does not have enough slots to "
                      "schedule a token and support the speculative decoding settings.')",
                      ("num_speculative_tokens",))


# The max_num_scheduled_tokens below which vLLM warns with speculative decoding on
_SPEC_BUDGET_WARN_BELOW = 8192


def spec_budget_warning(budget: int, num_speculative_tokens: int | None) -> str | None:
    """vLLM's warning, word for word, where speculative decoding runs (any method, n-gram
    too) on a step budget below 8,192 tokens; None elsewhere. 0.33's
    `VllmConfig._set_max_num_scheduled_tokens` sets the scheduler's budget,
    max_num_scheduled_tokens, to max_num_batched_tokens (vLLM's own: after the defaults above;
    it does not take the drafts' slots off) and warns below 8,192."""
    if not num_speculative_tokens or budget >= _SPEC_BUDGET_WARN_BELOW:
        return None
    return (f"max_num_scheduled_tokens is set to {budget} based on the speculative decoding "
            "settings. This may lead to suboptimal performance. Consider increasing "
            "max_num_batched_tokens to accommodate the additional draft token slots, or "
            "decrease num_speculative_tokens.")
