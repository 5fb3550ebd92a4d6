"""The weights census's recorded ranks as pytest parameters (tests/data/weights_census/): each
(case, TP, rank) vLLM 0.33 built, refusals left out, shared by the census tests of the
weights, fp8, int quantisation, drafts and buffers; `kvcli config` against a recorded plan."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Collection
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kvcli.app import app
from kvcore.errors import InputError
from kvcore.mm_options import MMOptions, mm_options
from kvcore.models.buffers import estimate_buffer_bytes
from kvcore.models.geometry import ModelGeometry
from kvcore.models.hf_config import read_hf_config
from kvcore.models.mm_serving import apply_mm
from kvcore.models.weights import estimate_weights_bytes
from kvcore.sizing.resolve import resolve_kv_cache_config
from kvcore.specs import DTYPE_BYTES


def built_ranks(cases: dict, skip: Collection[str] = (),
                label: Callable[[str], str] = str) -> list:
    """``pytest.param(name, tp, rank)`` for every rank of ``cases`` vLLM built (its record has
    no ``refused``), the cases in ``skip`` left out; ids ``{label(name)}-tp{tp}-r{rank}``."""
    return [pytest.param(n, int(tp), r, id=f"{label(n)}-tp{tp}-r{r}")
            for n, c in cases.items() if n not in skip
            for tp, ranks in c["tp"].items() for r, rec in enumerate(ranks)
            if "refused" not in rec]


def refused_tps(cases: dict) -> list:
    """``pytest.param(name, tp)`` for every TP size at which vLLM refused to build a case (its
    first rank's record has ``refused``); ids ``{name}-tp{tp}``. `built_ranks`'s other half."""
    return [pytest.param(n, int(tp), id=f"{n}-tp{tp}") for n, c in cases.items()
            for tp, ranks in c["tp"].items() if "refused" in ranks[0]]


def case_mm(case: dict) -> MMOptions | None:
    """The multimodal serving options a census case was built with (its ``mm_options``), as
    kvcli reads them from the command line; None without."""
    given = case.get("mm_options")
    if given is None:
        return None
    limits = given.get("limit_mm_per_prompt")
    return mm_options(None if limits is None else json.dumps(limits),
                      given.get("language_model_only", False), given.get("mm_encoder_tp_mode"))


def check_ranks_agree(cases: dict) -> None:
    """Every case recorded at TP 1, 2, 4 and 8, built at TP 1, and every rank vLLM built at a
    TP holding the same bytes by dtype."""
    for name, case in cases.items():
        assert list(case["tp"]) == ["1", "2", "4", "8"], name
        assert "refused" not in case["tp"]["1"][0], name
        for ranks in case["tp"].values():
            done = [r for r in ranks if "refused" not in r]
            assert len({json.dumps(r["param_bytes_by_dtype"]) for r in done}) <= 1, name


def vllms_words(refused: str) -> str:
    """The words of a refusal a census recorded from vLLM, as kvcli quotes them."""
    # (pydantic wraps a refusal raised while a config is built: the words are its second line)
    line = refused.splitlines()[1].strip() if refused.startswith("ValidationError") else refused
    line = line.removeprefix("Value error, ").removeprefix("ValueError: ").split(" [type=")[0]
    if line.startswith("RuntimeError: Unsupported FusedMoe scheme: "):
        # (the rest is compressed-tensors' repr of the weights' and inputs' QuantizationArgs)
        return "Unsupported FusedMoe scheme"
    if line.startswith("('The quantization method %s is deprecated"):
        # (vLLM passes logger-style arguments to ValueError: its message is the tuple's repr)
        return ("The quantization method fbgemm_fp8 is deprecated and will be removed in "
                "future versions of vLLM. To bypass, set `--allow-deprecated-quantization`.")
    if set_ := re.search(r"\{('[^}]*)\}", line):
        # (a Python set's repr: its order varies from run to run)
        line = line.replace(set_[0], "{" + ", ".join(sorted(set_[1].split(", "))) + "}")
    return line


def case_geometry(data: Path, cases: dict, name: str, *, applied: bool = True) -> ModelGeometry:
    """Case `name`'s model (``BASE.config.json`` in `data`, BASE the name's first word), under
    the case's multimodal options unless not `applied`."""
    base = name.split(" ")[0]
    g = read_hf_config(json.loads((data / f"{base}.config.json").read_text()), name=base)
    return apply_mm(g, case_mm(cases[name]))[0] if applied else g


def conv_views(g: ModelGeometry, rank0: dict) -> int:
    """The bytes of Mamba2's ``conv_weights`` buffers on a rank, views of its conv1d weights
    (no memory of their own; kvcli counts none): from the TP's rank 0 record, `rank0`, whose
    parameters are listed by name (a wrapper's NemotronH language model)."""
    if g.mamba is None or g.mamba.version != "mamba2":
        return 0
    names = rank0["param_numel_by_name"]
    return sum(v for k, v in names.items() if k.endswith("conv1d.weight")) * DTYPE_BYTES[g.dtype]


def assert_rank_equal(g: ModelGeometry, tp: int, rec: dict, views: int = 0) -> None:
    """kvcli's weights and buffers on a rank of `tp` are the recorded rank's `rec` (its
    buffers less `views`, the bytes of buffers that view a parameter: `conv_views`)."""
    assert estimate_weights_bytes(g, tp) == sum(rec["param_bytes_by_dtype"].values())
    assert estimate_buffer_bytes(g, tp) == sum(
        sum(by_dtype.values()) for by_dtype in rec["buffer_bytes_by_dtype"].values()) - views


def kvcli_refusal(data: Path, cases: dict, name: str, tp: int, *, gpu_memory_gib: int = 80,
                  max_model_len: int = 4096) -> InputError:
    """The refusal kvcli sizes case `name` at TP `tp` with, under its serving options (a test
    fails where kvcli sizes it: vLLM refused to build it)."""
    with pytest.raises(InputError) as e:
        resolve_kv_cache_config(geometry=case_geometry(data, cases, name, applied=False),
                                tensor_parallel_size=tp, gpu_memory_gib=gpu_memory_gib,
                                max_model_len=max_model_len, mm=case_mm(cases[name]))
    return e.value


def assert_config_blocks(config: Path, blocks: str, *args: str) -> None:
    """`kvcli config` on `config` (at 80 GiB unless `args` give the memory) fits `blocks`
    blocks, with no warning of an uncounted tower."""
    memory = () if "--gpu-memory-gib" in args else ("--gpu-memory-gib", "80")
    out = CliRunner().invoke(app, ["config", "--model-config", str(config), *args, *memory])
    assert out.exit_code == 0, out.output
    assert f"num_blocks = {blocks} " in out.output
    assert "not counted" not in out.output


def config_on_plan(config: Path, plan: dict, *args: str) -> dict:
    """`kvcli config --json` on `config` with the KV cache given vLLM's planned bytes (nothing
    held back, no weights), its blocks, tokens and max concurrency asserted to be the plan's;
    the JSON, for the caller's own checks of groups and block sizes."""
    out = CliRunner().invoke(app, [
        "config", "--model-config", str(config), "--gpu-memory-gib",
        repr(plan["available"] / (1 << 30)), "--gpu-memory-utilization", "1", "--weights-gib",
        "0", *args, "--json"])
    assert out.exit_code == 0, out.output
    d = json.loads(out.stdout)
    assert (d["num_blocks"], d["kv_cache_tokens"]) == (plan["num_blocks"],
                                                       plan["kv_cache_tokens"])
    assert d["max_concurrency"] == pytest.approx(plan["max_concurrency"], rel=1e-12)
    return d
