"""Dev tool, only for record_gdn_start.py (on PYTHONPATH, so that vLLM's model-inspection
subprocess gets it too): the oracle's environment lacks `compressed_tensors`, which the Gated
DeltaNet layer's module imports through its quantisation imports; every name asked of it is a
placeholder class (none is used to size a cache)."""
# ruff: noqa
import importlib.abc
import importlib.machinery
import sys
import types

PACKAGE = "compressed_tensors"


class _Stub(types.ModuleType):
    __path__: list = []

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return type(name, (), {})


class _Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, name, path, target=None):
        if name == PACKAGE or name.startswith(PACKAGE + "."):
            return importlib.machinery.ModuleSpec(name, self, is_package=True)
        return None

    def create_module(self, spec):
        return _Stub(spec.name)

    def exec_module(self, module):
        pass


sys.meta_path.insert(0, _Finder())
