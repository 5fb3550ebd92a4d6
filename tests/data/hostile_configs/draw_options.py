# ruff: noqa
"""The options mutate_configs.py draws beside a mutant config under the eighth campaign's seeds:
the multimodal and parallel options the new readers take (`--tensor-parallel-size`,
`--language-model-only`, `--mm-encoder-tp-mode`, `--limit-mm-per-prompt`, good or bad JSON);
under the ninth's also the options sparse MLA and the MTP drafts read (`--kv-cache-dtype fp8`,
an explicit `--block-size`, an MTP `--speculative-config`); under the tenth's also the MTP drafts'
deprecated names and bad token counts, `--max-num-batched-tokens` good or bad, and video limits
with `num_frames`; under the eleventh's also `--pipeline-parallel-size` 2 / 4 (Step3 and Step-3.5
on stages) and an MTP draft of 1..6 tokens under mtp or a deprecated name (more often for an MTP
target's family), good or bad."""
import random

LIMITS = ['{"image": 0}', '{"image": 2, "video": 0}', '{"audio": 0}', '{"image": -1}',
          '{"image": 1.5}', '{"image": "x"}', '{"image": 1e30}', '{"image": null}', '[1]',
          '{"image": {"count": 2}}', '{"picture": 1}', '{', '7', '{"image": true}',
          '{"image": 2e9}', '{"video": {"count": 1, "num_frames": -3}}']

SPECS = ['{"method": "mtp", "num_speculative_tokens": 1}',
         '{"method": "mtp", "num_speculative_tokens": 3}']


SPECS10 = ['{"method": "ernie_mtp", "num_speculative_tokens": 1}',
           '{"method": "step3p5_mtp", "num_speculative_tokens": 2}',
           '{"method": "mtp", "num_speculative_tokens": 0}',
           '{"method": "mtp", "num_speculative_tokens": -1}',
           '{"method": "mtp", "num_speculative_tokens": 1e30}',
           '{"method": "mtp", "num_speculative_tokens": "x"}',
           '{"method": "mtp", "num_speculative_tokens": 1, "max_model_len": "x"}',
           '{"method": "mtp"}', '{"method": ["mtp"]}']
BATCHED = ["0", "-1", "1", "16", "8192", "1e30", "x", "99999999999999999999"]
FRAMES = ['{"video": {"count": 1, "num_frames": 0}}', '{"video": {"count": 1, "num_frames": "x"}}',
          '{"video": {"count": 1, "num_frames": 1e30}}', '{"video": {"count": -1}}',
          '{"image": 1, "video": {"count": 1, "num_frames": 8}}', '{"audio": {"count": 2}}']

# (set 11's: vLLM's deprecated names of mtp for the several-module targets, K 1..6, bad values)
MTP_NAMES11 = ("mtp", "mtp", "qwen3_next_mtp", "deepseek_mtp", "glm4_moe_mtp",
               "glm4_moe_lite_mtp", "pangu_ultra_moe_mtp", "glm_ocr_mtp", "step3p5_mtp")
BAD_SPECS11 = ['{"method": "mtp", "num_speculative_tokens": 7}',
               '{"method": "mtp", "num_speculative_tokens": 2.5}',
               '{"method": "mtp", "num_speculative_tokens": true}',
               '{"method": "mtp", "num_speculative_tokens": 2, "max_model_len": 0}',
               '{"method": "qwen3_next_mtp", "num_speculative_tokens": null}',
               '{"method": "MTP", "num_speculative_tokens": 1}', '{"method": null}',
               '{"method": "mtp", "num_speculative_tokens": 1, "model": 3}',
               '{"method": "mtp", "num_speculative_tokens": 2, "draft_tensor_parallel_size": 3}',
               '{"method": "mtp", "num_speculative_tokens": 1, "quantization": "fp8"}', '[]']
PP = ("2", "4", "2", "4", "2", "4", "3", "0", "x")


def _set11(seed, index, family):
    from families import MTP_FAMILIES
    rng = random.Random(seed * 11_000_027 + index)
    out = []
    if rng.random() < (0.5 if family in ("step3_pp", "quant_step3") else 0.15):
        out += ["--pipeline-parallel-size", rng.choice(PP)]
    if rng.random() < (0.7 if family in MTP_FAMILIES else 0.1):
        if rng.random() < 0.8:
            k = rng.randint(1, 6)
            out += ["--speculative-config", '{"method": "%s", "num_speculative_tokens": %d}'
                    % (rng.choice(MTP_NAMES11), k)]
        else:
            out += ["--speculative-config", rng.choice(BAD_SPECS11)]
    return out


def options(seed, index, which, family=None):
    """The options drawn for mutant (seed, index): none under seed set 7 (the draws of the
    seventh campaign replay unchanged)."""
    if which == "7":
        return []
    rng = random.Random(seed * 7_000_003 + index)
    out = []
    if rng.random() < 0.5:
        out += ["--tensor-parallel-size", str(rng.choice((2, 4, 8)))]
    if rng.random() < 0.2:
        out.append("--language-model-only")
    if rng.random() < 0.2:
        out += ["--mm-encoder-tp-mode", "data"]
    if rng.random() < 0.15:
        out += ["--limit-mm-per-prompt", rng.choice(LIMITS)]
    if which == "8":
        return out
    # (set 9's draws from their own stream, so set 8's options replay unchanged)
    rng = random.Random(seed * 9_000_011 + index)
    if rng.random() < 0.25:
        out += ["--kv-cache-dtype", rng.choice(("fp8", "fp8", "fp8_e4m3", "auto"))]
    if rng.random() < 0.1:
        out += ["--block-size", rng.choice(("16", "32", "64"))]
    if rng.random() < 0.1:
        out += ["--speculative-config", rng.choice(SPECS)]
    if which == "9":
        return out
    # (set 10's: the MTP drafts' deprecated names, --max-num-batched-tokens, video frames)
    rng = random.Random(seed * 10_000_019 + index)
    if rng.random() < 0.15:
        out += ["--speculative-config", rng.choice(SPECS10)]
    if rng.random() < 0.15:
        out += ["--max-num-batched-tokens", rng.choice(BATCHED)]
    if rng.random() < 0.1:
        out += ["--limit-mm-per-prompt", rng.choice(FRAMES)]
    if which == "10":
        return out
    # (set 11's: the pipeline stages and the several-module MTP drafts, by family)
    if "--speculative-config" in out and family is not None:
        i = out.index("--speculative-config")
        del out[i:i + 2]        # (set 11's draft in place of set 9's / 10's)
    return out + _set11(seed, index, family)


def memory(which):
    """`kvcli config`'s pool options: set 8's 2 TiB and 4096 tokens let DeepSeek-V3.2, GLM-5,
    Maverick and Kimi-K2.5 reach the sizing a mutant should reach, not the refusal that 80 GiB
    cannot hold their weights."""
    if which == "7":
        return ["--gpu-memory-gib", "80"]
    return ["--gpu-memory-gib", "2048", "--max-model-len", "4096"]
