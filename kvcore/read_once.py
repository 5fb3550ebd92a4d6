"""`ReadOnce`: what a whole-file input gave in this process (its value, or the `InputError` of
a bad file), kept by the file's version, so that a run reads each of its files once.

A run's start-up asks for the same file several times: a calibration file three times (vllm
serve's batch defaults on its GPU twice, then the clock), a model's config.json once for each
cluster replica (40,001 reads for 40,000 replicas); and a file given as ``-`` or a pipe had
nothing left the second time ("<stdin>:1: not valid JSON: Expecting value"). A version is the
path as given, the file's device, inode, size and modification time: a file rewritten is read
again. Standard input is read once a process.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Generic, TypeVar

from kvcore.errors import InputError

T = TypeVar("T")


class ReadOnce(Generic[T]):
    """`read` (a path to its value, an `InputError` for a bad file) called once per version of
    a file; the last `kept` versions are kept. A bad file raises the same `InputError` (the
    same message) each time it is asked for."""

    __slots__ = ("_got", "_kept", "_read")

    def __init__(self, read: Callable[[str], T], kept: int = 8) -> None:
        self._read = read
        self._kept = kept
        self._got: dict[tuple, T | InputError] = {}

    def __call__(self, path: str) -> T:
        key = version(path)
        got = self._got.get(key) if key is not None else None
        if got is None:
            try:
                got = self._read(path)
            except InputError as err:
                got = err
            if key is not None:
                self._got[key] = got
                if len(self._got) > self._kept:
                    del self._got[next(iter(self._got))]
        if isinstance(got, InputError):
            raise got.with_traceback(None)
        return got

    def forget(self, path: str) -> None:
        """Drop what `path`'s version now gave (standard input: a test that gives it again)."""
        key = version(path)
        if key is not None:
            self._got.pop(key, None)


def version(path: str) -> tuple | None:
    """What names one version of the file: the path as given, its device, inode, size and
    modification time; standard input once; None when it cannot be looked at (the reader then
    says why)."""
    if path == "-":
        return ("-",)
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return None
    return (path, st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)
