"""vLLM 0.33 perf.py's count of the feed-forward layers (`FfnMetrics`, component ``ffn``): dense
FFN layers, and in a MoE model its routed and shared experts.

What it bills, per GPU: three matrices a layer (up, gate, down: ``2 * D * 3 * I`` FLOPs a
token), the intermediate size split over the FFN's tensor-parallel ranks, the experts over the
expert-parallel ones; routed tokens are ``tokens * experts_per_tok`` over the EP ranks, and the
routed weights read are those of ``min(routed tokens, experts)`` experts (perf.py's "perfect
load balancing"). Dense layers are the ones that are not MoE layers.

Arithmetic as perf.py's: integer layer counts (``// pp``); the read and write terms go through
``int()`` (the weight size may be 0.5), the FLOP terms are integers.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:   # (vllm_count imports this module: types only, no import cycle at run time)
    from kvcore.clock.vllm_count import Counts, VllmShape, _Sums


def ffn(sh: VllmShape, s: _Sums, out: Counts) -> None:
    """Add perf.py's ``ffn.*`` FLOPs and read / write bytes of the batch ``s``."""
    D, a, w = sh.hidden_size, sh.activation_byte_size, sh.weight_byte_size
    assert w is not None
    T = s.tokens
    k, S = sh.num_experts_per_tok, sh.num_shared_experts
    Ld = (sh.num_hidden_layers - sh.num_moe_layers) // sh.pp_size
    Lm = sh.num_moe_layers // sh.pp_size
    DI = sh.intermediate_size // sh.ffn_tp_size
    MI = sh.moe_intermediate_size // sh.ffn_tp_size
    routed = (T * k) // sh.ffn_ep_size if k else 0
    experts = sh.num_experts // sh.ffn_ep_size
    f, r, wr = out.flops, out.read_bytes, out.write_bytes
    if Ld:
        f["ffn.dense_ffn"] = 2 * D * 3 * DI * T * Ld
    if Lm and k:
        f["ffn.routed_ffn"] = 2 * D * 3 * MI * routed * Lm
    if Lm and S:
        f["ffn.shared_ffn"] = 2 * D * 3 * MI * S * T * Lm
    if Ld:
        r["ffn.dense_up_gate_input"] = int(T * D * a * Ld)
        r["ffn.dense_up_gate_weights"] = int(2 * D * DI * w * Ld)
        r["ffn.dense_silu_input"] = int(2 * T * DI * a * Ld)
        r["ffn.dense_down_input"] = int(T * DI * a * Ld)
        r["ffn.dense_down_weights"] = int(D * DI * w * Ld)
    if Lm and k:
        active = min(routed, experts)        # perf.py: "perfect load balancing"
        r["ffn.routed_up_gate_input"] = int(routed * D * a * Lm)
        r["ffn.routed_up_gate_weights"] = int(2 * D * MI * active * w * Lm)
        r["ffn.routed_silu_input"] = int(2 * routed * MI * a * Lm)
        r["ffn.routed_down_input"] = int(routed * MI * a * Lm)
        r["ffn.routed_down_weights"] = int(D * MI * active * w * Lm)
    if Lm and S:
        r["ffn.shared_up_gate_input"] = int(T * D * a * Lm)
        r["ffn.shared_up_gate_weights"] = int(2 * D * MI * S * w * Lm)
        r["ffn.shared_silu_input"] = int(2 * T * MI * S * a * Lm)
        r["ffn.shared_down_input"] = int(T * MI * a * Lm)       # (sic: no S, as perf.py)
        r["ffn.shared_down_weights"] = int(D * MI * S * w * Lm)
    if Ld:
        wr["ffn.dense_up_gate_output"] = int(2 * T * DI * a * Ld)
        wr["ffn.dense_silu_output"] = int(T * DI * a * Ld)
        wr["ffn.dense_down_output"] = int(T * D * a * Ld)
    if Lm and k:
        wr["ffn.routed_up_gate_output"] = int(2 * routed * MI * a * Lm)
        wr["ffn.routed_silu_output"] = int(routed * MI * a * Lm)
        wr["ffn.routed_down_output"] = int(routed * D * a * Lm)
    if Lm and S:
        wr["ffn.shared_up_gate_output"] = int(2 * T * S * MI * a * Lm)
        wr["ffn.shared_silu_output"] = int(T * S * MI * a * Lm)
        wr["ffn.shared_down_output"] = int(T * S * D * a * Lm)
