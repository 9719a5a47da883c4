"""layouts.py - the figures of bytes in memory: a GGUF file's layout (gguf_layout), the KV cache
(kv_cache_layout) and the weight blocks of steps 3 and 11 (block_formats), each read from the
file or the sources it draws.
"""
import os
import re
import struct

from matplotlib.patches import Rectangle

from style import (
    BLUE, DARK_ORANGE, GREY, INK, LIGHT_BLUE, LIGHT_GREEN, LIGHT_GREY, LIGHT_ORANGE,
    LIGHT_PURPLE, LIGHT_RED, ORANGE, PURPLE, RED, ROOT, arrow, box, bracket, canvas, thousands)

# ---- gguf_layout ----

GGUF_SCALAR_FORMATS = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?",
                       10: "Q", 11: "q", 12: "d"}
GGUF_STRING, GGUF_ARRAY = 8, 9
GGUF_HEADER_BYTES = 24  # magic, version u32, tensor count u64, key/value count u64
GGUF_VALUE_TYPE_NAMES = {0: "u8", 1: "i8", 2: "u16", 3: "i16", 4: "u32", 5: "i32", 6: "f32",
                         7: "bool", 8: "string", 9: "array", 10: "u64", 11: "i64", 12: "f64"}


class GgufCursor:
    """Reads little-endian GGUF fields from a byte string, remembering where each one started."""

    def __init__(self, data):
        self.data = data
        self.offset = 0

    def number(self, fmt):
        (value,) = struct.unpack_from("<" + fmt, self.data, self.offset)
        self.offset += struct.calcsize("<" + fmt)
        return value

    def string(self):
        length = self.number("Q")
        text = self.data[self.offset:self.offset + length].decode("utf-8", errors="replace")
        self.offset += length
        return text

    def value(self, value_type):
        if value_type == GGUF_STRING:
            return self.string()
        if value_type == GGUF_ARRAY:
            element_type, count = self.number("I"), self.number("Q")
            return [self.value(element_type) for _ in range(count)]
        return self.number(GGUF_SCALAR_FORMATS[value_type])


def read_gguf_layout(path):
    """Where every part of a GGUF file lies: the header, each pair, each tensor info, the data."""
    data = open(path, "rb").read()
    cursor = GgufCursor(data)
    magic = data[:4].decode("ascii")
    cursor.offset = 4
    version, tensor_count, kv_count = cursor.number("I"), cursor.number("Q"), cursor.number("Q")
    pairs = []
    for _ in range(kv_count):
        start = cursor.offset
        key = cursor.string()
        value_type = cursor.number("I")
        value = cursor.value(value_type)
        pairs.append({"key": key, "type": value_type, "value": value,
                      "start": start, "end": cursor.offset})
    infos = []
    for _ in range(tensor_count):
        start = cursor.offset
        name = cursor.string()
        dims = [cursor.number("Q") for _ in range(cursor.number("I"))]
        infos.append({"name": name, "dims": dims, "type": cursor.number("I"),
                      "offset": cursor.number("Q"), "start": start, "end": cursor.offset})
    alignment = next((p["value"] for p in pairs if p["key"] == "general.alignment"), 32)
    end_of_infos = cursor.offset
    data_start = end_of_infos + (alignment - end_of_infos % alignment) % alignment
    return {"magic": magic, "version": version, "tensor_count": tensor_count,
            "kv_count": kv_count, "pairs": pairs, "infos": infos, "alignment": alignment,
            "end_of_infos": end_of_infos, "data_start": data_start, "file_size": len(data),
            "has_alignment_key": any(p["key"] == "general.alignment" for p in pairs)}


def ggml_type_names():
    """{type id: name} from the GgmlType enum of step 3, so the picture names types as the code."""
    source = open(os.path.join(ROOT, "step03_tensors", "ggml_types.h"), encoding="utf-8").read()
    enum = re.search(r"enum class GgmlType[^{]*\{(.*?)\};", source, re.S).group(1)
    return {int(number): name for name, number in re.findall(r"(\w+) = (\d+)", enum)}


def field_strip(ax, x, y, height, fields, face, byte_width, min_width):
    """Boxes for consecutive fields (name, bytes, value, offset), the offset under every border;
    a box is byte_width per byte but at least min_width, so that its name fits."""
    ax.text(x, y - 0.06, thousands(fields[0][3]), ha="center", va="top", fontsize=7.5,
            color=GREY)
    for name, size, value, start in fields:
        width = max(size * byte_width, min_width)
        box(ax, x, y, width, height, face)
        ax.text(x + width / 2, y + height * 0.72, name, ha="center", va="center", fontsize=7.5,
                color=INK)
        ax.text(x + width / 2, y + height * 0.32, value, ha="center", va="center", fontsize=8.5,
                family="monospace", fontweight="bold")
        x += width
        ax.text(x, y - 0.06, thousands(start + size), ha="center", va="top", fontsize=7.5,
                color=GREY)
    return x


def gguf_layout():
    layout = read_gguf_layout(os.path.join(ROOT, "models", "tiny-qwen2.gguf"))
    type_names = ggml_type_names()
    pairs, infos = layout["pairs"], layout["infos"]
    data_start, file_size = layout["data_start"], layout["file_size"]
    metadata_end, end_of_infos = pairs[-1]["end"], layout["end_of_infos"]
    fig, ax = canvas(12, 7.4)
    ax.text(0.3, 7.1, f"A GGUF file from byte 0: models/tiny-qwen2.gguf "
            f"({thousands(file_size)} bytes)", fontsize=12, fontweight="bold", va="center")

    # The whole file as one strip, not to scale: the header is 24 bytes, the data 2.3 MB.
    sections = [
        ("header", f"{GGUF_HEADER_BYTES} B", 0, GGUF_HEADER_BYTES, LIGHT_BLUE, 1.2),
        ("metadata key/values", f"{layout['kv_count']} pairs, "
         f"{thousands(metadata_end - GGUF_HEADER_BYTES)} B", GGUF_HEADER_BYTES, metadata_end,
         LIGHT_GREEN, 3.3),
        ("tensor infos", f"{layout['tensor_count']} records, "
         f"{thousands(end_of_infos - metadata_end)} B", metadata_end, end_of_infos,
         LIGHT_ORANGE, 2.7),
        ("padding", f"{data_start - end_of_infos} zero bytes", end_of_infos, data_start, LIGHT_GREY,
         0.95),
        ("tensor data", f"{layout['tensor_count']} tensors, "
         f"{thousands(file_size - data_start)} B", data_start, file_size, LIGHT_PURPLE, 3.05),
    ]
    x, strip_y, strip_height = 0.3, 5.85, 0.75
    ax.text(x, strip_y + strip_height + 0.12, "the whole file (boxes not to scale)",
            fontsize=8, color=GREY)
    ax.text(x, strip_y - 0.06, "0", ha="center", va="top", fontsize=8, color=GREY)
    for name, detail, start, end, face, width in sections:
        box(ax, x, strip_y, width, strip_height, face)
        ax.text(x + width / 2, strip_y + 0.5, name, ha="center", va="center", fontsize=9.5,
                fontweight="bold")
        ax.text(x + width / 2, strip_y + 0.22, detail, ha="center", va="center", fontsize=8)
        x += width
        ax.text(x, strip_y - 0.06, thousands(end), ha="center", va="top", fontsize=8, color=GREY)
    ax.text(x + 0.02, strip_y - 0.24, "byte offsets", ha="right", va="top", fontsize=7.5,
            color=GREY)

    label_x, fields_x, row_height = 0.3, 2.75, 0.5

    def row_label(y, face, title, detail):
        ax.add_patch(Rectangle((label_x, y - 0.3), 0.09, row_height + 0.3, facecolor=face,
                               edgecolor="none"))
        ax.text(label_x + 0.2, y + row_height - 0.05, title, fontsize=9.5, fontweight="bold",
                va="top")
        ax.text(label_x + 0.2, y + row_height - 0.3, detail, fontsize=8, va="top", color=INK,
                linespacing=1.35)

    # The header's four fields.
    y = 4.55
    row_label(y, LIGHT_BLUE, "header", f"bytes 0 to {GGUF_HEADER_BYTES}")
    field_strip(ax, fields_x, y, row_height, [
        ("magic", 4, f'"{layout["magic"]}"', 0),
        ("version u32", 4, str(layout["version"]), 4),
        ("tensor_count u64", 8, str(layout["tensor_count"]), 8),
        ("metadata_kv_count u64", 8, str(layout["kv_count"]), 16),
    ], LIGHT_BLUE, byte_width=0.24, min_width=0.95)

    # The first key/value pair, field by field, and what the rest are.
    first = pairs[0]
    key_bytes = len(first["key"].encode())
    value_start = first["start"] + 8 + key_bytes + 4
    y = 3.35
    vocabulary = [p for p in pairs if isinstance(p["value"], list)]
    vocabulary_bytes = sum(p["end"] - p["start"] for p in vocabulary)
    row_label(y, LIGHT_GREEN, "one key/value pair",
              f"the first of {len(pairs)}, bytes\n{first['start']} to {first['end']}")
    end = field_strip(ax, fields_x, y, row_height, [
        ("key length u64", 8, str(key_bytes), first["start"]),
        ("key bytes", key_bytes, first["key"], first["start"] + 8),
        ("value type u32", 4, f"{first['type']} = {GGUF_VALUE_TYPE_NAMES[first['type']]}",
         first["start"] + 8 + key_bytes),
        ("string length u64", 8, str(len(first["value"])), value_start),
        ("string bytes", len(first["value"]), first["value"], value_start + 8),
    ], LIGHT_GREEN, byte_width=0.105, min_width=1.1)
    ax.text(end + 0.2, y + row_height / 2,
            f"then {len(pairs) - 1} more pairs; the {len(vocabulary)} arrays of the\n"
            f"vocabulary ({', '.join(p['key'].split('.')[-1] for p in vocabulary)})\n"
            f"take {thousands(vocabulary_bytes)} of the "
            f"{thousands(metadata_end - GGUF_HEADER_BYTES)} bytes",
            va="center", fontsize=8, linespacing=1.35)

    # The first tensor info.
    info = infos[0]
    name_bytes = len(info["name"].encode())
    y = 2.15
    row_label(y, LIGHT_ORANGE, "one tensor info",
              f"the first of {len(infos)}, bytes\n{thousands(info['start'])} to "
              f"{thousands(info['end'])}")
    dims_start = info["start"] + 8 + name_bytes + 4
    end = field_strip(ax, fields_x, y, row_height, [
        ("name length u64", 8, str(name_bytes), info["start"]),
        ("name bytes", name_bytes, info["name"], info["start"] + 8),
        ("n_dims u32", 4, str(len(info["dims"])), info["start"] + 8 + name_bytes),
        (f"dims {len(info['dims'])} x u64 (ne)", 8 * len(info["dims"]),
         ", ".join(str(d) for d in info["dims"]), dims_start),
        ("type u32", 4, f"{info['type']} = {type_names[info['type']]}",
         dims_start + 8 * len(info["dims"])),
        ("offset u64", 8, str(info["offset"]), dims_start + 8 * len(info["dims"]) + 4),
    ], LIGHT_ORANGE, byte_width=0.085, min_width=1.05)
    ax.text(end + 0.2, y + row_height / 2,
            "offset: where its bytes\nstart, counted from the\nstart of the tensor data",
            va="center", fontsize=8, linespacing=1.35)

    # The data section to scale, tensors grouped by block, each group at its first offset.
    y, data_width = 0.75, 12 - 0.3 - fields_x
    row_label(y, LIGHT_PURPLE, "tensor data",
              f"bytes {thousands(data_start)} to\n{thousands(file_size)}, to scale")
    ax.text(label_x + 0.2, y - 0.42,
            f"starts at {thousands(end_of_infos)} rounded up to a multiple of "
            f"general.alignment = {layout['alignment']}"
            + ("" if layout["has_alignment_key"] else " (the default)"),
            fontsize=8, va="top")
    data_bytes = file_size - data_start
    scale = data_width / data_bytes
    groups = []
    for tensor in sorted(infos, key=lambda t: t["offset"]):
        group = re.match(r"blk\.\d+|[^.]+", tensor["name"]).group(0)
        if not groups or groups[-1][0] != group:
            groups.append([group, tensor["offset"], 0])
        groups[-1][2] += 1
    for index, (group, offset, count) in enumerate(groups):
        next_offset = groups[index + 1][1] if index + 1 < len(groups) else data_bytes
        x0, width = fields_x + offset * scale, (next_offset - offset) * scale
        box(ax, x0, y, width, row_height, LIGHT_PURPLE if index % 2 == 0 else PURPLE)
        members = [t for t in infos if t["name"].startswith(group + ".")]
        for tensor in members[1:]:  # the borders between a group's tensors, to scale too
            tx = fields_x + tensor["offset"] * scale
            ax.plot([tx, tx], [y, y + row_height * 0.35], color=INK, linewidth=0.5)
        label = f"{group}.* ({count} tensors)" if count > 1 else members[0]["name"]
        if width > 1.0:
            ax.text(x0 + width / 2, y + row_height * 0.64, label, ha="center", va="center",
                    fontsize=8, family="monospace")
            ax.text(x0 + 0.04, y - 0.06, f"+{thousands(offset)}", ha="left", va="top",
                    fontsize=7.5, color=GREY)
        else:  # too thin to hold its name: a label above, pointing down at it
            ax.annotate(f"{label} at +{thousands(offset)}", xy=(x0 + width / 2, y + row_height),
                        xytext=(x0 + width / 2 - 0.05, y + row_height + 0.22), ha="right",
                        va="center", fontsize=7.5, family="monospace",
                        arrowprops={"arrowstyle": "-", "color": INK, "linewidth": 0.6})
    ax.text(fields_x + data_width, y - 0.24, "+offset = tensor info's offset; absolute byte = "
            f"{thousands(data_start)} + offset (every offset a multiple of {layout['alignment']})",
            ha="right", va="top", fontsize=7.5, color=GREY)
    return fig


# ---- kv_cache_layout ----

def kv_cache_layout():
    n_heads, n_kv_heads, head_dim = 12, 2, 128  # Qwen2.5-1.5B
    heads_per_kv = n_heads // n_kv_heads
    n_prompt, drawn_rows, row_height = 5, 12, 0.27
    decode_row = n_prompt  # n_filled before the first decode step
    gap_row = drawn_rows - 2  # stands for the rows up to capacity - 2
    fig, ax = canvas(12, 6.7)
    ax.text(0.3, 6.45, "The KV cache of one layer: kv_cache.h's KVCache (DeviceKVCache is the "
            "same on the GPU)", fontsize=12, fontweight="bold", va="center")

    # cache.k is n_layers such blocks, one after another; cache.v likewise.
    strip_y, strip_x, layer_width = 5.75, 1.5, 1.25
    layers = ["layer 0", "layer 1", "...", "this layer", "...", "layer n_layers-1"]
    ax.text(0.3, strip_y + 0.17, "cache.k", fontsize=9.5, family="monospace", va="center",
            fontweight="bold")
    shown = layers.index("this layer")
    for index, name in enumerate(layers):
        box(ax, strip_x + index * layer_width, strip_y, layer_width, 0.34,
            LIGHT_BLUE if index == shown else "white", name, fontsize=8)
    ax.text(strip_x + len(layers) * layer_width + 0.15, strip_y + 0.17,
            "(n_layers, capacity, kv_dim) floats;\ncache.v the same", fontsize=8, va="center")

    block_width, blocks_top = 3.5, 4.8
    k_x, v_x = 2.95, 7.0
    blocks_bottom = blocks_top - drawn_rows * row_height
    shown_x = strip_x + shown * layer_width
    for corner_x in (k_x, k_x + block_width):  # the zoom from one layer to its block
        ax.plot([shown_x + (corner_x > k_x) * layer_width, corner_x],
                [strip_y, blocks_top + 0.62], color=LIGHT_BLUE, linewidth=0.8, zorder=0)

    def row_y(row):
        return blocks_top - (row + 1) * row_height

    for x0, title in ((k_x, "keys(layer): this layer's keys"),
                      (v_x, "values(layer): its values")):
        ax.text(x0 + block_width / 2, blocks_top + 0.5, title, ha="center", va="bottom",
                fontsize=9.5, fontweight="bold", family="monospace")
        for row in range(drawn_rows):
            if row < n_prompt:
                face = LIGHT_BLUE
            elif row == decode_row:
                face = ORANGE
            else:
                face = "white"
            for head in range(n_kv_heads):
                slice_width = block_width / n_kv_heads
                if row == gap_row:
                    ax.text(x0 + (head + 0.5) * slice_width, row_y(row) + row_height / 2, "...",
                            ha="center", va="center", fontsize=9, color=GREY)
                    continue
                ax.add_patch(Rectangle((x0 + head * slice_width, row_y(row)), slice_width,
                                       row_height, facecolor=face, edgecolor=INK, linewidth=0.6))
        ax.add_patch(Rectangle((x0, blocks_bottom), block_width, drawn_rows * row_height,
                               facecolor="none", edgecolor=INK, linewidth=1.1))
        for head in range(n_kv_heads):
            slice_width = block_width / n_kv_heads
            ax.text(x0 + (head + 0.5) * slice_width, blocks_bottom - 0.07,
                    f"KV head {head}\nhead_dim = {head_dim} floats", ha="center", va="top",
                    fontsize=8, linespacing=1.3)
        ax.annotate("", xy=(x0 + block_width, blocks_bottom - 0.62),
                    xytext=(x0, blocks_bottom - 0.62),
                    arrowprops={"arrowstyle": "<->", "color": INK, "linewidth": 0.8,
                                "shrinkA": 0, "shrinkB": 0})
        ax.text(x0 + block_width / 2, blocks_bottom - 0.68,
                f"one row = kv_dim = n_kv_heads x head_dim = {n_kv_heads * head_dim} floats",
                ha="center", va="top", fontsize=8)

    # The query heads of the new token, grouped onto the KV heads they read.
    query_width = (block_width / n_kv_heads - 0.2) / heads_per_kv
    for head in range(n_heads):
        kv_head = head // heads_per_kv
        x = k_x + kv_head * block_width / n_kv_heads + 0.1 + (head % heads_per_kv) * query_width
        box(ax, x, blocks_top + 0.08, query_width, 0.24, LIGHT_ORANGE, f"q{head}", fontsize=7)
    ax.text(k_x - 0.1, blocks_top + 0.2, "query heads of\nthe new token:", ha="right",
            va="center", fontsize=8, linespacing=1.2, color=DARK_ORANGE)

    # Row numbers, on the left of the keys.
    for row, label in ((0, "0"), (n_prompt - 1, "n_prompt-1"), (decode_row, "n_filled"),
                       (drawn_rows - 1, "capacity-1")):
        ax.text(k_x - 0.07, row_y(row) + row_height / 2, label, ha="right", va="center",
                fontsize=8, family="monospace")

    # What writes which rows, on the left; what attention reads, on the right.
    bracket(ax, 2.05, row_y(n_prompt - 1) + 0.02, blocks_top - 0.02, side=+1, color=BLUE)
    ax.text(1.87, (row_y(n_prompt - 1) + blocks_top) / 2,
            "prefill: one pass\nover the prompt\nwrites rows\n0 .. n_prompt-1\n"
            "(rows = positions)", ha="right", va="center", fontsize=8, color=BLUE,
            linespacing=1.25)
    arrow(ax, (1.95, row_y(decode_row) - 0.62), (k_x - 0.72, row_y(decode_row) + 0.02),
          color=ORANGE, connectionstyle="arc3,rad=0.3")
    ax.text(1.87, row_y(decode_row) - 0.3,
            "a decode step: the\nnew token's K and V\nprojections write\nrow n_filled "
            "(= n_prompt\nat the first step),\nthen n_filled += 1", ha="right", va="top",
            fontsize=8, color=DARK_ORANGE, linespacing=1.25)
    read_x = v_x + block_width + 0.2
    bracket(ax, read_x, row_y(decode_row) + 0.02, blocks_top - 0.02, side=-1, color=RED)
    ax.text(read_x + 0.12, (row_y(decode_row) + blocks_top) / 2,
            "its attention reads\nrows 0 .. n_filled,\nin K (scores) and\nV (weighted sum),\n"
            "each query head in\nthe slice of its KV head", ha="left", va="center", fontsize=8,
            color=RED, linespacing=1.25)
    ax.text(read_x + 0.12, row_y(gap_row) + 0.1, "rows past n_filled:\nallocated, not yet\n"
            "written", ha="left", va="center", fontsize=8, color=GREY, linespacing=1.25)

    ax.text(0.3, 0.3,
            f"Grouped-query attention, Qwen2.5-1.5B: {n_heads} query heads share {n_kv_heads} KV "
            f"heads, {heads_per_kv} each (query head h reads KV head h / {heads_per_kv}), so a "
            f"row holds {n_kv_heads} x {head_dim} floats, not {n_heads} x {head_dim}.",
            fontsize=8.5, va="center")
    return fig


# ---- block_formats ----

DEQUANTIZE_CPP = os.path.join(ROOT, "step03_tensors", "dequantize.cpp")
QUANT_DOT_H = os.path.join(ROOT, "step11_quantized_weights", "quant_dot.h")
C_TYPE_BYTES = {"float": 4, "int32_t": 4, "int8_t": 1, "uint8_t": 1}


def block_layout(name):
    """(bytes, elements, [(field, bytes, offset)]) of ggml's block_NAME as dequantize.cpp's
    table above its routine lists it: "//   qs[32]  int8  32 bytes  offset 2"."""
    source = open(DEQUANTIZE_CPP, encoding="utf-8").read()
    header = re.search(rf"// block_{name} \((\d+) bytes, (\d+) elements", source)
    fields = []
    for line in source[header.end():].splitlines()[1:]:
        found = re.match(r"\s*//\s+(\w+)(?:\[\d+\])?\s+\w+\s+(\d+) bytes\s+offset (\d+)", line)
        if found:
            fields.append((found[1], int(found[2]), int(found[3])))
        elif not line.strip().startswith("//"):
            break
    n_bytes, n_elements = int(header[1]), int(header[2])
    assert sum(size for _, size, _ in fields) == n_bytes, f"block_{name}'s fields"
    return n_bytes, n_elements, fields


def activation_layout():
    """The same for quant_dot.h's BlockQ8, from its struct's members."""
    source = open(QUANT_DOT_H, encoding="utf-8").read()
    body = re.search(r"struct BlockQ8 \{(.*?)\};", source, re.S)[1]
    fields, offset = [], 0
    for c_type, field, count in re.findall(r"(\w+) (\w+)(?:\[(\d+)\])?;", body):
        size = C_TYPE_BYTES[c_type] * int(count or 1)
        fields.append((field, size, offset))
        offset += size
    elements = int(re.search(r"constexpr int kQ8BlockSize = (\d+);", source)[1])
    return offset, elements, fields


# What each field is for: its colour, and which part of a weight's bits it carries.
SCALE_FACE, MIN_FACE, LOW_FACE, HIGH_FACE, ACT_FACE = (LIGHT_ORANGE, LIGHT_GREEN, LIGHT_BLUE,
                                                       LIGHT_PURPLE, LIGHT_RED)
FIELD_FACES = {"d": SCALE_FACE, "scales": SCALE_FACE, "dmin": MIN_FACE, "sum": MIN_FACE,
               "qs": LOW_FACE, "ql": LOW_FACE, "qh": HIGH_FACE, "q": ACT_FACE}


def block_formats():
    formats = {name: block_layout(name) for name in ("q8_0", "q5_0", "q4_K", "q6_K")}
    activation = activation_layout()
    fig, ax = canvas(12, 12.1)
    ax.text(0.3, 11.85, "The blocks step 11 reads as the file stores them, and the 8-bit "
            "activation block the CPU makes", fontsize=12, fontweight="bold", va="center")
    legend = [(SCALE_FACE, "a scale: multiplies q"), (MIN_FACE, "a minimum: subtracted"),
              (LOW_FACE, "the low 4 or 8 bits of each q"), (HIGH_FACE, "its high bits"),
              (ACT_FACE, "8-bit activations")]
    x = 0.3
    for face, label in legend:
        box(ax, x, 11.42, 0.26, 0.18, face)
        ax.text(x + 0.33, 11.51, label, va="center", fontsize=8)
        x += 0.45 + 0.062 * len(label)
    ax.text(11.7, 11.51, "f16 = IEEE half float; every field little-endian", ha="right",
            va="center", fontsize=7.5, color=GREY)

    strip_x, small, large = 2.1, 0.18, 0.045  # inches a byte: 32-weight blocks, super-blocks
    ax.text(11.7, 11.27, f"widths to scale: {small / large:g} times wider a byte in the rows of 32 "
            "than in those of 256", ha="right", va="center", fontsize=7.5, color=GREY)

    def title(y, name, n_bytes, n_elements, things="weights", one="a weight"):
        ax.text(0.3, y + 0.36, name, fontsize=11, fontweight="bold", va="center")
        ax.text(0.3, y + 0.1, f"{n_elements} {things} in {n_bytes} B", fontsize=8, va="center")
        bits = 8 * n_bytes / n_elements
        ax.text(0.3, y - 0.12, f"{bits:g} bits {one}", fontsize=8, va="center",
                fontweight="bold", color=BLUE)

    def strip(y, layout, scale, height=0.46):
        """The block's fields side by side, scale inches a byte; {field: (x0, x1)}."""
        _, _, fields = layout
        spans = {}
        for field, size, offset in fields:
            x0 = strip_x + offset * scale
            box(ax, x0, y, size * scale, height, FIELD_FACES[field])
            spans[field] = (x0, x0 + size * scale)
        # The byte offset under every border, but none crowding another (the block's start
        # and end always shown): Q4_K's 2 and 4 and Q6_K's 208 are left to the field names.
        offsets = [offset for _, _, offset in fields]
        shown = [0]
        for offset in offsets[1:]:
            if (offset - shown[-1]) * scale >= 0.3 and (layout[0] - offset) * scale >= 0.3:
                shown.append(offset)
        shown.append(layout[0])
        for offset in shown:
            ax.text(strip_x + offset * scale, y - 0.05, str(offset), ha="center", va="top",
                    fontsize=7, color=GREY)
        return spans

    def cells(x0, y, width, height, count, labels, fontsize=6):
        """count equal cells from x0, thin borders between them, a label in each."""
        cell = width / count
        ax.vlines([x0 + i * cell for i in range(1, count)], y, y + height, color=INK,
                  linewidth=0.35)
        for i, label in enumerate(labels):
            ax.text(x0 + (i + 0.5) * cell, y + height / 2, label, ha="center", va="center",
                    fontsize=fontsize)

    def field_name(x0, x1, y, text):
        """A field's name, centred above it."""
        ax.text((x0 + x1) / 2, y + 0.06, text, ha="center", va="bottom", fontsize=7.5,
                family="monospace")

    def leader(x, y, text, dx):
        """A label for a field too narrow to hold it, above the strip and to one side."""
        ax.annotate(text, xy=(x, y), xytext=(x + dx, y + 0.2), fontsize=7.5,
                    family="monospace", ha="right" if dx < 0 else "left", va="center",
                    arrowprops={"arrowstyle": "-", "color": INK, "linewidth": 0.6})

    # Q8_0: a scale and 32 bytes.
    y = 10.3
    n_bytes, n_elements, _ = formats["q8_0"]
    title(y, "Q8_0", n_bytes, n_elements)
    spans = strip(y, formats["q8_0"], small)
    x0, x1 = spans["d"]
    ax.text((x0 + x1) / 2, y + 0.23, "d\nf16", ha="center", va="center", fontsize=7,
            linespacing=1.1)
    x0, x1 = spans["qs"]
    cells(x0, y, x1 - x0, 0.46, 32, [str(i) for i in range(32)])
    field_name(x0, x1, y + 0.46, "qs[32]: int8 q of weight i in byte i")
    ax.text(x1 + 0.25, y + 0.23, "w[i] = d · qs[i]", va="center", fontsize=9,
            family="monospace")

    # Q5_0: a scale, 32 fifth bits, 16 bytes of nibble pairs.
    y = 8.85
    n_bytes, n_elements, _ = formats["q5_0"]
    title(y, "Q5_0", n_bytes, n_elements)
    spans = strip(y, formats["q5_0"], small)
    x0, x1 = spans["d"]
    ax.text((x0 + x1) / 2, y + 0.23, "d\nf16", ha="center", va="center", fontsize=7,
            linespacing=1.1)
    x0, x1 = spans["qh"]
    cells(x0, y, x1 - x0, 0.46, 4, [])
    ax.text((x0 + x1) / 2, y + 0.23, "32 bits", ha="center", va="center", fontsize=6.5,
            bbox={"facecolor": HIGH_FACE, "edgecolor": "none", "pad": 0.5})
    field_name(x0, x1, y + 0.46, "qh")
    x0, x1 = spans["qs"]
    ax.hlines(y + 0.23, x0, x1, color=INK, linewidth=0.35)
    cells(x0, y + 0.23, x1 - x0, 0.23, 16, [str(j + 16) for j in range(16)])
    cells(x0, y, x1 - x0, 0.23, 16, [str(j) for j in range(16)])
    field_name(x0, x1, y + 0.46, "qs[16]")
    ax.text(x1 + 0.08, y + 0.345, "← high nibble of qs[j]: weight j + 16", va="center",
            fontsize=7.5)
    ax.text(x1 + 0.08, y + 0.115, "← low nibble of qs[j]: weight j", va="center", fontsize=7.5)
    ax.text(x1 + 0.08, y + 0.6, "qh, a u32: bit j is weight j's 5th bit", va="center",
            fontsize=7.5)
    ax.text(strip_x, y - 0.3, "q = 4 bits from qs | the 5th bit from qh << 4  (0 … 31);   "
            "w = d · (q − 16)", va="center", fontsize=8.5, family="monospace")

    # Q4_K: a super-block of 8 sub-blocks of 32, each with a 6-bit scale and a 6-bit min.
    y = 7.2
    n_bytes, n_elements, _ = formats["q4_K"]
    title(y, "Q4_K", n_bytes, n_elements)
    ax.text(0.3, y - 0.34, "8 sub-blocks of 32", fontsize=8, va="center")
    height = 0.5
    spans = strip(y, formats["q4_K"], large, height)
    leader(sum(spans["d"]) / 2, y + height, "d f16", -0.25)
    leader(sum(spans["dmin"]) / 2, y + height, "dmin f16", 0.28)
    x0, x1 = spans["scales"]
    ax.text((x0 + x1) / 2, y + height / 2, "12 B\nscales,\nmins", ha="center", va="center",
            fontsize=6, linespacing=1.0)
    x0, x1 = spans["qs"]
    chunk = (x1 - x0) / 4
    ax.hlines(y + height / 2, x0, x1, color=INK, linewidth=0.35)
    ax.vlines([x0 + c * chunk for c in range(1, 4)], y, y + height, color=INK, linewidth=0.8)
    for c in range(4):
        middle = x0 + (c + 0.5) * chunk
        ax.text(middle, y + 0.75 * height, f"high: sub-block {2 * c + 1}, w {64 * c + 32}–"
                f"{64 * c + 63}", ha="center", va="center", fontsize=6.5)
        ax.text(middle, y + 0.25 * height, f"low: sub-block {2 * c}, w {64 * c}–{64 * c + 31}",
                ha="center", va="center", fontsize=6.5)
    field_name(x0, x1, y + height, "qs[128]: 4 runs of 32 bytes, one pair of sub-blocks each "
               "(low nibbles the even one)")
    ax.text(x1 + 0.2, y + height / 2, "w = (d · scale_s) · q\n    − dmin · min_s\n"
            "s: the weight's sub-block,\nq: its 4 bits (0 … 15)", va="center", fontsize=8.5,
            family="monospace", linespacing=1.3)

    # The 12 bytes of scales and mins, bit by bit, under the strip.
    zoom_y, zoom_x, zoom_byte, zoom_height = y - 1.05, strip_x + 0.25, 0.56, 0.3
    x0, x1 = spans["scales"]
    for corner, target in ((x0, zoom_x), (x1, zoom_x + 12 * zoom_byte)):
        ax.plot([corner, target], [y, zoom_y + zoom_height + 0.17], color=GREY, linewidth=0.6,
                linestyle=(0, (2, 2)))
    for k in range(12):
        left = zoom_x + k * zoom_byte
        ax.text(left + zoom_byte / 2, zoom_y + zoom_height + 0.03, f"byte {k}", ha="center",
                va="bottom", fontsize=6.5, color=GREY)
        if k < 8:  # 2 high bits of sub-block k % 4 + 4's value, 6 bits of sub-block k % 4's
            kind, face = ("s", SCALE_FACE) if k < 4 else ("m", MIN_FACE)
            parts = [(2, f"{kind}{k % 4 + 4}", face), (6, f"{kind}{k % 4}", face)]
        else:  # low 4 bits of min and scale of sub-block k - 4
            parts = [(4, f"m{k - 4}", MIN_FACE), (4, f"s{k - 4}", SCALE_FACE)]
        bit_x = left
        for bits, label, face in parts:
            width = zoom_byte * bits / 8
            box(ax, bit_x, zoom_y, width, zoom_height, face)
            ax.text(bit_x + width / 2, zoom_y + zoom_height / 2, label, ha="center",
                    va="center", fontsize=6 if bits == 2 else 7)
            bit_x += width
    note_x = zoom_x + 12 * zoom_byte + 0.2
    ax.text(note_x, zoom_y + zoom_height / 2,
            "sN, mN: sub-block N's 6-bit scale\nand min; bit 7 of a byte on the left.\n"
            "Sub-blocks 0-3: the low 6 bits of\nbytes 0-3 (scales) and 4-7 (mins).\n"
            "Sub-blocks 4-7: 4 bits in bytes 8-11,\nthe top 2 in the top of bytes 0-7.",
            va="center", fontsize=7, linespacing=1.3)

    # Q6_K: 16 sub-blocks of 16, int8 scales, 6-bit q from two arrays.
    y = 4.75
    n_bytes, n_elements, _ = formats["q6_K"]
    title(y, "Q6_K", n_bytes, n_elements)
    ax.text(0.3, y - 0.34, "16 sub-blocks of 16", fontsize=8, va="center")
    spans = strip(y, formats["q6_K"], large, height)
    x0, x1 = spans["ql"]
    chunk = (x1 - x0) / 4
    ax.hlines(y + height / 2, x0, x1, color=INK, linewidth=0.35)
    ax.vlines([x0 + c * chunk for c in range(1, 4)], y, y + height, color=INK, linewidth=0.8)
    for c in range(4):  # ql[32c + l]: half c // 2, the low nibbles quarter c % 2, high + 2
        first = 128 * (c // 2) + 32 * (c % 2)
        middle = x0 + (c + 0.5) * chunk
        ax.text(middle, y + 0.75 * height, f"high: w {first + 64}–{first + 95}", ha="center",
                va="center", fontsize=6.5)
        ax.text(middle, y + 0.25 * height, f"low: w {first}–{first + 31}", ha="center",
                va="center", fontsize=6.5)
    field_name(x0, x1, y + height, "ql[128]: the low 4 bits of each q")
    x0, x1 = spans["qh"]
    chunk = (x1 - x0) / 2
    ax.vlines([x0 + chunk], y, y + height, color=INK, linewidth=0.8)
    for c in range(2):
        ax.text(x0 + (c + 0.5) * chunk, y + height / 2, f"2 bits each of\nw l, l+32, l+64, "
                f"l+96\n(l = {128 * c}…{128 * c + 31})", ha="center", va="center", fontsize=6,
                linespacing=1.1)
    field_name(x0, x1, y + height, "qh[64]: high 2 bits, 4 a byte")
    x0, x1 = spans["scales"]
    ax.text((x0 + x1) / 2, y + height / 2, "16 int8\nscales", ha="center", va="center",
            fontsize=6.5, linespacing=1.1)
    leader(sum(spans["d"]) / 2, y + height, "d f16", -0.3)
    ax.text(strip_x, y - 0.3, "w = (d · scales[i / 16]) · (q − 32),   q = 4 bits from ql | "
            "2 bits from qh << 4  (0 … 63)", va="center", fontsize=8.5, family="monospace")
    ax.text(strip_x, y - 0.52, "weight i = 128h + 32k + l (k < 4, l < 32): nibble k / 2 of "
            "ql[64h + 32(k % 2) + l], bits 2k and 2k+1 of qh[32h + l]", va="center",
            fontsize=7.5, color=INK)

    # The CPU's activation block.
    ax.plot([0.3, 11.7], [3.85, 3.85], color=LIGHT_GREY, linewidth=0.8)
    y = 3.05
    n_bytes, n_elements, fields = activation
    title(y, "BlockQ8", n_bytes, n_elements, "activations", "an activation")
    spans = strip(y, activation, small)
    for field, size, _ in fields:
        x0, x1 = spans[field]
        if field == "q":
            cells(x0, y, x1 - x0, 0.46, size, [str(i) for i in range(size)])
            field_name(x0, x1, y + 0.46, f"q[{size}]: int8, |q| ≤ 127")
        else:
            c_type = "float" if field == "d" else "int32"
            ax.text((x0 + x1) / 2, y + 0.23, f"{field}\n{c_type}", ha="center", va="center",
                    fontsize=7, linespacing=1.1)
    ax.text(strip_x, y - 0.3, "x[i] ≈ d · q[i],  d = max |x| / 127,  q[i] = round(x[i] / d),  "
            "sum = q[0] + … + q[31]", va="center", fontsize=8.5, family="monospace")
    ax.text(strip_x, y - 0.52, "quant_dot.h: made from each token's 32 floats at every CPU "
            "matmul; sum is what a K-quant's minimums multiply. The GPU keeps x in floats.",
            va="center", fontsize=7.5)

    # Bits a weight, to one scale: what decoding reads for each weight.
    ax.plot([0.3, 11.7], [2.1, 2.1], color=LIGHT_GREY, linewidth=0.8)
    ax.text(0.3, 1.8, "Bits a weight", fontsize=11, fontweight="bold", va="center")
    ax.text(0.3, 1.55, "to one scale: what a\ndecoded token reads\nfor each weight; past "
            "the\nblue and purple, the\nscales' and minimums'\nshare", fontsize=8, va="top",
            linespacing=1.3)
    rank = {"qs": 0, "ql": 0, "qh": 1, "d": 2, "scales": 2, "dmin": 3}
    rows = [("F16", 2, 1, [(16.0, LIGHT_GREY)])]
    for name in ("q8_0", "q6_K", "q5_0", "q4_K"):
        n_bytes, n_elements, fields = formats[name]
        parts = [(8 * size / n_elements, FIELD_FACES[field])
                 for field, size, _ in sorted(fields, key=lambda field: rank[field[0]])]
        rows.append((name.upper(), n_bytes, n_elements, parts))
    per_bit, bar_height = 0.4, 0.2
    for index, (name, n_bytes, n_elements, parts) in enumerate(rows):
        row_y = 1.6 - index * 0.3
        ax.text(strip_x - 0.08, row_y + bar_height / 2, name, ha="right", va="center",
                fontsize=8, family="monospace", fontweight="bold")
        left = strip_x
        for bits, face in parts:
            ax.add_patch(Rectangle((left, row_y), bits * per_bit, bar_height, facecolor=face,
                                   edgecolor=INK, linewidth=0.5))
            left += bits * per_bit
        total = 8 * n_bytes / n_elements
        ax.text(left + 0.1, row_y + bar_height / 2,
                f"{total:g} bits = {f'{n_bytes / n_elements:.7f}'.rstrip('0').rstrip('.')} bytes"
                + ("" if n_elements == 1 else f"  ({n_bytes} B / {n_elements})"),
                va="center", fontsize=8)
    return fig
