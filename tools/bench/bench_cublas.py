#!/usr/bin/env python3
"""cuBLAS, the yardstick of step 12's GEMM: torch.matmul in F16 (F32 accumulation) on the
products tools/bench/bench_tensor_cores.cu times, at the same sizes. Not a test, and never a
dependency of the engine. Prints the same tab-separated rows: kernel, shape, microseconds,
TFLOP/s; each time the median of 7 runs of 10 calls between two CUDA events, after warm-up.

    python3 tools/bench/bench_cublas.py 1.5b 512
"""
import sys

import torch

SHAPES = {  # d_model, n_heads, n_kv_heads, head_dim, d_ff
    "0.5b": (896, 14, 2, 64, 4864),
    "1.5b": (1536, 12, 2, 128, 8960),
    "7b": (3584, 28, 4, 128, 18944),
}


def median_ms(launch):
    for _ in range(3):
        launch()
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    runs = []
    for _ in range(7):
        start.record()
        for _ in range(10):
            launch()
        stop.record()
        stop.synchronize()
        runs.append(start.elapsed_time(stop) / 10)
    return sorted(runs)[3]


def main():
    size, n = sys.argv[1], int(sys.argv[2])
    d, heads, kv_heads, head_dim, d_ff = SHAPES[size]
    q_dim, kv_dim = heads * head_dim, kv_heads * head_dim
    products = [("qkv", q_dim + 2 * kv_dim, d), ("wo", d, q_dim), ("gate/up", d_ff, d),
                ("down", d, d_ff)]
    torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction = False
    for name, out_dim, in_dim in products:
        x = torch.randn(n, in_dim, device="cuda", dtype=torch.float16)
        w = torch.randn(out_dim, in_dim, device="cuda", dtype=torch.float16) * 0.03
        ms = median_ms(lambda: torch.matmul(x, w.t()))
        flops = 2.0 * n * in_dim * out_dim
        print(f"cuBLAS F16 (torch.matmul)\t{name} {n}x{in_dim}x{out_dim}\t{ms * 1e3:.1f}\t"
              f"{flops / (ms * 1e-3) / 1e12:.1f}", flush=True)


if __name__ == "__main__":
    main()
