#!/usr/bin/env python3
"""Writes the dequantization fixtures that step03's test_dequantize.cpp and
test_ggml_types.cpp compare against. The oracle is gguf-py (gguf.quants.dequantize and
gguf.constants.GGML_QUANT_SIZES) plus numpy's float16 conversion.

Run from the repository root (needs numpy and gguf, see tools/requirements.txt):

    python3 tools/make_dequant_fixtures.py

It rewrites tests/fixtures/dequant/:
  index.txt               one line per case: type name, type id, element count,
                          block file, expected-values file
  <type>_<blocks>.blocks  raw blocks exactly as a GGUF file stores them
  <type>_<blocks>.f32     what gguf-py dequantizes them to (little-endian float32)
  ggml_quant_sizes.txt    gguf-py's type table: id, name, block size, bytes per block
  half_conversions.txt    float32 bits -> float16 bits (numpy) and bfloat16 bits (gguf-py)

The blocks are random bytes (fixed seed) except for the f16 scale fields, which are always
finite: random sign, exponent and mantissa, with a fixed list of awkward values (subnormal,
negative, zero, -0, the largest) placed first so that every type sees each of them.
"""

import os
import sys

import numpy as np
from gguf.constants import GGML_QUANT_SIZES, GGMLQuantizationType
from gguf.quants import dequantize, quantize

OUT_DIR = os.path.join("tests", "fixtures", "dequant")
SEED = 20240603

# Byte offsets of the f16 scale fields inside one block, per type (ggml-common.h).
F16_SCALE_OFFSETS = {
    "Q4_0": [0],
    "Q4_1": [0, 2],
    "Q5_0": [0],
    "Q5_1": [0, 2],
    "Q8_0": [0],
    "Q2_K": [80, 82],
    "Q3_K": [108],
    "Q4_K": [0, 2],
    "Q5_K": [0, 2],
    "Q6_K": [208],
    "IQ4_NL": [0],
}
# Types whose fixtures came later. Each draws from a generator of its own, seeded with its type
# id, so that adding one leaves the random bytes, and so every file, of the others unchanged.
LATER_TYPES = ["IQ4_NL"]
PLAIN_TYPES = ["F32", "F16", "BF16"]  # every bit pattern is a value, NaN and inf included

BLOCK_COUNTS = [1, 3, 7]  # awkward counts: one block, and not a power of two
PLAIN_COUNTS = [1, 7, 1001]

AWKWARD_SCALES = [
    0x0001,  # smallest subnormal, 2^-24
    0x03FF,  # largest subnormal
    0x8001,  # negative subnormal
    0x0400,  # smallest normal, 2^-14
    0x0000,  # zero
    0x8000,  # negative zero
    0x7BFF,  # largest finite, 65504
    0xFBFF,  # -65504
    0xBC00,  # -1
    0x3555,  # 1/3, rounded
]


def random_finite_f16_bits(rng, count):
    sign = rng.integers(0, 2, count, dtype=np.uint16)
    exponent = rng.integers(0, 31, count, dtype=np.uint16)  # 31 would be inf/NaN
    mantissa = rng.integers(0, 1024, count, dtype=np.uint16)
    return (sign << 15) | (exponent << 10) | mantissa


def quant_cases(rng, name):
    """All cases of one quantized type, with the awkward scales in the first scale slots."""
    qtype = GGMLQuantizationType[name]
    _, block_bytes = GGML_QUANT_SIZES[qtype]
    offsets = F16_SCALE_OFFSETS[name]
    cases = []
    for count in BLOCK_COUNTS:
        blocks = rng.integers(0, 256, (count, block_bytes), dtype=np.uint8)
        scales = random_finite_f16_bits(rng, count * len(offsets)).reshape(count, len(offsets))
        cases.append((count, blocks, scales))
    # Place the awkward scales first, walking the slots case by case.
    slots = [(c, b, s) for c, (count, _, _) in enumerate(cases)
             for b in range(count) for s in range(len(offsets))]
    for value, (c, b, s) in zip(AWKWARD_SCALES, slots):
        cases[c][2][b, s] = value
    result = []
    for count, blocks, scales in cases:
        for s, offset in enumerate(offsets):
            blocks[:, offset] = scales[:, s] & 0xFF
            blocks[:, offset + 1] = scales[:, s] >> 8
        result.append((count, blocks.reshape(-1)))
    return result


def plain_cases(rng, name):
    qtype = GGMLQuantizationType[name]
    _, element_bytes = GGML_QUANT_SIZES[qtype]
    return [(count, rng.integers(0, 256, count * element_bytes, dtype=np.uint8))
            for count in PLAIN_COUNTS]


def write_dequant_cases(rng):
    lines = ["# type  id  elements  blocks-file  expected-file  (written by tools/make_dequant_fixtures.py)"]
    for name in PLAIN_TYPES + list(F16_SCALE_OFFSETS):
        qtype = GGMLQuantizationType[name]
        block_size, _ = GGML_QUANT_SIZES[qtype]
        if name in PLAIN_TYPES:
            cases = plain_cases(rng, name)
        elif name in LATER_TYPES:
            cases = quant_cases(np.random.default_rng([SEED, int(qtype)]), name)
        else:
            cases = quant_cases(rng, name)
        for count, raw in cases:
            expected = np.asarray(dequantize(raw, qtype), dtype=np.float32).reshape(-1)
            assert expected.size == count * block_size, name
            stem = f"{name.lower()}_{count}"
            raw.tofile(os.path.join(OUT_DIR, stem + ".blocks"))
            expected.astype("<f4").tofile(os.path.join(OUT_DIR, stem + ".f32"))
            lines.append(f"{name} {int(qtype)} {expected.size} {stem}.blocks {stem}.f32")
    write_text("index.txt", lines)


def write_type_table():
    lines = ["# id  name  block-size  bytes-per-block  (gguf-py GGML_QUANT_SIZES)"]
    for qtype, (block_size, block_bytes) in sorted(GGML_QUANT_SIZES.items()):
        lines.append(f"{int(qtype)} {qtype.name} {block_size} {block_bytes}")
    write_text("ggml_quant_sizes.txt", lines)


def write_half_conversions(rng):
    """Special float32 values and random ones near the f16 range, with their f16 and bf16."""
    special = np.array([
        0x00000000, 0x80000000,              # +0, -0
        0x7F800000, 0xFF800000,              # +inf, -inf
        0x7FC00000, 0xFFC00000, 0x7F800001,  # quiet NaNs, a signalling NaN
        0x33800000, 0xB3800000,              # +-2^-24: smallest f16 subnormal
        0x33000000,                          # 2^-25: halfway to 0, ties to even -> 0
        0x33C00000,                          # 1.5 * 2^-24: halfway, ties to even -> 2^-23
        0x387FC000,                          # largest f16 subnormal
        0x38800000,                          # 2^-14: smallest f16 normal
        0x3F800000, 0x3F801000, 0x3F803000,  # 1, 1 + 2^-11 (tie -> 1), 1 + 3*2^-11 (tie -> up)
        0x477FE000,                          # 65504: largest f16
        0x477FEFFF, 0x477FF000,              # just below / at the overflow threshold 65520
        0x00000001, 0x007FFFFF,              # f32 subnormals
        0x7F7FFFFF,                          # largest f32
        0x3F808000, 0x3F818000,              # bf16 ties: 1 + 2^-8 (-> 1), 1 + 3*2^-8 (-> up)
    ], dtype=np.uint32)
    exponents = rng.integers(127 - 30, 127 + 17, 64, dtype=np.uint32)
    mantissas = rng.integers(0, 1 << 23, 64, dtype=np.uint32)
    signs = rng.integers(0, 2, 64, dtype=np.uint32)
    randoms = (signs << 31) | (exponents << 23) | mantissas
    bits = np.concatenate([special, randoms])
    values = bits.view(np.float32)
    with np.errstate(over="ignore", invalid="ignore"):
        f16 = values.astype(np.float16).view(np.uint16)
    bf16 = quantize(values, GGMLQuantizationType.BF16).view(np.uint16)
    lines = ["# f32-bits  f16-bits (numpy astype)  bf16-bits (gguf-py)  (hex)"]
    for b, h, bf in zip(bits, f16, bf16):
        lines.append(f"{int(b):08x} {int(h):04x} {int(bf):04x}")
    write_text("half_conversions.txt", lines)


def write_text(filename, lines):
    with open(os.path.join(OUT_DIR, filename), "w") as f:
        f.write("\n".join(lines) + "\n")


def main():
    if not os.path.isdir("tools"):
        sys.exit("run this from the repository root")
    os.makedirs(OUT_DIR, exist_ok=True)
    for old in os.listdir(OUT_DIR):
        os.remove(os.path.join(OUT_DIR, old))
    rng = np.random.default_rng(SEED)
    write_dequant_cases(rng)
    write_type_table()
    write_half_conversions(rng)
    print(f"wrote {len(os.listdir(OUT_DIR))} files to {OUT_DIR}")


if __name__ == "__main__":
    main()
