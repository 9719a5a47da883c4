#!/usr/bin/env python3
"""The kernel table: tools/bench/bench_kernels.cu's rows for several versions, side by side, in markdown.

    tools/bench/kernel_table.py FIRST.tsv [MIDDLE.tsv ...] LAST.tsv --names step08 [...] step09

Each file is one run of bench_kernels (a `copy` line, then `row` lines: operator, shape,
microseconds, bytes, flops), all from the same device call. The table has, per row, every
version's microseconds, the speed-up of the last over the first, and the last version's GB/s
with its share of the copy bandwidth measured in its own run, and its GFLOP/s where the row
counts flops (matrix products, attention). Standard library only.
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
    parser.add_argument("runs", nargs="+", help="one .tsv per version, oldest first")
    parser.add_argument("--names", nargs="+", help="a name per version (default: the files')")
    args = parser.parse_args()
    names = args.names or args.runs
    if len(args.runs) < 2 or len(names) != len(args.runs):
        parser.error("give two or more runs and as many --names")
    runs = [read(path) for path in args.runs]
    device = runs[0][0][0]
    copies = ", ".join(f"{copy:.0f} GB/s ({name} run)" for ((_, copy), _), name in zip(runs, names))
    print(f"{device}; device-to-device copy {copies}\n")
    last, last_copy = names[-1], runs[-1][0][1]
    print("| operator | shape | " + " | ".join(f"{n} µs" for n in names) +
          f" | speed-up | {last} GB/s | % of copy | {last} GFLOP/s |")
    print("|---|---|" + "---|" * (len(names) + 4))
    for key, (us, nbytes, flops) in runs[-1][1].items():
        times = [run[1].get(key, (float("nan"),))[0] for run in runs]
        gb_per_s = nbytes / (us * 1e3)
        gflops = f"{flops / (us * 1e3):.0f}" if flops else ""
        print(f"| {key[0]} | {key[1]} | " + " | ".join(f"{t:.1f}" for t in times) +
              f" | {times[0] / us:.1f}x | {gb_per_s:.0f} | {100 * gb_per_s / last_copy:.1f}% "
              f"| {gflops} |")


if __name__ == "__main__":
    main()
