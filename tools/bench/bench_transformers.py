#!/usr/bin/env python3
"""Hugging Face transformers generate() on the weights of a GGUF file: the side-by-side rows of
`make bench` (tools/bench/bench_series.py runs this). Not a test: the numbers depend on the machine.

    python3 tools/bench/bench_transformers.py MODEL.gguf [--device cuda|cpu] [--dtype bf16] [--dtype fp32]
        [--prompt-file tools/bench/bench_prompt.txt] [-n 128] [--random-init] [--attn sdpa|eager]

Prints one JSON line per --dtype on stdout (progress goes to stderr):

    {"engine": "transformers bf16", "prompt_tokens": 512, "prompt_tok_s": ..., "gen_tokens": 128,
     "gen_tok_s": ..., "ms_per_token": ..., "weight_bytes_per_token": ..., "weights": "gguf", ...}

Weights: by default every tensor of the file, dequantized to fp32 by gguf-py
(tools/fixtures/transformers_reference.py), then moved to the device and cast to each dtype in turn (fp32
before bf16, so that no value is rounded twice). gguf-py dequantizes in numpy at about 40M weights/s
on one core, so a 7B file takes minutes; --random-init builds the same configuration with
transformers' random initialization instead (the speed does not depend on the values).

Prompt: the ids that the GGUF's own tokenizer gives for --prompt-file, from
`./step04 MODEL --file PROMPT --ids` (built with make when missing): the same ids the steps run.

Timing, after one warm-up generate(): one generate(max_new_tokens=n, min_new_tokens=n,
do_sample=False) whose streamer notes the time of every token it receives. generate() hands it the
prompt, then each token as soon as it is chosen, copied to the host (which waits for the GPU). The
prompt's time runs from the prompt to the first token: the prefill and its argmax. Generated
tokens/s and ms/token count the n - 1 tokens after the first, over the time from the first token to
the last, as the steps count theirs. (Two runs, one of max_new_tokens=1, and a difference of their
times, would measure the same thing with the noise of both.)
"""

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

import torch
from transformers.generation.streamers import BaseStreamer

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tools" / "bench"))
from bench_series import GgufSummary  # noqa: E402 (tools/bench/ is on the path only now)

DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}


def log(message):
    print(message, file=sys.stderr, flush=True)


def prompt_ids(model_path, prompt_file):
    """The prompt's token ids from the GGUF's own vocabulary, encoded by step04."""
    step04 = REPO / "step04"
    if not step04.exists():
        subprocess.run(["make", "-s", "step04"], cwd=REPO, check=True, timeout=600)
    result = subprocess.run([str(step04), str(model_path), "--file", str(prompt_file), "--ids"],
                            capture_output=True, text=True, check=True, timeout=300)
    return [int(token) for token in result.stdout.split()]


def load_model(model_path, random_init, device):
    """Qwen2ForCausalLM in fp32 on device, configured from the file's metadata either way."""
    from gguf import GGUFReader
    from transformers import Qwen2ForCausalLM
    from transformers_reference import load_reference_model, read_config

    if random_init:
        # Built directly on the device: a 7B model's random init on the GPU takes a second.
        with torch.device(device):
            model = Qwen2ForCausalLM(read_config(GGUFReader(str(model_path))))
        return model.eval()
    return load_reference_model(str(model_path)).to(device)


def weight_bytes_per_token(model):
    """Bytes of the weights one generated token reads: every parameter but the embedding table,
    of which it reads one row, plus the LM head (the embedding table itself when tied)."""
    embedding = model.get_input_embeddings().weight
    lm_head = model.get_output_embeddings().weight
    total = sum(p.numel() * p.element_size() for p in model.parameters() if p is not embedding)
    if lm_head is embedding:
        total += lm_head.numel() * lm_head.element_size()
    return total


class TokenClock(BaseStreamer):
    """The time of each put(): the prompt first, then every generated token, already on the host."""

    def __init__(self):
        self.times = []

    def put(self, value):
        self.times.append(time.perf_counter())

    def end(self):
        pass


def generate(model, ids, n_new):
    """Exactly n_new greedy tokens; returns the TokenClock."""
    clock = TokenClock()
    model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=n_new, min_new_tokens=n_new,
                   do_sample=False, streamer=clock)
    return clock


@torch.no_grad()
def bench(model, ids, n_new, n_warmup):
    generate(model, ids, n_warmup)
    times = generate(model, ids, n_new).times
    prompt_s = times[1] - times[0]
    n_decoded = len(times) - 2  # the first token came from the prompt's pass
    decode_s = times[-1] - times[1]
    return dict(prompt_tokens=ids.shape[1], prompt_tok_s=round(ids.shape[1] / prompt_s, 2),
                gen_tokens=len(times) - 1,
                gen_tok_s=round(n_decoded / decode_s, 3) if n_decoded > 0 else None,
                ms_per_token=round(1000 * decode_s / n_decoded, 3) if n_decoded > 0 else None)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("model", help="a qwen2 GGUF file")
    ap.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    ap.add_argument("--dtype", action="append", choices=sorted(DTYPES),
                    help="run in this dtype; repeat for several (default: bf16)")
    ap.add_argument("--prompt-file", default=str(REPO / "tools" / "bench" / "bench_prompt.txt"))
    ap.add_argument("-n", "--new-tokens", type=int, default=128, help="tokens to generate (at least 2)")
    ap.add_argument("--warmup-tokens", type=int, default=8, help="tokens the warm-up generate() makes")
    ap.add_argument("--random-init", action="store_true",
                    help="random weights in the file's configuration instead of the file's weights")
    ap.add_argument("--attn", default="sdpa", choices=["sdpa", "eager"],
                    help="transformers' attention implementation (default sdpa, its own default)")
    args = ap.parse_args()
    if args.new_tokens < 2:
        ap.error("-n must be at least 2: the first token comes from the prompt's pass")
    if args.device == "cuda" and not torch.cuda.is_available():
        sys.exit("bench_transformers: no CUDA device visible to torch (use --device cpu)")
    # fp32 first: casting fp32 weights down rounds each value once.
    dtypes = sorted(set(args.dtype or ["bf16"]), key=lambda name: -DTYPES[name].itemsize)

    ids = prompt_ids(args.model, args.prompt_file)
    log(f"prompt: {len(ids)} tokens from {args.prompt_file}")
    start = time.perf_counter()
    model = load_model(args.model, args.random_init, args.device)
    load_s = time.perf_counter() - start
    weights = "random init" if args.random_init else "gguf"
    log(f"model: {weights} weights, {sum(p.numel() for p in model.parameters()) / 1e6:,.0f} M parameters, "
        f"loaded in {load_s:.1f} s")
    if hasattr(model, "set_attn_implementation"):
        model.set_attn_implementation(args.attn)
    else:  # an older transformers than the pinned one (the GPU machine has its own)
        model.config._attn_implementation = args.attn
    # The file's end-of-generation token, as a real run would stop on; min_new_tokens keeps it
    # from ending the timed runs early. (bench_series reads the header in a fraction of a second,
    # gguf-py's reader in about ten.)
    eos = int(GgufSummary(args.model).metadata["tokenizer.ggml.eos_token_id"])
    model.generation_config.eos_token_id = eos
    model.generation_config.pad_token_id = eos
    input_ids = torch.tensor([ids], dtype=torch.long, device=args.device)

    for name in dtypes:
        model.to(DTYPES[name])
        result = dict(engine=f"transformers {name}", device=args.device, attn=args.attn, weights=weights,
                      load_s=round(load_s, 1), weight_bytes_per_token=weight_bytes_per_token(model))
        result.update(bench(model, input_ids, args.new_tokens, args.warmup_tokens))
        print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
