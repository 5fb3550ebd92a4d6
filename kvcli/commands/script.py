"""`kvcli script OPS`: replay an op script through kvcore's KV cache manager.

Prints one JSON line per op and a summary, exactly as the oracle (the real vLLM 0.33) does;
``--view`` renders the same run for a person (per op: each group's block table, hits, newly
allocated, cached and evicted blocks, the free count).
"""

from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    @app.command("script")
    def script(
        ops: str = typer.Argument(..., help="Op script: JSON or JSON lines, .gz ok, '-' for stdin."),
        view: bool = typer.Option(False, "--view", help="Render the run for a person (Rich)."),
    ) -> None:
        """Replay an op script (the oracle's contract) and print one JSON line per op."""
        from kvcli import output

        def go() -> None:
            from kvcore.script import load_script, run_ops

            cfg, op_list = load_script(ops)
            if view:
                from kvcli.script_view import render_script_view

                render_script_view(cfg, op_list, ops)
                return
            output.emit_lines(run_ops(cfg, op_list, ops))

        output.run(go)
