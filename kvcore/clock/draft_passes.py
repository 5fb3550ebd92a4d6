"""An EAGLE drafter's GPU time in a step: the K forward passes vLLM's runner makes after the
target's (v1/worker/gpu/spec_decode/target_dependent_ar/speculator.py `propose`).

The first pass runs the draft over every token the step scheduled (its KV cache needs each),
then K - 1 passes one token for each request that sampled (a decode or a verification; a
prefill that completes its prompt too, which the clock's batch does not mark: left out). Each
is timed by the roofline of the draft's own geometry (`kvcore.models.eagle_draft`: its
layers, and an LM head over the draft vocabulary), plus what that plain geometry lacks:
EAGLE-3's first layer reads twice the hidden size into its QKV (every pass), and the ``fc``
that folds the target's hidden states in (the first pass). A model, like the target's clock,
not a measurement.
"""

from __future__ import annotations

from dataclasses import replace

from kvcore.clock.batch import StepBatch
from kvcore.clock.roofline import RooflineClock
from kvcore.clock.work import aggregate
from kvcore.models.eagle_draft import DraftModel


class DraftPasses:
    """The drafter's passes a step, for a target timed by `target` (its GPU, TP, factors)."""

    __slots__ = ("clock", "every_pass_params", "first_pass_params", "k")

    def __init__(self, draft: DraftModel, k: int, target: RooflineClock) -> None:
        g = draft.geometry
        if draft.method == "mtp" and len(g.layer_kinds) > 1:
            # (several MTP modules, drafted at K 1 only: the one pass runs module 0, vLLM's
            # spec_step_idx % n; the others hold weights and cache but run no pass)
            g = replace(g, layer_kinds=g.layer_kinds[:1], moe_layers=g.moe_layers[:1],
                        layer_heads=g.layer_heads[:1],
                        counted_moe_layers=int(any(g.moe_layers[:1])))
        # (its attention takes verifications on the decode path as the target's does; its
        # passes sample one logit row a request)
        self.clock = RooflineClock(replace(g, vocab_size=draft.lm_head_rows,
                                           name=f"{draft.name} (draft)"),
                                   target.gpu, tp=target.tp,
                                   kv_cache_dtype=target.kv_cache_dtype,
                                   factors=target.factors, spec_tokens=k, verify_logits=False)
        self.k = k
        self.every_pass_params = draft.pass_split // target.tp + draft.pass_whole
        self.first_pass_params = draft.fc_params

    def gpu_ms(self, batch: StepBatch) -> float:
        """The drafter's GPU time after the target's forward over `batch`."""
        clock = self.clock
        tokens = batch.num_tokens
        ms = clock.forward_ms(aggregate(clock.ws, batch)) + clock.gemm_ms(
            self.first_pass_params + self.every_pass_params, tokens)
        contexts = [c for t, c, prefill in batch.requests if t and not prefill]
        n = len(contexts) + batch.agg_decodes
        if not n:
            return ms
        base = sum(contexts) + batch.agg_context
        for i in range(1, self.k):
            # (each pass one token more for every drafting request)
            later = StepBatch(agg_decodes=n, agg_context=base + i * n)
            ms += clock.forward_ms(aggregate(clock.ws, later))
            ms += clock.gemm_ms(self.every_pass_params, n)
        return ms
