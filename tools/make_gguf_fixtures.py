#!/usr/bin/env python3
"""Writes what gguf-py's GGUFReader sees in a GGUF file as a plain-text fixture, so that the
step02/step03 checks can compare our parser with an independent one, line by line.

Run from the repository root:

    python3 tools/make_gguf_fixtures.py
        -> tests/fixtures/gguf/tiny-qwen2.txt      from models/tiny-qwen2.gguf
        -> tests/fixtures/gguf/qwen-bpe-vocab.txt  from $QWEN_TOKENIZER_DIR/qwen-bpe-vocab.gguf
                                                   (default ../shared/qwen-tokenizer)
    python3 tools/make_gguf_fixtures.py FILE.gguf OUT.txt   (any other file)

Needs gguf==0.19.0 and numpy (tools/requirements.txt). Rerun it whenever models/tiny-qwen2.gguf
changes.

Fixture format, one record per line ('#' lines are comments):

    header version=3 tensors=38 kv=25
    kv KEY TYPE VALUE
        UINT*/INT*  the number in decimal;  BOOL  0 or 1
        FLOAT32     bits=XXXXXXXX (the IEEE bits in hex, so the comparison is exact)
        FLOAT64     bits=XXXXXXXXXXXXXXXX
        STRING      bytes=N crc32=XXXXXXXX (CRC-32 of the UTF-8 bytes)
        ARRAY[T]    count=N crc32=XXXXXXXX: CRC-32 of the elements as stored in the file, i.e.
                    little-endian numbers, BOOL as one byte, a STRING as u64 length + bytes
    data alignment=A offset=O     (O: absolute start of the data section)
    tensor NAME type=ID dims=NE0,NE1,.. offset=REL bytes=N head=HEX tail=HEX
        REL: offset from the data section start; head/tail: the tensor's first and last
        (up to) 8 bytes, which show that the data is found at the right place and size.
"""

import os
import struct
import sys
import zlib
from pathlib import Path

import numpy as np
from gguf import GGUFReader, GGUFValueType

SCALAR_FORMATS = {  # struct format of each fixed-size GGUF value type
    GGUFValueType.UINT8: "<B", GGUFValueType.INT8: "<b",
    GGUFValueType.UINT16: "<H", GGUFValueType.INT16: "<h",
    GGUFValueType.UINT32: "<I", GGUFValueType.INT32: "<i",
    GGUFValueType.UINT64: "<Q", GGUFValueType.INT64: "<q",
    GGUFValueType.FLOAT32: "<f", GGUFValueType.FLOAT64: "<d",
    GGUFValueType.BOOL: "<B",
}


def scalar_bytes(part: np.ndarray, value_type: GGUFValueType) -> bytes:
    """The value as the file stores it (numpy arrays from GGUFReader are little-endian)."""
    return struct.pack(SCALAR_FORMATS[value_type], part.tolist()[0])


def describe_scalar(part: np.ndarray, value_type: GGUFValueType) -> str:
    raw = scalar_bytes(part, value_type)
    if value_type == GGUFValueType.FLOAT32:
        return "bits=%08x" % struct.unpack("<I", raw)[0]
    if value_type == GGUFValueType.FLOAT64:
        return "bits=%016x" % struct.unpack("<Q", raw)[0]
    return str(struct.unpack(SCALAR_FORMATS[value_type], raw)[0] * 1)  # BOOL -> 0 / 1


def describe_field(field) -> str:
    value_type = field.types[0]
    if value_type == GGUFValueType.STRING:
        data = field.parts[field.data[0]].tobytes()
        return "STRING bytes=%d crc32=%08x" % (len(data), zlib.crc32(data))
    if value_type != GGUFValueType.ARRAY:
        return "%s %s" % (value_type.name, describe_scalar(field.parts[field.data[0]], value_type))
    # parts: key length, key, value type, element type, count, then the elements' parts
    element_type = GGUFValueType(int(field.parts[3][0]))
    count = int(field.parts[4][0])
    assert count == len(field.data)
    if element_type == GGUFValueType.ARRAY:
        sys.exit("%s: nested arrays are not described by this script" % field.name)
    crc = 0
    for index in field.data:
        part = field.parts[index]
        if element_type == GGUFValueType.STRING:
            data = part.tobytes()
            crc = zlib.crc32(struct.pack("<Q", len(data)) + data, crc)
        else:
            crc = zlib.crc32(scalar_bytes(part, element_type), crc)
    return "ARRAY[%s] count=%d crc32=%08x" % (element_type.name, count, crc)


def write_fixture(gguf_path: Path, out_path: Path) -> None:
    reader = GGUFReader(gguf_path)
    lines = [
        "# %s - what gguf-py's GGUFReader reads from %s." % (out_path.name, gguf_path.name),
        "# Written by tools/make_gguf_fixtures.py (its docstring explains the format); do not edit.",
        "header version=%d tensors=%d kv=%d" % (
            reader.fields["GGUF.version"].parts[0][0],
            reader.fields["GGUF.tensor_count"].parts[0][0],
            reader.fields["GGUF.kv_count"].parts[0][0]),
    ]
    for field in reader.fields.values():
        if field.name.startswith("GGUF."):
            continue  # the header, already written
        lines.append("kv %s %s" % (field.name, describe_field(field)))
    lines.append("data alignment=%d offset=%d" % (reader.alignment, reader.data_offset))
    for tensor in reader.tensors:
        data = tensor.data.tobytes()
        relative_offset = int(tensor.field.parts[-1][0])
        assert relative_offset + reader.data_offset == tensor.data_offset
        lines.append("tensor %s type=%d dims=%s offset=%d bytes=%d head=%s tail=%s" % (
            tensor.name, int(tensor.tensor_type), ",".join(str(int(d)) for d in tensor.shape),
            relative_offset, tensor.n_bytes, data[:8].hex(), data[-8:].hex()))
    out_path.parent.mkdir(parents=True, exist_ok=True)
    out_path.write_text("\n".join(lines) + "\n")
    print("wrote %s (%d lines) from %s" % (out_path, len(lines), gguf_path))


def main() -> None:
    if len(sys.argv) == 3:
        write_fixture(Path(sys.argv[1]), Path(sys.argv[2]))
        return
    if len(sys.argv) != 1:
        sys.exit(__doc__)
    fixtures = Path("tests/fixtures/gguf")
    write_fixture(Path("models/tiny-qwen2.gguf"), fixtures / "tiny-qwen2.txt")
    vocab_dir = Path(os.environ.get("QWEN_TOKENIZER_DIR", "../shared/qwen-tokenizer"))
    write_fixture(vocab_dir / "qwen-bpe-vocab.gguf", fixtures / "qwen-bpe-vocab.txt")


if __name__ == "__main__":
    main()
