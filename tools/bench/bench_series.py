#!/usr/bin/env python3
"""The speed of every generating step side by side with Hugging Face transformers, on
Qwen2.5-shaped models: one markdown table per model, printed and written to a file (`make bench`).

    python3 tools/bench/bench_series.py --size 0.5b --size 1.5b --size 7b      random-weight Q4_K_M files
    python3 tools/bench/bench_series.py --model models/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf
    python3 tools/bench/bench_series.py --size 0.5b --device cpu               a CPU-only table

For each model it runs every generating step, ./step05 (the CPU) to the last one (--device cuda, or
cpu), on the same prompt (--prompt-file, 512 tokens: tools/bench/bench_prompt.txt), greedy, then
tools/bench/bench_transformers.py (generate() in bf16 and fp32 on the same device) and, given
--llama-bench, llama.cpp's own benchmark on the same file (pp512, and tg128 after 512 tokens, with
flash attention and every layer on the GPU). --engines picks some of them. Each row gives:
prompt tokens/s; how many tokens were generated and their tokens/s and ms/token; the weight bytes
one token reads over its time (GB/s); that as a share of a copy's bandwidth (one buffer to another,
on the same device, measured in the same run); and the roofline: tokens/s if a token cost only the
reading of its weights at the copy's bandwidth.

Weight bytes per token: what the engine reads for one token, every weight except the embedding
table, of which it reads one row, and the LM head (the embedding table itself when tied). The GPU
steps hold F16 copies of the matrices and print their bytes; the CPU reads the file's quantized
blocks, so a CPU row counts the file's bytes; transformers counts its parameters in the dtype it
runs. transformers is given the prompt's ids from the GGUF's own tokenizer (./step04), as the steps
encode it.

step05 and step06 have no KV cache: each generated token re-runs the whole sequence (512 and more
positions), so they generate only a few tokens (--step05-new-tokens, --step06-new-tokens);
--new-tokens-of STEP=N sets any step's count, e.g. fewer for a slow step at 7B.

--size writes models/qwen2.5-SIZE-random-q4_k_m.gguf with tools/fixtures/make_tiny_model.py when it is
missing (that needs gguf-py and the Qwen vocabulary, --vocab). Everything else needs only the
standard library: the GGUF header is read here, torch is imported in a child process to measure the
copies (rows without a copy figure when torch is missing), and a transformers failure is a row.
Every child process has a time limit (--timeout, and --budget for the whole run); an engine that
fails, times out or is skipped (--skip) is a row that says why. Rows are written to the file as they
finish, so a run cut short keeps what it measured; --append adds to the file, one call per size.

Once the tables are written it draws their staircase, series_staircase.svg beside the file (in
build/bench/ by default): a panel per model, each step's prompt and generated tokens/s, its
roofline, llama.cpp's two speeds as lines; the picture of docs/figures/series_staircase.svg, drawn
from this run's table alone. It is `tools/figures/plots.py --source FILE series_staircase`, run as a child
with this Python, which needs matplotlib for it (`make setup` installs it); without matplotlib the
run says so and the tables stand alone. --no-figure leaves the picture out.
"""

import argparse
import datetime
import json
import os
import re
import shlex
import signal
import struct
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
# The steps that generate text: step05 (the first) to the last one there is.
STEPS = sorted(p.name[:6] for p in REPO.glob("step[0-9][0-9]_*") if int(p.name[4:6]) >= 5)
# From step10 on a step also runs with --no-graph: the same kernels, launched one by one; and
# with --no-pdl: the same graph, each kernel starting only once the one before it has finished
# (asked for by name, not run by default).
NO_GRAPH = [f"{step}-no-graph" for step in STEPS if step >= "step10"]
NO_PDL = [f"{step}-no-pdl" for step in STEPS if step >= "step10"]
VARIANTS = NO_GRAPH + NO_PDL  # a step run with a flag
ENGINES = STEPS + VARIANTS + ["transformers", "llama.cpp"]
SIZES = ["0.5b", "1.5b", "7b"]

# ----------------------------------------------------------------------------------------------
# The GGUF header, read with the standard library: tensor names, shapes and types, a few keys.

# ggml type id -> (name, values per block, bytes per block), for the types the engine reads.
GGML_TYPES = {
    0: ("F32", 1, 4), 1: ("F16", 1, 2), 2: ("Q4_0", 32, 18), 3: ("Q4_1", 32, 20),
    6: ("Q5_0", 32, 22), 7: ("Q5_1", 32, 24), 8: ("Q8_0", 32, 34), 10: ("Q2_K", 256, 84),
    11: ("Q3_K", 256, 110), 12: ("Q4_K", 256, 144), 13: ("Q5_K", 256, 176), 14: ("Q6_K", 256, 210),
    20: ("IQ4_NL", 32, 18), 30: ("BF16", 1, 2),
}
# GGUF metadata value type -> struct format of a scalar; 8 is a string, 9 an array.
SCALAR_FORMATS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?",
                  10: "<Q", 11: "<q", 12: "<d"}
GGUF_STRING, GGUF_ARRAY = 8, 9


class GgufSummary:
    """metadata: scalar and string keys (arrays only as their length); tensors: name -> (type
    name, element count, bytes)."""

    def __init__(self, path):
        self.path = Path(path)
        with open(path, "rb") as f:
            def unpack(fmt):
                return struct.unpack(fmt, f.read(struct.calcsize(fmt)))[0]

            def string():
                return f.read(unpack("<Q")).decode("utf-8", errors="replace")

            def value(value_type):
                if value_type == GGUF_STRING:
                    return string()
                if value_type == GGUF_ARRAY:
                    item_type, count = unpack("<I"), unpack("<Q")
                    if item_type in SCALAR_FORMATS:  # fixed size: skip the items in one seek
                        f.seek(count * struct.calcsize(SCALAR_FORMATS[item_type]), os.SEEK_CUR)
                    else:
                        for _ in range(count):
                            value(item_type)
                    return ("array", count)
                return unpack(SCALAR_FORMATS[value_type])

            if f.read(4) != b"GGUF":
                raise ValueError(f"{path} is not a GGUF file")
            unpack("<I")  # version
            n_tensors, n_kv = unpack("<Q"), unpack("<Q")
            self.metadata = {}
            for _ in range(n_kv):
                key = string()
                self.metadata[key] = value(unpack("<I"))
            self.tensors = {}
            for _ in range(n_tensors):
                name = string()
                dims = [unpack("<Q") for _ in range(unpack("<I"))]
                type_id = unpack("<I")
                unpack("<Q")  # offset
                type_name, block_values, block_bytes = GGML_TYPES.get(type_id, (f"type{type_id}", 1, 0))
                n = 1
                for d in dims:
                    n *= d
                self.tensors[name] = (type_name, n, n // block_values * block_bytes)

    def key(self, name, default=None):
        return self.metadata.get(f"{self.metadata.get('general.architecture')}.{name}", default)

    @property
    def tied(self):
        return "output.weight" not in self.tensors

    def weight_bytes_per_token(self):
        """The file's bytes that one token reads: all but token_embd, plus it when it is the LM head."""
        total = sum(nbytes for _, _, nbytes in self.tensors.values())
        return total - (0 if self.tied else self.tensors["token_embd.weight"][2])

    def n_params(self):
        return sum(n for _, n, _ in self.tensors.values())

    def type_counts(self):
        counts = {}
        for type_name, _, _ in self.tensors.values():
            counts[type_name] = counts.get(type_name, 0) + 1
        return ", ".join(f"{name} x{n}" for name, n in sorted(counts.items(), key=lambda kv: -kv[1]))

    def describe(self):
        vocab = self.tensors["token_embd.weight"][1] // self.key("embedding_length", 1)
        return (f"{self.metadata.get('general.name', '?')}: {self.key('block_count')} layers, "
                f"d_model {self.key('embedding_length')}, d_ff {self.key('feed_forward_length')}, "
                f"{self.key('attention.head_count')} heads ({self.key('attention.head_count_kv')} KV), "
                f"vocab {vocab}, LM head {'tied' if self.tied else 'untied (output.weight)'}, "
                f"{self.n_params() / 1e6:,.0f} M weights; {self.path.stat().st_size / 1e9:.2f} GB, "
                f"{len(self.tensors)} tensors: {self.type_counts()}")


# ----------------------------------------------------------------------------------------------
# Child processes, each with a time limit.


class Clock:
    """The run's --budget: how long a child may still take."""

    def __init__(self, budget_s):
        self.deadline = time.monotonic() + budget_s if budget_s else None

    def limit(self, timeout_s):
        """min(timeout_s, what is left of the budget); 0 when the budget is spent."""
        if self.deadline is None:
            return timeout_s
        return max(0.0, min(timeout_s, self.deadline - time.monotonic()))


class Outcome:
    def __init__(self, rc, stdout, stderr, seconds, timed_out):
        self.rc, self.stdout, self.stderr = rc, stdout, stderr
        self.seconds, self.timed_out = seconds, timed_out

    def why_failed(self):
        if self.timed_out:
            return f"timed out after {self.seconds:.0f} s"
        lines = [line for line in self.stderr.splitlines() if line.strip()]
        last = lines[-1].strip() if lines else "no message"
        return f"could not run: {last}" if self.rc is None else f"exit {self.rc}: {last}"


def run_child(cmd, timeout_s, log_path=None):
    """Runs cmd from the repository root; stdout and stderr as text, also when it times out
    (what it printed until then). log_path receives the command and both streams. The child
    leads a process group of its own, so that a timeout ends its children too (make_tiny_model's
    workers, make's compilers)."""
    start = time.monotonic()
    timed_out = False
    try:
        child = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                 start_new_session=True)
    except OSError as e:
        rc, out, err = None, b"", str(e).encode()
    else:
        try:
            out, err = child.communicate(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            os.killpg(child.pid, signal.SIGKILL)
            out, err = child.communicate()
            timed_out = True
        rc = None if timed_out else child.returncode
    outcome = Outcome(rc, out.decode("utf-8", "replace"), err.decode("utf-8", "replace"),
                      time.monotonic() - start, timed_out)
    if log_path:
        log_path.write_text(f"$ {shlex.join(str(c) for c in cmd)}\n# {outcome.seconds:.1f} s, "
                            f"{'timed out' if timed_out else f'exit {rc}'}\n"
                            f"--- stdout\n{outcome.stdout}\n--- stderr\n{outcome.stderr}\n",
                            encoding="utf-8")
    return outcome


# ----------------------------------------------------------------------------------------------
# The copy bandwidth and the machine.


def measure_copy(device):
    """Best-of bandwidth of copying one buffer into another on the device, counting the bytes
    read and written (2 x size), as a memory-bound kernel counts them. Runs in a child process."""
    import torch
    n_bytes = (4 << 30) if device == "cuda" else (1 << 30)
    src = torch.ones(n_bytes, dtype=torch.uint8, device=device)
    dst = torch.empty_like(src)
    best = float("inf")
    for _ in range(10 if device == "cuda" else 5):
        if device == "cuda":
            torch.cuda.synchronize()
        start = time.perf_counter()
        dst.copy_(src)
        if device == "cuda":
            torch.cuda.synchronize()
        best = min(best, time.perf_counter() - start)
    name = torch.cuda.get_device_name() if device == "cuda" else f"{torch.get_num_threads()} torch threads"
    print(json.dumps(dict(device=device, name=name, gb_s=2 * n_bytes / best / 1e9, bytes=n_bytes)))


def copy_bandwidth(device, args, clock):
    """{"gb_s": ..., "name": ...} of measure_copy in a child process, or {"error": why}."""
    outcome = run_child([args.python, __file__, "--measure-copy", device], clock.limit(120))
    if outcome.rc != 0:
        return dict(error=outcome.why_failed())
    return json.loads(outcome.stdout.strip().splitlines()[-1])


def gpu_and_driver(clock):
    outcome = run_child(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
                        clock.limit(30))
    if outcome.rc != 0 or not outcome.stdout.strip():
        return None, None
    name, driver = outcome.stdout.strip().splitlines()[0].rsplit(",", 1)
    return name.strip(), driver.strip()


def cpu_name():
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown CPU"


# ----------------------------------------------------------------------------------------------
# Engines: a row each (two for transformers).

# The timing line the steps print last on stderr (step05 main.cpp), and the GPU part of it.
TIMING = re.compile(r"prompt: (\d+) tokens in ([\d.]+) ms \(([\d.]+) tokens/s\)"
                    r"(?: \| generated: (\d+) tokens, ([\d.]+) ms/token \(([\d.]+) tokens/s\))?")
GPU_BYTES = re.compile(r"\| [^|]*: ([\d.]+) GB of weights per token")


class Row:
    def __init__(self, engine, device, note=""):
        self.engine, self.device, self.notes = engine, device, [note] if note else []
        self.prompt_tokens = self.prompt_tok_s = self.generated = None
        self.gen_tok_s = self.ms_per_token = self.bytes_per_token = None

    def gb_s(self):
        if self.bytes_per_token is None or not self.ms_per_token:
            return None
        return self.bytes_per_token / (self.ms_per_token * 1e6)


def step_command(engine, model, args, n_new):
    step = engine[:6]
    cmd = [str(REPO / step), str(model), "-f", args.prompt_file, "-n", str(n_new)]
    if step != "step05":
        cmd += ["--device", args.device]
    if step >= "step07" and args.context:
        cmd += ["-c", str(args.context)]
    if step >= "step08":
        cmd += ["--temp", "0"]  # greedy, as the steps before the sampler
    if engine.endswith("-no-graph"):
        cmd.append("--no-graph")
    if engine.endswith("-no-pdl"):
        cmd.append("--no-pdl")
    return cmd


def significant_digits(text):
    return len(text.replace(".", "").lstrip("0"))


def per_second(tokens, ms_text, rate_text):
    """tokens/s from a printed time (ms) and rate (tokens/s), the more precise of the two."""
    if significant_digits(rate_text) >= significant_digits(ms_text):
        return float(rate_text)
    return 1000 * tokens / float(ms_text)


def run_step(engine, model, summary, args, clock, log_dir):
    step = engine[:6]
    n_new = {"step05": args.step05_new_tokens, "step06": args.step06_new_tokens}.get(step, args.new_tokens)
    n_new = args.new_tokens_of.get(engine, args.new_tokens_of.get(step, n_new))
    device = "cpu" if step == "step05" else args.device
    row = Row(engine, device)
    outcome = run_child(step_command(engine, model, args, n_new), clock.limit(args.timeout),
                        log_dir / f"{model.stem}.{engine}.log")
    timing = TIMING.search(outcome.stderr)
    if outcome.rc != 0 or not timing:
        row.notes.append(outcome.why_failed() if outcome.rc != 0 else "no timing line on stderr")
        return [row]
    # A time and its rate, each from whichever of the two the line prints with more significant
    # digits (a 0.03 ms prompt printed as 28794.3 tokens/s is not 33333 tokens/s).
    row.prompt_tokens = int(timing[1])
    row.prompt_tok_s = per_second(row.prompt_tokens, timing[2], timing[3])
    if timing[4]:
        row.generated = int(timing[4])
        row.gen_tok_s = per_second(1, timing[5], timing[6])
        row.ms_per_token = 1000 / row.gen_tok_s
    else:  # no pass after the prompt's: at most the token the prompt's pass chose
        row.generated = "<=1"
    if device == "cuda":
        gpu = GPU_BYTES.search(outcome.stderr)
        row.bytes_per_token = float(gpu[1]) * 1e9 if gpu else None
        weights = "the file's blocks on the GPU" if step >= "step11" else "16-bit weights on the GPU"
        row.notes.append(weights if gpu else "no GB of weights per token on stderr")
    else:
        row.bytes_per_token = summary.weight_bytes_per_token()
        row.notes.append("the file's weights")
    if step in ("step05", "step06"):
        row.notes.append("no KV cache")
    if row.generated != "<=1" and row.generated < n_new:
        row.notes.append(f"stopped at an end token after {row.generated}")
    row.notes.append(f"{outcome.seconds:.0f} s")
    return [row]


def run_transformers(model, summary, args, clock, log_dir):
    dtypes = args.hf_dtypes.split(",")
    random_init = summary.n_params() > args.hf_random_init_above
    cmd = [args.python, str(REPO / "tools" / "bench" / "bench_transformers.py"), str(model),
           "--device", args.device, "--prompt-file", args.prompt_file, "-n", str(args.new_tokens)]
    cmd += [flag for name in dtypes for flag in ("--dtype", name)]
    if random_init:
        cmd.append("--random-init")
    outcome = run_child(cmd, clock.limit(args.timeout * len(dtypes)), log_dir / f"{model.stem}.transformers.log")
    results = {}
    for line in outcome.stdout.splitlines():
        if line.startswith("{"):
            result = json.loads(line)
            results[result["engine"]] = result
    rows = []
    for name in dtypes:
        row = Row(f"transformers {name}", args.device)
        result = results.get(row.engine)
        if result is None:
            row.notes.append(outcome.why_failed() if outcome.rc != 0 else "no result line")
        else:
            row.prompt_tokens, row.prompt_tok_s = result["prompt_tokens"], result["prompt_tok_s"]
            row.generated, row.gen_tok_s = result["gen_tokens"], result["gen_tok_s"]
            row.ms_per_token, row.bytes_per_token = result["ms_per_token"], result["weight_bytes_per_token"]
            row.notes.append(f"{result['weights']} weights" + (
                f" (over {args.hf_random_init_above / 1e9:g} B: gguf-py would take minutes)" if random_init else ""))
            row.notes.append(f"{result['attn']} attention, loaded in {result['load_s']:.0f} s")
        rows.append(row)
    rows[-1].notes.append(f"{outcome.seconds:.0f} s for all")
    return rows


def run_llama_bench(model, summary, args, clock, log_dir):
    """llama.cpp's llama-bench on the same file: a prompt of the steps' length at depth 0
    (pp512) and the generated tokens' after as many positions (tg128 at depth 512), each the
    mean of -r runs."""
    depth = args.prompt_tokens
    cmd = [args.llama_bench, "-m", str(model), "-ngl", "99", "-fa", "on", "-p", str(depth), "-n",
           str(args.new_tokens), "-d", f"0,{depth}", "-r", "3", "-o", "json"]
    outcome = run_child(cmd, clock.limit(args.timeout), log_dir / f"{model.stem}.llama-bench.log")
    row = Row("llama.cpp", args.device)
    try:
        results = json.loads(outcome.stdout[outcome.stdout.index("["):])
    except ValueError:
        row.notes.append(outcome.why_failed() if outcome.rc != 0 else "no JSON from llama-bench")
        return [row]
    by_test = {(r["n_prompt"], r["n_gen"], r["n_depth"]): r for r in results}
    prompt = by_test.get((depth, 0, 0))
    generate = by_test.get((0, args.new_tokens, depth))
    if prompt:
        row.prompt_tokens, row.prompt_tok_s = depth, prompt["avg_ts"]
    if generate:
        row.generated, row.gen_tok_s = args.new_tokens, generate["avg_ts"]
        row.ms_per_token = 1000 / generate["avg_ts"]
        row.bytes_per_token = summary.weight_bytes_per_token()
    commit = (prompt or generate or {}).get("build_commit", "?")
    row.notes.append(f"llama-bench {commit}, the file's weights, flash attention, CUDA graphs; "
                     f"gen after {depth} positions; mean of 3; {outcome.seconds:.0f} s")
    return [row]


# ----------------------------------------------------------------------------------------------
# The table.

COLUMNS = ["engine", "device", "prompt tok/s", "generated", "gen tok/s", "ms/token", "GB/s",
           "% of copy", "roofline tok/s", "notes"]


def number(value, digits):
    return "" if value is None else f"{value:.{digits}f}"


def row_cells(row, copies):
    copy_gb_s = copies.get(row.device, {}).get("gb_s")
    gb_s = row.gb_s()
    share = f"{100 * gb_s / copy_gb_s:.1f}%" if gb_s and copy_gb_s else ""
    roofline = copy_gb_s * 1e9 / row.bytes_per_token if copy_gb_s and row.bytes_per_token else None
    prompt = number(row.prompt_tok_s, 1)
    if prompt and row.prompt_tokens != 512:
        prompt += f" ({row.prompt_tokens})"
    return [row.engine, row.device.upper() if row.device == "cpu" else "GPU", prompt,
            "" if row.generated is None else str(row.generated), number(row.gen_tok_s, 2),
            number(row.ms_per_token, 1), number(gb_s, 1), share, number(roofline, 1),
            "; ".join(row.notes)]


class Report:
    """Markdown to stdout and to the file, a line at a time."""

    def __init__(self, path, append):
        path.parent.mkdir(parents=True, exist_ok=True)
        self.file = open(path, "a" if append else "w", encoding="utf-8")

    def line(self, text=""):
        print(text, flush=True)
        self.file.write(text + "\n")
        self.file.flush()

    def table_row(self, cells):
        self.line("| " + " | ".join(cell.replace("|", "/") for cell in cells) + " |")


# ----------------------------------------------------------------------------------------------


def parse_skips(entries):
    """--skip ENGINE[@MODEL][:REASON] -> [(engine, model or None, reason)]."""
    skips = []
    for entry in entries:
        target, _, reason = entry.partition(":")
        engine, _, model = target.partition("@")
        if engine not in ENGINES:
            sys.exit(f"bench_series: --skip {entry}: the engine is one of {', '.join(ENGINES)}")
        skips.append((engine, model or None, reason or "skipped (--skip)"))
    return skips


def skip_reason(skips, engine, size, model):
    for skipped, target, reason in skips:
        if skipped == engine and target in (None, size, str(model), model.name):
            return reason
    return None


def ensure_model(size, args, clock, notes):
    """The random Q4_K_M file of a preset, written when missing. It is written under a .part name
    and renamed once checked, so a run cut short never leaves a file that passes for a model."""
    path = REPO / "models" / f"qwen2.5-{size}-random-q4_k_m.gguf"
    if path.exists():
        return path
    part = path.with_name(path.name + ".part")
    cmd = [args.python, str(REPO / "tools" / "fixtures" / "make_tiny_model.py"), "--preset", size, "--types", "q4_k_m",
           "-o", str(part)]
    if args.vocab:
        cmd += ["--vocab", args.vocab]
    print(f"writing {path.relative_to(REPO)}", file=sys.stderr, flush=True)
    outcome = run_child(cmd, clock.limit(600))
    if outcome.rc != 0:
        part.unlink(missing_ok=True)
        raise RuntimeError(f"make_tiny_model.py --preset {size}: {outcome.why_failed()}")
    part.rename(path)
    notes.append(f"written by tools/fixtures/make_tiny_model.py in {outcome.seconds:.0f} s this run")
    return path


def build(targets, clock):
    """{target: why it failed} for the make targets that do not build."""
    failed = {}
    for target in targets:
        outcome = run_child(["make", "-s", f"-j{os.cpu_count() or 1}", target], clock.limit(900))
        if outcome.rc != 0:
            failed[target] = "build failed: " + outcome.why_failed()
    return failed


def shown(path):
    """path relative to the repository when it lies inside it."""
    path = Path(path).resolve()
    return path.relative_to(REPO) if path.is_relative_to(REPO) else path


def bench_model(model, size, args, clock, copies, machine, build_failures, skips, report):
    notes = []
    try:
        if model is None:
            model = ensure_model(size, args, clock, notes)
        summary = GgufSummary(model)
    except (RuntimeError, OSError, ValueError, KeyError, struct.error) as e:
        report.line(f"\n## {size or model}\n\nno table: {e}\n")
        return
    report.line(f"\n## {shown(model)}\n")
    report.line(f"- {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC; {machine}")
    report.line(f"- model: {summary.describe()}" + (f"; {notes[0]}" if notes else ""))
    report.line(f"- weight bytes per token in the file's types: {summary.weight_bytes_per_token() / 1e9:.3f} GB; "
                f"prompt: {args.prompt_shown}; greedy; GB/s = weight bytes per token / (ms/token); "
                f"roofline = copy GB/s / weight bytes per token")
    report.line()
    report.table_row(COLUMNS)
    report.table_row(["---"] * len(COLUMNS))
    for engine in args.engines:
        device = "cpu" if engine == "step05" else args.device
        reason = skip_reason(skips, engine, size, model) or build_failures.get(engine[:6] if engine in VARIANTS else engine)
        if reason is None and clock.limit(args.timeout) < 10:
            reason = f"not run: the --budget of {args.budget:.0f} s is spent"
        if reason is None and engine == "transformers" and "step04" in build_failures:
            reason = "step04 (the prompt's ids) " + build_failures["step04"]
        if reason:
            rows = [Row(engine if engine != "transformers" else f"transformers {d}", device, reason)
                    for d in (args.hf_dtypes.split(",") if engine == "transformers" else [None])]
        elif engine in STEPS or engine in VARIANTS:
            rows = run_step(engine, model, summary, args, clock, args.log_dir)
        elif engine == "llama.cpp":
            rows = run_llama_bench(model, summary, args, clock, args.log_dir)
        else:
            rows = run_transformers(model, summary, args, clock, args.log_dir)
        for row in rows:
            report.table_row(row_cells(row, copies))


def draw_staircase(table):
    """The staircase picture of the tables in `table` (every table of the file, so an --append
    run's earlier sizes too): tools/figures/plots.py draws series_staircase from it alone, into the
    file's folder. A picture that cannot be drawn (no matplotlib in this Python) is a line that
    says why; the tables are written by then."""
    cmd = [sys.executable, str(REPO / "tools" / "figures" / "plots.py"), "--out", str(table.parent),
           "--source", str(table), "series_staircase"]
    outcome = run_child(cmd, 120)
    if outcome.rc == 0:
        print(f"its staircase: {shown(table.parent / 'series_staircase.svg')}", file=sys.stderr)
    else:
        print(f"no staircase picture: tools/figures/plots.py {outcome.why_failed()} (it needs matplotlib: "
              f"make setup; or --no-figure)", file=sys.stderr)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="\n\n".join(__doc__.split("\n\n")[1:]))
    ap.add_argument("--size", action="append", choices=SIZES, default=[],
                    help="a random-weight Q4_K_M model of this shape (repeatable)")
    ap.add_argument("--model", action="append", default=[], help="a GGUF file (repeatable)")
    ap.add_argument("--device", default="cuda", choices=["cuda", "cpu"],
                    help="where steps 06-12 and transformers run (step05 runs on the CPU)")
    ap.add_argument("--output", default=str(REPO / "build" / "bench" / "series.md"),
                    help="the markdown file (default build/bench/series.md); the children's output "
                         "goes to logs/ beside it")
    ap.add_argument("--append", action="store_true", help="add to --output instead of replacing it")
    ap.add_argument("--no-figure", action="store_true",
                    help="no staircase picture (series_staircase.svg beside --output) of the tables")
    ap.add_argument("--prompt-file", default="tools/bench/bench_prompt.txt",
                    help="the prompt, its exact bytes (default tools/bench/bench_prompt.txt: 512 tokens)")
    ap.add_argument("--prompt-repeat", type=int, default=1, metavar="R",
                    help="the prompt file R times over, e.g. 8 for a 4096-token prompt (default 1)")
    ap.add_argument("--prompt-tokens", type=int, default=None, metavar="N",
                    help="llama-bench's prompt and depth (default 512 x R, what the steps' "
                         "prompt is about)")
    ap.add_argument("-c", "--context", type=int, default=0,
                    help="the steps' -c (default: theirs, 4096 positions)")
    ap.add_argument("-n", "--new-tokens", type=int, default=128, help="tokens steps 07-12 and transformers generate")
    ap.add_argument("--step05-new-tokens", type=int, default=2,
                    help="tokens step05 generates, each a pass over the whole sequence (default 2)")
    ap.add_argument("--step06-new-tokens", type=int, default=4,
                    help="tokens step06 generates, each a pass over the whole sequence (default 4)")
    ap.add_argument("--new-tokens-of", action="append", default=[], metavar="STEP=N",
                    help="tokens STEP generates (repeatable), e.g. step08=8 where it is slow")
    ap.add_argument("--engines", default=None,
                    help=f"the rows, comma-separated, of {', '.join(ENGINES)} (default: every step "
                         "and transformers, and llama.cpp with --llama-bench)")
    ap.add_argument("--llama-bench", default=None, metavar="PATH",
                    help="llama.cpp's llama-bench, for a llama.cpp row on the same file")
    ap.add_argument("--skip", action="append", default=[], metavar="ENGINE[@SIZE][:REASON]",
                    help=f"leave a row out, saying why; ENGINE is one of {', '.join(ENGINES)}; "
                         "SIZE a --size or a model file (default: every model)")
    ap.add_argument("--timeout", type=float, default=300, help="seconds each engine may take (default 300)")
    ap.add_argument("--budget", type=float, default=0,
                    help="seconds the whole run may take; engines left when it is spent are rows "
                         "that say so (default: no limit)")
    ap.add_argument("--hf-dtypes", default="bf16,fp32", help="transformers dtypes (default bf16,fp32)")
    ap.add_argument("--hf-random-init-above", type=float, default=3e9, metavar="N_WEIGHTS",
                    help="transformers builds a model with more weights than this with random init "
                         "instead of the file's (default 3e9: the 7B)")
    ap.add_argument("--vocab", default=None, help="the Qwen vocabulary for make_tiny_model.py "
                    "(default: its own, $QWEN_TOKENIZER_DIR/tokenizer.json)")
    ap.add_argument("--python", default=sys.executable,
                    help="the Python for make_tiny_model.py, bench_transformers.py and the copy "
                         "(torch, transformers, gguf-py); default: this one")
    ap.add_argument("--measure-copy", choices=["cuda", "cpu"], help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.measure_copy:
        measure_copy(args.measure_copy)
        return
    if not args.size and not args.model:
        ap.error("give --size and/or --model")
    try:
        args.new_tokens_of = {step: int(n) for step, n in (e.split("=") for e in args.new_tokens_of)}
    except ValueError:
        ap.error("--new-tokens-of takes STEP=N, e.g. step08=8")
    counts = [args.new_tokens, args.step05_new_tokens, args.step06_new_tokens, *args.new_tokens_of.values()]
    if min(counts) < 2:
        ap.error("every -n must be at least 2: the first token comes from the prompt's pass")
    # --no-graph changes nothing on the CPU: those rows only on the GPU.
    no_graph = NO_GRAPH if args.device == "cuda" else []
    default_engines = STEPS + no_graph + ["transformers"] + (["llama.cpp"] if args.llama_bench else [])
    args.engines = args.engines.split(",") if args.engines else default_engines
    unknown = [e for e in args.engines if e not in ENGINES]
    if unknown or ("llama.cpp" in args.engines and not args.llama_bench):
        ap.error(f"--engines takes {', '.join(ENGINES)} (llama.cpp needs --llama-bench)")
    args.prompt_file = str(Path(args.prompt_file).resolve())
    args.prompt_shown = str(shown(args.prompt_file))
    output = Path(args.output)
    args.log_dir = output.parent / "logs"
    args.log_dir.mkdir(parents=True, exist_ok=True)
    if args.prompt_repeat > 1:  # the longer prompt, written beside the logs
        text = Path(args.prompt_file).read_bytes()
        longer = args.log_dir / f"prompt-x{args.prompt_repeat}.txt"
        longer.write_bytes(text * args.prompt_repeat)
        args.prompt_file = str(longer)
        args.prompt_shown += f" {args.prompt_repeat} times over"
    if args.prompt_tokens is None:
        args.prompt_tokens = 512 * args.prompt_repeat
    skips = parse_skips(args.skip)
    clock = Clock(args.budget)

    copies = {"cpu": copy_bandwidth("cpu", args, clock)}
    if args.device == "cuda":
        copies["cuda"] = copy_bandwidth("cuda", args, clock)
    gpu, driver = gpu_and_driver(clock) if args.device == "cuda" else (None, None)

    def copy_text(device):
        copy = copies[device]
        return f"copy {copy['gb_s']:.0f} GB/s" if "gb_s" in copy else f"no copy figure ({copy['error']})"

    machine = f"CPU {cpu_name()}, {os.cpu_count()} cores, {copy_text('cpu')}"
    if args.device == "cuda":
        machine = f"GPU {gpu or copies['cuda'].get('name', '?')} (driver {driver or '?'}), {copy_text('cuda')}; " + machine

    # step04 encodes the prompt for transformers (bench_transformers.py).
    build_failures = build(["step04"] + sorted({e[:6] for e in args.engines if e[:4] == "step"}), clock)

    report = Report(output, args.append)
    for size in args.size:
        bench_model(None, size, args, clock, copies, machine, build_failures, skips, report)
    for model in args.model:
        bench_model(Path(model).resolve(), None, args, clock, copies, machine, build_failures, skips, report)
    print(f"\nwritten to {output} (logs in {args.log_dir})", file=sys.stderr)
    if not args.no_figure:
        draw_staircase(output)


if __name__ == "__main__":
    main()
