// Robustness of the whole GGUF parser (header, metadata, tensor directory, placement) against
// damaged files: the tiny model cut short throughout its header, metadata and tensor infos, and
// thousands of copies with random bytes of those overwritten. Each parse must either succeed
// or throw Error: no crash (run it under SANITIZE=1 too), no hang, no other exception, and no
// single allocation larger than the model file, however large a damaged length field claims
// to be. Allocations are counted by replacing the global operator new in this test binary.
#include <doctest/doctest.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <new>
#include <random>
#include <string>
#include <vector>

#include "error.h"
#include "gguf_tensors.h"
#include "timer.h"

static std::atomic<bool> g_counting{false};
static std::atomic<size_t> g_largest_request{0};

void* operator new(size_t size) {
    if (g_counting.load(std::memory_order_relaxed)) {
        size_t largest = g_largest_request.load(std::memory_order_relaxed);
        while (size > largest && !g_largest_request.compare_exchange_weak(largest, size)) {}
    }
    if (void* memory = std::malloc(size ? size : 1)) return memory;
    throw std::bad_alloc();
}
void* operator new[](size_t size) { return operator new(size); }
void operator delete(void* memory) noexcept { std::free(memory); }
void operator delete[](void* memory) noexcept { std::free(memory); }
void operator delete(void* memory, size_t) noexcept { std::free(memory); }
void operator delete[](void* memory, size_t) noexcept { std::free(memory); }

// The outcome of parsing many damaged copies.
struct MutantReport {
    size_t parsed = 0;    // parsed without complaint
    size_t rejected = 0;  // threw Error
    size_t largest_allocation = 0;
};

// Parses `size` bytes at `bytes`; anything thrown that is not an Error fails the check.
static void parse_one(const uint8_t* bytes, uint64_t size, MutantReport& report) {
    try {
        GgufFile file = read_gguf(bytes, size);
        report.parsed++;
    } catch (const Error&) {
        report.rejected++;
    }
}

static std::vector<uint8_t> read_whole_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    REQUIRE_MESSAGE(in, "cannot open " << path);
    return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// Bytes a value takes in the file after its type id: a string is u64 length + bytes, an array
// is element type (u32) + count (u64) + its elements.
static uint64_t stored_size(const GgufValue& value) {
    switch (value.type) {
        case GgufType::UINT8:
        case GgufType::INT8:
        case GgufType::BOOL: return 1;
        case GgufType::UINT16:
        case GgufType::INT16: return 2;
        case GgufType::UINT32:
        case GgufType::INT32:
        case GgufType::FLOAT32: return 4;
        case GgufType::UINT64:
        case GgufType::INT64:
        case GgufType::FLOAT64: return 8;
        case GgufType::STRING: return 8 + value.string_value.size();
        case GgufType::ARRAY: break;
    }
    uint64_t size = 12;
    for (const GgufValue& element : value.array) size += stored_size(element);
    return size;
}

// The lengths to cut the model to. Every length up to the end of the tensor infos, except in
// the middle of a long array: there every element is read by the same lines of code, and a cut
// at each of its bytes would make this check quadratic in the vocabulary size (each cut parses
// everything before it). So inside an array body we keep every byte of its first and last
// kEdgeBytes and one length in kInteriorStride (a prime, so the cuts fall at every position
// within the elements).
static std::vector<uint64_t> cut_lengths(const GgufFile& file) {
    constexpr uint64_t kEdgeBytes = 64;
    constexpr uint64_t kInteriorStride = 127;
    std::vector<std::pair<uint64_t, uint64_t>> interiors;  // [begin, end) of array middles
    uint64_t offset = kGgufHeaderBytes;
    for (const auto& [key, value] : file.metadata.entries()) {
        uint64_t body = offset + 8 + key.size() + 4 + 12;  // after key, type id, element type, count
        offset += 8 + key.size() + 4 + stored_size(value);
        if (value.type == GgufType::ARRAY && offset - body > 2 * kEdgeBytes)
            interiors.emplace_back(body + kEdgeBytes, offset - kEdgeBytes);
    }
    std::vector<uint64_t> lengths;
    size_t next = 0;
    for (uint64_t length = 0; length <= file.data_offset; length++) {
        while (next < interiors.size() && length >= interiors[next].second) next++;
        bool inside = next < interiors.size() && length >= interiors[next].first;
        if (!inside || (length - interiors[next].first) % kInteriorStride == 0) lengths.push_back(length);
    }
    return lengths;
}

TEST_CASE("the tiny model cut short anywhere in its directory is rejected") {
    std::vector<uint8_t> model = read_whole_file("models/tiny-qwen2.gguf");
    std::vector<uint64_t> lengths = cut_lengths(read_gguf(model.data(), model.size()));
    MutantReport report;
    Timer timer;
    g_largest_request = 0;
    g_counting = true;
    // A prefix is a view of the same bytes: no copy per mutant.
    for (uint64_t length : lengths) parse_one(model.data(), length, report);
    g_counting = false;
    report.largest_allocation = g_largest_request;
    std::printf("robustness: %zu of %zu truncations rejected in %.0f ms; largest allocation %zu bytes\n",
                report.rejected, lengths.size(), timer.elapsed_ms(), report.largest_allocation);
    CHECK(report.parsed == 0);  // every prefix lacks at least the tensor data
    CHECK(report.largest_allocation <= model.size());
}

TEST_CASE("the tiny model with random bytes overwritten is parsed or rejected") {
    std::vector<uint8_t> model = read_whole_file("models/tiny-qwen2.gguf");
    uint64_t directory = read_gguf(model.data(), model.size()).data_offset;
    std::vector<uint8_t> mutant = model;
    std::mt19937_64 random(20240611);  // fixed seed: the same mutants on every run
    constexpr int kMutants = 2000;
    MutantReport report;
    Timer timer;
    g_largest_request = 0;
    g_counting = true;
    for (int m = 0; m < kMutants; m++) {
        // Overwrite 1 to 4 bytes of the directory, then put them back after the parse.
        uint64_t positions[4];
        int count = 1 + int(random() % 4);
        for (int i = 0; i < count; i++) {
            positions[i] = random() % directory;
            mutant[positions[i]] = uint8_t(random());
        }
        parse_one(mutant.data(), mutant.size(), report);
        for (int i = 0; i < count; i++) mutant[positions[i]] = model[positions[i]];
    }
    g_counting = false;
    report.largest_allocation = g_largest_request;
    std::printf("robustness: %zu of %d mutants rejected in %.0f ms; largest allocation %zu bytes\n",
                report.rejected, kMutants, timer.elapsed_ms(), report.largest_allocation);
    CHECK(report.parsed + report.rejected == kMutants);
    CHECK(report.rejected > 0);
    CHECK(report.largest_allocation <= model.size());
}
