"""Errors that mean "the user's input is wrong" (exit code 2), as opposed to bugs."""

from __future__ import annotations

import os


def path_label(path: str) -> str:
    """``path`` as outputs and messages show it: itself, unless its bytes are not UTF-8 (Python
    holds them as surrogates, which no JSON writer takes: `--json` and `--events` ended in a
    UnicodeEncodeError) or it holds a control character (a newline split the one-line error):
    then with those bytes and characters escaped, ``bad\\xffname.jsonl``."""
    if path.isprintable():
        try:
            path.encode("utf-8")
            return path
        except UnicodeEncodeError:
            pass
    return printable(os.fsencode(path).decode("utf-8", "backslashreplace"))


def printable(text: str) -> str:
    """``text`` with each character that is not printable (a newline, a lone surrogate) written
    as its escape: what a one-line message shows of a name."""
    return text if text.isprintable() else "".join(
        c if c.isprintable() else ascii(c)[1:-1] for c in text)


def clipped(value: object, width: int = 40) -> str:
    """`repr(value)` cut to `width` characters: a message quotes the value a line holds, and a
    line may hold 256 MiB (a 5,000-character `input_length` was one 5 KB error line)."""
    text = repr(value)
    return text if len(text) <= width else text[:width - 3] + "..."


def clipped_int(value: int) -> str:
    """`value`, or its digit count when it is long: ``a 4,300-digit integer`` (the longest a
    command line's value converts to, Python's limit), which was a 4.4 KB error line."""
    text = str(value)
    return text if len(text) <= 40 else f"a {len(text.lstrip('-')):,}-digit integer"


def floated_integer(v: object) -> bool:
    """A number the JSON reader (orjson) took as a float only because, written as an integer,
    it is past 64 bits: 'got 1.1805916207174113e+21' read as if the file held a float."""
    return isinstance(v, float) and v.is_integer() and abs(v) >= 2**63


def shown_value(v: object) -> str:
    """``v`` as a message quotes it: `clipped`, an integer past 64 bits said to be one."""
    if floated_integer(v):
        return f"{v:.6g} (an integer this large reads as a float)"
    return clipped(v)


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
            where = path_label(str(self.path))    # (a newline in a name split the line)
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


def past_the_table(tokens: int, full: int, held: int, events: bool) -> InputError:
    """An op script's request past max_model_len where vLLM 0.33's `cache_full_blocks` fails
    (`kvcore.block_pool`): it fills ``full`` blocks, its table holds ``held``."""
    how = ("with KV cache events on (IndexError in cache_full_blocks)" if events else
           "(a one-token window masks the blocks it caches past the table: AssertionError)")
    return InputError(f"a request of {tokens} tokens fills {full} blocks but max_model_len "
                      f"gave it {held}: vLLM 0.33 fails here {how}",
                      field="kv_events" if events else "max_model_len")


def sync_load_past_pool(request_id: str, err: ValueError) -> InputError:
    """A sync load over a Mamba group that takes more blocks than vLLM 0.33 counted for it."""
    return InputError(
        f"request {request_id}: a sync load over a Mamba group needs more GPU blocks than are "
        f"free ({err}): vLLM 0.33 fails here too (ValueError in get_new_blocks): the align-mode "
        "Mamba count caps a step at its running state and checkpoint blocks and leaves out the "
        "block the loaded state takes; sync_load_budget_bytes 0 (every load asynchronous) "
        "avoids it", field="sync_load_budget_bytes")


def tails_in_one_step(request_id: str, boundaries: list[int]) -> InputError:
    """A request handing the CPU tier Mamba states at two positions inside blocks in one step,
    where vLLM 0.33's connector asserts one (`kvcore.offload.hybrid_partial`)."""
    at = " and ".join(map(str, boundaries))
    return InputError(
        f"request {request_id}: one step hands the CPU tier Mamba states inside blocks at tokens "
        f"{at} (the shared-prefix junction's and the prompt tail's): vLLM 0.33 fails here too "
        "(AssertionError in the offloading connector's _build_partial_tail_store_jobs: one such "
        "position a request a step); without this option the junction's state is not kept",
        field="enable_mamba_shared_prefix_checkpoint")


def nonempty_name(value: str | None, field: str) -> None:
    """Refuse ``''`` (or blanks) given for a name or path option: an unset shell variable was
    read as "none given" and the run went on without it. None (not given) passes."""
    if value is not None and not value.strip():
        raise InputError(f"must be a non-empty name or path, got {value!r}", field=field)


class LookupAssertion(ValueError):
    """vLLM's assertion at a prefix-cache lookup, raised where kvcli's manager meets it (a
    chunked local attention group's): a replay whose start-up foresaw it raises its refusal,
    in vLLM's words, instead (`kvcore.engine.first_lookup`), so only a run that looks up fails,
    as in vLLM."""
