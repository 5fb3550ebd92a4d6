"""`kvcli gen KIND`: write a synthetic trace with a known structure (Mooncake format)."""

from __future__ import annotations

from enum import Enum
from typing import Annotated

import typer


class Kind(str, Enum):
    shared_prefix = "shared-prefix"
    multiturn = "multiturn"


def register(app: typer.Typer) -> None:
    @app.command("gen")
    def gen_cmd(
        kind: Annotated[Kind, typer.Argument(help="shared-prefix: groups of prompts sharing a "
                                             "system prompt; multiturn: chats whose next turn "
                                             "contains the previous turn and its answer.")],
        out: Annotated[str | None, typer.Option("-o", "--output",
                                                   help="Write here (default stdout; .gz: gzip).")] = None,
        seed: Annotated[int, typer.Option(help="Random seed.")] = 0,
        block_size: Annotated[int, typer.Option(help="Tokens per trace block id.")] = 16,
        rate: Annotated[float | None, typer.Option(
            help="Arrivals per second (prompts, or conversation starts) [default: 4 / 0.5].")
        ] = None,
        groups: Annotated[int, typer.Option(help="shared-prefix: groups.")] = 8,
        prompts_per_group: Annotated[int, typer.Option(help="shared-prefix: prompts a group.")
                                     ] = 16,
        system_tokens: Annotated[int | None, typer.Option(
            help="System prompt tokens [default: 1024 / 512].")] = None,
        question_tokens: Annotated[int, typer.Option(help="shared-prefix: question tokens.")
                                   ] = 128,
        conversations: Annotated[int, typer.Option(help="multiturn: conversations.")] = 40,
        turns: Annotated[int, typer.Option(help="multiturn: mean turns a conversation.")] = 5,
        user_tokens: Annotated[int, typer.Option(help="multiturn: mean user message tokens.")
                               ] = 200,
        output_tokens: Annotated[int | None, typer.Option(
            help="Output tokens (mean for multiturn) [default: 128 / 150].")] = None,
        think_time_s: Annotated[float, typer.Option(help="multiturn: mean think time.")] = 20.0,
    ) -> None:
        """Write a synthetic trace (one JSON object a line) that `kvcli replay` reads."""
        from kvcli import output

        def run() -> None:
            from kvcore.engine import gen
            from kvcore.errors import InputError

            output.check_output(out, "output")
            for name, v in (("block_size", block_size), ("groups", groups),
                            ("prompts_per_group", prompts_per_group),
                            ("conversations", conversations), ("turns", turns),
                            ("user_tokens", user_tokens), ("question_tokens", question_tokens)):
                if v < 1:
                    raise InputError(f"must be >= 1, got {v}", field=name)
            if kind is Kind.shared_prefix:
                recs = gen.shared_prefix(
                    groups=groups, prompts_per_group=prompts_per_group,
                    system_tokens=1024 if system_tokens is None else system_tokens,
                    question_tokens=question_tokens,
                    output_tokens=128 if output_tokens is None else output_tokens,
                    block_size=block_size, rate=4.0 if rate is None else rate, seed=seed)
            else:
                recs = gen.multiturn(
                    conversations=conversations, turns=turns,
                    system_tokens=512 if system_tokens is None else system_tokens,
                    user_tokens=user_tokens,
                    output_tokens=150 if output_tokens is None else output_tokens,
                    block_size=block_size, rate=0.5 if rate is None else rate,
                    think_time_s=think_time_s, seed=seed)
            with output.open_output("-" if out is None else out, field="output") as f:
                output.emit_lines(iter(recs), f)
            if out is not None and out != "-":
                output.message(f"wrote {len(recs)} requests to {out}")

        output.run(run)
