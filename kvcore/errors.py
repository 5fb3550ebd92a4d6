"""Errors that mean "the user's input is wrong" (exit code 2), as opposed to bugs."""

from __future__ import annotations


class InputError(Exception):
    """Bad input: a file, a line, a field and what is wrong with it.

    The CLI prints ``str(err)`` as one line on stderr and exits with code 2, so the message must
    name where the problem is (``trace.jsonl:17: field 'hash_ids': ...``).
    """

    def __init__(self, message: str, *, path: str | None = None, line: int | None = None,
                 field: str | None = None) -> None:
        self.message = message
        self.path = path
        self.line = line
        self.field = field
        super().__init__(self._format())

    def _format(self) -> str:
        where = ""
        if self.path is not None:
            where = str(self.path)
            if self.line is not None:
                where += f":{self.line}"
            where += ": "
        elif self.line is not None:
            where = f"line {self.line}: "
        what = f"field '{self.field}': " if self.field else ""
        return f"{where}{what}{self.message}"


class NoDeviceError(Exception):
    """A GPU command on a machine without CUDA or torch (exit code 3)."""
