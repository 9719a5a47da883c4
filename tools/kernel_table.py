#!/usr/bin/env python3
"""The kernel table: tools/bench_kernels.cu's rows for two steps, side by side, in markdown.

    tools/kernel_table.py OLD.tsv NEW.tsv [--names step08 step09]

Each file is one run of bench_kernels (a `copy` line, then `row` lines: operator, shape,
microseconds, bytes, flops). The table has, per row, both steps' microseconds, the speed-up,
and the new step's GB/s with its share of the copy bandwidth measured in its own run, or its
GFLOP/s where the row counts flops and is compute-bound (a prompt's matrix products).
Standard library only.
"""
import argparse


def read(path):
    copy, rows = None, {}
    with open(path) as f:
        for line in f:
            fields = line.rstrip("\n").split("\t")
            if fields[0] == "copy":
                copy = (fields[1], float(fields[2]))
            elif fields[0] == "row":
                op, shape, us, nbytes, flops = fields[1:6]
                rows[(op, shape)] = (float(us), float(nbytes), float(flops))
    if copy is None:
        raise SystemExit(f"{path}: no copy line (did bench_kernels run?)")
    return copy, rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("old")
    parser.add_argument("new")
    parser.add_argument("--names", nargs=2, default=["step08", "step09"])
    args = parser.parse_args()
    (device, old_copy), old = read(args.old)
    (_, new_copy), new = read(args.new)
    a, b = args.names
    print(f"{device}; device-to-device copy {old_copy:.0f} GB/s ({a} run), "
          f"{new_copy:.0f} GB/s ({b} run)\n")
    print(f"| operator | shape | {a} µs | {b} µs | speed-up | {b} GB/s | % of copy "
          f"| {b} GFLOP/s |")
    print("|---|---|---|---|---|---|---|---|")
    for key, (us, nbytes, flops) in new.items():
        old_us = old.get(key, (float("nan"),))[0]
        gb_per_s = nbytes / (us * 1e3)
        gflops = f"{flops / (us * 1e3):.0f}" if flops else ""
        print(f"| {key[0]} | {key[1]} | {old_us:.1f} | {us:.1f} | {old_us / us:.1f}x "
              f"| {gb_per_s:.0f} | {100 * gb_per_s / new_copy:.1f}% | {gflops} |")


if __name__ == "__main__":
    main()
