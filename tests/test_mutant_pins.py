"""Values pinned from vLLM 0.33.0 itself for the mutants of the third mutation campaign
(tests/data/mutants/README.md) that no recorded case tells apart: each test names the mutants
it kills and where its numbers come from (vLLM's function called on a stub, vLLM's source, or
its model classes built on the meta device: `data/mutants/census.json`)."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest
from oracle_sched import mamba_request

from kvcore.engine.mamba_split import mamba_aligned_split, max_prefill_tokens
from kvcore.engine.options import ReplayOptions
from kvcore.engine.replay import replay
from kvcore.engine.scheduler_io import SchedulerConfig
from kvcore.errors import InputError
from kvcore.managers.mamba_partial import FineMambaManager, shared_prefix_checkpoint
from kvcore.models import fp8_scales
from kvcore.models.hf_config import read_hf_config
from kvcore.models.weights import estimate_weights_bytes

DATA = Path(__file__).resolve().parent / "data"
CENSUS = json.loads((DATA / "mutants" / "census.json").read_text())["cases"]

# vLLM's `Scheduler._mamba_block_aligned_split` called on a stub scheduler and request
# (data/mutants/record_split_values.py): (block, unit, checkpoint alignment (0: no Mamba2
# checkpoint), drop, junction option, budget, threshold, start, new tokens, prompt, tokens,
# junction) and vLLM's tokens
SPLIT_VALUES = [
    # a resumed request's last chunk holding the Mamba2 checkpoint, the junction at its end
    ((4, 0, 1, False, False, 4, 0, 4, 5, 2, 10, 9), 5),
    # the option on: a junction at the prompt's end stops the chunk there (a resumed request)
    ((8, 4, 4, False, True, 64, 4, 42, 4, 44, 46, 44), 2),
]


@pytest.mark.parametrize("args, want", SPLIT_VALUES)
def test_the_mamba_split_is_vllms_where_no_case_reached(args, want):
    # (MS13: the junction's stop also where it is the chunk's end; MS14: `at <= num_prompt`
    # to `<`)
    bs, unit, align, drop, junction, budget, threshold, start, n, prompt, tokens, at = args
    r = mamba_request(prompt, start, at)
    r.num_tokens = tokens
    cfg = SchedulerConfig(max_num_batched_tokens=budget, long_prefill_token_threshold=threshold)
    assert mamba_aligned_split(r, n, start, bs, max_prefill_tokens(cfg), align, unit, drop,
                               junction) == want


@pytest.mark.pure_python     # (stand-in objects: compiled code takes only its own classes)
def test_the_junction_state_is_keyed_only_inside_the_prompt_chunk():
    # (MP4, MP5: `num_computed < n <= num_prompt` widened or narrowed; the scheduler never
    # ends a chunk where they differ, so only vLLM's rule itself tells:
    # MambaManager._cache_partial_tail_block, single_type_kv_cache_manager.py:2097-2101)
    on = SimpleNamespace(shared_prefix_checkpoint=True)
    cases = [((40, 32, 36), 36, True), ((40, 36, 36), 36, False), ((40, 32, 40), 40, True),
             ((40, 32, 36), 38, False), ((40, 40, 44), 44, False)]
    for (prompt, computed, at), n, want in cases:
        assert FineMambaManager._at_junction(on, mamba_request(prompt, computed, at), n) is want
    off = SimpleNamespace(shared_prefix_checkpoint=False)
    assert not FineMambaManager._at_junction(off, mamba_request(40, 32, 36), 36)


@pytest.mark.pure_python     # (stand-in objects: compiled code takes only its own classes)
def test_the_shared_prefix_predicate_needs_an_eagle_group_and_partial_hits():
    # (MP3: every Mamba manager given the option, not the predicate; MP2: the predicate
    # without partial hits. vLLM's KVCacheManager.mamba_shared_prefix_checkpoint,
    # kv_cache_manager.py:188-197, hands every MambaManager the predicate)
    m = FineMambaManager.__new__(FineMambaManager)
    for eagle, partial, want in [((), True, False), ((0,), False, False), ((0,), True, True)]:
        coord = SimpleNamespace(eagle_group_ids=frozenset(eagle), partial_hits=partial,
                                single_type_managers=[m])
        assert shared_prefix_checkpoint(coord, True) is want
        assert m.shared_prefix_checkpoint is want


def test_a_chunked_local_group_at_the_largest_block_but_not_their_lcm_is_refused(tmp_path):
    # (ST4: the chunked local group compared with the largest block size, not the lcm)
    # vLLM asserts a chunked local group's block is the hit alignment, the groups' lcm
    # (single_type_kv_cache_manager.py:1338-1341): 48 for blocks of 16 and 24, not 24
    cfg = {"block_size": 16, "num_blocks": 64, "max_num_seqs": 2, "max_num_batched_tokens": 64,
           "max_model_len": 256, "groups": [
               {"type": "full"},
               {"type": "chunked_local", "attention_chunk_size": 48, "block_size": 24}]}
    trace = tmp_path / "t.jsonl"
    trace.write_text(json.dumps({"config": cfg}) + "\n" + json.dumps(
        {"id": "a", "prompt_token_ids": list(range(1, 41)), "output_length": 2,
         "arrival_step": 0}) + "\n")
    with pytest.raises(InputError) as e:
        replay(str(trace), ReplayOptions())
    assert (e.value.field, e.value.line) == ("config.groups", 1)
    assert e.value.message.startswith("KV cache groups of different block sizes (16, 24 "
                                      "tokens) with a chunked local attention group of 24 "
                                      "tokens, finer than their lcm (48)")


def _geometry(name: str):
    return read_hf_config(json.loads((DATA / "mutants" / f"{name}.config.json").read_text()),
                          name=name)


def _vllm_bytes(name: str, tp: int) -> int:
    return sum(CENSUS[name]["tp"][str(tp)][0]["param_bytes_by_dtype"].values())


@pytest.mark.parametrize("tp", [1, 2, 4, 8])
def test_a_qwen2_moe_without_a_shared_expert_still_has_its_gate(tp):
    # (RP11 found it: kvcli counted Qwen2-MoE's shared_expert_gate only beside a shared expert;
    # vLLM builds it whatever shared_expert_intermediate_size says, qwen2_moe.py:148-154:
    # 256 parameters in each of the tiny config's 2 MoE layers)
    names = CENSUS["qwen2-moe-noshared"]["tp"]["1"][0]["param_numel_by_name"]
    assert names["model.layers.*.mlp.shared_expert_gate.weight"] == 512
    assert estimate_weights_bytes(_geometry("qwen2-moe-noshared"), tp) == \
        _vllm_bytes("qwen2-moe-noshared", tp)


def test_an_fp8_mla_without_q_lora_counts_its_kv_a_scales():
    # (F82: q_lora_rank null, the replicated kv_a_proj_with_mqa's block scales left out;
    # the recorded fp8 configs all have a q_lora_rank. vLLM refuses this tiny config at TP 2
    # and 4, its q_proj shard not being whole 128-row blocks, and at TP 8 its 4 heads)
    assert estimate_weights_bytes(_geometry("fp8-mla-no-q-lora"), 1) == \
        _vllm_bytes("fp8-mla-no-q-lora", 1) == 8_174_592


def test_an_fp8_output_gated_attention_scales_its_doubled_query():
    # (F84: Qwen3-Next's query-sized output gate left out of the QKV projection's block
    # scales) vLLM's weight_scale_inv of the tiny fp8 Qwen3-Next's full-attention layer:
    # qkv_proj 12 (768 x 256 in 128 x 128 blocks), o_proj 4
    names = CENSUS["qwen3-next-fp8"]["tp"]["1"][0]["param_numel_by_name"]
    want = (names["model.layers.*.self_attn.qkv_proj.weight_scale_inv"]
            + names["model.layers.*.self_attn.o_proj.weight_scale_inv"])
    assert fp8_scales.attention_scales(_geometry("qwen3-next-fp8"), 1, (128, 128)) == want == 16


def test_a_boolean_block_size_is_not_a_block():
    # (F86: `true` read as the integer 1; kvcli reads no boolean as a size anywhere)
    assert fp8_scales.block_of({"weight_block_size": [128, 128]}) == (128, 128)
    assert fp8_scales.block_of({"weight_block_size": [True, 128]}) is None


def test_gemma3s_vision_heads_must_divide_over_tp():
    # (SG7: Gemma 3's SigLIP read without its heads, so no TP check) vLLM's SiglipAttention
    # splits its heads over TP (`divide`, siglip.py): 12 vision heads cannot run at TP 8, where
    # the text model's 32 could
    from kvcore.models.presets import PRESETS
    from kvcore.sizing.resolve import resolve_kv_cache_config

    cfg = json.loads(json.dumps(PRESETS["gemma-3-27b"][1]))
    cfg["vision_config"]["num_attention_heads"] = 12
    g = read_hf_config(cfg, name="gemma-3-27b")
    assert g.vision_heads == 12
    with pytest.raises(InputError) as e:
        resolve_kv_cache_config(geometry=g, tensor_parallel_size=8, gpu_memory_gib=80,
                                max_model_len=4096)
    assert e.value.field == "tensor_parallel_size"
    assert "must be divisible by it, as vLLM requires; got 8" in e.value.message


def test_a_boolean_vision_size_is_named():
    # (VK3: `true` read as the size 1, as Python's int would)
    from kvcore.models.presets import PRESETS

    cfg = json.loads(json.dumps(PRESETS["gemma-3-27b"][1]))
    cfg["vision_config"]["patch_size"] = True
    with pytest.raises(InputError) as e:
        read_hf_config(cfg, source="c.json")
    assert (e.value.field, e.value.message) == ("vision_config.patch_size",
                                                "expected an integer >= 1, got True")


def test_a_list_is_read_only_where_a_config_lists_sizes():
    # (VK4: a list's first entry taken for any key; only Qwen3.5's patch sizes are listed)
    from kvcore.models.presets import PRESETS

    cfg = json.loads(json.dumps(PRESETS["gemma-3-27b"][1]))
    cfg["vision_config"]["patch_size"] = [14]
    with pytest.raises(InputError) as e:
        read_hf_config(cfg, source="c.json")
    assert e.value.field == "vision_config.patch_size"


@pytest.mark.parametrize("bad", ["siglip", [1], [], 5, True])
@pytest.mark.parametrize("base", ["gemma-3-27b", "mtp_draft/11-tiny-qwen3-5-vl/target/config.json"])
def test_a_vision_config_that_is_not_an_object_is_refused(base, bad, tmp_path):
    # (VK1: read as absent, the default tower counted; vLLM's transformers refuses each of
    # these when it loads the config, StrictDataclassFieldValidationError "doesn't match any
    # type in (dict, PreTrainedConfig)", checked on the oracle; null and {} it reads as the
    # class's defaults, as kvcli does: SigLIP's 89,926,656 parameters for Gemma 3)
    from typer.testing import CliRunner

    from kvcli.app import app
    from kvcore.models.presets import PRESETS

    cfg = json.loads(json.dumps(PRESETS[base][1] if base in PRESETS else
                                json.loads((DATA / base).read_text())))
    cfg["vision_config"] = bad
    with pytest.raises(InputError) as e:
        read_hf_config(cfg, source="c.json")
    assert (e.value.path, e.value.field) == ("c.json", "vision_config")
    assert e.value.message.startswith(f"must be an object (or null), got {bad!r}: ")
    p = tmp_path / "config.json"
    p.write_text(json.dumps(cfg))
    res = CliRunner().invoke(app, ["config", "--model-config", str(p), "--gpu-memory-gib", "80"])
    assert res.exit_code == 2 and res.stdout == ""
    assert res.stderr == (f"error: {p}: field 'vision_config': must be an object (or null), got "
                          f"{bad!r}: transformers' config class refuses it, so vLLM cannot load "
                          "the model\n")
    if base in PRESETS:
        for absent in (None, {}):
            cfg["vision_config"] = absent
            assert read_hf_config(cfg, source="c.json").vision_params == 89_926_656
