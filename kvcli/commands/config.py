"""`kvcli config [MODEL]`: how many KV cache blocks fit this model on this GPU, and why.

Groups, each page size with its formula, num_blocks, capacity in tokens, max concurrency at
max_model_len and the largest max_model_len that fits, as vLLM 0.33 plans them. ``--json``
keys are documented in `kvcore.sizing.explain`. ``--list`` lists the presets.
"""

from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    @app.command("config")
    def config(
        model: str | None = typer.Argument(None, help="A preset (see --list) or its HF repo id."),
        list_presets: bool = typer.Option(False, "--list", help="List the model presets."),
        model_config: str | None = typer.Option(
            None, "--model-config", help="A Hugging Face config.json on disk."),
        gpu_memory_gib: float | None = typer.Option(
            None, "--gpu-memory-gib", help="GPU memory in GiB (e.g. 80)."),
        gpu_memory_utilization: float = typer.Option(0.9, "--gpu-memory-utilization"),
        weights_gib: float | None = typer.Option(
            None, "--weights-gib", help="Weights in GiB (default: estimated from the config)."),
        activation_gib: float = typer.Option(
            0.0, "--activation-gib", help="Activation/other memory to hold back, GiB."),
        kv_cache_dtype: str = typer.Option("auto", "--kv-cache-dtype",
                                           help="auto|fp16|bf16|fp32|fp8|fp8_e4m3|fp8_e5m2"),
        dtype: str | None = typer.Option(
            None, "--dtype", help="Model dtype: float16/fp16/half, bfloat16/bf16, float32/fp32."),
        block_size: int = typer.Option(16, "--block-size"),
        max_model_len: int | None = typer.Option(
            None, "--max-model-len", help="Default: the model's max_position_embeddings."),
        max_num_batched_tokens: int = typer.Option(8192, "--max-num-batched-tokens"),
        max_concurrent_batches: int = typer.Option(
            2, "--max-concurrent-batches",
            help="Batches in flight (2 = vLLM's async scheduling default, 1 = sync)."),
        num_blocks: int | None = typer.Option(None, "--num-blocks", help="Override."),
        tensor_parallel_size: int = typer.Option(1, "--tensor-parallel-size", "--tp"),
        layers: int | None = typer.Option(None, "--layers", help="Explicit geometry: layers."),
        kv_heads: int | None = typer.Option(None, "--kv-heads"),
        head_dim: int | None = typer.Option(None, "--head-dim"),
        sliding_window: int | None = typer.Option(None, "--sliding-window"),
        sliding_layers: str | None = typer.Option(
            None, "--sliding-layers", help="Which layers slide: '5:1' (5 sliding, 1 full, "
            "repeating) or indices '0,2,4-9'. Default: all."),
        attention_chunk_size: int | None = typer.Option(None, "--attention-chunk-size"),
        chunked_layers: str | None = typer.Option(None, "--chunked-layers"),
        disable_hybrid: bool = typer.Option(
            False, "--disable-hybrid-kv-cache-manager",
            help="Treat sliding/chunked layers as full attention (vLLM's flag)."),
        pad_pages: bool = typer.Option(
            False, "--pad-pages", help="Pad attention pages that do not divide (vLLM 0.33)."),
        no_prefix_caching: bool = typer.Option(
            False, "--no-prefix-caching", help="Mamba 'none' mode: one state per request."),
        as_json: bool = typer.Option(False, "--json", help="JSON on stdout."),
    ) -> None:
        """How many KV cache blocks fit a model on a GPU: groups, page formulas, capacity."""
        from kvcli import output

        def go() -> None:
            from kvcore.sizing.explain import list_view, sizing_view

            if list_presets:
                output.emit(list_view(), as_json=as_json)
                return
            from kvcore.sizing.resolve import resolve_kv_cache_config

            result = resolve_kv_cache_config(
                model, model_config=model_config, layers=layers, kv_heads=kv_heads,
                head_dim=head_dim, dtype=dtype, sliding_window=sliding_window,
                sliding_layers=sliding_layers, attention_chunk_size=attention_chunk_size,
                chunked_layers=chunked_layers, gpu_memory_gib=gpu_memory_gib,
                gpu_memory_utilization=gpu_memory_utilization, weights_gib=weights_gib,
                activation_gib=activation_gib, kv_cache_dtype=kv_cache_dtype,
                block_size=block_size, max_model_len=max_model_len,
                max_num_batched_tokens=max_num_batched_tokens,
                max_concurrent_batches=max_concurrent_batches, num_blocks=num_blocks,
                tensor_parallel_size=tensor_parallel_size, disable_hybrid=disable_hybrid,
                pad_pages=pad_pages, enable_prefix_caching=not no_prefix_caching)
            output.emit(sizing_view(result, gpu_memory_gib=gpu_memory_gib,
                                    gpu_memory_utilization=gpu_memory_utilization,
                                    activation_gib=activation_gib, tp=tensor_parallel_size),
                        as_json=as_json)

        output.run(go)
