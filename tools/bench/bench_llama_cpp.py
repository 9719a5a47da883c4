#!/usr/bin/env python3
"""llama.cpp's own CPU speed on a GGUF model, measured the way our steps measure theirs.

    tools/bench/bench_llama_cpp.py MODEL.gguf [--prompt-file tools/bench/bench_prompt.txt] [--n-gen 128]
                             [--threads N] [--check-greedy K]

Needs llama-cpp-python (tools/requirements-bench.txt says how to build it for the CPU). A
benchmark, not a test: nothing in `make test` runs it.

What is timed, chosen to match the timing line of step05/07/08 so the numbers sit side by side:
  - prefill: one pass over the whole prompt, which also yields the first generated token;
  - decode: the n-gen - 1 one-token passes after it, each choosing the next token greedily
    (the argmax of the logits). End-of-generation tokens are ignored so that every run does
    the same amount of work; our steps stop at them, but not on this prompt.
The reported numbers come from llama.cpp's own counters (llama_perf_context: the time inside
llama_decode up to the logits being ready). The script's wall clock, which adds the Python
loop and the argmax over the vocabulary, is printed beside them as wall_* fields.

Prints one JSON line on stdout; with --check-greedy K it prints the first K greedy ids instead,
on one line, separated by spaces (the format of `step07 --ids`).
"""
import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

try:
    import llama_cpp
except ImportError:
    sys.exit("llama_cpp is not installed: see tools/requirements-bench.txt")

DEFAULT_PROMPT = Path(__file__).resolve().parent / "bench_prompt.txt"


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("model", help="the GGUF file")
    parser.add_argument("--prompt-file", default=str(DEFAULT_PROMPT),
                        help="prompt text, its exact bytes (default: %(default)s)")
    parser.add_argument("--n-gen", type=int, default=128,
                        help="tokens to generate, EOS ignored (default: %(default)s)")
    parser.add_argument("--threads", type=int, default=os.cpu_count(),
                        help="CPU threads for prefill and decode (default: every core, %(default)s)")
    parser.add_argument("--check-greedy", type=int, metavar="K", default=0,
                        help="print the first K greedy token ids instead of the timing JSON")
    args = parser.parse_args()
    if args.n_gen < 1 or args.threads < 1 or args.check_greedy < 0:
        parser.error("--n-gen and --threads must be at least 1, --check-greedy at least 0")
    return args


class GreedyRunner:
    """One llama.cpp context and the decode loop over it, through the low-level API.

    The high-level Llama.generate() stops at EOS and samples through llama.cpp's sampler
    chain; calling llama_decode ourselves keeps the work fixed and the choice a plain argmax,
    as in our steps.
    """

    def __init__(self, llama):
        self.ctx = llama._ctx.ctx
        self.n_vocab = llama.n_vocab()

    def decode(self, ids):
        """Runs one pass over `ids` (after the positions already cached) and returns the
        argmax of the last position's logits."""
        tokens = (llama_cpp.llama_token * len(ids))(*ids)
        # llama_batch_get_one asks for the logits of the last token only, like our steps.
        status = llama_cpp.llama_decode(self.ctx, llama_cpp.llama_batch_get_one(tokens, len(ids)))
        if status != 0:
            sys.exit(f"llama_decode failed with status {status}")
        logits_ptr = llama_cpp.llama_get_logits_ith(self.ctx, -1)  # waits for the compute
        logits = np.ctypeslib.as_array(logits_ptr, shape=(self.n_vocab,))
        return int(np.argmax(logits))


def without_extra_buffers():
    """Makes every Llama load its weights without llama.cpp's extra buffer types (its AMX tiles
    and its repacked CPU layouts). On a CPU with AMX (amx_int8 in /proc/cpuinfo, as on the
    Xeon of docs/bench/cpu-step11.md) llama-cpp-python 0.3.36 otherwise crashes in
    llama_decode (a segfault, even on 4 tokens); the high-level Llama does not pass that
    model parameter on, so its default is changed where Llama reads it. The cost: the weights
    are read in the file's own block layout, as our steps read them, and llama.cpp may be
    slower here than on a CPU where its repacking runs."""
    bindings = llama_cpp.llama_cpp  # the module Llama calls it through
    default_params = bindings.llama_model_default_params

    def params():
        model_params = default_params()
        model_params.use_extra_bufts = False
        return model_params

    bindings.llama_model_default_params = params


def main():
    args = parse_args()
    without_extra_buffers()
    prompt_bytes = Path(args.prompt_file).read_bytes()
    n_gen = max(args.n_gen, args.check_greedy)  # enough tokens for --check-greedy K

    # Tokenize first with the vocabulary alone, so that the context can be sized to fit.
    # Qwen2.5's GGUF asks for no BOS token; add_bos=False says so explicitly, and special=False
    # reads "<|im_start|>" in the text as plain characters, as our steps do without --chat.
    vocab_only = llama_cpp.Llama(model_path=args.model, vocab_only=True, verbose=False)
    prompt = vocab_only.tokenize(prompt_bytes, add_bos=False, special=False)
    del vocab_only

    # n_batch = n_ubatch = 512: a 512-token prompt is one pass, as in our prefill.
    batch = 512
    llama = llama_cpp.Llama(
        model_path=args.model,
        n_gpu_layers=0,        # CPU only (the build has no GPU backend anyway)
        n_threads=args.threads,
        n_threads_batch=args.threads,
        n_batch=batch,
        n_ubatch=batch,
        n_ctx=max(1024, len(prompt) + n_gen),
        logits_all=False,
        verbose=False,
    )
    print(f"llama.cpp tokenized {len(prompt_bytes)} bytes into {len(prompt)} tokens; "
          f"first ids {prompt[:8]}", file=sys.stderr)
    print("system info: " + llama_cpp.llama_print_system_info().decode().strip(), file=sys.stderr)

    runner = GreedyRunner(llama)
    llama_cpp.llama_perf_context_reset(runner.ctx)

    # Prefill: the prompt in chunks of at most `batch` tokens (one chunk for 512 tokens).
    start = time.perf_counter()
    for begin in range(0, len(prompt), batch):
        next_id = runner.decode(prompt[begin:begin + batch])
    prefill_s = time.perf_counter() - start
    generated = [next_id]

    # Decode: n_gen - 1 passes of one token each.
    start = time.perf_counter()
    while len(generated) < n_gen:
        generated.append(runner.decode([generated[-1]]))
    decode_s = time.perf_counter() - start
    decode_passes = n_gen - 1

    if args.check_greedy:
        print(" ".join(str(i) for i in generated[:args.check_greedy]))
        return

    perf = llama_cpp.llama_perf_context(runner.ctx)
    # llama.cpp files a llama_decode under prompt eval when it has more than one token and under
    # eval otherwise; the counters are used only when they counted exactly our passes.
    counters_match = perf.n_p_eval == len(prompt) and perf.n_eval == decode_passes
    prompt_ms = perf.t_p_eval_ms if counters_match else prefill_s * 1000
    decode_ms = perf.t_eval_ms if counters_match else decode_s * 1000
    ms_per_token = decode_ms / decode_passes if decode_passes else float("nan")

    result = {
        "engine": f"llama.cpp {llama_cpp.__version__} (CPU, {args.threads} "
                  f"thread{'' if args.threads == 1 else 's'})",
        "prompt_tokens": len(prompt),
        "prompt_tok_s": round(1000 * len(prompt) / prompt_ms, 2),
        "gen_tokens": len(generated),
        "gen_tok_s": round(1000 / ms_per_token, 2) if decode_passes else None,
        "ms_per_token": round(ms_per_token, 2) if decode_passes else None,
        # Which clock the numbers above come from, and the other one for comparison.
        "timer": "llama_perf_context" if counters_match else "wall clock (perf counters did not match)",
        "decode_passes": decode_passes,
        # This build runs its threads with OpenMP, whose barriers spin before sleeping; on a shared
        # machine that matters. Our steps also keep OpenMP's default (OMP_WAIT_POLICY, as their
        # --help says, makes idle threads sleep at once).
        "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY", "unset (libgomp: spin a while, then sleep)"),
        "wall_prompt_tok_s": round(len(prompt) / prefill_s, 2),
        "wall_ms_per_token": round(1000 * decode_s / decode_passes, 2) if decode_passes else None,
    }
    print(json.dumps(result))


if __name__ == "__main__":
    main()
