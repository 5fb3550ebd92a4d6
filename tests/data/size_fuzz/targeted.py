# ruff: noqa
"""Dev tool (not a test): hand-cut cases beside a seed's draws, in gen.py's form, for what a
draw reaches only by chance (README.md, the fourth round):

    python3 tests/data/size_fuzz/targeted.py > /tmp/fuzz3/targeted.jsonl

- a hybrid class cut to its attention layers alone (vLLM aligns the attention block to the
  Mamba page by the class: seed 2's s2-0141 found it for Qwen3.5), each at TP 1 and 2;
- a MoE class whose dense-layer keys cover every layer (vLLM refuses to build it);
- the towers counted in the fourth round (MuseGlimmer, Cosmos3-Edge, MOSS-Transcribe-Diarize,
  Isaac), their census configs with the text model cut to two layers, at TP 1, 2, 4 and 8.
"""
import copy, json
import gen

GIB = 1 << 30


def attention_only(arch, tc):
    """Cut ``tc`` to two layers, both attention, in the family's own keys."""
    tc["num_hidden_layers"] = 2
    if arch == "JambaForCausalLM":
        tc.update(attn_layer_period=1, attn_layer_offset=0, expert_layer_period=1,
                  expert_layer_offset=0)
    elif arch == "KimiLinearForCausalLM":
        tc["linear_attn_config"].update(full_attn_layers=[1, 2], kda_layers=[])
    elif arch.startswith("NemotronH"):
        tc["hybrid_override_pattern"] = "**"
    elif arch == "GraniteMoeHybridForCausalLM":
        tc["layer_types"] = ["attention"] * 2
    else:
        tc["layer_types"] = ["full_attention"] * 2
        if "full_attn_idxs" in tc:
            tc["full_attn_idxs"] = [0, 1]


HYBRID = ("Qwen3NextForCausalLM", "Qwen3_5ForCausalLM", "Qwen3_5MoeForCausalLM",
          "GraniteMoeHybridForCausalLM", "JambaForCausalLM", "KimiLinearForCausalLM",
          "Lfm2ForCausalLM", "Lfm2MoeForCausalLM", "NemotronHForCausalLM",
          "NemotronH_Nano_VL_V2")
# (the key that makes every layer dense, set to the layer count)
DENSE = {"AfmoeForCausalLM": "num_dense_layers",
         "PanguProMoEV2ForCausalLM": "first_k_dense_replace"}


def main():
    n = 0
    for arch in HYBRID:
        for tp in (1, 2):
            cfg = copy.deepcopy(gen.ROWS[arch]["config"])
            attention_only(arch, gen.text_config(cfg))
            opts = {"tp": tp, "kv_cache_dtype": "auto", "max_model_len": 4096,
                    "block_size": 64 if "Kimi" in arch else None, "available": GIB}
            print(json.dumps({"id": f"t2-{n:04d}", "arch": arch, "seed": None, "config": cfg,
                              "options": opts, "mutated": ["attention only"]}))
            n += 1
    for arch, key in DENSE.items():
        cfg = copy.deepcopy(gen.ROWS[arch]["config"])
        tc = gen.text_config(cfg)
        tc[key] = tc["num_hidden_layers"]
        opts = {"tp": 1, "kv_cache_dtype": "auto", "max_model_len": 4096, "block_size": None,
                "available": GIB}
        print(json.dumps({"id": f"t2-{n:04d}", "arch": arch, "seed": None, "config": cfg,
                          "options": opts, "mutated": [key]}))
        n += 1
    for arch in TOWERS:
        for tp in (1, 2, 4, 8):
            cfg = copy.deepcopy(gen.ROWS[arch]["config"])
            tc = gen.text_config(cfg)
            old = tc["num_hidden_layers"]
            tc["num_hidden_layers"] = 2
            gen.cut_layers(tc, old, 2, [])
            opts = {"tp": tp, "kv_cache_dtype": "auto", "max_model_len": 4096,
                    "block_size": None, "available": GIB}
            print(json.dumps({"id": f"t2-{n:04d}", "arch": arch, "seed": None, "config": cfg,
                              "options": opts, "mutated": ["num_hidden_layers"]}))
            n += 1


TOWERS = ("MuseGlimmerForConditionalGeneration", "Cosmos3EdgeForConditionalGeneration",
          "MossTranscribeDiarizeForConditionalGeneration", "IsaacForConditionalGeneration")

if __name__ == "__main__":
    main()
