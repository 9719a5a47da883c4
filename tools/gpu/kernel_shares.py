#!/usr/bin/env python3
"""Each kernel's share of a program's GPU time, from `ncu --csv --metrics gpu__time_duration.sum`
(one row a launch): the kernels summed by name, largest first.
    python3 tools/gpu/kernel_shares.py NCU.csv [TOP]"""
import collections
import csv
import sys

MICROSECONDS = {"nsecond": 1e-3, "ns": 1e-3, "usecond": 1.0, "us": 1.0, "msecond": 1e3, "ms": 1e3}


def main():
    rows = [r for r in csv.reader(open(sys.argv[1])) if len(r) > 10]
    head = rows[0]
    name, value, unit = (head.index(k) for k in ("Kernel Name", "Metric Value", "Metric Unit"))
    total, count = collections.Counter(), collections.Counter()
    for r in rows[1:]:
        kernel = r[name].split("(")[0].split("<")[0].removeprefix("void ")
        total[kernel] += float(r[value].replace(",", "")) * MICROSECONDS[r[unit]]
        count[kernel] += 1
    whole = sum(total.values())
    print(f"  kernels: {whole:.0f} us in {sum(count.values())} launches")
    for kernel, us in total.most_common(int(sys.argv[2]) if len(sys.argv) > 2 else 14):
        print(f"  {us:9.0f} us {100 * us / whole:5.1f}% {count[kernel]:5d}x {kernel}")


main()
