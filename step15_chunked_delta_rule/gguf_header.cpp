#include "gguf_header.h"

#include "error.h"

GgufHeader read_gguf_header(GgufReader& reader) {
    if (reader.file_size() < kGgufHeaderBytes)
        fail("file is too short for a GGUF header: %llu bytes, need %llu",
             (unsigned long long)reader.file_size(), (unsigned long long)kGgufHeaderBytes);

    uint8_t magic[4];
    reader.read_bytes(magic, 4, "magic");
    if (magic[0] != 'G' || magic[1] != 'G' || magic[2] != 'U' || magic[3] != 'F')
        fail("not a GGUF file: magic is %02x %02x %02x %02x, expected 47 47 55 46 (\"GGUF\")",
             magic[0], magic[1], magic[2], magic[3]);

    GgufHeader header;
    header.version = reader.read_u32("version");
    // A big-endian file stores version 3 as 00 00 00 03, which reads here as 0x03000000.
    if ((header.version & 0xffff) == 0)
        fail(
            "GGUF version 0x%08x looks byte-swapped: this is a big-endian file, and only "
            "little-endian files are supported",
            header.version);
    if (header.version == 1)
        fail("GGUF version 1 is not supported (it used 32-bit counts): re-convert the model");
    if (header.version != 2 && header.version != 3)
        fail("unsupported GGUF version %u (supported: 2 and 3)", header.version);

    header.tensor_count = reader.read_u64("tensor count");
    header.metadata_kv_count = reader.read_u64("metadata count");

    // Reject counts that cannot fit before anyone sizes an allocation by them.
    uint64_t room = reader.bytes_left();
    if (header.tensor_count > room / kMinTensorInfoBytes)
        fail(
            "tensor count %llu cannot fit in the %llu bytes after the header "
            "(each tensor info takes at least %llu bytes)",
            (unsigned long long)header.tensor_count, (unsigned long long)room,
            (unsigned long long)kMinTensorInfoBytes);
    if (header.metadata_kv_count > room / kMinMetadataPairBytes)
        fail(
            "metadata count %llu cannot fit in the %llu bytes after the header "
            "(each key/value pair takes at least %llu bytes)",
            (unsigned long long)header.metadata_kv_count, (unsigned long long)room,
            (unsigned long long)kMinMetadataPairBytes);
    if (header.tensor_count * kMinTensorInfoBytes +
            header.metadata_kv_count * kMinMetadataPairBytes >
        room)
        fail("%llu tensors and %llu metadata pairs cannot fit in the %llu bytes after the header",
             (unsigned long long)header.tensor_count, (unsigned long long)header.metadata_kv_count,
             (unsigned long long)room);
    return header;
}
