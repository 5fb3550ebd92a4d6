"""Step3's language model (`step3_text`, vLLM 0.33's step3_text.py; Step3-VL's text_config): its
attention is multi-matrix factorised (MFA): one replicated ``qkv_proj`` makes a low-rank query
``share_q_dim`` wide and the one shared KV head (``head_dim`` wide; vLLM builds one KV head
whatever ``num_attention_groups`` says), an RMSNorm (``inter_norm``) over the query, then ``wq``
(column-parallel) lifts it to the heads and ``o_proj`` (row-parallel) maps them back. The layers
``moe_layers_enum`` lists (a comma-separated string, which vLLM splits) hold ``moe_num_experts``
experts with a replicated router and one shared expert ``share_expert_dim`` wide; the rest a
dense MLP. Its own LM head whatever ``tie_word_embeddings`` says. The RoPE cache spans
``max_position_embedding`` positions; the length is ``max_seq_len`` (vLLM's key).

Checked on the meta device, every rank: tests/data/weights_census/mm_step3/; quantised (fp8,
fp8 blocks, AWQ, GPTQ, compressed-tensors: every linear and the experts take the quant_config,
the router, the LM head and the attention's KV cache not; Step3-VL's tower is built without
it) in quant_step3/; on pipeline stages (`stage_refusal`: vLLM cannot build a later stage of a
config without ``tie_word_embeddings``) in step3_pp/. Not modelled, refused by name: other
quantisation methods and an fp8 ignore list.
"""

from __future__ import annotations

from typing import Any

from kvcore.errors import InputError, clipped
from kvcore.models import rank_params as rp
from kvcore.models.geometry import ModelGeometry
from kvcore.models.int_quant import LINEAR_METHODS
from kvcore.models.rank_params import Ledger
from kvcore.models.step3p5 import STEP3P5

STEP3_TEXT = "step3_text"
# kvcli's key: Step3TextConfig's own (vLLM's transformers_utils/configs/step3_vl.py)
ALIASES = {"max_position_embeddings": "max_seq_len"}
# Step3TextConfig's defaults, under its own keys (its moe_layers_enum default is a tuple, which
# step3_text.py cannot split: `step3_fields` refuses a config without one)
DEFAULTS: dict[str, Any] = {
    "hidden_size": 7168, "intermediate_size": 18432, "num_attention_heads": 64,
    "num_hidden_layers": 61, "max_seq_len": 65536, "vocab_size": 128815,
    "moe_intermediate_size": 5120, "moe_num_experts": 48, "moe_top_k": 3,
    "max_position_embedding": 65536, "share_expert_dim": 5120, "share_q_dim": 2048,
    "head_dim": 256, "rope_theta": 500000.0}


def stage_refusal(g: ModelGeometry, ranges: list[range]) -> str | None:
    """vLLM's refusal of Step3's or Step-3.5's pipeline stages `ranges` (None: it builds them):
    Step3's later stages where its config gives no tie_word_embeddings; a Step-3.5 stage
    without a MoE layer (step3p5.py asserts one)."""
    if len(ranges) > 1 and g.later_stages_refused:
        return g.later_stages_refused
    if g.model_type == STEP3P5 and any(not any(g.moe_layers[i] for i in r) for r in ranges):
        return "AssertionError: No MoE layers found in the model."
    return None


def unsized_quant(method: str | None, fp8_ignored: bool, what: str) -> str:
    """Why kvcli does not size a quantised checkpoint of Step3's or Step-3.5's (`what`) weights
    ("" where it does): its method not one whose linears kvcli packs, or an fp8 ignore list,
    which the MoE ledgers do not apply."""
    if method is None or (method in LINEAR_METHODS and not (method == "fp8" and fp8_ignored)):
        return ""
    return (f"a quantised {what} checkpoint's weights (kvcli sizes fp8 without an ignore list, "
            "AWQ, GPTQ and compressed-tensors)")


def step3_fields(c: dict[str, Any], get_dim, n_layers: int, unsized: str,
                 source: str) -> dict[str, Any]:
    """The geometry's Step3 parts: the MoE layers, the query's and shared expert's widths, the
    RoPE cache's positions (the length read from ``max_seq_len`` is kept)."""
    enum: Any = c.get("moe_layers_enum")
    try:
        listed = {int(i) for i in enum.strip().split(",")}
    except (AttributeError, ValueError):
        raise InputError(f"expected a string of comma-separated layer indices, got "
                         f"{clipped(enum)}: vLLM 0.33's step3_text.py splits it (and fails "
                         "on its config class's default, a tuple)", path=source or None,
                         field="moe_layers_enum") from None
    return {"moe_layers": tuple(i in listed for i in range(n_layers)),
            # (required: a null is no width; absent, Step3TextConfig's default stands in `c`)
            "num_kv_heads": 1, "share_q_dim": get_dim("share_q_dim", required=True),
            "shared_expert_width": get_dim("share_expert_dim", required=True),
            "max_position_embeddings": get_dim("max_position_embedding", required=True),
            "weights_unmodelled": unsized,
            # (step3_text.py reads config.tie_word_embeddings off the first stage, which
            # Step3TextConfig does not default: tests/data/weights_census/step3_pp)
            "later_stages_refused": "" if "tie_word_embeddings" in c else (
                "AttributeError: 'Step3TextConfig' object has no attribute "
                "'tie_word_embeddings'")}


def step3_ledger(g: ModelGeometry, tp: int, layers: range | None = None, first: bool = True,
                 last: bool = True) -> Ledger:
    """One of ``tp`` ranks' parameters, of the decoder `layers` (None: all); the embedding on
    the `first` pipeline stage (and the `last`, where tied), the LM head and the final norm on
    the `last`."""
    h, hd, q, e = g.hidden_size, g.head_dim, g.share_q_dim, g.num_experts
    if any(g.moe_layers) and tp > e:    # (FusedMoEBlock's own check)
        raise InputError(f"tensor parallel size {tp} is greater than the number of experts "
                         f"{e}, which vLLM 0.33's step3_text.py refuses",
                         field="tensor_parallel_size")
    led = Ledger()
    # (the embedding, its own LM head and the final norm)
    embedding = first or (last and g.tie_word_embeddings)
    led.model += rp.vocab_rows(g, tp) * h * (embedding + last) + h * last
    heads = g.num_attention_heads * hd
    for i, moe in enumerate(g.moe_layers):
        if layers is not None and i not in layers:
            continue
        # qkv_proj (replicated), wq (column), o_proj (row); inter_norm and the layer's 2 norms
        led.layer += h * (q + 2 * hd) + q * heads // tp + heads * h // tp
        led.model += q + 2 * h
        if moe:
            led.model += e * h      # (the router, replicated, in the model dtype)
            led.layer += 3 * h * (e * g.moe_intermediate_size + g.shared_expert_width) // tp
        else:
            led.layer += 3 * h * g.intermediate_size // tp
    return led
