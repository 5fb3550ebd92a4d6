"""The classes of vLLM 0.33's registry the KV-spec census could not build (and its pooling
classes), each read against vLLM's model file (tests/data/registry_classes/README.md): refused
by name where vLLM keeps caches kvcli does not model, or sized as vLLM builds them; and a name
the registry lacks, read as vLLM's Transformers backend builds it, with a warning.

Before: GLM-5-Next's config gave 602,763 blocks at 80 GiB as plain attention (vLLM builds a
sparse indexer, compressed caches and Kimi Delta Attention layers), BERT's a pool vLLM never
allocates, PLaMo 3's every layer full (its window is ``window_size``), EXAONE 3's and
TeleChat2's were refused for a missing 'num_hidden_layers', Qwen3-ASR Realtime's read at the
top level, not its thinker; a misspelt architecture was sized silently.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from kv_census_rows import ROWS, kvcli_specs, same, vllm_specs
from typer.testing import CliRunner

from kvcli.app import app
from kvcore.errors import InputError
from kvcore.models import read_hf_config
from kvcore.models.vllm_registry import REGISTRY

DATA = json.loads((Path(__file__).resolve().parent / "data" / "registry_classes"
                   / "configs.json").read_text())
SIZED = [a for a, r in DATA.items() if r["decision"] != "refused"]
REFUSED = [a for a, r in DATA.items() if r["decision"] == "refused"]
ENCODER = "bidirectional (encoder-only) attention, for which it keeps no KV cache at all"
# what each refusal names of vLLM's caches (the whole line: kvcore/models/unsupported.py)
KEEPS = {
    "Glm5NextForCausalLM": "indexer keeps a compressed cache",
    "Glm5NextForConditionalGeneration": "Kimi Delta Attention layers",
    "Qwen4ExpForCausalLM": "QSA sparse attention", "Qwen4ExpForConditionalGeneration": "MLA",
    "InklingForCausalLM": "short-convolution state kept as a second sliding-window cache",
    "InklingForConditionalGeneration": "short-convolution state",
    "DeepseekV41ForCausalLM": "compressed sparse attention, as DeepSeek-V4's",
    "Dots3NoteForCausalLM": "sparse MLA with an indexer cache",
    "MiMoV2OmniForCausalLM": "an audio encoder",
    "InternS2MobiusForConditionalGeneration": "bank i % num_blocks",
    "NemotronParseForConditionalGeneration": "cross-attention",
    "RadioMBartPrefixForCausalLM": "cross-attention", "HfMoondream": "config['text']",
}


def test_every_class_decided_is_in_vllms_registry() -> None:
    assert len(REGISTRY) == 415
    assert set(DATA) <= REGISTRY
    assert len(SIZED) == 26 and len(REFUSED) == 24


@pytest.mark.parametrize("arch", REFUSED)
def test_refused_by_name_in_one_line(arch: str) -> None:
    with pytest.raises(InputError) as e:
        read_hf_config(DATA[arch]["config"], source="config.json")
    assert e.value.field == "architectures"
    text = str(e.value)
    assert "\n" not in text
    assert text.startswith(f"config.json: field 'architectures': {arch}: vLLM 0.33 serves it "
                           "with ")
    assert text.endswith(", which kvcli does not model (sizing it as attention would not be "
                         "vLLM's cache)")
    assert KEEPS.get(arch, ENCODER) in text


def test_glm5_next_the_briefs_config_is_refused_not_sized() -> None:
    cfg = {"architectures": ["Glm5NextForCausalLM"], "hidden_size": 1024,
           "num_hidden_layers": 2, "num_attention_heads": 8, "vocab_size": 1000,
           "max_position_embeddings": 4096}
    with pytest.raises(InputError) as e:
        read_hf_config(cfg, source="glm.json")
    assert str(e.value) == (
        "glm.json: field 'architectures': Glm5NextForCausalLM: vLLM 0.33 serves it with sparse "
        "MLA whose indexer keeps a compressed cache and a circular-buffer tail of its own, "
        "beside Kimi Delta Attention layers (vllm/models/glm5next), which kvcli does not "
        "model (sizing it as attention would not be vLLM's cache)")


@pytest.mark.parametrize("arch, keeps", [
    ("AXK1ForCausalLM", ("multi-head latent attention of its own model (AXK1.py: layers dense "
                         "or sparse by mlp_layer_types)")),
    ("HYV4ForCausalLM", ("multi-head latent attention with a lightning indexer, 'full' or "
                         "'shared' a layer by indexer_types, and learnable sinks "
                         "(vllm/models/hy_v4)"))])
def test_an_mla_variant_is_refused_by_its_name_under_another_model_type(arch, keeps) -> None:
    # (refused by model_type only, 'axk1' and 'hy_v4': under deepseek_v3 both were read as
    # DeepSeek's MLA: HYV4's census config 90,852 blocks at 80 GiB, AXK1's refused only for its
    # weights, 87.27 GiB as DeepSeek-V3's)
    cfg = {**ROWS[arch]["config"], "model_type": "deepseek_v3"}
    with pytest.raises(InputError) as e:
        read_hf_config(cfg, source="config.json")
    assert str(e.value) == (
        f"config.json: field 'architectures': {arch}: vLLM 0.33 serves it with {keeps}, which "
        "kvcli does not model (sizing it as attention would not be vLLM's cache)")


def _config(path: Path, cfg: dict) -> tuple[int, str, str]:
    path.write_text(json.dumps(cfg))
    r = CliRunner().invoke(app, ["config", "--model-config", str(path), "--gpu-memory-gib",
                                 "80", "--json"])
    return r.exit_code, r.stdout, r.stderr


@pytest.mark.parametrize("arch", SIZED)
def test_sized_as_vllm_builds_it(arch: str, tmp_path: Path) -> None:
    row = DATA[arch]
    code, out, err = _config(tmp_path / "config.json", row["config"])
    assert code == 0, err
    got = json.loads(out)
    assert (got["num_blocks"], got["layer_kinds"]) == (row["num_blocks"], row["layer_kinds"])
    assert not any("model registry" in w for w in got["warnings"])


def test_the_fixed_readings() -> None:
    """PLaMo 3: window_size on every layer but each sliding_window_pattern-th (Plamo3Config's
    interleaved_sliding_window); EXAONE 3: num_layers; TeleChat2: n_layer and n_head, a KV head
    a head (llama.py's default); Qwen3-ASR Realtime: its thinker's text model."""
    plamo = read_hf_config(DATA["Plamo3ForCausalLM"]["config"])
    assert [i for i, k in enumerate(plamo.layer_kinds) if k == "full"] == [7, 15]
    assert plamo.sliding_window == 2048 and plamo.count("sliding") == 14
    assert len(read_hf_config(DATA["ExaoneForCausalLM"]["config"]).layer_kinds) == 4
    tele = read_hf_config(DATA["TeleChat2ForCausalLM"]["config"])
    assert (len(tele.layer_kinds), tele.num_kv_heads, tele.head_dim) == (4, 8, 128)
    asr = read_hf_config(DATA["Qwen3ASRRealtimeGeneration"]["config"])
    assert (asr.num_kv_heads, asr.head_dim) == (2, 128)


def test_plamo3_without_its_window_is_refused_by_that_key() -> None:
    cfg = {k: v for k, v in DATA["Plamo3ForCausalLM"]["config"].items() if k != "window_size"}
    with pytest.raises(InputError) as e:
        read_hf_config(cfg, source="plamo.json")
    assert e.value.field == "window_size"


UNKNOWN = {"architectures": ["LlamaForCasualLM"], "model_type": "llama", "hidden_size": 1024,
           "num_hidden_layers": 4, "num_attention_heads": 8, "num_key_value_heads": 2,
           "vocab_size": 1000, "max_position_embeddings": 4096}


def test_a_name_vllms_registry_lacks_is_read_with_a_warning(tmp_path: Path) -> None:
    """A typo (Casual) is sized as plain attention, vLLM's Transformers backend's reading, and
    said once on stderr and in the JSON, whose stdout still parses."""
    code, out, err = _config(tmp_path / "c.json", UNKNOWN)
    assert code == 0
    got = json.loads(out)
    note = ("architecture 'LlamaForCasualLM' is not in vLLM 0.33's model registry: vLLM serves "
            "it only through its Transformers backend (the class in transformers or the "
            "checkpoint's remote code), so it is read as that backend builds it, plain "
            "attention from the config's heads; check the name")
    assert got["warnings"] == [note]
    assert err.strip() == f"warning: {note}"
    # the same model under its registered name: the same pool, no warning
    code, out, err = _config(tmp_path / "d.json", {**UNKNOWN,
                                                   "architectures": ["LlamaForCausalLM"]})
    assert json.loads(out)["num_blocks"] == got["num_blocks"] and err == ""


def test_the_transformers_backend_slides_only_by_layer_types() -> None:
    """transformers/base.py gives a layer a window only where layer_types says
    sliding_attention: a bare sliding_window leaves every layer full (kvcli slid them all)."""
    cfg = {**UNKNOWN, "architectures": ["FooForCausalLM"], "model_type": "foo",
           "sliding_window": 512}
    assert set(read_hf_config(cfg).layer_kinds) == {"full"}
    listed = {**cfg, "layer_types": ["sliding_attention"] * 3 + ["full_attention"]}
    assert read_hf_config(listed).layer_kinds == ("sliding",) * 3 + ("full",)


# classes whose vLLM class subclasses a built one and reads the same config (their model
# files): the parent's recorded config under the child's name must give the parent's specs
SUBCLASSES = {
    "MiniCPMOcrForConditionalGeneration": "MiniCPMV4_6ForConditionalGeneration",
    "InternS2PreviewForConditionalGeneration": "Qwen3_5MoeForConditionalGeneration",
    "Cosmos3ForConditionalGeneration": "Qwen3VLForConditionalGeneration",
    "BeeForConditionalGeneration": "LlavaOnevisionForConditionalGeneration",
    "RForConditionalGeneration": "LlavaOnevisionForConditionalGeneration",
    "Qwen3ASRRealtimeGeneration": "Qwen3ASRForConditionalGeneration",
}


@pytest.mark.parametrize(("child", "parent"), SUBCLASSES.items())
def test_a_subclass_reads_its_parents_recorded_specs(child: str, parent: str) -> None:
    """(Qwen3-ASR Realtime's was refused for a missing 'num_hidden_layers' before)"""
    row = ROWS[parent]
    renamed = {**row, "config": {**row["config"], "architectures": [child]}}
    ours = kvcli_specs(renamed, child)
    assert not isinstance(ours, InputError), str(ours)
    assert same(ours, vllm_specs(row))


def test_a_replay_warns_of_it_too(tmp_path: Path) -> None:
    trace = tmp_path / "t.jsonl"
    trace.write_text(json.dumps({"timestamp": 0, "input_length": 32, "output_length": 2}) + "\n")
    model = tmp_path / "c.json"
    model.write_text(json.dumps(UNKNOWN))
    r = CliRunner().invoke(app, ["replay", str(trace), "--mode", "cache", "--model-config",
                                 str(model), "--gpu-memory-gib", "80", "--json"])
    assert r.exit_code == 0, r.output
    assert any(w.startswith("architecture 'LlamaForCasualLM' is not in vLLM 0.33's model "
                            "registry") for w in json.loads(r.stdout)["warnings"])
