"""Pipeline parallelism in vLLM 0.33's KV cache planning (`kvcli config --pipeline-parallel-size`).

Each pipeline stage (a worker, times its tensor-parallel ranks) holds a run of the decoder layers
(`vllm.distributed.utils.get_pp_indices`: an even split; a remainder goes to the stages before
the last, one each, the last stage excluded; with more than two stages and a remainder of at
most pp - 2, to the middle ones), their weights, the embedding on the first stage and the LM
head with the final norm on the last. vLLM's planner (`get_kv_cache_configs`) groups the whole
model's layers once, projects the groups onto each worker's layers, sizes each worker's pool
from its own memory (its bytes per block: its layers' pages), and gives every worker the
smallest block count: the scheduler's one pool. So the pool is set by the stage that fits the
fewest blocks, usually the first or the last (the embedding's or the head's weights).

A speculative draft (an EAGLE draft, an MTP module) lives on the last stage only: vLLM's V2
model runner builds its speculator where `get_pp_group().is_last_rank`
(v1/worker/gpu/model_runner.py:298-305), so the draft's KV cache layers and weights are the last
worker's, and so are its buffers (`kvcore.sizing.buffers_term`; the model's: a RoPE cache on
every stage with attention layers, the vision tower's on the first).

`VLLM_PP_LAYER_PARTITION` (vLLM's override of the split) is not read: the default split only.
"""

from __future__ import annotations

from dataclasses import dataclass

from kvcore.errors import InputError
from kvcore.group_specs import UniformTypeKVCacheSpecs
from kvcore.kv_cache_config import KVCacheGroupSpec
from kvcore.models.deepseek_v4 import stage_layouts_refusal
from kvcore.models.eagle_draft import DraftModel, is_draft_layer
from kvcore.models.geometry import ModelGeometry
from kvcore.models.longcat import LONGCAT, decoder_ranges
from kvcore.models.moe_stages import moe_stage_refusal
from kvcore.models.pp_support import refuse_pp
from kvcore.models.step3 import stage_refusal
from kvcore.models.tied_stages import tied_stage_refusal
from kvcore.models.weights import estimate_weights_bytes
from kvcore.models.worker_specs import decoder_layer_of
from kvcore.sizing.buffers_term import buffer_bytes
from kvcore.sizing.config import GiB, bytes_per_block


def pp_partition(num_layers: int, pp: int) -> list[int]:
    """Decoder layers per stage, as vLLM's `get_pp_indices` splits them by default."""
    parts = [num_layers // pp] * pp
    for i in range(2, num_layers % pp + 2):
        parts[-i] += 1
    return parts


def stage_ranges(num_layers: int, pp: int) -> list[range]:
    """Each stage's decoder layer indices."""
    out, start = [], 0
    for n in pp_partition(num_layers, pp):
        out.append(range(start, start + n))
        start += n
    return out


def model_stage_ranges(g: ModelGeometry, pp: int) -> list[range]:
    """Each stage's layers of model `g` as kvcli names them (`stage_ranges`; LongCat-Flash:
    vLLM splits its num_layers decoder layers, two attentions each, kvcli's layers:
    `kvcore.models.longcat`)."""
    n = g.num_layers
    decoders = n // 2 if g.model_type == LONGCAT else n
    ranges = stage_ranges(n, pp) if decoders == n else decoder_ranges(stage_ranges(decoders, pp))
    if why := moe_stage_refusal(g, ranges):
        # (Sarvam's, openPangu's, Qwen3-MoE's, GLM-4.5's, ...: vLLM cannot build a stage
        # holding none of the MoE layers, nor one holding no layer: `kvcore.models.moe_stages`)
        raise InputError(f"{g.name} on {pp} pipeline stages: vLLM 0.33 refuses to build it: "
                         f"\"{why}\"", field="pipeline_parallel_size")
    if pp > decoders:
        # (vLLM's split then gives stages no layer: their workers plan no KV cache)
        raise InputError(f"{g.name} has {decoders} decoder layers, fewer than {pp} stages",
                         field="pipeline_parallel_size")
    return ranges


def project_groups(groups: list[KVCacheGroupSpec], names: set[str]) -> list[KVCacheGroupSpec]:
    """vLLM's `_project_kv_cache_groups_to_worker`: every group, keeping only the worker's
    layers (a group with none of them stays, empty: its block costs the worker nothing)."""
    out = []
    for grp in groups:
        kept = tuple(n for n in grp.layer_names if n in names)
        spec = grp.kv_cache_spec
        if kept and len(kept) != len(grp.layer_names) and isinstance(spec,
                                                                     UniformTypeKVCacheSpecs):
            spec = UniformTypeKVCacheSpecs(block_size=spec.block_size, kv_cache_specs={
                n: spec.kv_cache_specs[n] for n in kept})
        out.append(KVCacheGroupSpec(kept, spec))
    return out


@dataclass(frozen=True, slots=True)
class PipelineStage:
    """One pipeline stage's share of the model and of the KV cache planning, per GPU."""
    index: int
    layers: range                   # its decoder layers
    groups: list[KVCacheGroupSpec]  # the whole model's groups, projected onto its layers
    weights_bytes: int
    available_bytes: int            # its KV cache memory
    bytes_per_block: int            # its layers' pages of one block id
    num_blocks: int                 # what its memory fits (the pool: the smallest of these)
    buffers_bytes: int = 0          # its buffers (`kvcore.sizing.buffers_term`; 0: given)

    def to_dict(self) -> dict:
        return {"stage": self.index, "layers": [self.layers.start, self.layers.stop - 1]
                if len(self.layers) else [], "kv_layers": sum(len(g.layer_names)
                                                               for g in self.groups),
                "weights_bytes": self.weights_bytes, "available_bytes": self.available_bytes,
                "buffers_bytes": self.buffers_bytes, "bytes_per_block": self.bytes_per_block,
                "num_blocks": self.num_blocks}


def on_stage(name: str, layers: range, last: bool, num_layers: int) -> bool:
    """Whether KV cache layer `name` sits on the stage holding decoder `layers` (a draft's
    layers: on the `last` stage)."""
    return last if is_draft_layer(name) else decoder_layer_of(name, num_layers) in layers


def plan_stages(groups: list[KVCacheGroupSpec], num_layers: int, pp: int,
                weights: list[int], memory: int | None,
                num_blocks: int | None = None,
                buffers: list[int] | None = None,
                ranges: list[range] | None = None) -> list[PipelineStage]:
    """Each stage's projected groups and, given the memory a GPU has for weights, buffers
    and KV cache, its KV cache memory and the blocks it fits; with no memory, what a given
    block count (`num_blocks`, vLLM's override) allocates on each."""
    buffers = buffers or [0] * pp
    stages = []
    # (`ranges`: the stages' layers where they are not vLLM's even split of them, LongCat's)
    for k, layers in enumerate(ranges or stage_ranges(num_layers, pp)):
        last = k == pp - 1
        names = {n for g in groups for n in g.layer_names
                 if on_stage(n, layers, last, num_layers)}
        projected = project_groups(groups, names)
        per_block = bytes_per_block(projected)
        if memory is None:
            blocks = num_blocks or 0
            available = blocks * per_block
        else:
            available = memory - weights[k] - buffers[k]
            blocks = available // per_block if per_block and available > 0 else 0
        stages.append(PipelineStage(k, layers, projected, weights[k], available, per_block,
                                    blocks, buffers[k]))
    return stages


def pipeline_stages(g: ModelGeometry, groups: list[KVCacheGroupSpec], tp: int, pp: int,
                    weights_gib: float | None, gpu_memory_gib: float | None,
                    utilization: float, activation_gib: float,
                    num_blocks: int | None, draft_weights: int = 0,
                    draft: DraftModel | None = None,
                    max_model_len: int = 0, batched_tokens: int = 0) -> list[PipelineStage]:
    """`plan_stages` for a model: each stage's weights and buffers estimated, the last's with
    the draft's (`draft_weights`, a worker's; `draft` for its buffers, `max_model_len` the
    target's), or `weights_gib` split by its share of the decoder layers, buffers in it (a
    given total says nothing of where the embedding, the head and a draft are), its memory the
    GPU's budget less them and the activations."""
    refuse_pp(g.name, g.architecture, pp)      # (vLLM's config check, before any build)
    n = g.num_layers
    ranges = model_stage_ranges(g, pp)
    if g.v4 is not None and (why := stage_layouts_refusal(g.v4, ranges, tp)):
        # (DeepSeek-V4: stages with and without an indexer report different layouts)
        raise InputError(f"{g.name} on {pp} pipeline stages: vLLM 0.33 refuses to start: "
                         f"\"{why}\"", field="pipeline_parallel_size")
    if why := stage_refusal(g, ranges) or tied_stage_refusal(g, pp):
        # (Step3's, Step-3.5's, a tied ERNIE-4.5-MoE's: vLLM cannot build a stage)
        raise InputError(f"{g.name} on {pp} pipeline stages: vLLM 0.33 refuses to build it: "
                         f"\"{why}\"", field="pipeline_parallel_size")
    if weights_gib is None:
        weights = [estimate_weights_bytes(g, tp, (r, k == 0, k == pp - 1))
                   + (draft_weights if k == pp - 1 else 0) for k, r in enumerate(ranges)]
        buffers = [buffer_bytes(g, tp, draft, max_model_len, r, k == 0, k == pp - 1,
                                batched_tokens) for k, r in enumerate(ranges)]
    else:
        weights = [int(weights_gib * GiB * len(r) / n / tp) for r in ranges]
        buffers = [0] * pp
    memory = None
    if gpu_memory_gib is not None:
        memory = int(gpu_memory_gib * GiB * utilization) - int(activation_gib * GiB)
    stages = plan_stages(groups, n, pp, weights, memory, num_blocks, buffers, ranges)
    for st in stages:
        if not st.bytes_per_block:
            # vLLM's planner divides the stage's memory by its 0 bytes a block
            raise InputError(f"pipeline stage {st.index} (layers {st.layers.start}-"
                             f"{st.layers.stop - 1}) holds no layer with a KV cache: vLLM "
                             "0.33 cannot plan it", field="pipeline_parallel_size")
    return stages
