#!/usr/bin/env python3
"""Classroom assignments: a step handed out with its teachable functions emptied, and graded.

The sources mark each teachable region with one pair of comments:
    // BEGIN SOLUTION step05 rmsnorm
    ...the lines the students write...
    // END SOLUTION
An assignment for step NN replaces every region tagged stepNN with a stub that compiles without
warnings and fails clearly when called; the regions of earlier steps stay solved.

    tools/make_assignment.py write NN DIR    the student tree (what `make assignment` runs)
    tools/make_assignment.py grade           in a student tree: one row per stub and a score
    tools/make_assignment.py checks NN       step NN's regions, one a line: file, name, the
                                             doctest filter of the checks that cover it, and
                                             the stubs their failure may name ("a|b")
Standard library only, so a student machine needs nothing but python3.
"""
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIRST_TENSOR_STEP = "step03_tensors"  # test_gguf_tensors.cpp expects it in the current folder
BEGIN = re.compile(r"^(\s*)// BEGIN SOLUTION (step\d\d) (\w+)$")
END = re.compile(r"^\s*// END SOLUTION$")
MAX_COLUMNS = 100
SOURCE_SUFFIXES = (".cpp", ".cu", ".cuh")  # where regions may be (.cuh: device functions)


class Region:
    """One stubbed function (or part of one): what to write and the checks that cover it."""

    def __init__(self, todo, checks, helpers=(), placeholders=(), needs=()):
        self.todo = todo          # what the student implements, for the TODO comment
        self.checks = checks      # doctest test case names that fail until it is written
        self.helpers = helpers    # names only the region uses (functions, or variables declared
        #                           before it): the stub names them, so none goes unused
        self.placeholders = placeholders  # declarations the code after a partial region needs
        self.needs = needs        # regions its checks call first: they must be written before


# The GPU chunked rule's checks: both of step 15's regions are in chunk_prepare, which every
# one of them runs.
CHUNK_PREPARE_CHECKS = [
    "gpu::chunked_gated_delta_rule equals gated_delta_rule from 1 to 8192 tokens, within the "
    "bound",
    "gpu::chunked_gated_delta_rule: keys nearly parallel and beta near 1 (A near all ones)",
    "gpu::chunked_gated_delta_rule: a prompt in two calls, the state carried, equals one",
    "gpu::chunked_gated_delta_rule equals gpu::gated_delta_rule, the kernel it replaces"]

# Every region of every step. The names are the markers'; the checks are whole test case names
# (make test-stepNN runs them with the rest; grading runs each region's alone).
REGIONS = {
    "03": {
        "dequantize_q8_0": Region(
            "decode each 34-byte block_q8_0 (layout above): value = d * q",
            ["every supported type dequantizes exactly as gguf-py does"]),
        "dequantize_q4_k": Region(
            "decode each 144-byte block_q4_K (layout above); unpack_k_scale_min reads the "
            "six-bit scales and mins",
            ["every supported type dequantizes exactly as gguf-py does"]),
        "dequantize_q6_k": Region(
            "decode each 210-byte block_q6_K (layout above): four low bits from ql, two high "
            "bits from qh, a signed scale per 16 elements",
            ["every supported type dequantizes exactly as gguf-py does"]),
    },
    "04": {
        "bpe_encode": Region(
            "the BPE merge loop: start from one token per byte (byte_tokens_), merge the "
            "lowest-ranked adjacent pair (find_merge), leftmost first, until none is left; "
            "append the ids",
            ["lowest rank merges first, whatever the position",
             "equal ranks: the leftmost pair merges first",
             "merges build on merges, and a repeated pair keeps its first rank",
             "a long piece merges in O(n log n)"]),
        "match_piece": Region(
            "the pre-tokenizer's core: the length of the piece starting at chars[i], trying the "
            "split regex's alternatives in order (match_contraction, run_end and "
            "is_space_class help)",
            ["pre-tokenizer pieces equal HF's split of every corpus text",
             "Unicode classes follow the regex engine, not str.isspace()",
             "invalid UTF-8 splits as if each bad sequence were U+FFFD, bytes kept",
             "pieces always cover the text exactly, even for random bytes"],
            helpers=("match_contraction", "run_end", "is_space_class")),
    },
    "05": {
        "rmsnorm": Region(
            "each row divided by the root of its mean square (plus eps), times weight",
            ["rmsnorm of 1..n divides by sqrt((n+1)(2n+1)/6 + eps)",
             "rmsnorm keeps an all-zero row at zero thanks to eps"]),
        "matmul": Region(
            "out[t][o] = dot(x[t], row o of W), dequantizing one row of W at a time",
            ["matmul of an F16 matrix with awkward sizes is exact on small integers",
             "matmul dequantizes hand-made Q8_0 rows",
             "matmul dequantizes a hand-made Q4_K row"],
            helpers=("dot",)),
        "rope": Region(
            "rotate element i with element i + head_dim/2 of every head by "
            "position * base^(-2i/head_dim)",
            ["rope rotates element i with element i + head_dim/2 by pos * base^(-2i/d)",
             "rope at position 0 changes nothing and later positions rotate pairs, keeping "
             "length"]),
        "attention": Region(
            "causal grouped-query attention: scores scaled by 1/sqrt(head_dim), softmax over "
            "positions 0..t, the weighted sum of the values",
            ["attention maps query heads onto their shared key/value head",
             "attention is causal: token t averages only positions 0..t when scores are equal",
             "attention scales scores by 1/sqrt(head_dim)"],
            helpers=("dot",)),
        "swiglu": Region(
            "out = silu(gate) * up, element by element",
            ["swiglu is silu(gate) * up"]),
    },
    "06": {
        "rmsnorm_kernel": Region(
            "one thread per token: rmsnorm's loop body (ops_cpu.cpp) for row thread_index()",
            ["gpu::rmsnorm equals rmsnorm"]),
        "matmul_kernel": Region(
            "one thread per output element out[t][o]: the dot product of x[t] and row o of w",
            ["gpu::matmul equals matmul for F32, F16 and BF16 weights"]),
        "rope_kernel": Region(
            "one thread per rotated pair (token, head, i < head_dim/2), the angle in double",
            ["gpu::rope equals rope, also at positions past 30000"]),
        "attention_kernel": Region(
            "one thread per (query token, query head): max, sum of exp, then the weighted "
            "values, recomputing the dot products instead of storing the scores",
            ["gpu::attention equals attention: causal mask, softmax, grouped-query heads"]),
        "swiglu_kernel": Region(
            "one thread per element: silu(gate) * up",
            ["gpu::swiglu equals swiglu, also in place"]),
    },
    "07": {
        "forward_cache_rows": Region(
            "point k and v at the rows of layer l's cache where this pass's positions go",
            ["prefill in one pass, in chunks, and token by token give the same logits",
             "greedy decoding on the cache sees the logits of recomputing the whole sequence"],
            placeholders=("float* k = nullptr;  // (n, kv_dim)",
                          "float* v = nullptr;  // (n, kv_dim)")),
        "attention": Region(
            "attention over the cache: the queries sit at first_position.., the keys and values "
            "of positions 0..first_position + n_tokens - 1 are in k and v",
            ["new queries over cached keys equal the same rows of one causal pass",
             "attention maps query heads onto their shared key/value head",
             "attention is causal: token t averages only positions 0..t when scores are equal",
             "attention scales scores by 1/sqrt(head_dim)"]),
        "gpu_forward_cache_rows": Region(
            "point k and v at the rows of layer l's device cache where this pass's positions go",
            ["GPU: prefill in one pass, in chunks, and token by token give the same logits",
             "GPU: cached greedy decoding sees the logits of recomputing, and the CPU's tokens"],
            placeholders=("float* k = nullptr;  // (n, kv_dim)",
                          "float* v = nullptr;  // (n, kv_dim)")),
        "attention_kernel": Region(
            "attention_kernel over the cache: query t sits at first_position + t and sees the "
            "keys up to there",
            ["gpu::attention equals attention: causal mask, softmax, grouped-query heads, cache"],
            needs=("attention",)),
    },
    "08": {
        "apply_repetition_penalty": Region(
            "each distinct recent token once: a positive logit divided by penalty, a negative "
            "one multiplied",
            ["repetition penalty: positive logits divided, negative multiplied, each token once",
             "the penalty looks only at the last repeat_last_n tokens"]),
        "sorted_candidates": Region(
            "the logits divided by temperature, most likely first (ties by id), the top_k kept",
            ["temperature divides the logits; candidates come most likely first, ties by id",
             "top-k keeps the k largest logits"]),
        "keep_top_p": Region(
            "keep the smallest most-likely-first prefix whose probability reaches top_p",
            ["top-p keeps the smallest most-likely-first set with probability >= p"],
            needs=("sorted_candidates",)),
        "keep_min_p": Region(
            "keep the candidates at least min_p times as likely as the first",
            ["min-p keeps the tokens at least min_p times as likely as the best"],
            needs=("sorted_candidates",)),
        "draw": Region(
            "walk the cumulative probabilities to where uniform (scaled by their total) falls",
            ["draw walks the cumulative probabilities of what the filters left"]),
    },
    "09": {
        "rmsnorm_kernel": Region(
            "one block per token: every thread adds the squares of every 256th element, "
            "warp_sum reduces each warp's, the 8 warp sums meet in shared memory; then scale",
            ["gpu::rmsnorm equals rmsnorm"]),
        "matvec_kernel": Region(
            "one warp per row of w (a long row split among the block's warps_per_row warps), the "
            "lanes reading neighbouring 16-byte pieces of the row and x through L1 "
            "(dot_16_bytes), warp_sum of the lanes' sums, the warps' sums in shared memory",
            ["gpu::matmul equals matmul for F32, F16 and BF16 weights"]),
        "tiled_gemm_kernel": Region(
            "a 64 x 64 tile of out per block: 16-deep slices of x and w copied to shared memory "
            "(k-major), each thread accumulating its 4 x 8 block in registers; the next step's "
            "slices prefetched into registers with load_slices",
            ["gpu::matmul equals matmul for F32, F16 and BF16 weights"]),
        "split_attention_kernel": Region(
            "one chunk of cached positions of one KV head, for its group of query heads: in "
            "passes of 32 positions, scores, the online softmax (running max and sum) and the "
            "weighted values; the chunk's max, sum and values into partials",
            ["split decode attention equals attention from 1 to 4097 cached positions",
             "split decode attention equals attention at 32768 cached positions",
             "gpu::attention equals attention: causal mask, softmax, grouped-query heads, cache"]),
        "merge_chunks_kernel": Region(
            "one block per query head: rescale each chunk's sum and values by exp(its max - "
            "the largest max), add them up, divide",
            ["split decode attention equals attention from 1 to 4097 cached positions",
             "split decode attention equals attention at 32768 cached positions",
             "gpu::attention equals attention: causal mask, softmax, grouped-query heads, cache"]),
    },
    "10": {
        "qkv_rope_cache_kernel": Region(
            "a warp per pair of rows (i, i + head_dim/2) of one head of Q, K or V: "
            "normed_dot_2rows, then block_inv_rms (every warp), then lane 0 scales, adds the "
            "biases, turns the pair by RoPE (not V's) and writes q or the cache row at "
            "slots->position",
            ["qkv_rope_cache equals rmsnorm, the Q/K/V matmuls, add_bias and rope"]),
        "gate_up_swiglu_kernel": Region(
            "a warp per row i: normed_dot_2rows of the gate and up rows, block_inv_rms, then "
            "lane 0 writes silu(gate) * up, both scaled by 1/rms",
            ["gate_up_swiglu equals rmsnorm, the gate and up matmuls and swiglu"]),
    },
    "11": {
        "block_dot_q8_0_scalar": Region(
            "for each 34-byte block b: isum = sum of the 32 int8 weights times x[b].q (an exact "
            "integer), then add_to_lane(lanes, b, d * x[b].d, float(isum)); return "
            "sum_dot_lanes(lanes)",
            ["quant_dot: block_dot is within the bound of the float dot product, a wrong scale not",
             "quant_dot: the AVX2 kernel equals the scalar kernel bit for bit",
             "quant_dot: the AVX-512 VNNI kernel equals the scalar kernel bit for bit"],
            helpers=["add_to_lane"]),
        "block_dot_q5_0_scalar": Region(
            "for each 22-byte block b: rebuild the 32 five-bit q (qs nibbles, qh bits), isum = "
            "sum of (q - 16) * x[b].q, then add_to_lane(lanes, b, d * x[b].d, float(isum))",
            ["quant_dot: block_dot is within the bound of the float dot product, a wrong scale not",
             "quant_dot: the AVX2 kernel equals the scalar kernel bit for bit",
             "quant_dot: the AVX-512 VNNI kernel equals the scalar kernel bit for bit"]),
        "block_dot_q4_k_scalar": Region(
            "for each sub-block j of 32 of each 144-byte super-block: A = scale * sum of q * "
            "x.q, B = min * x.sum (unpack_k_scale_min), y = fma(d, A, -(dmin * B)), then "
            "add_to_lane(lanes, 8s + j, x.d, y)",
            ["quant_dot: block_dot is within the bound of the float dot product, a wrong scale not",
             "quant_dot: the AVX2 kernel equals the scalar kernel bit for bit",
             "quant_dot: the AVX-512 VNNI kernel equals the scalar kernel bit for bit"]),
        "block_dot_q6_k_scalar": Region(
            "for each activation block j of 32 of each 210-byte super-block: the two 16-weight "
            "sums of (q - 32) * x.q, each times its int8 scale, I = their sum, then "
            "add_to_lane(lanes, 8s + j, d * x.d, float(I))",
            ["quant_dot: block_dot is within the bound of the float dot product, a wrong scale not",
             "quant_dot: the AVX2 kernel equals the scalar kernel bit for bit",
             "quant_dot: the AVX-512 VNNI kernel equals the scalar kernel bit for bit"]),
    },
    "12": {
        "tensor_core_gemm_kernel": Region(
            "the pipeline: set off the first kStages - 1 steps' slices (load_x_slice, "
            "load_weight_slice, store_weight_slice, one copy_async_commit each); then per step "
            "wait for its group, __syncthreads, set off step + kStages - 1, and for each 16 of "
            "the 32-deep slice load A's quarters and B's column pairs with load_matrix_x4 and "
            "add mma_16x8x16 into acc[i][j]",
            ["the tensor-core GEMM equals x W^T on the rounded operands, for every weight type"],
            helpers=["tiles", "n_steps"],
            placeholders=("float acc[kFragsTokens][kFragsOutputs][4] = {};",)),
        "flash_attention_tile": Region(
            "one key tile: S = Q K^T by mma (load_matrix_x4 of the key rows), the causal mask "
            "and scale_log2, each row's new maximum over its 4 lanes, rescale row_sum and acc "
            "by 2^(old - new), P = 2^(S - max) added into row_sum, then acc += P V with P "
            "packed from the score registers and V through load_matrix_x4_transposed",
            ["flash attention equals attention on F16 operands from 1 to 4097 positions"],
            helpers=["kKeySteps", "my_position", "row_max"]),
    },
    "13": {
        "qk_norm": Region(
            "Qwen3's QK-norm: RMSNorm of every head of Q or K on its own, one weight vector "
            "shared by all heads (a head is a row of head_dim for rmsnorm)",
            ["qk_norm normalizes each head on its own, with one weight vector for every head"]),
        "norm_rope_head": Region(
            "one block per head: the sum of the head's squares (__ldcg reads, warp_sum, then "
            "the warps' sums through shared memory), inv_rms = 1 / sqrt(sum / head_dim + eps), "
            "then each thread's pairs (i, i + head_dim / 2) times inv_rms and the weight, "
            "rotated by rotate_pair and stored",
            ["gpu::qk_norm_rope equals qk_norm then rope, heads of 2 to 2500 values",
             "qkv_rope_cache with QK-norm equals rmsnorm, the matmuls, qk_norm and rope"]),
    },
    "14": {
        "causal_conv1d_silu": Region(
            "out[t][c] = silu(sum over j < kernel of weight[c][j] * input at t - (kernel - 1) + j), "
            "an input before token 0 read from `window` (the last kernel - 1 inputs of the "
            "earlier calls); then the window becomes the last kernel - 1 rows of (window, x)",
            ["causal_conv1d_silu: each channel's taps over its last inputs, then SiLU"]),
        "gated_delta_rule": Region(
            "per value head h (key head h % n_key_heads) and token t: S = exp(g) S; "
            "delta = beta (v - S^T k); S += k delta^T; out = S^T q, with S (dk, dv) in `state`",
            ["gated_delta_rule: decay, correct the recall under k, read with q",
             "gated_delta_rule: value head h reads key head h % n_key_heads (the file's order)"]),
    },
    "15": {
        "chunk_scores": Region(
            "warp w's 16 rows of K K^T and Q K^T in one loop over dk (a_operand of key_value, "
            "b_operand of s.keys, mma_split), storing on the way its rows of diag(e^G) Q as "
            "fragments (store_fragment, kQFragments + 8 w + k); then A^T (r < t, times beta_t "
            "e^(G_t - G_r)) above the diagonal of s.at, and P (r <= t, times the same decay) as "
            "fragments (acc_as_a_operand, kPFragments + 4 w + k)",
            CHUNK_PREPARE_CHECKS),
        "chunk_prepare_kernel": Region(
            "a block per (chunk, value head): load_prepare_inputs, scores and decayed_keys; then "
            "T = (I + A)^-1 by forward substitution on and below the diagonal of s.at (a thread "
            "per column, a barrier per row); then W's fragments and U's rows (w_fragments, "
            "u_rows)",
            CHUNK_PREPARE_CHECKS, helpers=("s",)),
    },
}


def step_dir(root, number):
    found = sorted(root.glob(f"step{number}_*"))
    if len(found) != 1:
        sys.exit(f"error: no single step{number}_* directory in {root}")
    return found[0]


def doctest_filter(checks):
    """A -tc value matching exactly these test cases: a comma in a name would split the list,
    so it becomes '?', doctest's one-character wildcard."""
    return ",".join(name.replace(",", "?") for name in checks)


def find_regions(lines):
    """(begin index, end index, indent, step, name) of each marked region."""
    regions, open_region = [], None
    for index, line in enumerate(lines):
        begin = BEGIN.match(line)
        if begin:
            if open_region:
                sys.exit(f"error: line {index + 1}: a region opens inside another")
            open_region = (index, begin.group(1), begin.group(2), begin.group(3))
        elif END.match(line):
            if not open_region:
                sys.exit(f"error: line {index + 1}: END SOLUTION without a BEGIN")
            start, indent, step, name = open_region
            regions.append((start, index, indent, step, name))
            open_region = None
    if open_region:
        sys.exit(f"error: line {open_region[0] + 1}: BEGIN SOLUTION without an END")
    return regions


def enclosing_header(lines, begin):
    """The declaration of the function holding line `begin`, from its first line to the '{'."""
    first = begin - 1
    while first > 0 and not (lines[first][:1].isalpha() or lines[first][:1] == "_"):
        first -= 1  # its body and '#pragma' lines start with a space or '#'
    while first > 0 and lines[first - 1].startswith("template"):
        first -= 1
    header = " ".join(line.strip() for line in lines[first:begin]
                      if not line.strip().startswith("//"))
    return header[:header.rfind("{")]


def parameter_names(header):
    """The parameter names in `type name, type name = default` lists."""
    opening = header.index("(")
    depth, closing = 0, opening
    for closing in range(opening, len(header)):
        depth += {"(": 1, ")": -1}.get(header[closing], 0)
        if depth == 0:
            break
    names, depth, current = [], 0, ""
    for char in header[opening + 1:closing] + ",":
        if char == "," and depth == 0:
            declaration = current.split("=")[0].strip()
            if declaration and declaration != "void":
                names.append(re.search(r"(\w+)\s*(\[[^\]]*\])?$", declaration).group(1))
            current = ""
            continue
        depth += {"<": 1, "(": 1, ">": -1, ")": -1}.get(char, 0)
        current += char
    return names


def comment_lines(indent, text):
    return textwrap.wrap(text, MAX_COLUMNS, initial_indent=indent + "// ",
                         subsequent_indent=indent + "//   ", break_on_hyphens=False)


def string_lines(indent, call, message, end):
    """`call"message"end`, the literal split in two where the line would pass 100 columns."""
    line = f'{indent}{call}"{message}"{end}'
    if len(line) <= MAX_COLUMNS:
        return [line]
    cut = message.rindex("; ") + 2
    return [f'{indent}{call}"{message[:cut]}"',
            f'{indent}{" " * len(call)}"{message[cut:]}"{end}']


def stub_lines(lines, begin, indent, number, name, region):
    """What replaces a region: the TODO, the names the empty body would leave unused, the
    placeholders, and a call that fails naming the function (a message, in a kernel)."""
    header = enclosing_header(lines, begin)
    checks = ", ".join(f'"{check}"' for check in region.checks)
    stub = comment_lines(indent, f"TODO(step{number} assignment): {region.todo}.")
    stub += comment_lines(indent, f"make test-step{number} checks it: {checks}.")
    unused = parameter_names(header) if len(indent) == 4 else []  # a whole body
    unused += region.helpers
    if unused:
        stub += textwrap.wrap(" ".join(f"(void){n};" for n in unused), MAX_COLUMNS,
                              initial_indent=indent, subsequent_indent=indent)
    stub += [indent + placeholder for placeholder in region.placeholders]
    message = f"{name}: not implemented yet (step{number} assignment; " \
              f"make test-step{number} checks it)"
    if "__global__" in header or "__device__" in header:
        # GPU code cannot throw: the first thread says so, once a run
        stub.append(f"{indent}static bool said = false;")
        stub.append(f"{indent}if (!said && blockIdx.x == 0 && threadIdx.x == 0) {{")
        stub.append(f"{indent}    said = true;")
        stub += string_lines(indent + "    ", "printf(", message + "\\n", ");")
        stub.append(f"{indent}}}")
    else:
        stub += string_lines(indent, "fail(", message, ");")
    return stub


def with_error_h(lines):
    """Adds #include "error.h" (for fail()) where the quoted includes keep their order."""
    includes = [i for i, line in enumerate(lines) if line.startswith('#include "')]
    if any(lines[i] == '#include "error.h"' for i in includes):
        return lines
    later = [i for i in includes[1:] if lines[i] > '#include "error.h"']
    at = later[0] if later else includes[-1] + 1
    return lines[:at] + ['#include "error.h"'] + lines[at:]


def stubbed_text(path, number):
    """The file's text with step `number`'s regions stubbed; None when it has none."""
    lines = path.read_text().split("\n")
    regions = [r for r in find_regions(lines) if r[3] == f"step{number}"]
    if not regions:
        return None
    table = REGIONS.get(number, {})
    for begin, end, indent, _, name in reversed(regions):
        if name not in table:
            sys.exit(f"error: {path}: region '{name}' is not in tools/make_assignment.py's table")
        lines[begin:end + 1] = stub_lines(lines, begin, indent, number, name, table[name])
    if path.suffix == ".cpp":
        lines = with_error_h(lines)
    return "\n".join(lines)


def regions_of_step(directory, number):
    """{name: file} for the step's regions, checked against the table both ways."""
    found = {}
    for path in sorted(directory.iterdir()):
        if path.suffix in SOURCE_SUFFIXES and not path.name.startswith("test_"):
            for _, _, _, step, name in find_regions(path.read_text().split("\n")):
                if step == f"step{number}":
                    found[name] = path.name
    missing = set(REGIONS.get(number, {})) - set(found)
    if missing:
        sys.exit(f"error: {directory} lacks the marked regions {', '.join(sorted(missing))}")
    unknown = set(found) - set(REGIONS.get(number, {}))
    if unknown:
        sys.exit(f"error: regions {', '.join(sorted(unknown))} of {directory} are not in "
                 "tools/make_assignment.py's table")
    return found


def write_tree(number, out, shown):
    source = step_dir(ROOT, number)
    if out.exists() and any(out.iterdir()):
        sys.exit(f"error: {out} is not empty")
    regions = regions_of_step(source, number)
    if not regions:
        sys.exit(f"error: step{number} has no marked regions to hand out")
    shutil.copytree(ROOT / "common", out / "common")
    shutil.copy2(ROOT / "Makefile", out)
    # What `make stepNN`, `make test-stepNN` and `make grade` run (`make test` checks the
    # whole repository: it does not run in a student tree).
    for tool in ("check/run_tests.sh", "setup.sh", "make_assignment.py"):
        (out / "tools" / tool).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / "tools" / tool, out / "tools" / tool)
    # tools/emulate runs step 15's chunk kernels and step 11's decode attention lane by lane
    # where there is no GPU.
    if source.name in (ROOT / "tools" / "emulate" / "run.sh").read_text():
        shutil.copytree(ROOT / "tools" / "emulate", out / "tools" / "emulate")
    target = out / source.name
    target.mkdir()
    for path in sorted(source.iterdir()):
        text = stubbed_text(path, number) if path.suffix in SOURCE_SUFFIXES else None
        if text is None:
            shutil.copy2(path, target)
        else:
            (target / path.name).write_text(text)
    # The fixture folders the step's checks name, and the tiny model.
    check_sources = " ".join(p.read_text() for p in source.glob("test_*"))
    for folder in sorted((ROOT / "tests" / "fixtures").iterdir()):
        if f"tests/fixtures/{folder.name}/" in check_sources:
            shutil.copytree(folder, out / "tests" / "fixtures" / folder.name)
    if source.name != FIRST_TENSOR_STEP:
        write_stand_in(out / FIRST_TENSOR_STEP)
    (out / "models").mkdir()
    for model_file in ("tiny-qwen2.gguf", "tiny-qwen2.tokenizer.json"):
        shutil.copy2(ROOT / "models" / model_file, out / "models")
    write_readme(out, number, source.name, regions)
    print(f"wrote the step{number} assignment to {shown}: {len(regions)} functions to write")
    for name, file in regions.items():
        print(f"  {source.name}/{file}: {name}")


def write_stand_in(folder):
    """The folder a check of test_gguf_tensors.cpp names to see a directory refused."""
    folder.mkdir()
    (folder / "README.md").write_text(
        "Not a step: test_gguf_tensors.cpp opens this folder as a model file to check that\n"
        "a directory is refused. Leave it here.\n")


def write_readme(out, number, directory, regions):
    rows = "\n".join(f"| `{directory}/{file}` | `{name}` | {REGIONS[number][name].todo} |"
                     for name, file in regions.items())
    (out / "ASSIGNMENT.md").write_text(f"""# Assignment: step {number}

Write the functions below: each is a stub that fails, saying it is not implemented yet, and
has a TODO comment with what to write and the checks that cover it.

| file | function | what to write |
|---|---|---|
{rows}

```
make step{number}         # build the program
make test-step{number}    # every check of the step; they pass when the stubs are filled in
make grade          # one row per function: pass or fail, and the score
```
""")


def summary_counts(output):
    """(passed, failed, skipped) from a test binary's summary line, or None without one."""
    found = re.findall(r"^\w+: (\d+) passed, (\d+) failed, (\d+) skipped$", output, re.M)
    return tuple(int(n) for n in found[-1]) if found else None


def run_checks(binary, checks, timeout=600):
    """Runs the named test cases; (verdict, detail)."""
    try:
        result = subprocess.run([str(binary), "-tc=" + doctest_filter(checks)], cwd=ROOT,
                                capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return "FAIL", f"still running after {timeout} s"
    counts = summary_counts(result.stdout)
    if counts is None:
        return "FAIL", f"the checks stopped (exit status {result.returncode})"
    passed, failed, skipped = counts
    if failed or passed + skipped < len(checks):
        return "FAIL", f"{failed} of {len(checks)} checks fail"
    if skipped:
        reason = re.search(r'^SKIPPED "[^"]*": (.*)$', result.stdout, re.M)
        return NOT_GRADED, reason.group(1) if reason else "its checks could not run here"
    return "pass", f"{passed} of {len(checks)} checks pass"


NOT_GRADED = "not graded"


def make_value(name):
    """A value the Makefile computes (BUILD: build/release, or build/release-cpu-only without
    nvcc; HAVE_NVCC: nvcc's path, or nothing), as make itself sees this machine."""
    result = subprocess.run(["make", "--no-print-directory", "-s", f"print-{name}"], cwd=ROOT,
                            capture_output=True, text=True)
    return result.stdout.strip() if result.returncode == 0 else ""


def grade_rows(number, binary, build_failed, cuda_without_nvcc):
    rows, failing = [], set()
    for name, region in REGIONS[number].items():
        if name in cuda_without_nvcc:
            rows.append((name, NOT_GRADED, "a CUDA kernel: it needs nvcc and a GPU, and this "
                         "machine has no nvcc"))
            continue
        if build_failed:
            rows.append((name, "FAIL", "the step does not build (make step" + number + ")"))
            continue
        verdict, detail = run_checks(binary, region.checks)
        if verdict == "FAIL":
            failing.add(name)
            waiting = [need for need in region.needs if need in failing]
            if waiting:
                detail += f"; they call {', '.join(waiting)} first"
        rows.append((name, verdict, detail))
    return rows


def grade():
    """Builds the student's checks and runs each stub's own ones: the table and the score.
    A stub whose checks cannot run here (a CUDA kernel without nvcc or a GPU) is not graded:
    it counts neither as passed nor as failed."""
    readme = ROOT / "ASSIGNMENT.md"
    heading = re.match(r"# Assignment: step (\d\d)\n", readme.read_text()) if readme.exists() \
        else None
    if not heading:
        sys.exit("error: `make grade` runs in a student tree (make assignment STEP=NN OUT=DIR)")
    number = heading.group(1)
    build_dir = make_value("BUILD") or "build/release"
    binary = ROOT / build_dir / f"test_step{number}"
    build = subprocess.run(["make", "--no-print-directory", str(binary.relative_to(ROOT))],
                           cwd=ROOT, capture_output=True, text=True)
    # Without nvcc the .cu files are not built at all (no_cuda.cpp stands in for them). Which
    # function is in which file: ASSIGNMENT.md's table (write_readme).
    files = re.findall(r"^\| `[^`]*/([^`/]+)` \| `(\w+)` \|", readme.read_text(), re.M)
    cuda_without_nvcc = set() if make_value("HAVE_NVCC") else \
        {name for file, name in files if file.endswith(".cu")}
    rows = grade_rows(number, binary, build.returncode != 0, cuda_without_nvcc)
    width = max(len(name) for name, _, _ in rows)
    print(f"step {number} assignment\n")
    print(f"{'function':<{width}}  {'result':<10}  checks")
    for name, verdict, detail in rows:
        print(f"{name:<{width}}  {verdict:<10}  {detail}")
    passed = sum(verdict == "pass" for _, verdict, _ in rows)
    graded = sum(verdict != NOT_GRADED for _, verdict, _ in rows)
    if graded == 0:
        print(f"\nscore: none of the {len(rows)} functions could be graded here: their checks "
              "need a GPU (and nvcc to build them); grade on a machine that has both")
    else:
        note = f" ({len(rows) - graded} of {len(rows)} not graded here: they need a GPU)" \
            if graded < len(rows) else ""
        print(f"\nscore: {passed}/{graded}{note}")
    if build.returncode != 0:
        print("\n" + build.stdout[-3000:] + build.stderr[-3000:])


def main():
    command = sys.argv[1] if len(sys.argv) > 1 else ""
    if command == "write" and len(sys.argv) == 4 and all(sys.argv[2:]):
        # The tree is named as the command line named it, not by a path of this machine.
        write_tree(sys.argv[2].zfill(2), Path(sys.argv[3]).resolve(), sys.argv[3])
    elif command == "grade":
        grade()
    elif command == "checks" and len(sys.argv) == 3:
        number = sys.argv[2].zfill(2)
        table = REGIONS.get(number, {})
        for name, file in regions_of_step(step_dir(ROOT, number), number).items():
            # Regions with the very same checks (step03's dequantization routines share one,
            # which stops at the first stub it meets) and the ones it needs may be named instead.
            same = [other for other in table if table[other].checks == table[name].checks]
            named = "|".join(dict.fromkeys(same + [name] + list(table[name].needs)))
            print(file, name, doctest_filter(table[name].checks), named, sep="\t")
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
