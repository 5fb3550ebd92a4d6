"""`OffloadMisuse`: a call vLLM's CPU manager asserts against (its own module: the rest of the
tier may be compiled, an AssertionError subclass cannot)."""

from __future__ import annotations


class OffloadMisuse(AssertionError):
    """A call vLLM's manager asserts against (loading a chunk that is not there or not ready,
    completing a load twice, a new key after the request finished). As in vLLM, the manager
    may be partly updated when it is raised. ``keys`` are the keys the message names, in order,
    each written ``{}`` in ``template`` (so a caller can print them its own way)."""

    def __init__(self, template: str, *keys: bytes) -> None:
        self.template = template
        self.keys = keys
        super().__init__(template.format(*(repr(k) for k in keys)))
