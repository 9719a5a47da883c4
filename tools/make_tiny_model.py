#!/usr/bin/env python3
"""Writes random-weight Qwen2 GGUF models: the built-in tiny test model, and full-scale
Qwen2.5-0.5B / 1.5B / 7B shaped models for memory and speed checks.

Run from the repository root:

    python3 tools/make_tiny_model.py
        -> models/tiny-qwen2.gguf and models/tiny-qwen2.tokenizer.json (both committed)
    python3 tools/make_tiny_model.py --preset 0.5b --types q8_0 -o models/qwen2.5-0.5b-random-q8_0.gguf
    python3 tools/make_tiny_model.py --preset 1.5b --types q4_k_m -o models/qwen2.5-1.5b-random-q4_k_m.gguf
    python3 tools/make_tiny_model.py --preset 7b --types q4_k_m -o models/qwen2.5-7b-random-q4_k_m.gguf
        (--types is f16, q8_0 or q4_k_m; full-scale files are git-ignored, never commit them)
    --as-published: lay a full-scale file out as Qwen's published GGUF files are (see
        plan_tensors); with --types q4_k_m its tensors then have the very types of those files.
    --vocab PATH: the real Qwen vocabulary (default $QWEN_TOKENIZER_DIR/tokenizer.json; the
        full-scale presets also take a vocab-only .gguf such as qwen-bpe-vocab.gguf)

Needs numpy, gguf==0.19.0 and tokenizers (tools/requirements.txt). Every run writes the same bytes:
each tensor draws from its own generator seeded by (--seed, crc32 of the tensor name), so worker
processes can generate the tensors in parallel and the file does not depend on their number.

The tiny model (random weights, Qwen2 architecture and metadata exactly as convert_hf_to_gguf writes
them for Qwen2.5):
    3 blocks, d_model 256, d_ffn 512, 4 query heads and 2 KV heads of head_dim 64, context 1024,
    rope base 1e6, rms eps 1e-6, tied LM head (no output.weight).
    Vocabulary: the first N_BPE = 3000 tokens of the real Qwen vocabulary (ids unchanged; 0..255 are the
    byte symbols), the real merges whose two parts and result all lie in that prefix (original order),
    then the added tokens <|endoftext|> 3000, <|im_start|> 3001, <|im_end|> 3002 (CONTROL),
    <tool_call> 3003, </tool_call> 3004 (USER_DEFINED). Vocab size 3005.

The tiny model's matrix types are mixed on purpose so that its forward pass runs every dequantizer
but IQ4_NL's (added later, and checked by step03's dequantization fixtures only):

    tensor            block 0   block 1   block 2
    attn_q.weight     F32       Q5_1      BF16
    attn_k.weight     F16       Q2_K      Q5_0
    attn_v.weight     BF16      Q3_K      Q6_K
    attn_output       Q8_0      Q4_K      F16
    ffn_gate.weight   Q4_0      Q5_K      Q4_K
    ffn_up.weight     Q4_1      Q6_K      Q3_K
    ffn_down.weight   Q5_0      Q8_0      Q2_K
    token_embd.weight Q6_K (also the LM head)
    norms and biases  F32 (as the converter forces for every 1-D tensor)

Quantized tensors are written as raw block bytes, since gguf-py cannot quantize K-quants: the quant
fields are random bits, and the f16 scale (and min) fields are set so that the dequantized tensor has
the wanted standard deviation and roughly zero mean. After writing, the script re-opens the file with
gguf.GGUFReader, checks every tensor's name, type and shape, dequantizes tensors with gguf.quants and
checks values and statistics: every value of the tiny model, and a sample of rows (the first and
the last) of every tensor of a full-scale one, whose full dequantization in numpy would take minutes.
For the tiny model it also runs a small numpy forward pass to check that the network is numerically
tame.
"""

import argparse
import json
import multiprocessing
import os
import sys
import time
import zlib
from pathlib import Path

import numpy as np
import gguf
from gguf import GGMLQuantizationType as T
from gguf import GGML_QUANT_SIZES


def default_vocab() -> str | None:
    """$QWEN_TOKENIZER_DIR/tokenizer.json, the real Qwen vocabulary, or None when unset."""
    directory = os.environ.get("QWEN_TOKENIZER_DIR")
    return str(Path(directory) / "tokenizer.json") if directory else None


# n_vocab is the HF config's vocab_size, the embedding's row count; the converter pads the token
# list up to it with [PAD{id}] tokens. tied: the HF config's tie_word_embeddings.
PRESETS = {
    "tiny": dict(name="tiny-qwen2 (random weights)", n_layer=3, d_model=256, d_ffn=512, n_head=4,
                 n_head_kv=2, context=1024, n_bpe=3000, tied=True),
    "0.5b": dict(name="Qwen2.5-0.5B shape (random weights)", n_layer=24, d_model=896, d_ffn=4864,
                 n_head=14, n_head_kv=2, context=32768, n_vocab=151936, tied=True),
    "1.5b": dict(name="Qwen2.5-1.5B shape (random weights)", n_layer=28, d_model=1536, d_ffn=8960,
                 n_head=12, n_head_kv=2, context=32768, n_vocab=151936, tied=True),
    "7b": dict(name="Qwen2.5-7B shape (random weights)", n_layer=28, d_model=3584, d_ffn=18944,
               n_head=28, n_head_kv=4, context=32768, n_vocab=152064, tied=False),
}
ROPE_FREQ_BASE = 1000000.0
RMS_EPS = 1e-6

TINY_TYPES = {
    "attn_q": [T.F32, T.Q5_1, T.BF16],
    "attn_k": [T.F16, T.Q2_K, T.Q5_0],
    "attn_v": [T.BF16, T.Q3_K, T.Q6_K],
    "attn_output": [T.Q8_0, T.Q4_K, T.F16],
    "ffn_gate": [T.Q4_0, T.Q5_K, T.Q4_K],
    "ffn_up": [T.Q4_1, T.Q6_K, T.Q3_K],
    "ffn_down": [T.Q5_0, T.Q8_0, T.Q2_K],
}
TINY_EMBD_TYPE = T.Q6_K

# Qwen2.5's ChatML template, written small: a default system turn when the conversation has none,
# every message as <|im_start|>{role}\n{content}<|im_end|>\n, and the assistant header to prompt a reply.
CHAT_TEMPLATE = (
    "{%- for message in messages %}"
    "{%- if loop.first and message['role'] != 'system' %}"
    "{{- '<|im_start|>system\\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\\n' }}"
    "{%- endif %}"
    "{{- '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>\\n' }}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}"
    "{{- '<|im_start|>assistant\\n' }}"
    "{%- endif %}"
)

TOKEN_NORMAL, TOKEN_CONTROL, TOKEN_USER_DEFINED, TOKEN_UNUSED = 1, 3, 4, 5
TINY_ADDED_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<tool_call>", "</tool_call>"]


# ----------------------------------------------------------------------------------------------
# Vocabulary


class Vocab:
    def __init__(self, tokens, types, merges, bos, eos, pad):
        self.tokens = tokens    # (n_vocab,) strings in GPT-2 byte-to-unicode form
        self.types = types      # (n_vocab,) llama.cpp token types
        self.merges = merges    # ["left right", ...], rank = index
        self.bos, self.eos, self.pad = bos, eos, pad


def added_token_type(content):
    # convert_hf_to_gguf: <|...|>-shaped added tokens are CONTROL, the others USER_DEFINED.
    return TOKEN_CONTROL if content.startswith("<|") and content.endswith("|>") else TOKEN_USER_DEFINED


def tiny_vocab(real_json, n_bpe):
    """The first n_bpe real tokens plus the five added tokens; returns (Vocab, HF tokenizer dict)."""
    model = real_json["model"]
    id_of = model["vocab"]
    token_of = {i: s for s, i in id_of.items()}
    tokens = [token_of[i] for i in range(n_bpe)]
    # Byte-level BPE needs all 256 byte symbols as single characters at ids 0..255.
    if sorted(len(t) for t in tokens[:256]) != [1] * 256:
        sys.exit("tokenizer: ids 0..255 are not the 256 single byte symbols")

    kept_merges = []
    made_by = {}
    for rank, pair in enumerate(model["merges"]):
        left, right = pair if isinstance(pair, list) else pair.split(" ")
        merged = left + right
        if all(id_of.get(p, n_bpe) < n_bpe for p in (left, right, merged)):
            kept_merges.append((rank, left, right))
            made_by.setdefault(id_of[merged], rank)
    # A merge list cut from the real one keeps the real ranks' order, so the tiny tokenizer is
    # ordinary BPE on a smaller table. Check that, and that every non-byte token can be produced.
    ranks = [r for r, _, _ in kept_merges]
    if ranks != sorted(ranks):
        sys.exit("tokenizer: kept merges are out of rank order")
    unreachable = [i for i in range(256, n_bpe) if i not in made_by]
    if unreachable:
        sys.exit(f"tokenizer: {len(unreachable)} prefix tokens have no merge, e.g. id {unreachable[0]}")

    real_added = {t["content"]: t for t in real_json["added_tokens"]}
    added = []
    for offset, content in enumerate(TINY_ADDED_TOKENS):
        entry = dict(real_added[content])
        entry["id"] = n_bpe + offset
        added.append(entry)
    tokens += TINY_ADDED_TOKENS
    types = [TOKEN_NORMAL] * n_bpe + [added_token_type(c) for c in TINY_ADDED_TOKENS]

    hf = dict(real_json)
    hf["added_tokens"] = added
    hf["model"] = dict(model)
    hf["model"]["vocab"] = {token_of[i]: i for i in range(n_bpe)}
    hf["model"]["merges"] = [[l, r] for _, l, r in kept_merges]

    endoftext, im_end = n_bpe, n_bpe + 2
    vocab = Vocab(tokens, types, [f"{l} {r}" for _, l, r in kept_merges], endoftext, im_end, endoftext)
    return vocab, hf


def full_vocab_from_json(real_json, n_vocab):
    """The whole real vocabulary as convert_hf_to_gguf lays it out: ids past the HF ones are [PAD{id}].
    (For the real tokenizer.json this gives exactly the tokens, types and merges of qwen-bpe-vocab.gguf.)"""
    model = real_json["model"]
    token_of = {i: s for s, i in model["vocab"].items()}
    types_of = {i: TOKEN_NORMAL for i in token_of}
    for t in real_json["added_tokens"]:
        token_of[t["id"]] = t["content"]
        types_of[t["id"]] = added_token_type(t["content"])
    tokens = [token_of.get(i, f"[PAD{i}]") for i in range(n_vocab)]
    types = [types_of.get(i, TOKEN_UNUSED) for i in range(n_vocab)]
    merges = [" ".join(m) if isinstance(m, list) else m for m in model["merges"]]
    id_of = {s: i for i, s in token_of.items()}
    return Vocab(tokens, types, merges, id_of["<|endoftext|>"], id_of["<|im_end|>"], id_of["<|endoftext|>"])


def full_vocab_from_gguf(path, n_vocab):
    """The vocabulary of a vocab-only GGUF, padded with [PAD{id}] tokens up to n_vocab as the
    converter pads it (the 7B's embedding has 128 rows more than the 0.5B's token list)."""
    reader = gguf.GGUFReader(path)
    fields = reader.fields

    def array(key):
        field = fields[key]
        return [field.contents(i) for i in range(len(field.data))]

    def scalar(key):
        return int(fields[key].contents())

    tokens, types = array("tokenizer.ggml.tokens"), array("tokenizer.ggml.token_type")
    if len(tokens) > n_vocab:
        sys.exit(f"{path}: {len(tokens)} tokens, more than the preset's {n_vocab}")
    tokens += [f"[PAD{i}]" for i in range(len(tokens), n_vocab)]
    types += [TOKEN_UNUSED] * (n_vocab - len(types))
    return Vocab(tokens, types, array("tokenizer.ggml.merges"), scalar("tokenizer.ggml.bos_token_id"),
                 scalar("tokenizer.ggml.eos_token_id"), scalar("tokenizer.ggml.padding_token_id"))


def check_tiny_tokenizer_json(path, n_vocab, real_path):
    """Load the written tokenizer.json with HF tokenizers, check that ids stay in range, and that it
    agrees with the real tokenizer on every piece that the real one encodes inside the prefix."""
    from tokenizers import Tokenizer
    tok = Tokenizer.from_file(str(path))
    real = Tokenizer.from_file(str(real_path))
    n_bpe = n_vocab - len(TINY_ADDED_TOKENS)
    words = sorted(set((__doc__ + CHAT_TEMPLATE).split()))
    agreeing = [w for w in words if max(real.encode(w).ids) < n_bpe]
    for w in agreeing:
        if tok.encode(w).ids != real.encode(w).ids:
            sys.exit(f"{path}: {w!r} encodes differently from the real tokenizer")
    if len(agreeing) < 50:
        sys.exit(f"{path}: only {len(agreeing)} sample words lie inside the prefix")
    if tok.get_vocab_size(with_added_tokens=True) != n_vocab:
        sys.exit(f"{path}: HF tokenizers sees {tok.get_vocab_size()} tokens, expected {n_vocab}")
    samples = ["Hello world! The quick brown fox jumps over the lazy dog.",
               "<|im_start|>user\nWhat is 12+34?<|im_end|>\n<|im_start|>assistant\n",
               "def f(x):\n    return x * 2  # café, naïve, 日本語 🙂",
               "<tool_call>{\"name\": \"get_weather\"}</tool_call>"]
    for text in samples:
        ids = tok.encode(text).ids
        if not ids or max(ids) >= n_vocab:
            sys.exit(f"{path}: {text!r} encodes to an id outside 0..{n_vocab - 1}")
        if tok.decode(ids, skip_special_tokens=False) != text:
            sys.exit(f"{path}: {text!r} does not survive encode/decode")
    if tok.token_to_id("<|im_end|>") != n_vocab - 3:
        sys.exit(f"{path}: <|im_end|> has the wrong id")
    return tok, len(agreeing)


# ----------------------------------------------------------------------------------------------
# Random weights


def tensor_rng(seed, name):
    return np.random.default_rng([seed, zlib.crc32(name.encode())])


# Byte offsets of the f16 fields inside one block: the scale d, and (for types with a min) the field
# whose value is subtracted or added. Everything else in a block is a quant field or a sub-block scale.
SCALE_OFFSET = {T.Q4_0: 0, T.Q4_1: 0, T.Q5_0: 0, T.Q5_1: 0, T.Q8_0: 0,
                T.Q2_K: 80, T.Q3_K: 108, T.Q4_K: 0, T.Q5_K: 0, T.Q6_K: 208}
MIN_OFFSET = {T.Q4_1: 2, T.Q5_1: 2, T.Q2_K: 82, T.Q4_K: 2, T.Q5_K: 2}
# min = MIN_PER_SCALE * d cancels the mean of the quants: Q4_1/Q5_1 add m to d*q with q uniform on
# 0..15 / 0..31 (mean 7.5 / 15.5); the K-quants subtract dmin*mn from d*sc*q, and with sc and mn
# uniform and independent that needs dmin = mean(q) * d (q mean 1.5 / 7.5 / 15.5 for Q2_K/Q4_K/Q5_K).
MIN_PER_SCALE = {T.Q4_1: -7.5, T.Q5_1: -15.5, T.Q2_K: 1.5, T.Q4_K: 7.5, T.Q5_K: 15.5}
Q6_K_SCALES = slice(192, 208)


def random_blocks(rng, qtype, n_blocks):
    """Random quantized blocks whose scale fields are 'unit' (a per-block jitter near 1)."""
    block_bytes = GGML_QUANT_SIZES[qtype][1]
    blocks = np.frombuffer(rng.bytes(n_blocks * block_bytes), dtype=np.uint8).reshape(n_blocks, block_bytes).copy()
    if qtype == T.Q6_K:
        # Full-range int8 sub-block scales would force d into f16's subnormal range at realistic
        # weight sizes; -32..31 still covers both signs (a sign-extension bug shows).
        blocks[:, Q6_K_SCALES] = (blocks[:, Q6_K_SCALES].view(np.int8) >> 2).view(np.uint8)
    # Different d per block, so that a dequantizer reading the wrong block's scale is caught.
    jitter = rng.uniform(0.8, 1.25, size=n_blocks).astype(np.float32)
    set_scales(blocks, qtype, jitter)
    return blocks, jitter


def set_scales(blocks, qtype, d):
    """Write d (and the matching min) into every block; d is f32 (n_blocks,)."""
    offset = SCALE_OFFSET[qtype]
    blocks[:, offset:offset + 2] = d.astype(np.float16).view(np.uint8).reshape(-1, 2)
    if qtype in MIN_OFFSET:
        offset = MIN_OFFSET[qtype]
        blocks[:, offset:offset + 2] = (d * MIN_PER_SCALE[qtype]).astype(np.float16).view(np.uint8).reshape(-1, 2)


UNIT_STD = {}


def unit_std(qtype):
    """Std of the dequantized values of random blocks with unit scales (measured once per type)."""
    if qtype not in UNIT_STD:
        blocks, _ = random_blocks(np.random.default_rng([12345, int(qtype)]), qtype, 8192)
        UNIT_STD[qtype] = float(gguf.quants.dequantize(blocks.reshape(1, -1), qtype).std())
    return UNIT_STD[qtype]


F16_MIN_NORMAL = 2.0 ** -14


def random_matrix(rng, qtype, n_rows, row_len, std):
    """A (n_rows, row_len) matrix in GGUF storage: float32/float16 values, or uint8 bytes per row."""
    if qtype in (T.F32, T.F16, T.BF16):
        values = rng.standard_normal((n_rows, row_len), dtype=np.float32)
        values *= np.float32(std)
        if qtype == T.F32:
            return values
        if qtype == T.F16:
            return values.astype(np.float16)
        # bf16 = top half of the f32 bits, rounded to nearest even.
        bits = values.view(np.uint32)
        bits = (bits + np.uint32(0x7FFF) + ((bits >> 16) & np.uint32(1))) >> 16
        return bits.astype(np.uint16).view(np.uint8).reshape(n_rows, row_len * 2)
    block_elems, block_bytes = GGML_QUANT_SIZES[qtype]
    n_blocks = n_rows * row_len // block_elems
    blocks, jitter = random_blocks(rng, qtype, n_blocks)
    d = jitter * np.float32(std / unit_std(qtype))
    if d.min() < F16_MIN_NORMAL or d.max() * abs(MIN_PER_SCALE.get(qtype, 1.0)) > 60000:
        sys.exit(f"{qtype.name} std {std}: block scales {d.min():.3g}..{d.max():.3g} leave f16's normal range")
    set_scales(blocks, qtype, d)
    return blocks.reshape(n_rows, row_len // block_elems * block_bytes)


# ----------------------------------------------------------------------------------------------
# Which tensors, of which types and sizes


def use_more_bits(i_layer, n_layer):
    # llama.cpp's Q4_K_M rule: the first and last eighth of the layers, and every third in between.
    return i_layer < n_layer // 8 or i_layer >= 7 * n_layer // 8 or (i_layer - n_layer // 8) % 3 == 2


def quantizer_counter(i_layer, n_layer, as_published):
    """Which attn_v (or ffn_down) tensor block i_layer's is in the order llama.cpp's quantizer
    meets them: use_more_bits takes this counter, not the layer number. llama.cpp sorts the tensors
    by layer number, so the two are equal. The llama.cpp that quantized Qwen's published GGUF files
    sorted them by name as strings (blk.0, blk.1, blk.10, ..., blk.19, blk.2, blk.20, ...): read back
    from those files, the Q6_K layers of the 0.5B and 1.5B are exactly the ones this order gives."""
    return sorted(range(n_layer), key=str).index(i_layer) if as_published else i_layer


def fallback_type(qtype, row_len):
    # llama.cpp: a K-quant needs rows that are a multiple of 256; otherwise it picks a 32-block type.
    if row_len % 256 == 0:
        return qtype
    return {T.Q4_K: T.Q5_0, T.Q5_K: T.Q5_1, T.Q6_K: T.Q8_0}.get(qtype, qtype)


def matrix_type(types, role, i_layer, n_layer, row_len, tied, as_published):
    if types == "f16":
        return T.F16
    if types == "q8_0":
        return T.Q8_0
    # The LM head is Q6_K: output.weight, or token_embd when it doubles as the LM head (tied);
    # an untied token_embd is looked up one row per token and gets the default Q4_K.
    if role == "output" or role == "token_embd" and tied:
        wanted = T.Q6_K
    elif role in ("attn_v", "ffn_down") and use_more_bits(
            quantizer_counter(i_layer, n_layer, as_published), n_layer):
        wanted = T.Q6_K
    else:
        wanted = T.Q4_K
    return fallback_type(wanted, row_len)


FILE_TYPE = {"f16": gguf.LlamaFileType.MOSTLY_F16, "q8_0": gguf.LlamaFileType.MOSTLY_Q8_0,
             "q4_k_m": gguf.LlamaFileType.MOSTLY_Q4_K_M,
             # No file type names a deliberate mix; llama.cpp's value for "not specified".
             "mixed": gguf.LlamaFileType.GUESSED}


class TensorPlan:
    def __init__(self, name, qtype, ne, std, mean=0.0):
        self.name, self.qtype, self.ne, self.std, self.mean = name, qtype, ne, std, mean


def plan_tensors(cfg, n_vocab, types, as_published):
    """Tensor names, GGUF shapes (ne: row length first) and types, in the converter's naming.
    as_published: as Qwen's published GGUF files, which carry an output.weight at every size (the
    HF configs of 0.5B and 1.5B tie it to the embedding, the 7B's does not) and whose Q4_K_M types
    came from an older llama.cpp (quantizer_counter)."""
    tied = cfg["tied"] and not as_published
    d, f = cfg["d_model"], cfg["d_ffn"]
    d_kv = d // cfg["n_head"] * cfg["n_head_kv"]
    n_layer = cfg["n_layer"]
    tiny = types == "mixed"

    def matrix(name, role, i_layer, row_len, n_rows, std):
        if tiny:
            qtype = TINY_EMBD_TYPE if role == "token_embd" else TINY_TYPES[role][i_layer]
        else:
            qtype = matrix_type(types, role, i_layer, n_layer, row_len, tied, as_published)
        return TensorPlan(name, qtype, (row_len, n_rows), std)

    def vector(name, n, std, mean=0.0):
        return TensorPlan(name, T.F32, (n,), std, mean)

    # Sizes. The tiny model: small embeddings, so that the blocks' outputs (each adding about 1 to
    # the residual RMS) outweigh the input token's own embedding, which through the tied LM head
    # would otherwise make every token predict itself; projections near 1/sqrt(fan_in) keep each
    # matmul O(1). Full-scale models only need finite, bounded numbers, and one std for every
    # matrix keeps all their f16 block scales normal.
    if tiny:
        s_embd, s_in, s_out_attn, s_down = 0.2, 1.0 / np.sqrt(d), 2.0 / np.sqrt(d), 2.0 / np.sqrt(f)
        out_norm_mean, out_norm_std = 0.8, 0.1
    else:
        s_embd = s_in = s_out_attn = s_down = 0.04
        out_norm_mean, out_norm_std = 1.0, 0.1

    plan = [matrix("token_embd.weight", "token_embd", 0, d, n_vocab, s_embd)]
    for i in range(n_layer):
        b = f"blk.{i}."
        plan += [
            vector(b + "attn_norm.weight", d, 0.1, 1.0),
            matrix(b + "attn_q.weight", "attn_q", i, d, d, s_in),
            vector(b + "attn_q.bias", d, 0.1),
            matrix(b + "attn_k.weight", "attn_k", i, d, d_kv, s_in),
            vector(b + "attn_k.bias", d_kv, 0.1),
            matrix(b + "attn_v.weight", "attn_v", i, d, d_kv, s_in),
            vector(b + "attn_v.bias", d_kv, 0.1),
            matrix(b + "attn_output.weight", "attn_output", i, d, d, s_out_attn),
            vector(b + "ffn_norm.weight", d, 0.1, 1.0),
            matrix(b + "ffn_gate.weight", "ffn_gate", i, d, f, s_in),
            matrix(b + "ffn_up.weight", "ffn_up", i, d, f, s_in),
            matrix(b + "ffn_down.weight", "ffn_down", i, f, d, s_down),
        ]
    plan.append(vector("output_norm.weight", d, out_norm_std, out_norm_mean))
    if not tied:
        plan.append(matrix("output.weight", "output", 0, d, n_vocab, s_embd))
    return plan


def make_tensor(seed_and_plan):
    seed, p = seed_and_plan  # one argument: Pool.imap passes one
    rng = tensor_rng(seed, p.name)
    if len(p.ne) == 1:
        values = rng.standard_normal(p.ne[0], dtype=np.float32) * np.float32(p.std)
        return values + np.float32(p.mean)
    return random_matrix(rng, p.qtype, p.ne[1], p.ne[0], p.std)


# ----------------------------------------------------------------------------------------------
# Writing and checking


def write_gguf(path, cfg, vocab, plan, types, seed):
    w = gguf.GGUFWriter(str(path), "qwen2")
    w.add_name(cfg["name"])
    w.add_file_type(FILE_TYPE[types])
    w.add_quantization_version(gguf.GGML_QUANT_VERSION)
    w.add_custom_alignment(32)
    w.add_uint32("qwen2.block_count", cfg["n_layer"])
    w.add_uint32("qwen2.context_length", cfg["context"])
    w.add_uint32("qwen2.embedding_length", cfg["d_model"])
    w.add_uint32("qwen2.feed_forward_length", cfg["d_ffn"])
    w.add_uint32("qwen2.attention.head_count", cfg["n_head"])
    w.add_uint32("qwen2.attention.head_count_kv", cfg["n_head_kv"])
    w.add_float32("qwen2.rope.freq_base", ROPE_FREQ_BASE)
    w.add_float32("qwen2.attention.layer_norm_rms_epsilon", RMS_EPS)
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("qwen2")
    w.add_token_list(vocab.tokens)
    w.add_token_types(vocab.types)
    w.add_token_merges(vocab.merges)
    w.add_bos_token_id(vocab.bos)
    w.add_eos_token_id(vocab.eos)
    w.add_pad_token_id(vocab.pad)
    w.add_add_bos_token(False)
    w.add_chat_template(CHAT_TEMPLATE)

    # Announce every tensor first, then generate and write one at a time: memory stays at one tensor.
    for p in plan:
        if p.qtype in (T.F32, T.F16):
            dtype = np.float32 if p.qtype == T.F32 else np.float16
            shape = tuple(reversed(p.ne))
            nbytes = int(np.prod(p.ne)) * np.dtype(dtype).itemsize
            w.add_tensor_info(p.name, shape, np.dtype(dtype), nbytes)
        else:
            shape = gguf.quants.quant_shape_to_byte_shape(tuple(reversed(p.ne)), p.qtype)
            w.add_tensor_info(p.name, shape, np.dtype(np.uint8), int(np.prod(shape)), raw_dtype=p.qtype)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_ti_data_to_file()
    # Worker processes generate the tensors (about 100 MB/s per core; the 7B has 4.7 GB), and imap
    # hands them back in plan order to be written one after the other. It is given two tensors per
    # worker at a time, so that memory holds a few tensors per worker even when the disk is slower.
    jobs = [(seed, p) for p in plan]
    workers = min(os.cpu_count() or 1, len(plan))
    with multiprocessing.Pool(workers) as pool:
        for first in range(0, len(jobs), 2 * workers):
            for tensor in pool.imap(make_tensor, jobs[first:first + 2 * workers]):
                w.write_tensor_data(tensor)
    w.close()


# Values a full-scale check dequantizes per tensor: enough for the std to 0.4% (4 sigma).
SAMPLE_VALUES = 1 << 20


def sample_rows(data, row_len):
    """The first and the last rows of a tensor, about SAMPLE_VALUES values: the last rows catch a
    tensor whose data is cut short or shifted."""
    half = max(1, SAMPLE_VALUES // row_len // 2)
    if data.shape[0] <= 2 * half:
        return data
    return np.concatenate([data[:half], data[-half:]])


def check_gguf(path, plan, n_vocab, full_check):
    """Re-open with gguf-py: names, types, shapes, metadata; every tensor finite with the wanted std
    (full_check: all values; otherwise sample_rows of each tensor)."""
    reader = gguf.GGUFReader(str(path))
    by_name = {t.name: t for t in reader.tensors}
    if [t.name for t in reader.tensors] != [p.name for p in plan]:
        sys.exit(f"{path}: tensor list differs from the plan")
    if len(reader.fields["tokenizer.ggml.tokens"].data) != n_vocab:
        sys.exit(f"{path}: token count differs")
    for p in plan:
        t = by_name[p.name]
        if t.tensor_type != p.qtype or tuple(int(x) for x in t.shape) != p.ne:
            sys.exit(f"{p.name}: read back as {t.tensor_type.name} {list(t.shape)}")
        data = t.data if full_check or len(p.ne) == 1 else sample_rows(t.data, p.ne[0])
        values = gguf.quants.dequantize(data, t.tensor_type).astype(np.float32)
        if not np.isfinite(values).all():
            sys.exit(f"{p.name}: non-finite values")
        std, mean = float(values.std()), float(values.mean())
        # Sampling noise (4 sigma) plus a margin: 3% for the std, and for the mean the offset that
        # Q4_0/Q5_0/Q8_0 keep on purpose (their quants are centred at -0.5, not 0).
        noise = 4 / np.sqrt(values.size)
        if abs(std - p.std) > (0.03 + noise) * p.std or abs(mean - p.mean) > (0.15 + noise) * p.std:
            sys.exit(f"{p.name} ({t.tensor_type.name}): std {std:.4g} mean {mean:.4g}, wanted {p.std:.4g} / {p.mean:.4g}")
    return reader


def dequantized_weights(reader):
    """name -> float32 array in numpy order (n_rows, row_len)."""
    return {t.name: gguf.quants.dequantize(t.data, t.tensor_type).astype(np.float32).reshape(
        tuple(reversed([int(x) for x in t.shape]))) for t in reader.tensors}


def rms_norm(x, w):
    return x / np.sqrt((x * x).mean(-1, keepdims=True) + RMS_EPS) * w


def rope_neox(x, n_head, head_dim, positions):
    # x (n_tokens, n_head*head_dim); element i of a head turns with element i + head_dim/2.
    x = x.reshape(len(positions), n_head, head_dim)
    half = head_dim // 2
    freqs = ROPE_FREQ_BASE ** (-np.arange(half, dtype=np.float64) * 2 / head_dim)
    angles = np.asarray(positions, dtype=np.float64)[:, None] * freqs[None, :]  # (n_tokens, half)
    cos, sin = np.cos(angles)[:, None, :], np.sin(angles)[:, None, :]
    a, b = x[..., :half], x[..., half:]
    return np.concatenate([a * cos - b * sin, a * sin + b * cos], -1).reshape(len(positions), -1)


def numpy_forward(W, cfg, token_ids, stats):
    """Logits (n_tokens, n_vocab) of a plain fp32/fp64 Qwen2 forward pass over token_ids."""
    n_head, n_kv = cfg["n_head"], cfg["n_head_kv"]
    head_dim = cfg["d_model"] // n_head
    n = len(token_ids)
    pos = np.arange(n)
    x = W["token_embd.weight"][token_ids].astype(np.float64)  # (n, d_model)
    stats.append(("embedding", float(np.sqrt((x * x).mean()))))
    causal = np.triu(np.full((n, n), -np.inf), 1)
    for i in range(cfg["n_layer"]):
        b = f"blk.{i}."
        h = rms_norm(x, W[b + "attn_norm.weight"])
        q = rope_neox(h @ W[b + "attn_q.weight"].T + W[b + "attn_q.bias"], n_head, head_dim, pos)
        k = rope_neox(h @ W[b + "attn_k.weight"].T + W[b + "attn_k.bias"], n_kv, head_dim, pos)
        v = h @ W[b + "attn_v.weight"].T + W[b + "attn_v.bias"]
        out = np.zeros_like(q)  # (n, n_head*head_dim)
        max_prob = 0.0
        for hq in range(n_head):
            hk = hq // (n_head // n_kv)
            qs = q[:, hq * head_dim:(hq + 1) * head_dim]
            ks = k[:, hk * head_dim:(hk + 1) * head_dim]
            vs = v[:, hk * head_dim:(hk + 1) * head_dim]
            scores = qs @ ks.T / np.sqrt(head_dim) + causal  # (n, n)
            p = np.exp(scores - scores.max(-1, keepdims=True))
            p /= p.sum(-1, keepdims=True)
            max_prob = max(max_prob, float(p[n // 2:].max(-1).mean()))
            out[:, hq * head_dim:(hq + 1) * head_dim] = p @ vs
        x = x + out @ W[b + "attn_output.weight"].T
        h = rms_norm(x, W[b + "ffn_norm.weight"])
        g = h @ W[b + "ffn_gate.weight"].T
        u = h @ W[b + "ffn_up.weight"].T
        x = x + (g / (1 + np.exp(-g)) * u) @ W[b + "ffn_down.weight"].T
        stats.append((f"block {i} (mean max attention prob {max_prob:.2f})", float(np.sqrt((x * x).mean()))))
    return rms_norm(x, W["output_norm.weight"]) @ W["token_embd.weight"].T


def check_tame(reader, cfg, tok):
    """The tiny model must be numerically tame: O(1) activations, logits spread over a few units,
    a softmax that is not saturated, and a greedy continuation that is not one token repeated."""
    W = dequantized_weights(reader)
    prompt = tok.encode("<|im_start|>user\nWhat is the capital of France?<|im_end|>\n<|im_start|>assistant\n").ids
    ids = list(prompt)
    stats = []
    for _ in range(16):
        stats.clear()
        logits = numpy_forward(W, cfg, ids, stats)
        ids.append(int(np.argmax(logits[-1])))
    last = logits[-1]
    p = np.exp(last - last.max())
    p /= p.sum()
    generated = ids[len(prompt):]
    for what, rms in stats:
        print(f"  residual rms after {what}: {rms:.3f}")
    print(f"  last logits: std {last.std():.3f}, range {last.min():.2f}..{last.max():.2f}, top prob {p.max():.3f}")
    print(f"  greedy continuation: {generated} = {tok.decode(generated)!r}")
    if not all(0.1 < rms < 10 for _, rms in stats):
        sys.exit("tiny model: residual stream is not O(1)")
    if not (1.0 < last.std() < 6.0) or p.max() > 0.9:
        sys.exit("tiny model: logits too flat or softmax saturated")
    if len(set(generated)) < 4:
        sys.exit("tiny model: greedy continuation is (nearly) one token repeated")


# ----------------------------------------------------------------------------------------------


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--preset", choices=sorted(PRESETS), default="tiny")
    ap.add_argument("--types", choices=["f16", "q8_0", "q4_k_m"], help="full-scale presets only")
    ap.add_argument("--as-published", action="store_true",
                    help="full-scale presets: an output.weight at every size, and with q4_k_m the types "
                         "of Qwen's published Q4_K_M files (see plan_tensors)")
    ap.add_argument("-o", "--output", help="output .gguf (default for tiny: models/tiny-qwen2.gguf)")
    ap.add_argument("--vocab", default=default_vocab(),
                    help="the real Qwen vocabulary: a tokenizer.json (the tiny vocabulary is cut from it), "
                         "or for full-scale presets also a vocab-only .gguf "
                         "(default: $QWEN_TOKENIZER_DIR/tokenizer.json)")
    ap.add_argument("--seed", type=int, default=1234)
    args = ap.parse_args()
    if not args.vocab:
        ap.error("no vocabulary: give --vocab PATH or set QWEN_TOKENIZER_DIR "
                 "(a folder holding the real Qwen tokenizer.json)")
    if not Path(args.vocab).is_file():
        ap.error(f"no vocabulary file at {args.vocab}")
    cfg = PRESETS[args.preset]
    start = time.time()

    if args.preset == "tiny":
        if args.types or args.as_published:
            ap.error("--types and --as-published are for the full-scale presets; the tiny model is fixed")
        out = Path(args.output or "models/tiny-qwen2.gguf")
        out.parent.mkdir(parents=True, exist_ok=True)
        if not args.vocab.endswith(".json"):
            ap.error("the tiny preset cuts its vocabulary from a tokenizer.json")
        vocab, hf = tiny_vocab(json.load(open(args.vocab, encoding="utf-8")), cfg["n_bpe"])
        tok_path = out.with_name(out.name.replace(".gguf", "") + ".tokenizer.json")
        with open(tok_path, "w", encoding="utf-8") as f:
            json.dump(hf, f, ensure_ascii=False, indent=1)
            f.write("\n")
        types = "mixed"
    else:
        if not args.types or not args.output:
            ap.error("full-scale presets need --types and -o")
        out = Path(args.output)
        out.parent.mkdir(parents=True, exist_ok=True)
        types = args.types
        if args.vocab.endswith(".gguf"):
            # gguf-py parses big arrays slowly: about a minute
            vocab = full_vocab_from_gguf(args.vocab, cfg["n_vocab"])
        else:
            vocab = full_vocab_from_json(json.load(open(args.vocab, encoding="utf-8")), cfg["n_vocab"])

    n_vocab = len(vocab.tokens)
    plan = plan_tensors(cfg, n_vocab, types, args.as_published)
    write_gguf(out, cfg, vocab, plan, types, args.seed)
    print(f"wrote {out}: {out.stat().st_size} bytes, {len(plan)} tensors, vocab {n_vocab}, "
          f"bos/pad {vocab.bos}, eos {vocab.eos}, {len(vocab.merges)} merges ({time.time() - start:.1f} s)")

    reader = check_gguf(out, plan, n_vocab, full_check=args.preset == "tiny")
    if args.preset == "tiny":
        tok, n_agreeing = check_tiny_tokenizer_json(tok_path, n_vocab, args.vocab)
        print(f"wrote {tok_path}: loads in HF tokenizers, vocab {n_vocab}, "
              f"agrees with the real tokenizer on {n_agreeing} in-prefix sample words")
        check_tame(reader, cfg, tok)
    print(f"checked {out} ({time.time() - start:.1f} s)")


if __name__ == "__main__":
    main()
