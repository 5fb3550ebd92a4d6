"""benchmarks/gpu_wheelhouse.sh, the part that needs no network: kvcli's own wheel carries the
three packages and the shipped block tables, installs offline with ``--target`` (as on the GPU
machine) and runs from there; the dependencies it leaves to the GPU image are real ones.
(The download of the dependencies needs network: checked by hand, see kernels/README.md.)"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "benchmarks" / "gpu_wheelhouse.sh"


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wh")
    p = subprocess.run(["bash", str(SCRIPT), "--kvcli-only", str(out)], cwd=ROOT,
                       env={**os.environ, "PYTHON": sys.executable}, capture_output=True,
                       text=True, timeout=300, check=False)
    if p.returncode != 0 and "No module named pip" in p.stderr:
        pytest.skip("no pip in this Python")
    assert p.returncode == 0, p.stderr[-2000:]
    (whl,) = out.glob("kvcli-*.whl")
    return whl


def test_the_wheel_carries_the_packages_and_the_tables(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    assert {n.split("/")[0] for n in names if "dist-info" not in n} == {"kvcore", "kvcli",
                                                                        "kernels"}
    assert "kernels/data/block_tables.json.gz" in names
    assert "kernels/triton_decode.py" in names and "kvcore/engine/decode_capture.py" in names
    assert not any("__pycache__" in n for n in names)


def test_the_wheel_installs_offline_and_runs_from_its_target(wheel: Path, tmp_path: Path) -> None:
    pytest.importorskip("torch")
    target = tmp_path / "site"
    p = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-index", "--no-deps",
                        "--target", str(target), str(wheel)], capture_output=True, text=True,
                       timeout=300, check=False)
    assert p.returncode == 0, p.stderr[-2000:]
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["PYTHONPATH"] = str(target)
    code = ("import kvcli, kernels, sys; from kvcli.gpu_bench import SHIPPED; "
            "print(kvcli.__file__.startswith(sys.argv[1]), SHIPPED.exists())")
    p = subprocess.run([sys.executable, "-c", code, str(target)], cwd=tmp_path, env=env,
                       capture_output=True, text=True, timeout=120, check=False)
    assert p.stdout.split() == ["True", "True"], p.stderr[-2000:]
    p = subprocess.run([sys.executable, "-m", "kvcli", "bench", "--gpu"], cwd=tmp_path, env=env,
                       capture_output=True, text=True, timeout=120, check=False)
    assert p.returncode == 3 and p.stdout == ""
    assert len(p.stderr.strip().splitlines()) == 1


def test_what_stays_behind_is_a_dependency_the_gpu_image_has() -> None:
    text = SCRIPT.read_text()
    provides = re.search(r'^GPU_PROVIDES="([^"]*)"', text, re.MULTILINE).group(1).split()
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    names = {re.split(r"[<>=!~ ;\[]", d.strip(), maxsplit=1)[0].lower() for d in deps}
    assert provides == ["numpy"] and set(provides) <= names
