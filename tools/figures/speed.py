"""speed.py - the speed records of docs/bench/ as pictures: generated tokens/s of every step
(series_speed) and the staircase of prompt and decode speed (series_staircase).
"""
import math
import os
import re
import sys

import matplotlib.ticker
from matplotlib.patches import Rectangle

from style import (
    BLUE, DARK_GREEN, DARK_ORANGE, GREEN, GREY, INK, LIGHT_BLUE, LIGHT_GREEN, LIGHT_GREY,
    ORANGE, ROOT, plt, thousands)

# ---- series_speed ----

SPEED_SOURCES = [  # (files, panel title: {size} is the model size its headings name, {threads}
    # the largest thread count of its table). Later files win: see series_speed in the docstring.
    (("docs/bench/h200-series.md", "docs/bench/h200-step09.md",
      "docs/bench/step10-2026-12-01/series-512-call3.md",
      "docs/bench/step10-2026-12-01/series-7b-512-call5.md",
      "docs/bench/step11-2026-12-02/record-series-512.md",    # step 11's record (call 3)
      "docs/bench/step12-2026-12-02/series-512-q4_k_m.md"),   # step11, step12, llama.cpp, one call
     "H200 GPU\nQwen2.5-{size} shape"),
    (("docs/bench/cpu-real-0.5b.md",), "2-core CPU, {threads} threads\nreal Qwen2.5-0.5B"),
]


def markdown_tables(path):
    """[(heading, [{column name: cell}])] for every table of a markdown file, under its "## "."""
    tables, heading, lines = [], "", open(path, encoding="utf-8").read().split("\n")

    def cells(line):
        return [cell.strip() for cell in line.strip().strip("|").split("|")]

    i = 0
    while i < len(lines):
        if lines[i].startswith("## "):
            heading = lines[i][3:].strip()
        is_header = (lines[i].startswith("|") and i + 1 < len(lines)
                     and re.match(r"^\|[\s:|-]+\|\s*$", lines[i + 1]))
        if not is_header:
            i += 1
            continue
        names = [name.lower() for name in cells(lines[i])]
        rows, i = [], i + 2
        while i < len(lines) and lines[i].startswith("|"):
            rows.append(dict(zip(names, cells(lines[i]))))
            i += 1
        tables.append((heading, rows))
    return tables


def number_in(cell):
    match = re.match(r"[\d,]*\.?\d+", (cell or "").replace("*", ""))
    return float(match.group(0).replace(",", "")) if match else None


def model_size(heading):
    """"0.5B" for a heading naming Qwen2.5-0.5B in any form (a title, a file name), else None."""
    match = re.search(r"(?<![\w.])(\d+(?:\.\d+)?)b(?![a-z])", heading, re.I)
    return match.group(1) + "B" if match else None


def speed_panels():
    """One panel per model size of each source (per table, for a heading that names none): our
    steps and transformers as bars, llama.cpp as a range. A row of a later file replaces the
    earlier file's row of the same engine (stepNN, or the engine's whole name)."""
    panels = []
    for paths, title in SPEED_SOURCES:
        tables = {}  # model size or heading: {"threads": ..., "rows": {engine: row}}
        for path in paths:
            for heading, rows in markdown_tables(os.path.join(ROOT, path)):
                if not rows or "engine" not in rows[0] or "gen tok/s" not in rows[0]:
                    continue
                threads = "all"
                if "threads" in rows[0]:  # one bar per engine: the rows with every thread in use
                    most = max(number_in(row["threads"]) or 0 for row in rows)
                    rows = [row for row in rows if number_in(row["threads"]) == most]
                    threads = f"{most:.0f}"
                table = tables.setdefault(model_size(heading) or heading,
                                          {"threads": threads, "rows": {}})
                for row in rows:
                    engine = row["engine"].replace("`", "")
                    step = re.match(r"step\d+", engine)
                    table["rows"][step.group(0) if step else engine] = row
        for key, table in sorted(tables.items(), key=lambda item: float(item[0][:-1])
                                 if model_size(item[0]) else math.inf):
            bars, llama_cpp = [], []
            for engine, row in table["rows"].items():
                speed = number_in(row["gen tok/s"])
                if engine.startswith("llama.cpp") and speed:
                    llama_cpp.append(speed)
                elif engine.startswith(("step", "transformers")):
                    ours = engine.startswith("step")
                    bars.append({
                        "label": engine if ours else engine[len("transformers"):].strip(),
                        "speed": speed,
                        "as_written": row["gen tok/s"],
                        "roofline": number_in(row.get("roofline tok/s")),
                        "no_cache": "no KV cache" in " ".join(row.values()),
                        "ours": ours})
            bars.sort(key=lambda bar: (not bar["ours"], bar["label"] if bar["ours"] else ""))
            panels.append({"title": title.format(size=key, threads=table["threads"]),
                           "bars": bars, "llama_cpp": llama_cpp})
    return panels


def series_speed():
    panels = speed_panels()
    speeds = [bar["speed"] for panel in panels for bar in panel["bars"] if bar["speed"]]
    ceilings = [bar["roofline"] or 0 for panel in panels for bar in panel["bars"]]
    low = 10 ** math.floor(math.log10(min(speeds)) - 0.3)
    high = 10 ** math.ceil(math.log10(max(speeds + ceilings)) + 0.3)
    widths = [len(panel["bars"]) + 0.4 for panel in panels]
    fig, axes = plt.subplots(1, len(panels), figsize=(16, 5.0), sharey=True,
                             gridspec_kw={"width_ratios": widths})
    fig.subplots_adjust(left=0.05, right=0.995, top=0.74, bottom=0.17, wspace=0.05)
    fig.text(0.01, 0.965, "Generated tokens per second of every step, after a 512-token prompt "
             "(the tables of docs/bench/)", fontsize=12, fontweight="bold", va="center")
    kinds = {"no KV cache": LIGHT_BLUE, "KV cache": BLUE, "transformers": ORANGE}
    for ax, panel in zip(axes, panels):
        ax.set_yscale("log")
        ax.set_ylim(low, high)
        ax.yaxis.set_minor_locator(matplotlib.ticker.NullLocator())
        bars = panel["bars"]
        for index, bar in enumerate(bars):
            if not bar["ours"]:
                face = kinds["transformers"]
            else:
                face = kinds["no KV cache"] if bar["no_cache"] else kinds["KV cache"]
            if bar["speed"]:
                ax.bar(index, bar["speed"] - low, width=0.72, color=face, bottom=low)
                ax.text(index, bar["speed"] * 1.15, bar["as_written"], ha="center",
                        va="bottom", fontsize=6.5,  # white behind it: a llama.cpp line may cross
                        bbox={"facecolor": "white", "edgecolor": "none", "pad": 0.6})
            else:
                ax.text(index, low * 1.5, "not\nmeasured", ha="center", va="bottom",
                        fontsize=7, color=GREY, linespacing=1.1)
            if bar["roofline"]:
                ax.plot([index - 0.42, index + 0.42], [bar["roofline"]] * 2, color=INK,
                        linewidth=1.2, linestyle=(0, (3, 1.5)))
        rooflines = [bar["roofline"] for bar in bars if bar["roofline"]]
        if rooflines:
            ax.text(len(bars) - 0.5, max(rooflines) * 1.25, f"roofline {max(rooflines):.0f}",
                    ha="right", va="bottom", fontsize=7.5)
        if panel["llama_cpp"]:
            slowest, fastest = min(panel["llama_cpp"]), max(panel["llama_cpp"])
            ax.axhspan(slowest, fastest, color=LIGHT_GREEN, alpha=0.7, zorder=0)
            for value in (slowest, fastest):
                ax.axhline(value, color=GREEN, linewidth=1.0, zorder=0)
            settings = len(panel["llama_cpp"])
            ax.text(-0.45, slowest / 1.2, f"llama.cpp: {slowest:g} to {fastest:g}\n({settings} "
                    "settings)" if settings > 1 else f"llama.cpp: {fastest:g}", fontsize=7.5,
                    color=DARK_GREEN, va="top", linespacing=1.15)
        ax.set_xticks(range(len(bars)))
        ax.set_xticklabels([bar["label"] + ("\n(no KV\ncache)" if bar["no_cache"] else "")
                            for bar in bars], fontsize=7.5, linespacing=1.1)
        # transformers' rows are labelled by dtype, with the engine's name once under them all.
        others = [index for index, bar in enumerate(bars) if not bar["ours"]]
        if others:
            ax.text(sum(others) / len(others), -0.11, "transformers",
                    transform=ax.get_xaxis_transform(), ha="center", va="top", fontsize=7.5)
        ax.tick_params(axis="x", length=0)
        ax.set_xlim(-0.6, len(bars) - 0.4)
        ax.set_title(panel["title"], fontsize=9, linespacing=1.3)
        ax.grid(axis="y", color=LIGHT_GREY, linewidth=0.6)
        ax.set_axisbelow(True)
        for side in ("top", "right"):
            ax.spines[side].set_visible(False)
        if ax is not axes[0]:
            ax.tick_params(axis="y", left=False)
    axes[0].set_ylabel("generated tokens/s (log scale)")
    legend = [Rectangle((0, 0), 1, 1, color=color) for color in kinds.values()]
    legend += [plt.Line2D([0], [0], color=INK, linestyle=(0, (3, 1.5)), linewidth=1.2),
               Rectangle((0, 0), 1, 1, facecolor=LIGHT_GREEN, edgecolor=GREEN)]
    fig.legend(legend, ["our step, no KV cache: each token re-runs every position",
                        "our step, KV cache", "transformers generate()",
                        "roofline of that row: copy bandwidth / weight bytes per token",
                        "llama.cpp, same machine and model file (a band: its settings' range)"],
               loc="upper left", bbox_to_anchor=(0.055, 0.935), ncol=3, fontsize=8,
               frameon=False, handlelength=2.2, columnspacing=1.6)
    return fig


# ---- series_staircase ----

STAIRCASE_SOURCES = SPEED_SOURCES[0][0]  # oldest first: a later file's row replaces


def table_notes(path):
    """{heading: its "- " lines before the table} of a markdown file: a record's date, machine
    and model under each "## " of bench_series.py's tables."""
    notes, heading = {}, ""
    for line in open(path, encoding="utf-8").read().split("\n"):
        if line.startswith("## "):
            heading = line[3:].strip()
            notes.setdefault(heading, [])
        elif line.startswith("- ") and heading in notes:
            notes[heading].append(line[2:])
    return notes


def staircase_panels(paths):
    """{model size: {"stepNN" or "llama.cpp": point}} of bench_series.py tables: each point the
    row's prompt and generated tokens/s, its roofline, device and where it came from. A row of a
    later file replaces the earlier one of the same engine and size, unless it holds no number
    (a row that timed out keeps the earlier measurement). Only the plain stepNN rows are steps
    (not step10-no-graph or a variant's name), and transformers' rows are left out."""
    panels = {}
    for path in paths:
        full = path if os.path.isabs(path) else os.path.join(ROOT, path)
        notes = table_notes(full)
        for heading, rows in markdown_tables(full):
            size = model_size(heading)
            if not rows or not size or "engine" not in rows[0] or "gen tok/s" not in rows[0]:
                continue
            prompt_column = next((name for name in rows[0] if name.startswith("prompt tok/s")),
                                 None)
            lines = notes.get(heading, [])
            date = next((re.match(r"\d{4}-\d\d-\d\d", line).group(0) for line in lines
                         if re.match(r"\d{4}-\d\d-\d\d", line)), "")
            gpu = next((match.group(1) for match in (re.search(r"GPU (.+?) \(driver", line)
                                                     for line in lines) if match), None)
            for row in rows:
                engine = row["engine"].replace("`", "").strip()
                key = engine if re.fullmatch(r"step\d\d", engine) else \
                    "llama.cpp" if engine.startswith("llama.cpp") else None
                point = {"prompt": number_in(row.get(prompt_column)),
                         "gen": number_in(row["gen tok/s"]),
                         "roofline": number_in(row.get("roofline tok/s")),
                         "device": row.get("device", ""), "gpu": gpu,
                         "no_cache": "no KV cache" in row.get("notes", ""),
                         "source": os.path.relpath(full, os.path.join(ROOT, "docs", "bench"))
                         if full.startswith(os.path.join(ROOT, "docs", "bench")) else
                         os.path.relpath(full, ROOT), "date": date}
                if key and (point["prompt"] or point["gen"]):
                    panels.setdefault(size, {})[key] = point
    return dict(sorted(panels.items(), key=lambda item: float(item[0][:-1])))


def speed_text(value):
    """A speed as the tables round it: 25,363, 571, 4.83, 0.06."""
    if value >= 1000:
        return thousands(round(value))
    return f"{value:.0f}" if value >= 100 else f"{value:.1f}" if value >= 10 else f"{value:.2f}"


def step_runs(steps):
    """"step05–07" for consecutive step numbers, runs joined by ", "."""
    numbers, runs = sorted(int(step[4:]) for step in steps), []
    for number in numbers:
        if runs and number == runs[-1][1] + 1:
            runs[-1][1] = number
        else:
            runs.append([number, number])
    return ", ".join(f"step{a:02d}" + (f"–{b:02d}" if b > a else "") for a, b in runs)


def series_staircase(sources=None):
    """The staircase: prompt and generated tokens/s of every step, a panel per model size, from
    the records of docs/bench/ (STAIRCASE_SOURCES) or from the tables given (tools/figures/plots.py
    --source FILE, which bench_series.py calls on the table it has just written)."""
    committed = sources is None
    panels = staircase_panels(STAIRCASE_SOURCES if committed else sources)
    if not panels:
        sys.exit(f"plots.py: no table with engine, prompt tok/s and gen tok/s columns in "
                 f"{', '.join(sources)}")
    numbers = sorted({int(key[4:]) for panel in panels.values() for key in panel
                      if key.startswith("step")})
    steps = [f"step{n:02d}" for n in range(numbers[0], numbers[-1] + 1)]
    values = [point[kind] for panel in panels.values() for point in panel.values()
              for kind in ("prompt", "gen", "roofline") if point[kind]]
    low = 10 ** math.floor(math.log10(min(values)) - 0.6)
    high = 10 ** math.ceil(math.log10(max(values)) + 0.3)
    fig, axes = plt.subplots(1, len(panels), figsize=(12, 6.2), sharey=True, squeeze=False)
    axes = axes[0]
    fig.subplots_adjust(left=0.065, right=0.995, top=0.74, bottom=0.22, wspace=0.06)
    if committed:
        title = ("The staircase: prompt and generated tokens per second of every step, "
                 "a 512-token prompt, greedy decoding")
        subtitle = ("One H200, random weights in Qwen2.5's shapes. The rows come from several "
                    "records, made on different days (their dates and device calls in "
                    "docs/bench/; the files are listed below).\nstep05 runs on the CPU, reading "
                    "the Q4_K_M file's blocks; steps 06–10 hold F16 copies of its matrices on "
                    "the GPU (08 and 09 were timed on F16 files: the same bytes there); steps "
                    "11–12 read the Q4_K_M blocks.")
    else:
        title = ("Prompt and generated tokens per second of each step: "
                 + ", ".join(os.path.relpath(source) for source in sources))
        subtitle = "The rows of bench_series.py's tables (listed below)."
    fig.text(0.01, 0.972, title, fontsize=12, fontweight="bold", va="center")
    fig.text(0.01, 0.94, subtitle, fontsize=8, va="top", linespacing=1.4)

    # Where each step's rows come from: consecutive steps of the same records named together.
    origins = {}
    for panel in panels.values():
        for key, point in panel.items():
            origins.setdefault(key, set()).add((point["source"], point["date"]))
    groups = {}
    for key, found in origins.items():
        groups.setdefault(tuple(sorted(found)), []).append(key)
    parts = []
    for found, keys in sorted(groups.items(), key=lambda item: min(
            int(key[4:]) if key.startswith("step") else 99 for key in item[1])):
        names = step_runs([key for key in keys if key.startswith("step")])
        names = " and ".join(filter(None, [names, "llama.cpp" if "llama.cpp" in keys else ""]))
        files, dates = [], sorted({date for _, date in found if date})
        for source, _ in found:  # a folder named once: step10-.../series-512-call3.md, series-...
            folder, name = os.path.split(source)
            shown = name if files and os.path.dirname(files[-1][0]) == folder else source
            files.append((source, shown))
        parts.append(f"{names}: {', '.join(shown for _, shown in files)}"
                     + (f" ({', '.join(dates)})" if dates else ""))

    missing, roofline_style = [], (0, (3, 1.5))
    for ax, (size, panel) in zip(axes, panels.items()):
        ax.set_yscale("log")
        ax.set_ylim(low, high)
        ax.yaxis.set_minor_locator(matplotlib.ticker.NullLocator())
        xs = range(len(steps))
        for kind, colour, text_colour, marker, label_offset in (
                ("prompt", ORANGE, DARK_ORANGE, "s", 1.4), ("gen", BLUE, BLUE, "o", 1 / 1.4)):
            points = [(x, panel[step][kind]) for x, step in zip(xs, steps)
                      if step in panel and panel[step][kind]]
            missing += [f"{step} {'prompt' if kind == 'prompt' else 'decode'} at {size}"
                        for step in steps if not (step in panel and panel[step][kind])]
            ax.plot([x for x, _ in points], [v for _, v in points], color=colour,
                    marker=marker, markersize=5, linewidth=1.4, zorder=4)
            for x, value in points:
                ax.text(x, value * label_offset, speed_text(value), ha="center",
                        va="bottom" if kind == "prompt" else "top", fontsize=6.5,
                        color=text_colour, zorder=5,
                        bbox={"facecolor": "white", "edgecolor": "none", "pad": 0.3})
        # The decode roofline of each step's row, dashed and joined from step to step; its
        # values in a row at the foot of the panel.
        line_x, line_y = [], []
        for x, step in zip(xs, steps):
            roofline = panel.get(step, {}).get("roofline")
            if roofline:
                line_x += [x - 0.5, x + 0.5]
                line_y += [roofline, roofline]
                ax.text(x, low * 1.8, speed_text(roofline), ha="center", va="center",
                        fontsize=6, color=INK)
            elif line_x:
                ax.plot(line_x, line_y, color=INK, linewidth=1.0, linestyle=roofline_style)
                line_x, line_y = [], []
        if line_x:
            ax.plot(line_x, line_y, color=INK, linewidth=1.0, linestyle=roofline_style)
        ax.axhline(low * 3.6, color=LIGHT_GREY, linewidth=0.6)
        llama = panel.get("llama.cpp")
        if llama:
            for kind, style, where in (("prompt", "-", "prompt"),
                                       ("gen", (0, (1, 1.2)), "decode")):
                if llama[kind]:
                    ax.axhline(llama[kind], color=GREEN, linewidth=1.2, linestyle=style,
                               zorder=2)
                    ax.text(-0.5, llama[kind] * 1.12, f"llama.cpp {where} "
                            f"{speed_text(llama[kind])}", fontsize=6.5, color=DARK_GREEN,
                            va="bottom", zorder=3,
                            bbox={"facecolor": "white", "edgecolor": "none", "pad": 0.3})
        labels = []
        for step in steps:
            point = panel.get(step)
            extra = [] if not point else (["CPU"] if point["device"] == "CPU" else []) + \
                (["no KV", "cache"] if point["no_cache"] else [])
            labels.append("\n".join([step[4:]] + extra))
        ax.set_xticks(list(xs))
        ax.set_xticklabels(labels, fontsize=7.5, linespacing=1.1)
        ax.tick_params(axis="x", length=0)
        ax.set_xlim(-0.6, len(steps) - 0.4)
        gpus = {point["gpu"] for point in panel.values() if point["gpu"]}
        machine = " / ".join(sorted(gpus)) if gpus else "CPU"
        ax.set_title(f"{machine}\nQwen2.5-{size} shape", fontsize=9, linespacing=1.3)
        ax.grid(axis="y", color=LIGHT_GREY, linewidth=0.6)
        ax.set_axisbelow(True)
        for side in ("top", "right"):
            ax.spines[side].set_visible(False)
        if ax is not axes[0]:
            ax.tick_params(axis="y", left=False)
        ax.set_xlabel("step", fontsize=8)
    axes[0].set_ylabel("tokens/s (log scale)")
    legend = [(plt.Line2D([0], [0], color=ORANGE, marker="s", markersize=5, linewidth=1.4),
               "prompt (prefill) tokens/s"),
              (plt.Line2D([0], [0], color=BLUE, marker="o", markersize=5, linewidth=1.4),
               "generated (decode) tokens/s"),
              (plt.Line2D([0], [0], color=INK, linestyle=roofline_style, linewidth=1.0),
               "decode roofline of the step's row: copy bandwidth / weight bytes a token (its "
               "value at the panel's foot)")]
    if any("llama.cpp" in panel for panel in panels.values()):
        legend += [(plt.Line2D([0], [0], color=GREEN, linewidth=1.2),
                    "llama.cpp, prompt (its newest row)"),
                   (plt.Line2D([0], [0], color=GREEN, linestyle=(0, (1, 1.2)), linewidth=1.2),
                    "llama.cpp, decode")]
    fig.legend([handle for handle, _ in legend], [text for _, text in legend],
               loc="upper left", bbox_to_anchor=(0.055, 0.875), ncol=3, fontsize=7.5,
               frameon=False, handlelength=2.2, columnspacing=1.6)
    no_cache = sorted({step for panel in panels.values() for step, point in panel.items()
                       if point["no_cache"]})
    note = ("Rows: " + "; ".join(parts) + ". A later record's row of an engine replaces an "
            "earlier one's.\nA step without a point at a size has no row there; none is "
            "invented. " + (f"Missing: {', '.join(missing)}." if missing else
                            "Here every step has both points at every size.")
            + (f" {' and '.join(no_cache)} {'have' if len(no_cache) > 1 else 'has'} no KV "
               "cache: each generated token re-runs the whole sequence." if no_cache else ""))
    fig.text(0.01, 0.015, note, fontsize=7, va="bottom", linespacing=1.45, wrap=True)
    return fig
