#!/usr/bin/env python3
"""One decode token, kernel by kernel: how long each kernel runs and how much of the token's time
is gaps between them. For each engine (a step, or step10-no-graph, step10-no-pdl):

  1. the engine's own run, greedy, prompt tools/bench/bench_prompt.txt (512 tokens), -n 64: ms/token;
  2. the same run under Nsight Compute (ncu), timing every kernel of the second decode token alone
     (gpu__time_duration; caches and clocks left as they are, CUDA graphs profiled node by node).

The kernels' sum is the GPU's busy time; ms/token minus that sum is the time between kernels (launch
gaps, and the host's work between tokens). Writes OUT/timeline.tsv (engine, index, kernel, µs) and
OUT/timeline.md (one line per engine), which tools/figures/plots.py draws.

    python3 tools/bench/decode_timeline.py --ncu ncu --out OUT MODEL.gguf step09 step10-no-graph step10

The kernel counts per token come from the model's layer count: step09 launches 19 a layer and 5 more
(embedding, final norm, LM head, argmax's two), step10 6 a layer and 3 (8 a layer where a layer's
Q, K and V have different types on the device, which these F16 files never have). The prompt's pass
(18 a layer and 5) and the first decode token are skipped. A window that does not start at the
embedding kernel, or does not hold the expected count, is reported, not drawn.
"""

import argparse
import csv
import io
import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
TIMING = re.compile(r"generated: (\d+) tokens, [\d.]+ ms/token \(([\d.]+) tokens/s\)")


def layer_count(model):
    sys.path.insert(0, str(REPO / "tools" / "bench"))
    from bench_series import GgufSummary  # the standard-library GGUF header reader
    return int(GgufSummary(model).key("block_count"))


def kernels_per_token(engine, n_layers):
    return 19 * n_layers + 5 if engine[:6] == "step09" else 6 * n_layers + 3


def command(engine, model, n_new):
    cmd = [str(REPO / engine[:6]), str(model), "-f", str(REPO / "tools" / "bench" / "bench_prompt.txt"),
           "-n", str(n_new), "--temp", "0", "--device", "cuda"]
    return cmd + (["--no-graph"] if engine.endswith("-no-graph") else []) + \
        (["--no-pdl"] if engine.endswith("-no-pdl") else [])


def profile(engine, model, n_layers, ncu):
    """[(kernel, µs)] of one decode token, or an error string."""
    prefill = 18 * n_layers + 5
    per_token = kernels_per_token(engine, n_layers)
    cmd = [ncu, "--csv", "--print-units", "base", "--metrics", "gpu__time_duration.sum",
           "--cache-control", "none", "--clock-control", "none", "--graph-profiling", "node",
           "--launch-skip", str(prefill + per_token), "--launch-count", str(per_token)]
    run = subprocess.run(cmd + command(engine, model, 4), capture_output=True, text=True)
    rows = [line for line in run.stdout.splitlines() if line.startswith('"')]
    if run.returncode != 0 or not rows:
        return f"ncu failed (exit {run.returncode}): {(run.stderr or run.stdout).strip()[-300:]}"
    kernels = []
    for record in csv.DictReader(io.StringIO("\n".join(rows))):
        if record.get("Metric Name") != "gpu__time_duration.sum":
            continue
        value = float(record["Metric Value"].replace(",", ""))
        unit = record.get("Metric Unit", "nsecond")
        scale = {"nsecond": 1e-3, "usecond": 1.0, "msecond": 1e3, "second": 1e6}.get(unit, 1e-3)
        name = re.sub(r"^void ", "", record["Kernel Name"]).split("(")[0].split("<")[0]
        kernels.append((name.replace("gpu::", ""), value * scale))
    if len(kernels) != per_token or not kernels[0][0].startswith("embedding"):
        first = kernels[0][0] if kernels else "none"
        return (f"the window holds {len(kernels)} kernels from {first}, "
                f"not {per_token} from the embedding")
    return kernels


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("model")
    ap.add_argument("engines", nargs="+")
    ap.add_argument("--ncu", default="ncu")
    ap.add_argument("--out", default=str(REPO / "build" / "bench"))
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    n_layers = layer_count(args.model)
    lines, tsv = [], ["engine\tindex\tkernel\tus"]
    for engine in args.engines:
        run = subprocess.run(command(engine, args.model, 64), capture_output=True, text=True)
        timing = TIMING.search(run.stderr)
        token_us = 1e6 / float(timing[2]) if timing else None
        kernels = profile(engine, args.model, n_layers, args.ncu)
        if isinstance(kernels, str) or token_us is None:
            why = kernels if isinstance(kernels, str) else f"no timing line (exit {run.returncode})"
            lines.append(f"- {engine}: {why}")
            continue
        busy = sum(us for _, us in kernels)
        tsv += [f"{engine}\t{i}\t{name}\t{us:.3f}" for i, (name, us) in enumerate(kernels)]
        gaps = token_us - busy
        lines.append(f"- {engine}: {token_us:.1f} µs a token, {len(kernels)} kernels busy "
                     f"{busy:.1f} µs, gaps {gaps:.1f} µs ({gaps / len(kernels):.2f} µs a kernel)")
        print(lines[-1], flush=True)
    (out / "timeline.tsv").write_text("\n".join(tsv) + "\n")
    (out / "timeline.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
