"""Falcon-H1: attention and a Mamba2 mixer side by side in every layer (vLLM's
FalconH1ParallelHybrid). vLLM's own start-up answer for the 7B shape is in
tests/data/mamba/start_defaults.json (test_mamba_start_defaults.py). Before Falcon-H1 was read,
kvcli sized it as 44 full-attention layers with no Mamba state at all.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kvcli.app import app
from kvcore.models import layer_specs, load_hf_config, read_hf_config
from kvcore.specs import FullAttentionSpec, MambaSpec

CONFIG = Path(__file__).resolve().parent / "data" / "mamba" / "falcon-h1-7b.config.json"
runner = CliRunner()


def test_every_layer_has_both_caches() -> None:
    g = read_hf_config(load_hf_config(CONFIG))
    specs = layer_specs(g, max_model_len=8192)
    assert [n for n, s in specs.items() if isinstance(s, FullAttentionSpec)] == [
        f"layers.{i}" for i in range(44)]
    assert [n for n, s in specs.items() if isinstance(s, MambaSpec)] == [
        f"layers.{44 + i}" for i in range(44)]
    # conv (3, 3072 + 2 x 1 x 256) and SSM (24, 128, 256), bf16: FalconH1's own shapes
    mamba = specs["layers.44"]
    assert isinstance(mamba, MambaSpec)
    assert mamba.shapes == ((3, 3584), (24, 128, 256))


@pytest.mark.parametrize("d_ssm, d_inner", [(None, 2 * 3072), (4096, 4096)])
def test_mamba_width_from_d_ssm_or_expand(d_ssm, d_inner) -> None:
    g = read_hf_config({**load_hf_config(CONFIG), "mamba_d_ssm": d_ssm})
    assert g.mamba is not None and g.mamba.d_inner == d_inner


def test_config_cli_layer_kinds() -> None:
    r = runner.invoke(app, ["config", "--model-config", str(CONFIG), "--num-blocks", "100",
                            "--max-model-len", "8192", "--json"])
    assert r.exit_code == 0 and json.loads(r.stdout)["layer_kinds"] == {"parallel": 44}
    # a parallel layer is two specs (attention and Mamba): not "one kind, nothing to pad"; its
    # Mamba page is padded whatever --no-pad-pages says, its attention pages divide
    r = runner.invoke(app, ["config", "--model-config", str(CONFIG), "--num-blocks", "100",
                            "--max-model-len", "8192", "--no-pad-pages", "--json"])
    assert r.exit_code == 0 and json.loads(r.stdout)["warnings"] == [
        ("option --no-pad-pages: no effect on falcon_h1 (no attention page needs padding: the "
         "pages divide one another)")]


def test_the_fixture_is_tii_s_7_6_b() -> None:
    """The fixture's widths (tests/data/README.md): TII publishes Falcon-H1-7B at 7.6 B
    parameters; the Mamba2 typed twice too wide before (48 heads, d_ssm 6144) made 8.8 B."""
    from kvcore.models.weights import estimate_params

    total, _ = estimate_params(read_hf_config(load_hf_config(CONFIG)))
    assert total == 7_585_648_736 and round(total / 1e9, 1) == 7.6
