"""Dev tool, only for record_qwen3_5.py (on PYTHONPATH in place of ../oracle_stubs, so that
vLLM's model-inspection subprocess gets it too): ../oracle_stubs/sitecustomize.py's
`compressed_tensors` placeholder, and the same placeholder for `torchvision`, absent from the
oracle's environment, which vLLM's qwen3_5.py imports through qwen3_vl.py and transformers'
Qwen2-VL image processor (`from torchvision.transforms.v2 import functional`). The image
processor is never run here (no input is processed); no module built imports it."""
# ruff: noqa
import importlib.util
import sys
from pathlib import Path

_spec = importlib.util.spec_from_file_location(
    "_oracle_stubs", Path(__file__).resolve().parents[1] / "oracle_stubs" / "sitecustomize.py")
_base = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_base)


class _VisionFinder(_base._Finder):
    def find_spec(self, name, path, target=None):
        if name == "torchvision" or name.startswith("torchvision."):
            # not for transformers' availability checks: torchvision stays "not installed"
            # (they would read its version), only an import of it gets the placeholder
            f = sys._getframe(1)
            while f is not None:
                if f.f_code.co_name == "_is_package_available":
                    return None
                f = f.f_back
            return importlib.machinery.ModuleSpec(name, self, is_package=True)
        return None


sys.meta_path.append(_VisionFinder())
