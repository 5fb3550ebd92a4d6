"""`kvcli gen KIND`: write a synthetic trace with a known structure (Mooncake format)."""

from __future__ import annotations

from enum import Enum
from typing import Annotated

import typer


class Kind(str, Enum):
    shared_prefix = "shared-prefix"
    multiturn = "multiturn"
    b2b = "b2b"


class Queries(str, Enum):
    repeat = "repeat"
    fresh = "fresh"
    multiturn = "multiturn"


# The options only some kinds read (the rest read every one): given to another kind, refused.
_ONLY = {"groups": ("shared-prefix",), "prompts_per_group": ("shared-prefix",),
         "question_tokens": ("shared-prefix",), "system_tokens": ("shared-prefix", "multiturn"),
         "conversations": ("multiturn",), "turns": ("multiturn",), "user_tokens": ("multiturn",),
         "think_time_s": ("multiturn",), "tenants": ("b2b",), "users": ("b2b",),
         "context_tokens": ("b2b",), "query_tokens": ("b2b",), "requests": ("b2b",),
         "stage_s": ("b2b",), "queries": ("b2b",)}


def register(app: typer.Typer) -> None:
    @app.command("gen")
    def gen_cmd(
        ctx: typer.Context,
        kind: Annotated[Kind, typer.Argument(help="shared-prefix: groups of prompts sharing a "
                                             "system prompt; multiturn: chats whose next turn "
                                             "contains the previous turn and its answer; b2b: llm-d's "
                                             "tenants x users workload (docs/replay.md).")],
        out: Annotated[str | None, typer.Option("-o", "--output",
                                                   help="Write here (.gz: gzip). [default: stdout]")] = None,
        seed: Annotated[int, typer.Option(help="Random seed.")] = 0,
        block_size: Annotated[int, typer.Option(help="Tokens per trace block id.")] = 16,
        rate: Annotated[float | None, typer.Option(
            help="Arrivals per second (prompts, or conversation starts) [default: 4 / 0.5]; "
                 "b2b takes --qps.")
        ] = None,
        groups: Annotated[int, typer.Option(help="shared-prefix: groups.")] = 8,
        prompts_per_group: Annotated[int, typer.Option(help="shared-prefix: prompts a group.")
                                     ] = 16,
        system_tokens: Annotated[int | None, typer.Option(
            help="System prompt tokens [default: 1024 / 512].")] = None,
        question_tokens: Annotated[int, typer.Option(help="shared-prefix: question tokens.")
                                   ] = 128,
        conversations: Annotated[int, typer.Option(help="multiturn: conversations.")] = 40,
        turns: Annotated[int, typer.Option(help=(
            "multiturn: the likeliest number of turns a conversation (triangular on 1 .. 2T-1, "
            "rounded down: a mean of about T - 0.5)."))] = 5,
        user_tokens: Annotated[int, typer.Option(help="multiturn: mean user message tokens.")
                               ] = 200,
        output_tokens: Annotated[int | None, typer.Option(
            help="Output tokens (mean for multiturn) [default: 128 / 150 / 1000].")] = None,
        think_time_s: Annotated[float, typer.Option(help="multiturn: mean think time.")] = 20.0,
        tenants: Annotated[int, typer.Option(help="b2b: tenants (customers).")] = 150,
        users: Annotated[int, typer.Option(help="b2b: users a tenant.")] = 5,
        context_tokens: Annotated[int, typer.Option(help="b2b: a tenant's shared context.")
                                  ] = 6000,
        query_tokens: Annotated[int, typer.Option(help="b2b: a user's question.")] = 1200,
        requests: Annotated[int, typer.Option(help="b2b: requests.")] = 7500,
        qps: Annotated[str | None, typer.Option(
            help="b2b: Poisson rate, or stages of a ramp (3,10,30,60) [default: 10].")] = None,
        stage_s: Annotated[float, typer.Option(help="b2b: seconds a --qps stage lasts.")] = 60.0,
        queries: Annotated[Queries, typer.Option(
            help="b2b: a user re-sends its question (repeat, as inference-perf), sends a new "
                 "one (fresh), or continues its conversation (multiturn).")] = Queries.repeat,
    ) -> None:
        """Write a synthetic trace (one JSON object a line) that `kvcli replay` reads."""
        from kvcli import output
        from kvcli.given_params import given_params

        def run() -> None:
            from kvcore.engine import gen, gen_b2b
            from kvcore.errors import InputError

            output.check_output(out, "output")
            for name, v in (("block_size", block_size), ("groups", groups),
                            ("prompts_per_group", prompts_per_group),
                            ("conversations", conversations), ("turns", turns),
                            ("user_tokens", user_tokens), ("question_tokens", question_tokens)):
                if v < 1:
                    raise InputError(f"must be >= 1, got {v}", field=name)
            # An option another kind reads would be ignored here: say so instead.
            if kind is Kind.b2b and rate is not None:
                raise InputError("b2b takes --qps", field="rate")
            if kind is not Kind.b2b and qps is not None:
                raise InputError("only b2b takes it (the others take --rate)", field="qps")
            given = {p.name for p in given_params(ctx)}
            for name, kinds in _ONLY.items():
                if kind.value not in kinds and name in given:
                    raise InputError(f"{kind.value} does not take it (only {' and '.join(kinds)})",
                                     field=name)
            if kind is Kind.b2b:
                rates = gen_b2b.parse_qps("10" if qps is None else qps)
                if len(rates) == 1 and "stage_s" in given:
                    # (a single rate has no stages: the trace came out the same, unsaid)
                    raise InputError("needs a ramp of --qps stages (e.g. 3,10,30); one rate "
                                     "has none", field="stage_s")
                if (queries is Queries.fresh and "queries" in given
                        and requests <= tenants * users):
                    # (a question is fresh or repeated only from a user's second one on: the
                    # trace came out byte for byte repeat's, unsaid)
                    output.warn(f"option --queries fresh: no effect with --requests {requests:,} "
                                f"at most --tenants x --users ({tenants * users:,}): each user "
                                "sends one query, so fresh and repeat make the same trace")
                recs = gen_b2b.b2b(
                    tenants=tenants, users=users, context_tokens=context_tokens,
                    query_tokens=query_tokens,
                    output_tokens=1000 if output_tokens is None else output_tokens,
                    requests=requests, qps=rates,
                    stage_s=stage_s, queries=queries.value, block_size=block_size, seed=seed)
            elif kind is Kind.shared_prefix:
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
