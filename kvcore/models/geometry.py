"""A model's geometry as the KV cache sees it (and the weights estimate and the clock).

`ModelGeometry` is what `kvcore.models.hf_config.read_hf_config` makes of a Hugging Face
`config.json`. `kvcore.models.worker_specs.layer_specs` turns it into vLLM's per-layer specs for
one worker (layer name -> spec, in model order), the input of
`kvcore.sizing.get_kv_cache_groups`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kvcore.models.classic_blocks import ClassicBlock
from kvcore.models.deepseek_v4 import V4Geometry
from kvcore.models.dory import DoryLayout
from kvcore.models.ernie45 import VisionExperts
from kvcore.models.int_quant import IntQuant
from kvcore.models.kv_sharing import GemmaExtras
from kvcore.models.mamba_spec import (  # (re-exported: the Mamba spec's parts lived here)
    ATTENTION_KERNEL_BLOCK_ALIGNMENT,
    NO_KV_KINDS,
    hybrid_block_size,
    mamba_state,
)
from kvcore.models.modelopt_quant import ModelOpt
from kvcore.models.nemotron_nas import NasBlocks
from kvcore.models.pangu_sinks import PanguSinks
from kvcore.models.qwen3_5 import GDN_TYPES
from kvcore.models.rope_cache import RopeCache
from kvcore.models.sparse_mla import IndexerGeometry
from kvcore.models.vision_keys import TowerPart, VisionLinear
from kvcore.models.zamba2 import Zamba2Blocks

__all__ = ["ATTENTION_KERNEL_BLOCK_ALIGNMENT", "NO_KV_KINDS", "hybrid_block_size", "mamba_state"]

# A layer's kind (`ModelGeometry.layer_kinds`): full, sliding, chunked, mamba, mla, mlp or
# parallel. "mlp": a feed-forward-only layer (Nemotron-H's '-' and 'E'): no KV cache, no spec;
# "parallel": attention and a Mamba2 mixer side by side in one layer (Falcon-H1): two specs;
# "dsv4": a DeepSeek-V4 layer (a sliding-window MLA cache, and by its compress ratio more)


@dataclass(frozen=True, slots=True)
class MambaGeometry:
    # "mamba1" (Jamba), "mamba2" (Granite-4.0-H, Nemotron-H, Falcon-H1) or "gdn" (Qwen3-Next's
    # Gated DeltaNet: n_heads/d_head the value heads and dim, n_groups/d_state the key ones)
    # or "kda" (Kimi Linear's Kimi Delta Attention: as gdn, keys and values alike)
    version: str
    d_inner: int  # intermediate size = expand * hidden_size (or mamba_n_heads * mamba_d_head)
    d_state: int
    d_conv: int
    n_heads: int = 0  # mamba2 only
    d_head: int = 0
    n_groups: int = 1
    dt_rank: int = 0  # mamba1 only
    # the SSM state's dtype when it is not the model's: vLLM keeps Nemotron-H's in float32
    # (NemotronHForCausalLMConfig, unless the config's mamba_ssm_cache_dtype says otherwise)
    ssm_dtype: str | None = None
    conv_bias: bool = False     # LFM2's short convolution's ``conv_bias`` (its projections' too)
    gated_norm: bool = True     # the Mamba2 mixer's gated RMSNorm (Falcon-H1's mamba_rms_norm)


@dataclass(frozen=True, slots=True)
class MlaGeometry:
    """DeepSeek's multi-head latent attention: what the KV cache keeps (``kv_lora_rank`` +
    ``qk_rope_head_dim`` a token) and what the weights estimate needs."""
    kv_lora_rank: int
    qk_rope_head_dim: int
    qk_nope_head_dim: int
    v_head_dim: int
    q_lora_rank: int | None  # None: queries projected from the hidden state directly (V2-Lite)
    indexer: IndexerGeometry | None = None  # DeepSeek-V3.2's sparse attention (index_topk)

    @property
    def latent_size(self) -> int:
        """vLLM's ``get_head_size()`` under MLA: the cached vector's length."""
        return self.kv_lora_rank + self.qk_rope_head_dim


@dataclass(frozen=True, slots=True)
class ModelGeometry:
    name: str
    model_type: str
    layer_kinds: tuple[str, ...]
    num_attention_heads: int
    num_kv_heads: int
    head_dim: int
    hidden_size: int
    dtype: str
    max_position_embeddings: int
    sliding_window: int | None = None
    attention_chunk_size: int | None = None
    mamba: MambaGeometry | None = None
    mla: MlaGeometry | None = None
    # For the weights estimate only.
    intermediate_size: int = 0
    vocab_size: int = 0
    tie_word_embeddings: bool = False
    num_experts: int = 0
    moe_intermediate_size: int = 0
    moe_layers: tuple[bool, ...] = field(default=())  # per layer: MoE feed-forward or dense
    attention_bias: bool = False
    attention_out_bias: bool = False    # (o_proj's own bias key: Seed-OSS's, rank_params)
    mlp_bias: bool = False      # (config.json's; the MLP types that read it: rank_params)
    head_gate_width: int = 0    # (a gate projection's outputs a query head: Laguna's g_proj)
    attention_sinks: bool = False   # (a learned logit a query head: Granite SWA's, rank_params)
    mlp_input_size: int = 0     # (the dense MLP's input, 0: hidden_size; LFM2's block_dim)
    # a q_norm and a k_norm (head_dim each) in every attention layer: GLM-4.5's ``use_qk_norm``,
    # Qwen3's, Qwen3-MoE's, Gemma 3's, Qwen3-Next's and Qwen3.5's always
    qk_norm: bool = False
    qk_norm_width: int = 0      # (their widths summed where not 2 x head_dim: Molmo's, whole)
    added_vocab: int = 0        # (embedding rows beyond the head's: Molmo's 128)
    # a float32 e_score_correction_bias beside each MoE router (one an expert): DeepSeek's
    # ``topk_method`` noaux_tc (deepseek_v2.py DeepseekV2MoE)
    router_score_bias: bool = False
    # a pre- and post-feed-forward norm beside the two every layer has (openPangu's
    # ``sandwich_norm``: `kvcore.models.openpangu`)
    sandwich_norms: bool = False
    # an fp8 checkpoint's weight_block_size: a float32 scale per block (`kvcore.models.fp8_scales`)
    fp8_block: tuple[int, int] | None = None
    fp8_static: bool = False    # (activation_scheme static: an input scale beside each weight's)
    # its ignored_layers (or modules_to_not_convert): module names vLLM leaves unquantised
    fp8_ignored: tuple[str, ...] = ()
    fp8_ignored_key: str = "ignored_layers"   # (the key holding them, named by a refusal)
    # the same names as the config wrote them, entry for entry (for messages)
    fp8_ignored_written: tuple[str, ...] = ()
    architecture: str = ""      # the config's first ``architectures`` entry ("": none)
    quantization: str | None = None
    int_quant: IntQuant | None = None   # an AWQ / GPTQ checkpoint's (`kvcore.models.int_quant`)
    modelopt: ModelOpt | None = None    # a ModelOpt one's (`kvcore.models.modelopt_quant`)
    ct_kv_scheme: str | None = None     # its kv_cache_scheme's refusal, "" none (`kv_cache_quant`)
    source: str = ""
    # For the work counts (`kvcore.clock`): experts a token is routed to, shared experts, and
    # the MoE layer count vLLM 0.33's perf.py assumes (every layer when the model has experts,
    # unless interleave_moe_layer_step or moe_layer_freq say otherwise; Jamba's
    # expert_layer_period is not read there, so it differs from `moe_layers`).
    num_experts_per_tok: int = 0
    num_shared_experts: int = 0
    # the shared experts' one MLP width where the config names it (Qwen2-MoE / Qwen3-Next
    # shared_expert_intermediate_size, Nemotron-H moe_shared_expert_intermediate_size x
    # n_shared_experts; Llama 4's one as wide as its experts, named by no key); 0:
    # num_shared_experts x moe_intermediate_size (DeepSeek). Not perf.py's: it bills none.
    shared_expert_width: int = 0
    counted_moe_layers: int = 0
    mtp_layers: int = 0     # num_nextn_predict_layers: only method mtp runs them (`mtp_draft`)
    # a multimodal checkpoint's vision tower (and projector) that vLLM builds and loads on the
    # first pipeline stage (Qwen3.5's, Gemma 3's), weights only: all its parameters, and those
    # whole on every TP rank (`kvcore.models.vision_keys.VisionParams`)
    vision_params: int = 0
    vision_whole: int = 0
    vision_heads: int = 0       # (its attention heads: TP must divide them)
    vision_mlp_width: int = 0   # (Qwen2.5-VL's MLP width: TP must divide it too)
    vision_deepstack: int = 0   # (Qwen3-VL's scratch: `VisionParams.deepstack`, buffers.py)
    # its inputs, whether vLLM may hold it whole on every rank (`kvcore.models.mm_serving`)
    vision_modalities: tuple[str, ...] = ()
    vision_data_parallel: bool = False
    # of those, what vLLM keeps when it skips the tower, and what stays split over TP under
    # ``--mm-encoder-tp-mode data`` (`VisionParams.kept`, `.data_split`)
    vision_kept: int = 0
    vision_data_split: int = 0
    vision_head_bound: tuple[int, int] = (0, 0)    # (whole where TP splits no head: InternViT)
    vision_kv_floor: tuple[int, int] = (0, 0)   # (KV heads, a head's params: Molmo2's ViT)
    vision_fp32: int = 0    # (float32 parameters beside vision_params: `VisionParams.fp32`)
    # (the whole tower in float32 though the model runs in a 2-byte dtype: `tower_rank`)
    vision_in_float32: bool = False
    # an fp8 checkpoint's tower linears vLLM quantises (`kvcore.models.fp8_vision`)
    vision_linears: tuple[VisionLinear, ...] = ()
    vision_parts: tuple[TowerPart, ...] = ()    # (towers each skipped alone: Gemma 3n's, 4's)
    # Gemma 3n's / 4's multimodal classes' scratch a batched token (`gemma3n_towers`)
    ple_scratch_width: int = 0
    perf_swa: tuple[int, int] | None = None   # perf.py's (sliding layers, window), not the kinds'
    perf_intermediate: int | None = None  # perf.py's intermediate_size if not the MLP's (0: none)
    # the buffers vLLM holds beside the weights (`kvcore.models.buffers`): the text model's
    # distinct RoPE caches, the vision tower's bytes
    rope_caches: tuple[RopeCache, ...] = ()
    vision_buffers: int = 0
    # each modality's largest item's tokens where vLLM prefills it whole (`mm_prefix`)
    mm_atomic_items: tuple[tuple[str, int], ...] = ()
    # Intern-S1-Pro's FoPE: the inverse frequencies it keeps (0: none; `models.interns1_pro`)
    fope_freqs: int = 0
    # a pre-Llama decoder's block (GPT-2, Bloom, Falcon, ...: `kvcore.models.classic_blocks`)
    classic: ClassicBlock | None = None
    context_limit: int = 0      # the longest max_model_len vLLM accepts (0: max_position_...)
    default_len: int = 0        # the max_model_len vLLM runs at when none is given (0: the same)
    # Gemma 4's per-layer (KV heads, head size) (empty: every layer num_kv_heads, head_dim) and
    # Gemma 3n's / Gemma 4's layers that read another's cache (`kvcore.models.kv_sharing`)
    layer_dims: tuple[tuple[int, int], ...] = ()
    kv_shared: tuple[bool, ...] = ()
    gemma: GemmaExtras | None = None    # their weights' other parts (`kvcore.models.gemma_weights`)
    weights_unmodelled: str = ""    # why the weights estimate refuses this model ("": it sizes)
    # vLLM's words refusing to build any pipeline stage but the first (Step3's config without
    # tie_word_embeddings: `kvcore.models.step3`); "" where it builds them
    later_stages_refused: str = ""
    zamba: Zamba2Blocks | None = None   # Zamba2's shared blocks (`kvcore.models.zamba2`)
    zero_experts: int = 0       # LongCat-Flash's zero-computation experts (`kvcore.models.longcat`)
    ngram_tables: tuple[int, ...] = ()  # LongCat-Flash-Lite's (`kvcore.models.longcat_ngram`)
    # the LM head's width and vocabulary where not hidden_size's and vocab_size's (0): Isaac's
    # top-level config's (`kvcore.models.isaac.isaac_head`)
    head_width: int = 0
    head_vocab: int = 0
    # Domyn Edge's window a layer (0: full) and its layers without RoPE (`models.domyn_edge`)
    layer_windows: tuple[int, ...] = ()
    rswa_window: int = 0    # Unlimited-OCR's R-SWA window, its full layers' (`unlimited_ocr`)
    loop_layers: int = 0    # IQuest Loop's decoder layers, each a cache a pass (`iquest_loop`)
    dory: DoryLayout | None = None  # Dory's recurrent blocks and loops (`models.dory`)
    nope_layers: tuple[bool, ...] = ()
    # openPangu Pro MoE V2's static-sink attention (`kvcore.models.pangu_sinks`)
    pangu_sinks: PanguSinks | None = None
    vision_experts: VisionExperts | None = None     # (ERNIE-4.5-VL's: `kvcore.models.ernie45`)
    # buffers a multimodal class registers itself, on every rank whatever its towers (bytes:
    # ERNIE-4.5-VL's visual token ids, `kvcore.models.ernie45_vl_tower`)
    class_buffers: int = 0
    share_q_dim: int = 0        # Step3's low-rank query width (`kvcore.models.step3`)
    # Step-3.5's query heads a layer (its sliding layers' own count) and head-wise output gate
    # (`kvcore.models.step3p5`)
    layer_heads: tuple[int, ...] = ()
    head_gate: bool = False
    # MiMo-V2's V width a layer (empty: K's), sinks a layer, float32 router, an fp8 checkpoint's
    # fused QKV chunks (`models.mimo_v2`)
    layer_v_dims: tuple[int, ...] = ()
    sink_layers: tuple[bool, ...] = ()
    fp32_router: bool = False
    fused_qkv_chunks: int = 0
    # Step-3.5's MTP layers (its config class's mtp_layer_types, mtp_mlp_layer_types), read
    # only by its MTP draft (`kvcore.models.mtp_step3p5`): attention kind, MoE, query heads
    mtp_layer_kinds: tuple[str, ...] = ()
    mtp_moe_layers: tuple[bool, ...] = ()
    mtp_layer_heads: tuple[int, ...] = ()
    # DeepSeek-V4's compress ratios, indexer, output LoRA, hyper-connections and hash-routed
    # MoE layers (`kvcore.models.deepseek_v4`; its layers are all of kind "dsv4")
    v4: V4Geometry | None = None
    # Nemotron-NAS's KV heads and MLP width a layer (`kvcore.models.nemotron_nas`)
    nas: NasBlocks | None = None

    @property
    def default_max_model_len(self) -> int:
        return self.default_len or self.max_position_embeddings

    @property
    def num_layers(self) -> int:
        return len(self.layer_kinds)

    def count(self, kind: str) -> int:
        return sum(k == kind for k in self.layer_kinds)

    @property
    def attention_output_gate(self) -> bool:
        """Qwen3-Next's and Qwen3.5's ``attn_output_gate`` (on by default): the QKV projection
        makes a second query-sized output, multiplied into the attention's output (the weights
        and the clock); AFMoE's gate_proj, a linear of its own as wide (afmoe.py); Beam's,
        merged or its own (models/beam/nvidia/attention.py)."""
        return self.model_type in GDN_TYPES or self.model_type in ("afmoe", "beam")

    def perf_sliding(self) -> tuple[int, int | None]:
        """(sliding layers, window) as vLLM 0.33's perf.py bills them: the config's window
        (ModelConfig.get_sliding_window, config/model.py:1627; Cohere2's layers get it + 1 from
        commandr.py, perf.py not), on the sliding layers, or Qwen's `perf_swa`."""
        if self.perf_swa is not None:   # (Qwen: what the config says, not what layers do)
            return self.perf_swa
        window = self.sliding_window
        if window and self.model_type in ("cohere2", "cohere2_moe"):
            window -= 1
        return (self.count("sliding"), window) if window else (0, window)
