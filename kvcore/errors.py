"""Errors that mean "the user's input is wrong" (exit code 2), as opposed to bugs."""

from __future__ import annotations


class InputError(Exception):
    """Bad input: a file, a line, a field and what is wrong with it.

    ``field`` is always the snake_case name of the file's field (``hash_ids``) or of the option
    (``num_blocks``), never a command-line spelling: kvcore does not know the flags. The CLI
    prints one line on stderr and exits with code 2: ``str(err)`` for a file's problem
    (``trace.jsonl:17: field 'hash_ids': ...``), ``option --num-blocks: ...`` for a field
    without a file (`kvcli.output.describe`). ``remedy`` is an option that gets past the
    error and what it does (``("skip_bad", "skips such requests")``); the CLI spells its flag.
    """

    def __init__(self, message: str, *, path: str | None = None, line: int | None = None,
                 field: str | None = None, remedy: tuple[str, str] | None = None) -> None:
        self.message = message
        self.path = path
        self.line = line
        self.field = field
        self.remedy = remedy
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
        how = f" (option {self.remedy[0]} {self.remedy[1]})" if self.remedy else ""
        return f"{where}{what}{self.message}{how}"


class NoDeviceError(Exception):
    """A GPU command on a machine without CUDA or torch (exit code 3)."""
