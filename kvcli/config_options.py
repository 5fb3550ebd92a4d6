"""`kvcli config`'s options as Typer declarations: vLLM 0.33's flag names, value names and
defaults where `vllm serve` takes the same setting (`tests/data/vllm_flags.json` holds the
table a test checks them against), kvcli's own for the geometry a preset would give.
"""

from __future__ import annotations

from typing import Annotated

import typer

from kvcore.engine.options import PERFORMANCE_MODES, ReplayOptions
from kvcore.engine.serve_defaults import rows_text
from kvcore.mm_options import MM_ENCODER_TP_MODES
from kvcore.vllm_values import KV_CACHE_DTYPES, VLLM_MODEL_DTYPES

# One default for both commands: the replay's (kvcore's SchedulerConfig, vLLM's 2048, 128, on),
# shown in the help; left unset, vLLM's start-up rules may change the first two
# (`kvcore.engine.sched_limits`), as they do for a replay.
_DEFAULTS = ReplayOptions()
_GEO = "Explicit geometry instead of a preset: "

ModelArg = Annotated[str | None, typer.Argument(help="A preset (see --list) or its HF repo id.")]
ListOpt = Annotated[bool, typer.Option("--list", help="List the presets.")]
ModelConfigOpt = Annotated[str | None, typer.Option(
    "--model-config", help="A Hugging Face config.json on disk.")]
GpuMemOpt = Annotated[float | None, typer.Option(
    "--gpu-memory-gib", help="GPU memory in GiB (e.g. 80).")]
GpuOpt = Annotated[str | None, typer.Option(
    "--gpu", help="The GPU vllm serve runs on (a preset: `kvcli clock gpus`): the budget and "
    "--max-num-seqs start from its batch defaults, as in `kvcli replay --gpu` (not its "
    "memory: --gpu-memory-gib). [default: none, SchedulerConfig's]")]
PerfModeOpt = Annotated[str, typer.Option(
    "--performance-mode", metavar="|".join(PERFORMANCE_MODES), help="vLLM's: throughput "
    "doubles the budget and --max-num-seqs where not given; interactivity changes only CUDA "
    "graphs.")]
UtilOpt = Annotated[float, typer.Option(
    "--gpu-memory-utilization", "--device-memory-utilization", help="Fraction of "
    "--gpu-memory-gib vLLM may use (weights, activations, KV cache), as `kvcli replay "
    "--gpu-memory-gib` sizes; vLLM 0.33's default: pass your server's if it differs.")]
WeightsOpt = Annotated[float | None, typer.Option(
    "--weights-gib", show_default=False,
    help="Weights in GiB. [default: estimated from the config]")]
ActivationOpt = Annotated[float, typer.Option(
    "--activation-gib", help="Activation/other memory to hold back, GiB.")]
KvCacheDtypeOpt = Annotated[str, typer.Option(
    "--kv-cache-dtype", metavar="|".join(KV_CACHE_DTYPES), help="vLLM's --kv-cache-dtype "
    "(auto: the model's; kvcli's fp16, bf16, fp32 still read); its other dtypes are refused, "
    "not modelled.")]
DtypeOpt = Annotated[str | None, typer.Option(
    "--dtype", metavar="|".join(VLLM_MODEL_DTYPES), show_default=False,
    help="Model dtype, vLLM's names (fp16, bf16, fp32 too); auto: the model's, a float32 "
    "checkpoint downcast as vLLM does. [default: auto]")]
BlockSizeOpt = Annotated[int | None, typer.Option(
    "--block-size", show_default=False, help="Tokens per block; vLLM picks an MLA model's by "
    "its attention backend: a warning says so. [default: 16]")]
MaxModelLenOpt = Annotated[int | None, typer.Option(
    "--max-model-len", show_default=False,
    help="The longest request, prompt and output. [default: vLLM's from config.json: its "
    "length, RoPE-scaled (a LongRoPE model's original one)]")]
BudgetOpt = Annotated[int | None, typer.Option(
    "--max-num-batched-tokens", show_default=False,
    help="Token budget per step; sizes the sliding-window and chunked-local groups' blocks per "
    "request (vLLM 0.33's SchedulerConfig default, the one `kvcli replay` uses; unset, at "
    "least --max-model-len with chunked prefill off and at most --max-num-seqs x "
    "--max-model-len, as vLLM's EngineArgs set it). `vllm serve` starts from its GPU's "
    f"({rows_text('max_num_batched_tokens')}; `kvcli replay --gpu` applies it): pass the "
    "value your server runs with (vLLM logs it at start-up). "
    f"[default: {_DEFAULTS.max_num_batched_tokens}]")]
SeqsOpt = Annotated[int | None, typer.Option(
    "--max-num-seqs", show_default=False, help="Requests running at once (unset, at most the "
    "token budget; SchedulerConfig's default: `vllm serve` starts from its GPU's, "
    f"{rows_text('max_num_seqs')}). [default: {_DEFAULTS.max_num_seqs}]")]
ChunkedOpt = Annotated[bool, typer.Option(
    "--enable-chunked-prefill/--no-enable-chunked-prefill", show_default=False,
    help="Chunked prefill, as in `kvcli replay`; off, a whole prompt must fit one step. "
    f"[default: {'on' if _DEFAULTS.enable_chunked_prefill else 'off'}]")]
AsyncOpt = Annotated[bool | None, typer.Option(
    "--async-scheduling/--no-async-scheduling", show_default=False,
    help="vLLM's flag: on, 2 batches in flight (--max-concurrent-batches 2), off 1. "
    "[default: on]")]
BatchesOpt = Annotated[int | None, typer.Option(
    "--max-concurrent-batches", show_default=False,
    help="Batches in flight (2 = vLLM's async scheduling default, 1 = sync; with pipeline "
         "parallelism PP + 1 and PP). [default: 2]")]
NumBlocksOpt = Annotated[int | None, typer.Option(
    "--num-blocks", "--num-gpu-blocks-override", show_default=False,
    help="vLLM's num_gpu_blocks override, the null block included. [default: what "
    "--gpu-memory-gib fits]")]
TpOpt = Annotated[int, typer.Option(
    "--tensor-parallel-size", "--tp", "-tp", help="Tensor-parallel size: the sizes are per GPU.")]
PpOpt = Annotated[int, typer.Option(
    "--pipeline-parallel-size", "--pp", "-pp",
    help="Pipeline-parallel size: each stage's layers, weights and blocks; the pool is the "
         "smallest stage's (vLLM's planner).")]
LayersOpt = Annotated[int | None, typer.Option("--layers", help=_GEO + "layers.")]
KvHeadsOpt = Annotated[int | None, typer.Option("--kv-heads", help=_GEO + "KV heads.")]
HeadDimOpt = Annotated[int | None, typer.Option("--head-dim", help=_GEO + "head dim.")]
WindowOpt = Annotated[int | None, typer.Option(
    "--sliding-window", help=_GEO + "window (tokens).")]
SlidingLayersOpt = Annotated[str | None, typer.Option(
    "--sliding-layers", show_default=False, help="Which layers slide: '5:1' (5 sliding, 1 "
    "full, repeating) or indices '0,2,4-9'. [default: all]")]
ChunkOpt = Annotated[int | None, typer.Option(
    "--attention-chunk-size", help=_GEO + "chunked-local attention chunk (tokens).")]
ChunkedLayersOpt = Annotated[str | None, typer.Option(
    "--chunked-layers", show_default=False,
    help="Which layers are chunked-local: as --sliding-layers. [default: all]")]
NoHybridOpt = Annotated[bool, typer.Option(
    "--disable-hybrid-kv-cache-manager",
    help="Treat sliding/chunked layers as full attention (vLLM's flag).")]
PadOpt = Annotated[bool, typer.Option(
    "--pad-pages/--no-pad-pages",
    help="Pad attention pages that do not divide the largest, as vLLM 0.33 does; "
         "--no-pad-pages refuses them, as vLLM 0.13 did.")]
PrefixOpt = Annotated[bool | None, typer.Option(
    "--enable-prefix-caching/--no-enable-prefix-caching", show_default=False,
    help="vLLM's flag (as in `kvcli replay`); off: Mamba 'none' mode, one state per request. "
    "[default: on; off for an attention-free model, as vLLM]")]
UnitOpt = Annotated[int | None, typer.Option(
    "--prefix-match-unit", show_default=False, help="vLLM's flag: hash every N tokens (a "
    "divisor of every group's block); the hash block, partial-block hits and where hits "
    "land. [default: the block]")]
OffloadOpt = Annotated[float | None, typer.Option(
    "--kv-offloading-size", show_default=False, help="A CPU offload tier of this many GiB "
    "(vLLM's flag: the total over TP ranks): its chunks and tokens. [default: none, no tier]")]
OffloadBackendOpt = Annotated[str | None, typer.Option(
    "--kv-offloading-backend", metavar="native|lmcache", show_default=False,
    help="vLLM's CPU tier backend: native is the tier kvcli models; lmcache is refused. "
    "[default: native]")]
OffloadBlockOpt = Annotated[int | None, typer.Option(
    "--kv-offloading-block-size", show_default=False,
    help="Tokens per CPU chunk, a multiple of --block-size. [default: the block size]")]
JsonOpt = Annotated[bool, typer.Option("--json", help="JSON on stdout.")]
SpecConfigOpt = Annotated[str | None, typer.Option(
    "--speculative-config", "-sc", metavar="JSON", show_default=False, help="vLLM's "
    "speculative decoding config: an EAGLE method's draft model (its layers join the groups, "
    "its weights leave less memory); ngram adds nothing. [default: none]")]
SpecMethodOpt = Annotated[str | None, typer.Option(
    "--spec-method", show_default=False, help="vLLM's: ngram, eagle, eagle3 or mtp (the model's own module). [default: "
    "none]")]
SpecModelOpt = Annotated[str | None, typer.Option(
    "--spec-model", show_default=False, help="vLLM's: the EAGLE draft, a config.json, its "
    "folder, or a draft kvcli knows (eagle3-llama-3.1-8b). [default: none]")]
SpecTokensOpt = Annotated[int | None, typer.Option(
    "--num-speculative-tokens", "--spec-tokens", show_default=False, help="vLLM's "
    "num_speculative_tokens: a Mamba layer's state keeps K more blocks a request (Mamba2's and "
    "Gated DeltaNet's K more conv rows); shown with the draft. [default: none]")]
LimitMmOpt = Annotated[str | None, typer.Option(
    "--limit-mm-per-prompt", metavar="JSON", show_default=False, help="vLLM's: items a prompt "
    "may hold by modality ('{\"image\": 0}', or --limit-mm-per-prompt.image 0); a vision tower "
    "whose modalities are all 0 is not built, its weights left to KV blocks. [default: none, "
    "999 each]")]
LanguageOnlyOpt = Annotated[bool, typer.Option(
    "--language-model-only/--no-language-model-only", show_default=False,
    help="vLLM's: every modality's limit 0, no vision tower built. [default: off]")]
MmTpModeOpt = Annotated[str, typer.Option(
    "--mm-encoder-tp-mode", metavar="|".join(MM_ENCODER_TP_MODES), help="vLLM's: data holds "
    "the vision tower whole on every TP rank (Qwen3.5; Gemma 3 falls back to weights, split "
    "over TP).")]
