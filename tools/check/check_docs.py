#!/usr/bin/env python3
"""Checks the articles in docs/en and docs/zh against the code: `make check-docs`, part of `make test`.

Three kinds of check, each item counted once in the summary line
"docs: N passed, N failed, N skipped":

1. Code references. An article names code as one inline code span `FILE: NAME`, for example
   `dequantize.cpp: dequantize_q8_0` or `gguf_reader.cpp: GgufReader::read_bytes`. A bare FILE is
   a file of the article's own step directory (docs/*/step03.md -> step03_*/; on another page, of the
   step that the latest heading "Step N" or "第 N 步" names); a FILE with a slash is a path from the
   repository root (`common/error.h: fail`). The check: the file exists and
   every `::`-separated part of NAME occurs in it as a whole identifier. References by line number
   (`file.cpp:57`, "(line 57)", "（第 57 行）") are failures: they go stale whenever the code moves.

2. Quoted output. A fenced block whose first line starts with "$ " is a terminal transcript: each
   "$ " line is a command (a line ending in "\\" continues it), the lines up to the next "$ " line
   are what it prints (stdout and stderr together, as a terminal shows them: the command runs on a
   pseudo-terminal, and a line redrawn with \r shows its last version). The commands run with bash, in order, in a
   scratch copy of the repository root (links to its files; ../shared is linked too), and the
   output must match line for line (trailing spaces ignored), except that
     - a line that starts with "..." stands for any number of lines (for example the rest of a long
       diff); the rest of that line is a comment for the reader; a line that ends in "..." after
       some text matches any line that starts with that text (a long line cut short);
     - in a line that reports a time or a rate (a number followed by ms, s, µs, tokens/s, MB/s,
       GB/s, ...), every number matches any number.
   A block is skipped, with the reason printed, when an HTML comment on the line before its fence
   says so: <!-- check-docs: skip: REASON --> (timings, GPU runs, output of a whole test run), when
   it uses a file under models/ or ../shared/ that is not here (the real model, the real
   vocabulary, a generated full-size model), or when it runs a CUDA step and nvcc is missing.

3. Links. Every relative markdown link [text](target) and image ![alt](target) points to a file
   that exists.

The step programs a block runs (./step01 ...) are built with make before the first block that runs
them (a skipped block builds nothing). Standard library only.
Usage: tools/check/check_docs.py [ARTICLE.md ...]   (default: README.md, step*.md and solutions.md
of docs/en and docs/zh)
"""
import glob
import os
import pty
import re
import select
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
CODE_EXTENSIONS = r"(?:cpp|h|cuh|cu|inc|py|sh)"
REFERENCE = re.compile(r"^((?:[\w.-]+/)*[\w.-]+\.%s): ([A-Za-z_~][\w~]*(?:::[A-Za-z_~][\w~]*)*)$" % CODE_EXTENSIONS)
LINE_REFERENCE = re.compile(r"^(?:[\w.-]+/)*[\w.-]+\.%s:\d+" % CODE_EXTENSIONS)
BARE_LINE = re.compile(r"\((?:line|lines) \d+[^)]*\)|（第 ?\d+(?:[–-]\d+)? ?行）")
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")  # a link, or an image (a leading "!")
SKIP_MARK = re.compile(r"<!--\s*check-docs:\s*skip:\s*(.*?)\s*-->")
TIMING = re.compile(r"\d\s*(?:ms|s|µs|us|ns|tokens/s|tok/s|MB/s|GB/s|GiB/s|MiB/s)\b")
NUMBER = re.compile(r"\d+(?:\.\d+)?")
COMMAND_TIMEOUT_S = 60


class Results:
    def __init__(self):
        self.passed = self.failed = self.skipped = 0

    def ok(self):
        self.passed += 1

    def fail(self, where, message):
        self.failed += 1
        print(f"FAILED {where}: {message}")

    def skip(self, where, reason):
        self.skipped += 1
        print(f"SKIPPED {where}: {reason}")


def step_directory(article):
    match = re.match(r"step(\d\d)\.md$", os.path.basename(article))
    if not match:
        return None
    found = glob.glob(os.path.join(ROOT, f"step{match.group(1)}_*"))
    return found[0] if found else None


def split_blocks(lines):
    """Yields ('text', first_line_number, lines) and ('code', fence_line_number, lines, info)."""
    text, text_start = [], 1
    i = 0
    while i < len(lines):
        fence = re.match(r"^\s*(```+|~~~+)(.*)$", lines[i])
        if fence:
            if text:
                yield ("text", text_start, text)
            marker, start = fence.group(1), i + 1
            body = []
            i += 1
            while i < len(lines) and not lines[i].strip().startswith(marker):
                body.append(lines[i])
                i += 1
            yield ("code", start, body, fence.group(2).strip())
            i += 1
            text, text_start = [], i + 1
            continue
        text.append(lines[i])
        i += 1
    if text:
        yield ("text", text_start, text)


def check_text(article, start, lines, context, results):
    where_of = lambda offset: f"{os.path.relpath(article, ROOT)}:{start + offset}"
    joined = "\n".join(lines)
    line_of = lambda pos: joined.count("\n", 0, pos)
    # Inline code spans may wrap across lines inside a paragraph, never across a blank line.
    for paragraph in re.finditer(r"(?:[^\n]+\n?)+", joined):
        # Outside a step's own article, a heading "Step N" / "第 N 步" sets the step for what follows.
        heading = re.match(r"#{1,6} .*?(?:Step |第 ?)(\d+)", paragraph.group(0))
        if heading and not context["own_step"]:
            found = glob.glob(os.path.join(ROOT, f"step{int(heading.group(1)):02d}_*"))
            context["step_dir"] = found[0] if found else None
        step_dir = context["step_dir"]
        for span in re.finditer(r"(?<!`)`([^`]+)`(?!`)", paragraph.group(0)):
            content = re.sub(r"\s+", " ", span.group(1)).strip()  # as markdown renders a wrapped span
            where = where_of(line_of(paragraph.start() + span.start()))
            if LINE_REFERENCE.match(content):
                results.fail(where, f"`{content}` refers to a line number; name the function instead (`FILE: NAME`)")
                continue
            reference = REFERENCE.match(content)
            if reference:
                check_reference(where, reference.group(1), reference.group(2), step_dir, results)
    for match in BARE_LINE.finditer(joined):
        results.fail(where_of(line_of(match.start())), f"'{match.group(0)}' refers to a line number")
    for match in LINK.finditer(joined):
        target = match.group(1)
        if re.match(r"^[a-z]+:", target) or target.startswith("#"):
            continue
        path = os.path.normpath(os.path.join(os.path.dirname(article), target.split("#")[0]))
        if os.path.exists(path):
            results.ok()
        else:
            kind = "image" if match.group(0).startswith("!") else "link"
            results.fail(where_of(line_of(match.start())), f"{kind} target {target} does not exist")


def check_reference(where, file, name, step_dir, results):
    if "/" in file:
        path = os.path.join(ROOT, file)
    elif step_dir:
        path = os.path.join(step_dir, file)
    else:
        results.fail(where, f"`{file}: {name}`: outside a step's article the file needs its directory")
        return
    if not os.path.isfile(path):
        results.fail(where, f"`{file}: {name}`: there is no {os.path.relpath(path, ROOT)}")
        return
    source = open(path, encoding="utf-8", errors="replace").read()
    missing = [part for part in name.split("::")
               if not re.search(r"(?<![\w])%s(?![\w])" % re.escape(part), source)]
    if missing:
        results.fail(where, f"`{file}: {name}`: {', '.join(missing)} does not occur in {os.path.relpath(path, ROOT)}")
    else:
        results.ok()


def parse_transcript(body):
    """[(command, [expected lines])] from a block whose first line starts with '$ '."""
    steps = []
    i = 0
    while i < len(body):
        line = body[i]
        if line.startswith("$ "):
            command = line[2:]
            while command.endswith("\\") and i + 1 < len(body):
                i += 1
                command = command + "\n" + body[i]
            steps.append((command, []))
        elif steps:
            steps[-1][1].append(line)
        i += 1
    return steps


def expected_pattern(lines):
    parts = []
    for line in lines:
        line = line.rstrip()
        if line.strip().startswith(("...", "…")):
            parts.append(r"(?:[^\n]*\n)*?")
            continue
        if line.endswith(("...", "…")):
            parts.append(re.escape(line.rstrip(".…")) + r"[^\n]*\n")
            continue
        if TIMING.search(line):
            pieces = NUMBER.split(line)
            escaped = r"\d+(?:\.\d+)?".join(re.escape(piece) for piece in pieces)
        else:
            escaped = re.escape(line)
        parts.append(escaped + r"[ \t]*\n")
    return re.compile("".join(parts) + r"\Z")


def needs(command, nvcc):
    """The reason a command cannot run here, or None."""
    for token in re.findall(r"(?:\.\./shared|models)/[\w./-]+", command):
        if not os.path.exists(os.path.join(ROOT, token)):
            return f"needs {token}, which is not here"
    for number in re.findall(r"(?:^|[\s;&|(])\./step(\d\d)\b", command):
        step = glob.glob(os.path.join(ROOT, f"step{number}_*"))
        if step and glob.glob(os.path.join(step[0], "*.cu")) and not nvcc:
            return f"runs ./step{number}, built here without nvcc (the transcript has GPU code)"
    for tool in re.findall(r"(?:^|[\s;&|(])(xxd|compute-sanitizer|nvidia-smi)\b", command):
        if shutil.which(tool) is None:
            return f"{tool} is not installed"
    return None


def run_on_terminal(command, cwd):
    """What `command` prints on a terminal (stdout and stderr interleaved as a person sees them:
    through a pseudo-terminal, both are line-buffered), or None after COMMAND_TIMEOUT_S."""
    master, slave = pty.openpty()
    env = dict(os.environ, LC_ALL="C.UTF-8", COLUMNS="100", TERM="dumb")
    for name in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL", "MAKEOVERRIDES"):  # run as from a shell, not from make
        env.pop(name, None)
    process = subprocess.Popen(["bash", "-c", command], cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                               stdout=slave, stderr=slave, close_fds=True)
    os.close(slave)
    chunks, deadline = [], time.monotonic() + COMMAND_TIMEOUT_S
    while True:
        ready, _, _ = select.select([master], [], [], max(0.0, deadline - time.monotonic()))
        if not ready:
            process.kill()
            process.wait()
            os.close(master)
            return None
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO: every writer has closed the terminal
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(master)
    process.wait()
    return b"".join(chunks).decode("utf-8", errors="replace").replace("\r\n", "\n")


def make_sandbox():
    """A scratch directory of links to the repository root's entries, with ../shared beside it."""
    base = tempfile.mkdtemp(prefix="check_docs.")
    work = os.path.join(base, "repo")
    os.mkdir(work)
    for entry in os.listdir(ROOT):
        if entry != ".git":
            os.symlink(os.path.join(ROOT, entry), os.path.join(work, entry))
    shared = os.path.join(ROOT, "..", "shared")
    if os.path.isdir(shared):
        os.symlink(os.path.abspath(shared), os.path.join(base, "shared"))
    return base, work


def check_transcript(article, fence_line, body, skip_reason, nvcc, results):
    where = f"{os.path.relpath(article, ROOT)}:{fence_line}"
    first = body[0][2:].split("\n")[0].strip()
    if skip_reason is not None:
        results.skip(where, f"{skip_reason} ($ {first})")
        return
    steps = parse_transcript(body)
    for command, _ in steps:
        reason = needs(command, nvcc)
        if reason:
            results.skip(where, f"{reason} ($ {first})")
            return
    for command, _ in steps:
        problem = build_steps(command)
        if problem:
            results.fail(where, problem)
            return
    # A second try before failing: a program relinked by a concurrent make ("Permission denied",
    # "Text file busy") is not the article's fault. The commands are deterministic otherwise.
    for attempt in (1, 2):
        problem = run_transcript(steps)
        if problem is None:
            results.ok()
            return
        if attempt == 1:
            time.sleep(1)
    results.fail(where, problem)


def run_transcript(steps):
    """None when every command prints what the block says, else a description of the first that does not."""
    base, work = make_sandbox()
    try:
        for command, expected in steps:
            output = run_on_terminal(command, work)
            if output is None:
                return f"$ {command} ran past {COMMAND_TIMEOUT_S} s"
            # A line rewritten in place with \r (a progress count) shows only its last version.
            lines = output.split("\n")
            if lines and lines[-1] == "":
                lines.pop()
            output = "".join(line.rstrip("\r").split("\r")[-1].rstrip() + "\n" for line in lines)
            if not expected_pattern(expected).match(output):
                shown = "\n".join("    | " + line for line in output.splitlines()[:40])
                return f"$ {command}\n  printed something else:\n{shown}"
        return None
    finally:
        shutil.rmtree(base, ignore_errors=True)

BUILT = {}


def build_steps(command):
    """Builds (once per run) the ./stepNN programs a command runs; returns make's output on failure."""
    for number in re.findall(r"(?:^|[\s;&|(])\./step(\d\d)\b", command):
        if number not in BUILT:
            build = subprocess.run(["make", "-s", "--no-print-directory", "-C", ROOT, f"step{number}"],
                                   stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
            BUILT[number] = None if build.returncode == 0 else build.stdout.decode(errors="replace")
        if BUILT[number] is not None:
            return f"make step{number} failed:\n{BUILT[number]}"
    return None


def main():
    articles = sys.argv[1:] or sorted(path for language in ("en", "zh")
                                      for name in ("README.md", "step*.md", "solutions.md")
                                      for path in glob.glob(os.path.join(ROOT, "docs", language, name)))
    articles = [os.path.abspath(a) for a in articles]
    # The Makefile's rule: $NVCC, else $CUDA_HOME/bin/nvcc. Without it the CUDA steps are built
    # for the CPU alone, and their transcripts, taken with GPU code built in, would differ.
    nvcc_path = os.environ.get("NVCC") or os.path.join(os.environ.get("CUDA_HOME", "/usr/local/cuda"), "bin", "nvcc")
    nvcc = shutil.which(nvcc_path) is not None
    total = Results()
    for article in articles:
        results = Results()
        lines = open(article, encoding="utf-8").read().split("\n")
        step_dir = step_directory(article)
        context = {"step_dir": step_dir, "own_step": step_dir is not None}
        for block in split_blocks(lines):
            if block[0] == "text":
                check_text(article, block[1], block[2], context, results)
                continue
            _, fence_line, body, _ = block
            if not body or not body[0].startswith("$ "):
                continue
            skip_reason = None
            previous = fence_line - 2
            while previous >= 0 and not lines[previous].strip():
                previous -= 1
            if previous >= 0 and skip_reason is None:
                mark = SKIP_MARK.search(lines[previous])
                if mark:
                    skip_reason = mark.group(1)
            check_transcript(article, fence_line, body, skip_reason, nvcc, results)
        print(f"{os.path.relpath(article, ROOT)}: {results.passed} passed, {results.failed} failed, "
              f"{results.skipped} skipped")
        total.passed += results.passed
        total.failed += results.failed
        total.skipped += results.skipped
    print(f"docs: {total.passed} passed, {total.failed} failed, {total.skipped} skipped")
    return 1 if total.failed else 0


if __name__ == "__main__":
    sys.exit(main())
