"""`kvcli replay` (placeholder: owned by the issue that builds it)."""

import typer


def register(app: typer.Typer) -> None:
    @app.command("replay")
    def _placeholder() -> None:
        """Not built yet."""
        raise typer.Exit(1)
