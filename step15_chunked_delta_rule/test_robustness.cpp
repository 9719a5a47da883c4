// Robustness of the whole GGUF parser (header, metadata, tensor directory, placement) against
// damaged files: the tiny model cut short throughout its header, metadata and tensor infos, and
// thousands of copies with random bytes of those overwritten. Each parse must either succeed
// or throw Error: no crash (run it under SANITIZE=1 too), no hang, no other exception, and no
// single allocation larger than the model file, however large a damaged length field claims
// to be. Allocations are counted by replacing the global operator new in this test binary.
// Every cut must be rejected (the tensor data is missing), and a damaged copy that parses must
// still place every tensor inside the file.
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
#include "ggml_types.h"
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
// The nothrow forms too (std::stable_sort uses them): every form must come from this malloc.
void* operator new(size_t size, const std::nothrow_t&) noexcept {
    try {
        return operator new(size);
    } catch (const std::bad_alloc&) {
        return nullptr;
    }
}
void* operator new[](size_t size, const std::nothrow_t& tag) noexcept {
    return operator new(size, tag);
}
void operator delete(void* memory, const std::nothrow_t&) noexcept { std::free(memory); }
void operator delete[](void* memory, const std::nothrow_t&) noexcept { std::free(memory); }
void operator delete(void* memory) noexcept { std::free(memory); }
void operator delete[](void* memory) noexcept { std::free(memory); }
void operator delete(void* memory, size_t) noexcept { std::free(memory); }
void operator delete[](void* memory, size_t) noexcept { std::free(memory); }

// Parses `size` bytes at `bytes`: true if they parse, false if the parser throws Error.
// Anything else thrown escapes and ends the test binary, which `make test` reports as a failure.
static bool parses(const uint8_t* bytes, uint64_t size) {
    try {
        GgufFile file = read_gguf(bytes, size);
        return true;
    } catch (const Error&) {
        return false;
    }
}

// Whether every tensor of a parsed file lies inside its `size` bytes at `bytes`, recomputed
// from the dims, type and offset rather than trusted from the parser: a damaged file that still
// parses is only harmless if reading any of its tensors stays inside the file.
static bool tensors_inside(const GgufFile& file, const uint8_t* bytes, uint64_t size) {
    if (file.alignment == 0) return false;
    for (const TensorInfo& tensor : file.tensors) {
        if (tensor.dims.empty() || tensor.offset % file.alignment != 0) return false;
        // Anything larger than the file is outside, which also keeps the product from
        // overflowing.
        uint64_t n_bytes = ggml_row_bytes(tensor.type, tensor.dims[0]);
        for (size_t d = 1; d < tensor.dims.size(); d++) {
            if (tensor.dims[d] != 0 && n_bytes > size / tensor.dims[d]) return false;
            n_bytes *= tensor.dims[d];
        }
        if (tensor.n_bytes != n_bytes) return false;
        // Written so that no sum can overflow.
        if (file.data_offset > size || tensor.offset > size - file.data_offset) return false;
        uint64_t start = file.data_offset + tensor.offset;
        if (n_bytes > size - start || tensor.data != bytes + start) return false;
    }
    return true;
}

static std::vector<uint8_t> read_whole_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    REQUIRE_MESSAGE(in, "cannot open " << path);
    return std::vector<uint8_t>(std::istreambuf_iterator<char>(in),
                                std::istreambuf_iterator<char>());
}

TEST_CASE("the tiny model cut short anywhere in its directory is rejected") {
    std::vector<uint8_t> model = read_whole_file("models/tiny-qwen2.gguf");
    // Every length from 0 to the end of the tensor infos. Each cut parses everything before
    // it, so the work grows with the square of the directory size: the cuts run in parallel.
    int64_t directory = int64_t(read_gguf(model.data(), model.size()).data_offset);
    size_t parsed = 0, rejected = 0;
    Timer timer;
    g_largest_request = 0;
    g_counting = true;
#pragma omp parallel for schedule(dynamic, 64) reduction(+ : parsed, rejected)
    for (int64_t length = 0; length <= directory; length++) {
        // A prefix is a view of the same bytes: no copy per cut.
        if (parses(model.data(), uint64_t(length))) parsed++;
        else rejected++;
    }
    g_counting = false;
    size_t largest_allocation = g_largest_request;
    std::printf(
        "robustness: %zu of %lld truncations rejected in %.0f ms; largest allocation %zu bytes\n",
        rejected, (long long)directory + 1, timer.elapsed_ms(), largest_allocation);
    CHECK(parsed == 0);  // every prefix lacks at least the tensor data
    CHECK(rejected == size_t(directory) + 1);
    CHECK(largest_allocation <= model.size());
}

TEST_CASE("the tiny model with random bytes overwritten is rejected or stays inside the file") {
    std::vector<uint8_t> model = read_whole_file("models/tiny-qwen2.gguf");
    GgufFile original = read_gguf(model.data(), model.size());
    REQUIRE(tensors_inside(original, model.data(), model.size()));
    uint64_t directory = original.data_offset;
    std::vector<uint8_t> mutant = model;
    std::mt19937_64 random(20240611);  // fixed seed: the same mutants on every run
    constexpr int kMutants = 2000;
    size_t parsed = 0, rejected = 0, outside = 0;
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
        try {
            GgufFile file = read_gguf(mutant.data(), mutant.size());
            parsed++;
            if (!tensors_inside(file, mutant.data(), mutant.size())) outside++;
        } catch (const Error&) {
            rejected++;
        }
        for (int i = 0; i < count; i++) mutant[positions[i]] = model[positions[i]];
    }
    g_counting = false;
    size_t largest_allocation = g_largest_request;
    std::printf(
        "robustness: %zu of %d mutants rejected, %zu of %zu parsed ones with a tensor "
        "outside the file, in %.0f ms; largest allocation %zu bytes\n",
        rejected, kMutants, outside, parsed, timer.elapsed_ms(), largest_allocation);
    CHECK(outside == 0);
    // Both outcomes occur, so neither the rejection nor the bounds property holds vacuously.
    CHECK(rejected > 0);
    CHECK(parsed > 0);
    CHECK(largest_allocation <= model.size());
}
