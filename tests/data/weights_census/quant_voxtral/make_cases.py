"""Write the census configs here (python make_cases.py, in this folder): Voxtral under
../quant_towers/make_cases.py's quantisation methods, on ../mm_audio's tiny-voxtral-downsample
widened so that groups and blocks of 128 divide its linears at TP 1 (its Whisper encoder 256
wide, 4 heads, MLP 512; its Llama text model 512 wide, 8 heads of 64, MLP 1,024)."""
# ruff: noqa
import importlib.util, json
from pathlib import Path

HERE = Path(__file__).resolve().parent
_spec = importlib.util.spec_from_file_location("qt_cases", HERE.parent / "quant_towers" /
                                               "make_cases.py")
qt = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(qt)

KEEP = ("fp8", "fp8-block", "ct-fp8", "ct-w4a16", "awq", "gptq")


def base():
    cfg = qt.read("mm_audio/tiny-voxtral-downsample.config.json")
    cfg["audio_config"] = {**cfg["audio_config"], "hidden_size": 256, "intermediate_size": 512,
                           "num_attention_heads": 4}
    cfg["text_config"] = {**cfg["text_config"], "hidden_size": 512, "intermediate_size": 1024,
                          "num_attention_heads": 8}
    cfg["hidden_size"] = 512
    return cfg


def main():
    names = ["whisper_encoder", "audio_language_adapter"]
    ignore = ["re:.*lm_head", *(f"re:.*{n}.*" for n in names)]
    for method, q in qt.methods(names, ignore).items():
        if method in KEEP:
            (HERE / f"tiny-voxtral-{method}.config.json").write_text(
                json.dumps({**base(), "quantization_config": q}, indent=1) + "\n")


if __name__ == "__main__":
    main()
