"""Dev tool, only for record_qwen3_next_mtp.py (on PYTHONPATH, so that vLLM's model-inspection
subprocess gets it too): the oracle's environment lacks `compressed_tensors`, which the Gated
DeltaNet layer's module and the loader's online-quantization check import. Every name asked of
it, at any depth (``QuantizationStrategy.BLOCK``), is a placeholder class, as
../eagle_draft/record_draft_models.py's in-process placeholder; none is used by these
unquantized models."""
# ruff: noqa
import importlib.abc
import importlib.machinery
import sys
import types

PACKAGE = "compressed_tensors"


class _Any(type):
    def __getattr__(cls, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return _Any(name, (), {"__init__": lambda self, *a, **k: None})

    def __iter__(cls):
        return iter(())

    def __getitem__(cls, key):
        return cls


class _Stub(types.ModuleType):
    __path__: list = []

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return _Any(name, (), {"__init__": lambda self, *a, **k: None})


class _Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, name, path, target=None):
        if name == PACKAGE or name.startswith(PACKAGE + "."):
            return importlib.machinery.ModuleSpec(name, self, is_package=True)
        return None

    def create_module(self, spec):
        return _Stub(spec.name)

    def exec_module(self, module):
        pass


sys.meta_path.append(_Finder())
