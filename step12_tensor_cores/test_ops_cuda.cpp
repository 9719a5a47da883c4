// Checks for ops_cuda: every kernel against its CPU twin in ops_cpu on random inputs of
// awkward sizes: lengths that are not multiples of a warp, a block, a 16-byte load or a tile
// (1, 7, 33, 4867, ...), next to the multiples the fast paths take (1536, 8960, 4872), so the
// partly used last warp, tile and chunk and every bounds check are exercised. Each output
// buffer is filled with NaN before the kernel runs, so an element it never writes fails. Each
// tolerance is stated next to its check, in the form |gpu - cpu| <= abs + rel * |cpu|.
// Without a GPU these checks skip, except the ones that fail before touching the device.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "device_buffer.h"
#include "device_kv_cache.h"
#include "ggml_types.h"
#include "half.h"
#include "ops_cpu.h"
#include "ops_cuda.h"
#include "quant_dot.h"
#include "test_gpu.h"
#include "test_random_weights.h"

static const GgmlType kWeightTypes[] = {GgmlType::F32, GgmlType::F16, GgmlType::BF16};

// Every type the kernels read.
static const GgmlType kAllWeightTypes[] = {GgmlType::F32,  GgmlType::F16,  GgmlType::BF16,
                                           GgmlType::Q8_0, GgmlType::Q5_0, GgmlType::Q4_K,
                                           GgmlType::Q6_K};

// The CPU twin of a decode kernel's product (step 11): for a block type the 8-bit path,
// matmul_q8, whose BlockQ8 bits and integer sums the GPU's quantize_q8 and dp4a reproduce;
// for the others step 5's matmul.
static void decode_matmul(float* out, const float* x, const std::vector<uint8_t>& w, GgmlType type,
                          int in_dim, int out_dim) {
    if (ggml_type_info(uint32_t(type)).block_size > 1)
        matmul_q8(out, x, w.data(), uint32_t(type), 1, in_dim, out_dim, best_dot_kernel());
    else matmul(out, x, w.data(), uint32_t(type), 1, in_dim, out_dim);
}

// Scratch for an input of n values rounded to 8 bits.
static DeviceQ8Vector q8_scratch(int n) {
    DeviceQ8Vector scratch;
    scratch.resize((n + kQ8BlockSize - 1) / kQ8BlockSize * kQ8BlockSize);
    return scratch;
}

// ---- Step 11: the KV cache's two types (CacheType, ops_cuda.h) ----

static const CacheType kCacheTypes[] = {CacheType::F32, CacheType::F16};

static GgmlType ggml_type_of(CacheType cache_type) {
    return cache_type == CacheType::F16 ? GgmlType::F16 : GgmlType::F32;
}

// Keys or values as a cache of cache_type holds them, in place: an F16 cache rounds each to
// the nearest half (half.h), and the CPU twin is given the very values the GPU reads.
static void round_to_cache(std::vector<float>& values, CacheType cache_type) {
    if (cache_type == CacheType::F16)
        for (float& value : values) value = f16_to_f32(f32_to_f16(value));
}

// The values of a cache's bytes, as floats.
static std::vector<float> cache_values(const std::vector<uint8_t>& bytes, CacheType cache_type) {
    std::vector<float> values(bytes.size() / cache_value_bytes(cache_type));
    for (size_t i = 0; i < values.size(); i++) {
        if (cache_type == CacheType::F16)
            values[i] = f16_to_f32(uint16_t(bytes[2 * i] | bytes[2 * i + 1] << 8));
        else std::memcpy(&values[i], &bytes[4 * i], 4);
    }
    return values;
}

// n NaNs of the cache's type on the device: a cache whose every row fails until written.
static DeviceBuffer<uint8_t> poisoned_cache(size_t n, CacheType cache_type) {
    return DeviceBuffer<uint8_t>(encode(
        std::vector<float>(n, std::numeric_limits<float>::quiet_NaN()), ggml_type_of(cache_type)));
}

TEST_CASE("gpu::embedding copies the same rows as embedding") {
    if (!gpu_or_skip()) return;
    const int n_vocab = 1000;
    for (int dim : {1, 7, 33, 1000}) {
        for (GgmlType type : kWeightTypes) {
            CAPTURE(dim);
            CAPTURE(ggml_type_info(uint32_t(type)).name);
            std::vector<uint8_t> table = encode(random_values(size_t(n_vocab) * dim, dim), type);
            std::vector<int32_t> ids = {999, 0, 7, 7, 33, 500, 1};  // (7) a repeat, both ends
            const int n = int(ids.size());
            std::vector<float> expected(size_t(n) * dim);
            embedding(expected.data(), table.data(), uint32_t(type), ids.data(), n, dim);

            DeviceBuffer<uint8_t> device_table(table);
            DeviceBuffer<int32_t> device_ids(ids);
            DeviceBuffer<float> out(size_t(n) * dim);
            gpu::embedding(out.data(), device_table.data(), uint32_t(type), device_ids.data(), n,
                           dim);
            // Both turn the same 2- or 4-byte numbers into float: exactly equal.
            check_close(out.download(), expected, {0.0, 0.0}, dim);
        }
        for (GgmlType type : kBlockTypes) {  // step 11: rows of blocks
            const int block_dim = dim == 1000 ? 1024 : 32 * dim;
            if (!whole_blocks(type, block_dim)) continue;
            CAPTURE(block_dim);
            CAPTURE(ggml_type_info(uint32_t(type)).name);
            std::vector<uint8_t> table = random_blocks(type, n_vocab, block_dim, 1.0f, dim);
            std::vector<int32_t> ids = {999, 0, 7, 7, 33, 500, 1};
            const int n = int(ids.size());
            std::vector<float> expected(size_t(n) * block_dim);
            embedding(expected.data(), table.data(), uint32_t(type), ids.data(), n, block_dim);
            DeviceBuffer<uint8_t> device_table(table);
            DeviceBuffer<int32_t> device_ids(ids);
            DeviceBuffer<float> out = poisoned(expected.size());
            gpu::embedding(out.data(), device_table.data(), uint32_t(type), device_ids.data(), n,
                           block_dim);
            // (d * scale) * q - m on both sides; the GPU may fuse the last multiply and
            // subtraction (Q4_K), one rounding fewer: 1e-6 of a weight of order 1 covers it,
            // a misread quant moves a weight by 1/16 of its range or more.
            check_close(out.download(), expected, {1e-6, 1e-6}, block_dim);
        }
    }
}

TEST_CASE("gpu::rmsnorm equals rmsnorm") {
    if (!gpu_or_skip()) return;
    const int shapes[][2] = {{1, 7},    {7, 33},   {33, 1000}, {3, 4867},
                             {1, 1536}, {2, 3584}, {1000, 1},  {1, 100000}};
    for (const auto& shape : shapes) {
        const int n_tokens = shape[0], dim = shape[1];
        CAPTURE(n_tokens);
        CAPTURE(dim);
        std::vector<float> x = random_values(size_t(n_tokens) * dim, 1, -3.0f, 3.0f);
        std::vector<float> weight = random_values(dim, 2, 0.5f, 1.5f);
        std::vector<float> expected(x.size());
        rmsnorm(expected.data(), x.data(), weight.data(), n_tokens, dim, 1e-6f);

        DeviceBuffer<float> device_x(x), device_weight(weight);
        DeviceBuffer<float> out = poisoned(x.size());
        gpu::rmsnorm(out.data(), device_x.data(), device_weight.data(), n_tokens, dim, 1e-6f);
        // The CPU adds the squares in double, the GPU in float, as 256 partial sums and a
        // tree: a relative error of at most ~log2(dim) float roundings, 17 * 6e-8 = 1e-6 at
        // 100000, halved by the square root. Then the same float products. 2e-6 relative is
        // above that and far below a dropped element (1/dim of the sum, 1e-5 at 100000).
        check_close(out.download(), expected, {1e-6, 2e-6}, dim);

        gpu::rmsnorm(device_x.data(), device_x.data(), device_weight.data(), n_tokens, dim, 1e-6f);
        CHECK(device_x.download() == out.download());  // in place gives the same
    }
}

TEST_CASE("gpu::matmul equals matmul for F32, F16 and BF16 weights") {
    if (!gpu_or_skip()) return;
    // (n_tokens, in_dim, out_dim). One token takes matvec_kernel: rows of 8 (one 16-byte piece),
    // 1536 and 4872 (a warp a row; 4872 F32 weights are 1218 pieces, split among 4 warps), 8960
    // (1120 F16 pieces: split) and lengths no load width divides (the one-element loop). More
    // tokens take tiled_gemm_kernel: 2 to 513 tokens, edges of the 64 x 64 tiles and of the
    // 16-deep k steps on every side.
    const int shapes[][3] = {{1, 7, 33},    {1, 8, 7},       {1, 4867, 33}, {1, 1536, 4867},
                             {1, 4872, 97}, {1, 8960, 65},   {1, 1, 1},     {7, 33, 1000},
                             {33, 1000, 7}, {5, 1536, 4867}, {2, 16, 64},   {64, 64, 64},
                             {65, 17, 129}, {513, 96, 200},  {17, 8960, 33}};
    for (const auto& shape : shapes) {
        const int n_tokens = shape[0], in_dim = shape[1], out_dim = shape[2];
        for (GgmlType type : kWeightTypes) {
            // Step 12: more tokens of F16 or BF16 run on the tensor cores, with x rounded to
            // 16 bits: test_tensor_cores.cpp holds them to the CPU within that rounding.
            if (n_tokens > 1 && type != GgmlType::F32) continue;
            CAPTURE(n_tokens);
            CAPTURE(in_dim);
            CAPTURE(out_dim);
            CAPTURE(ggml_type_info(uint32_t(type)).name);
            std::vector<float> x = random_values(size_t(n_tokens) * in_dim, 3);
            // W scaled by 1/sqrt(in_dim) so that every output is of order 1 at any size.
            const float scale = 1.0f / std::sqrt(float(in_dim));
            std::vector<uint8_t> w =
                encode(random_values(size_t(out_dim) * in_dim, 4, -scale, scale), type);
            std::vector<float> expected(size_t(n_tokens) * out_dim);
            matmul(expected.data(), x.data(), w.data(), uint32_t(type), n_tokens, in_dim, out_dim);

            DeviceBuffer<float> device_x(x);
            DeviceBuffer<float> out = poisoned(expected.size());
            DeviceBuffer<uint8_t> device_w(w);
            gpu::matmul(out.data(), device_x.data(), device_w.data(), uint32_t(type), n_tokens,
                        in_dim, out_dim);
            // Both add the same float products, in different orders (SIMD lanes on the CPU,
            // 32 lanes and a shuffle tree or one multiply-add chain per output on the GPU).
            // For sums of order 1 the two roundings drift apart by about sqrt(in_dim) * 6e-8,
            // 6e-6 at 8960; 1e-4 leaves room for that, while a wrong index or a dropped term
            // would be off by ~0.01 to 1.
            check_close(out.download(), expected, {1e-4, 1e-4}, out_dim);
        }
    }
}

TEST_CASE("gpu::matmul reads Q8_0, Q5_0, Q4_K and Q6_K blocks as dequantize() does") {
    if (!gpu_or_skip()) return;
    // (n_tokens, in_dim, out_dim). One token: rows of 1 to 35 blocks of 256 (8960 is split over
    // 4 warps), and of 32-weight blocks, 3 to 28 of them (896: the 0.5B model's rows). (Step
    // 12: more tokens run on the tensor cores, checked in test_tensor_cores.cpp.)
    const int shapes[][3] = {
        {1, 256, 33}, {1, 1536, 4867}, {1, 8960, 65}, {1, 96, 7}, {1, 896, 130}};
    for (const auto& shape : shapes) {
        const int n_tokens = shape[0], in_dim = shape[1], out_dim = shape[2];
        for (GgmlType type : kBlockTypes) {
            if (!whole_blocks(type, in_dim)) continue;
            CAPTURE(n_tokens);
            CAPTURE(in_dim);
            CAPTURE(out_dim);
            CAPTURE(ggml_type_info(uint32_t(type)).name);
            std::vector<float> x = random_values(size_t(n_tokens) * in_dim, 3);
            std::vector<uint8_t> w = random_weights(type, out_dim, in_dim, 4);
            std::vector<float> expected(size_t(n_tokens) * out_dim);
            matmul(expected.data(), x.data(), w.data(), uint32_t(type), n_tokens, in_dim, out_dim);

            DeviceBuffer<float> device_x(x);
            DeviceBuffer<float> out = poisoned(expected.size());
            DeviceBuffer<uint8_t> device_w(w);
            gpu::matmul(out.data(), device_x.data(), device_w.data(), uint32_t(type), n_tokens,
                        in_dim, out_dim);
            // The F16 case's tolerance and reasons: both sides turn the blocks into the same
            // floats (the GPU may fuse (d * scale) * q - m into one multiply-add, 1 rounding
            // fewer, ~6e-8 of a weight) and add the same products in different orders. A
            // misread nibble, scale or 5th bit moves a weight by a sixteenth of its range or
            // more: ~1e-2 of an output.
            check_close(out.download(), expected, {1e-4, 1e-4}, out_dim);
        }
    }
}

TEST_CASE("gpu::add_bias and gpu::residual_add equal add_bias and residual_add") {
    if (!gpu_or_skip()) return;
    const int shapes[][2] = {{1, 7}, {7, 33}, {33, 1000}, {1, 4867}};
    for (const auto& shape : shapes) {
        const int n_tokens = shape[0], dim = shape[1];
        CAPTURE(n_tokens);
        CAPTURE(dim);
        std::vector<float> x = random_values(size_t(n_tokens) * dim, 5);
        std::vector<float> bias = random_values(dim, 6);
        std::vector<float> delta = random_values(x.size(), 7);
        std::vector<float> expected = x;
        add_bias(expected.data(), bias.data(), n_tokens, dim);
        residual_add(expected.data(), delta.data(), int64_t(expected.size()));

        DeviceBuffer<float> device_x(x), device_bias(bias), device_delta(delta);
        gpu::add_bias(device_x.data(), device_bias.data(), n_tokens, dim);
        gpu::residual_add(device_x.data(), device_delta.data(), int64_t(x.size()));
        // One float addition per element on either side: exactly equal.
        check_close(device_x.download(), expected, {0.0, 0.0}, dim);
    }
}

TEST_CASE("gpu::rope equals rope, also at positions past 30000") {
    if (!gpu_or_skip()) return;
    const int shapes[][3] = {{1, 2, 64}, {7, 3, 6}, {33, 12, 128}, {5, 1, 2}};
    for (const auto& shape : shapes) {
        const int n_tokens = shape[0], n_heads = shape[1], head_dim = shape[2];
        for (int first_position : {0, 1, 1000, 30000, 32760}) {
            CAPTURE(n_tokens);
            CAPTURE(n_heads);
            CAPTURE(head_dim);
            CAPTURE(first_position);
            std::vector<float> x = random_values(size_t(n_tokens) * n_heads * head_dim, 8);
            std::vector<float> expected = x;
            rope(expected.data(), n_tokens, n_heads, head_dim, first_position, 1e6f);

            DeviceBuffer<float> device_x(x);
            gpu::rope(device_x.data(), n_tokens, n_heads, head_dim, first_position, 1e6f);
            // Both compute the angle in double and round cos and sin to float, so at any
            // position they rotate by the same float cos/sin (a float angle would already be
            // ~0.002 rad off at 30000). What remains: the GPU may fuse a*c - b*s into one
            // multiply-add, a few float ulps on values of order 1.
            check_close(device_x.download(), expected, {1e-6, 1e-5}, n_heads * head_dim);
        }
    }
}

// n_tokens new queries at first_position.. over the cached positions, GPU against CPU; the
// inputs are drawn with seeds seed, seed + 1, seed + 2. With an F16 cache (step 11) the CPU
// reads the keys and values rounded to half, as the GPU does.
static void check_attention(int n_tokens, int first_position, int n_heads, int n_kv_heads,
                            int head_dim, uint32_t seed, CacheType cache_type = CacheType::F32) {
    CAPTURE(n_tokens);
    CAPTURE(first_position);
    CAPTURE(n_heads);
    CAPTURE(n_kv_heads);
    CAPTURE(head_dim);
    CAPTURE(int(cache_type));
    const size_t q_size = size_t(n_tokens) * n_heads * head_dim;
    const size_t kv_size = size_t(first_position + n_tokens) * n_kv_heads * head_dim;
    std::vector<float> q = random_values(q_size, seed, -2.0f, 2.0f);
    std::vector<float> k = random_values(kv_size, seed + 1, -2.0f, 2.0f);
    std::vector<float> v = random_values(kv_size, seed + 2);
    round_to_cache(k, cache_type);
    round_to_cache(v, cache_type);
    std::vector<float> expected(q_size);
    attention(expected.data(), q.data(), k.data(), v.data(), n_tokens, first_position, n_heads,
              n_kv_heads, head_dim);

    DeviceBuffer<float> device_q(q);
    DeviceBuffer<uint8_t> device_k(encode(k, ggml_type_of(cache_type)));
    DeviceBuffer<uint8_t> device_v(encode(v, ggml_type_of(cache_type)));
    DeviceBuffer<float> out = poisoned(q_size);
    gpu::attention(out.data(), device_q.data(), device_k.data(), device_v.data(), n_tokens,
                   first_position, n_heads, n_kv_heads, head_dim, cache_type);
    // Scores are float dot products added in different orders (~1e-7 apart), exp() is within
    // 2 ulps on the GPU, and each output is a weighted average of values in [-1, 1]. The
    // online softmax rescales by exp(m_old - m_new) (from key tile to key tile, and from chunk
    // to chunk in a decode step): one more rounding per weight, ~1e-7 relative. 1e-5 + 1e-4
    // relative is well above those roundings and far below the error of a wrong head or mask,
    // or of a lost chunk (1/n_chunks of the weights).
    check_close(out.download(), expected, {1e-5, 1e-4}, n_heads * head_dim);
}

TEST_CASE("gpu::attention equals attention: causal mask, softmax, grouped-query heads, cache") {
    if (!gpu_or_skip()) return;
    // (n_tokens, n_heads, n_kv_heads, head_dim, first_position): a prefill from position 0,
    // then new tokens over cached positions, down to one query over 1000 (a decode step).
    // A prompt takes prefill_attention_kernel (tiles of 16 queries and 32 keys: 2, 15, 16, 17,
    // 33 tokens cut them every way); one token the split kernel and its merge.
    const int shapes[][5] = {{1, 1, 1, 7, 0},     {7, 4, 2, 6, 0},      {33, 12, 2, 128, 0},
                             {1000, 2, 1, 64, 0}, {40, 6, 6, 33, 0},    {1, 14, 2, 64, 0},
                             {7, 4, 2, 64, 33},   {1, 12, 2, 128, 999}, {2, 14, 2, 64, 0},
                             {15, 28, 4, 128, 0}, {16, 12, 2, 128, 5},  {17, 3, 1, 100, 300},
                             {1, 3, 1, 100, 300}, {1, 16, 2, 128, 40}};
    for (const auto& shape : shapes)
        check_attention(shape[0], shape[4], shape[1], shape[2], shape[3], 9);
}

// One new token's attention over n_positions cached ones (a decode step).
static void check_decode_attention(int n_positions, int n_heads, int n_kv_heads, int head_dim) {
    check_attention(1, n_positions - 1, n_heads, n_kv_heads, head_dim, 20);
}

TEST_CASE("split decode attention equals attention from 1 to 4097 cached positions") {
    if (!gpu_or_skip()) return;
    // (n_heads, n_kv_heads, head_dim): Qwen2.5-1.5B, 0.5B and 7B heads, and an awkward one.
    const int heads[][3] = {{12, 2, 128}, {14, 2, 64}, {28, 4, 128}, {6, 2, 33}};
    // 31-33 and 255-257 straddle a pass of 32 positions and a chunk; at 4097 the 7B's heads
    // (4 KV heads, so fewer chunks) make chunks of several passes on any GPU.
    for (int n_positions : {1, 2, 31, 32, 33, 255, 256, 257, 4097})
        for (const auto& shape : heads)
            check_decode_attention(n_positions, shape[0], shape[1], shape[2]);
}

TEST_CASE("gpu::attention over an F16 cache equals attention on the keys and values as halves") {
    if (!gpu_or_skip()) return;
    // Both read the same halves, so the float path's tolerance holds (check_attention). Heads
    // of 64 and 128 (0.5B, 1.5B) at lengths that straddle a key tile, a pass and a chunk: a
    // prompt of that many tokens (prefill_attention_kernel; 1 is the split kernel), one token
    // over that many positions (the split kernel and its merge), and 7 tokens after them.
    for (int head_dim : {64, 128})
        for (int length : {1, 33, 257, 1000}) {
            const int n_heads = head_dim == 64 ? 14 : 12;
            check_attention(length, 0, n_heads, 2, head_dim, 40, CacheType::F16);
            check_attention(1, length - 1, n_heads, 2, head_dim, 43, CacheType::F16);
            check_attention(7, length, n_heads, 2, head_dim, 46, CacheType::F16);
        }
    check_attention(1, 4096, 28, 4, 128, 49, CacheType::F16);  // 7B heads, chunks of passes
}

TEST_CASE("split decode attention equals attention at 32768 cached positions") {
    if (!gpu_or_skip()) return;
    // Qwen2.5's full context: chunks of many passes, the online softmax carried through them.
    check_decode_attention(32768, 12, 2, 128);
}

TEST_CASE("gpu::attention refuses heads its kernels cannot hold, in one line") {
    if (!gpu_code_or_skip()) return;
    CHECK_THROWS_WITH_AS(gpu::attention(nullptr, nullptr, nullptr, nullptr, 1, 0, 2, 1, 129),
                         "gpu::attention handles heads of up to 128 values, not 129", Error);
    CHECK_THROWS_WITH_AS(gpu::attention(nullptr, nullptr, nullptr, nullptr, 4, 0, 18, 2, 64),
                         "gpu::attention handles up to 8 query heads per key/value head, not 9",
                         Error);
    // An F16 cache is read 4 halves at a time (cache_elements.cuh).
    CHECK_THROWS_WITH_AS(
        gpu::attention(nullptr, nullptr, nullptr, nullptr, 1, 0, 2, 1, 6, CacheType::F16),
        "gpu::attention reads an F16 cache in heads of a multiple of 4 values, not 6", Error);
}

TEST_CASE("gpu::swiglu equals swiglu, also in place") {
    if (!gpu_or_skip()) return;
    for (int n : {1, 7, 33, 4867, 100000}) {
        CAPTURE(n);
        std::vector<float> gate = random_values(n, 12, -20.0f, 20.0f);
        std::vector<float> up = random_values(n, 13);
        std::vector<float> expected(n);
        swiglu(expected.data(), gate.data(), up.data(), n);

        DeviceBuffer<float> device_gate(gate), device_up(up);
        gpu::swiglu(device_gate.data(), device_gate.data(), device_up.data(), n);
        // CUDA's expf is within 2 ulps of the CPU's; one division and one product follow.
        check_close(device_gate.download(), expected, {1e-7, 1e-6});
    }
}

TEST_CASE("gpu::argmax finds the first largest value as argmax does, NaNs too") {
    if (!gpu_or_skip()) return;
    for (int n : {1, 7, 33, 1000, 4867, 151936}) {
        CAPTURE(n);
        std::vector<float> x = random_values(n, 14, -30.0f, 30.0f);
        DeviceBuffer<float> device_x(x);
        CHECK(gpu::argmax(device_x.data(), n) == argmax(x.data(), n));
        // A tie between values that different blocks and warps see: the first one wins.
        x[n - 1] = 100.0f;
        x[n / 3] = 100.0f;
        device_x.upload(x);
        CHECK(gpu::argmax(device_x.data(), n) == n / 3);
    }
    const float inf = std::numeric_limits<float>::infinity();
    const float nan = std::numeric_limits<float>::quiet_NaN();
    const std::vector<std::vector<float>> cases = {
        {2.0f, 5.0f, 1.0f, 5.0f, 5.0f},  // a tie: the first one wins
        {-3.0f, -1.5f, -7.0f, -1.5f},    // negative values only
        {-inf, -inf, -1e30f, -inf},      // masked values
        {0.0f, 0.0f, 0.0f},              // all equal: index 0
        {1.0f, 3.0f, inf, 2.0f, inf},
        {nan, 5.0f, 7.0f},             // a NaN first: argmax() never leaves it
        {1.0f, nan, 7.0f, nan, 7.0f},  // NaNs later are never chosen
        {nan, nan, nan},
    };
    for (const std::vector<float>& x : cases) {
        CAPTURE(x.size());
        DeviceBuffer<float> device_x(x);
        CHECK(gpu::argmax(device_x.data(), int(x.size())) == argmax(x.data(), int(x.size())));
    }
}

TEST_CASE("a kernel handed a type it cannot read fails before launching") {
    if (!gpu_code_or_skip()) return;
    CHECK_THROWS_WITH_AS(gpu::matmul(nullptr, nullptr, nullptr, uint32_t(GgmlType::Q4_0), 1, 32, 1),
                         "gpu::matmul reads F32, F16, BF16, Q8_0, Q5_0, Q4_K or Q6_K weights, "
                         "not Q4_0",
                         Error);
    CHECK_THROWS_WITH_AS(
        gpu::embedding(nullptr, nullptr, uint32_t(GgmlType::Q5_K), nullptr, 1, 256),
        "gpu::embedding reads F32, F16, BF16, Q8_0, Q5_0, Q4_K or Q6_K weights, not Q5_K", Error);
}

// With a GPU the allocation is too large; without one there is no device to allocate on (and
// in a build without GPU code there is no cudaMalloc to name).
// Either way the message names the call and where it was made (the file's path starts with
// the step's directory, which later steps change, so only its name is checked).
TEST_CASE("a failing CUDA call becomes an Error that names the call, file and line") {
    if (!gpu_code_or_skip()) return;
    CHECK_THROWS_WITH_AS(DeviceBuffer<uint8_t>(size_t(1) << 52),
                         doctest::Contains("CUDA error: cudaMalloc(&pointer, bytes) failed at "),
                         Error);
    CHECK_THROWS_WITH_AS(DeviceBuffer<uint8_t>(size_t(1) << 52),
                         doctest::Contains("/device_buffer.cu:"), Error);
}

// ---- Step 10: each fused kernel against the composition of the CPU twins it replaces ----

// The slots of a decode step: the token and its position, on the device.
static DeviceBuffer<int32_t> slots_at(int32_t token, int32_t position) {
    return DeviceBuffer<int32_t>(std::vector<int32_t>{token, position});
}
static gpu::DecodeSlots* as_slots(DeviceBuffer<int32_t>& slots) {
    return reinterpret_cast<gpu::DecodeSlots*>(slots.data());
}

// Rows [first, first + n) of a (rows, dim) buffer.
static std::vector<float> rows_of(const std::vector<float>& values, int first, int n, int dim) {
    return std::vector<float>(values.begin() + int64_t(first) * dim,
                              values.begin() + int64_t(first + n) * dim);
}

static bool all_nan(const std::vector<float>& values) {
    for (float value : values)
        if (!std::isnan(value)) return false;
    return true;
}

// A (rows, cols) matrix of weights scaled by 1/sqrt(cols), so each product is of order 1.
static std::vector<float> random_matrix(int rows, int cols, uint32_t seed) {
    const float scale = 1.0f / std::sqrt(float(cols));
    return random_values(size_t(rows) * cols, seed, -scale, scale);
}

TEST_CASE("qkv_rope_cache equals rmsnorm, the Q/K/V matmuls, add_bias and rope") {
    if (!gpu_or_skip()) return;
    // (d_model, n_heads, n_kv_heads, head_dim, position): the tiny model, 0.5B, 1.5B and 7B
    // heads, and d_model 100, which no F16 load of 8 divides (the one-element loop).
    const int shapes[][5] = {{256, 4, 2, 64, 0},
                             {896, 14, 2, 64, 37},
                             {1536, 12, 2, 128, 4095},
                             {3584, 28, 4, 128, 30000},
                             {100, 6, 2, 32, 1000}};
    // All three of one type (one launch), the tiny model's mix (one launch per matrix), and
    // step 11's blocks: Q4_K_M files' Q4_K Q and K with a Q6_K V and the 0.5B's Q5_0 with a
    // Q8_0 V (one launch of two types), Q8_0 files, and a V no published file pairs with Q4_K
    // (a launch a matrix).
    const GgmlType type_sets[][3] = {{GgmlType::F32, GgmlType::F32, GgmlType::F32},
                                     {GgmlType::F16, GgmlType::F16, GgmlType::F16},
                                     {GgmlType::BF16, GgmlType::BF16, GgmlType::BF16},
                                     {GgmlType::F16, GgmlType::F16, GgmlType::BF16},
                                     {GgmlType::Q4_K, GgmlType::Q4_K, GgmlType::Q6_K},
                                     {GgmlType::Q5_0, GgmlType::Q5_0, GgmlType::Q8_0},
                                     {GgmlType::Q8_0, GgmlType::Q8_0, GgmlType::Q8_0},
                                     {GgmlType::Q6_K, GgmlType::F16, GgmlType::Q4_K},
                                     {GgmlType::Q4_K, GgmlType::Q4_K, GgmlType::Q5_0}};
    const float eps = 1e-6f, base = 1e6f;
    // Step 11: into a cache of each type.
    for (CacheType cache_type : kCacheTypes) {
        for (const auto& shape : shapes) {
            for (const auto& types : type_sets) {
                const int d = shape[0], position = shape[4];
                if (!whole_blocks(types[0], d) || !whole_blocks(types[1], d) ||
                    !whole_blocks(types[2], d))
                    continue;
                const gpu::HeadShape heads{shape[1], shape[2], shape[3]};
                const int q_dim = heads.n_heads * heads.head_dim;
                const int kv_dim = heads.n_kv_heads * heads.head_dim;
                CAPTURE(d);
                CAPTURE(heads.n_heads);
                CAPTURE(heads.head_dim);
                CAPTURE(position);
                CAPTURE(ggml_type_info(uint32_t(types[2])).name);
                CAPTURE(int(cache_type));
                std::vector<float> x = random_values(d, 20, -2.0f, 2.0f);
                std::vector<float> norm = random_values(d, 21, 0.5f, 1.5f);
                std::vector<uint8_t> wq = random_weights(types[0], q_dim, d, 22);
                std::vector<uint8_t> wk = random_weights(types[1], kv_dim, d, 23);
                std::vector<uint8_t> wv = random_weights(types[2], kv_dim, d, 24);
                std::vector<float> bq = random_values(q_dim, 25), bk = random_values(kv_dim, 26);
                std::vector<float> bv = random_values(kv_dim, 27);

                // The CPU: step 9's sequence of operators.
                std::vector<float> h(d), q(q_dim), k(kv_dim), v(kv_dim);
                rmsnorm(h.data(), x.data(), norm.data(), 1, d, eps);
                decode_matmul(q.data(), h.data(), wq, types[0], d, q_dim);
                decode_matmul(k.data(), h.data(), wk, types[1], d, kv_dim);
                decode_matmul(v.data(), h.data(), wv, types[2], d, kv_dim);
                add_bias(q.data(), bq.data(), 1, q_dim);
                add_bias(k.data(), bk.data(), 1, kv_dim);
                add_bias(v.data(), bv.data(), 1, kv_dim);
                rope(q.data(), 1, heads.n_heads, heads.head_dim, position, base);
                rope(k.data(), 1, heads.n_kv_heads, heads.head_dim, position, base);

                // The GPU, into a cache whose every row starts as NaN.
                const int capacity = position + 2;
                DeviceBuffer<float> device_x(x), device_norm(norm), device_bq(bq), device_bk(bk),
                    device_bv(bv);
                DeviceBuffer<uint8_t> device_wq(wq), device_wk(wk), device_wv(wv);
                DeviceBuffer<float> out_q = poisoned(q_dim);
                DeviceBuffer<uint8_t> k_cache =
                    poisoned_cache(size_t(capacity) * kv_dim, cache_type);
                DeviceBuffer<uint8_t> v_cache =
                    poisoned_cache(size_t(capacity) * kv_dim, cache_type);
                DeviceBuffer<int32_t> slots = slots_at(0, position);
                const gpu::QkvWeights w{device_wq.data(),   device_wk.data(),   device_wv.data(),
                                        device_bq.data(),   device_bk.data(),   device_bv.data(),
                                        uint32_t(types[0]), uint32_t(types[1]), uint32_t(types[2])};
                DeviceQ8Vector x_q8 = q8_scratch(d);
                gpu::qkv_rope_cache(out_q.data(), k_cache.data(), v_cache.data(), cache_type,
                                    device_x.data(), device_norm.data(), eps, w, d, heads, base,
                                    as_slots(slots), x_q8.view(), false, nullptr);
                // The CPU rounds h = x * g / rms once and then adds the products; the GPU adds
                // w * (x * g) and scales the sum by 1/rms (with the squares summed in float,
                // ~1e-6 relative). Sums of order 1 over up to 3584 terms: roundings of about
                // sqrt(3584) * 6e-8 = 4e-6; the rotation adds a few ulps. 1e-4 + 1e-4 relative, as
                // for matmul: a wrong row, bias, angle or pair is off by ~0.01 to 1. A block type's
                // products are the CPU's 8-bit ones (decode_matmul): the same integer sums, so the
                // same float-order argument.
                check_close(out_q.download(), q, {1e-4, 1e-4}, heads.head_dim);
                // An F16 cache row holds the GPU's value rounded to the nearest half, at most
                // 2^-11 = 4.9e-4 of it away: 1e-3 relative covers that on top of the float
                // tolerance, and a wrong row, pair or bias is still off by far more.
                const Tolerance row_tolerance =
                    cache_type == CacheType::F16 ? Tolerance{1e-4, 1e-3} : Tolerance{1e-4, 1e-4};
                const std::vector<float> keys = cache_values(k_cache.download(), cache_type);
                const std::vector<float> values = cache_values(v_cache.download(), cache_type);
                check_close(rows_of(keys, position, 1, kv_dim), k, row_tolerance, heads.head_dim);
                check_close(rows_of(values, position, 1, kv_dim), v, row_tolerance, heads.head_dim);
                // Only the position's rows are written.
                CHECK(all_nan(rows_of(keys, position + 1, 1, kv_dim)));
                CHECK(all_nan(rows_of(values, 0, position, kv_dim)));
            }
        }
    }
}

// decode_attention with a grid and scratch for `capacity` positions, at each position of
// `positions` in turn (the same scratch reused, as a graph reuses it), against attention().
// The cache rows after the query's position are NaN: reading one would show. Step 11: from a
// cache of cache_type, the CPU given the same values (check_attention).
static void check_decode_attention_at(int capacity, std::vector<int> positions,
                                      gpu::HeadShape heads, CacheType cache_type = CacheType::F32) {
    const int kv_dim = heads.n_kv_heads * heads.head_dim, q_dim = heads.n_heads * heads.head_dim;
    std::vector<float> k = random_values(size_t(capacity) * kv_dim, 30, -2.0f, 2.0f);
    std::vector<float> v = random_values(size_t(capacity) * kv_dim, 31);
    round_to_cache(k, cache_type);
    round_to_cache(v, cache_type);
    DeviceBuffer<float> scratch(size_t(gpu::decode_attention_scratch(capacity, heads)));
    for (int position : positions) {
        CAPTURE(capacity);
        CAPTURE(position);
        CAPTURE(heads.n_heads);
        CAPTURE(heads.n_kv_heads);
        CAPTURE(heads.head_dim);
        CAPTURE(int(cache_type));
        std::vector<float> q = random_values(q_dim, 32 + position, -2.0f, 2.0f);
        std::vector<float> expected(q_dim);
        attention(expected.data(), q.data(), k.data(), v.data(), 1, position, heads.n_heads,
                  heads.n_kv_heads, heads.head_dim);
        std::vector<float> k_rows = k, v_rows = v;
        for (size_t i = size_t(position + 1) * kv_dim; i < k_rows.size(); i++)
            k_rows[i] = v_rows[i] = std::numeric_limits<float>::quiet_NaN();
        DeviceBuffer<float> device_q(q);
        DeviceBuffer<uint8_t> device_k(encode(k_rows, ggml_type_of(cache_type)));
        DeviceBuffer<uint8_t> device_v(encode(v_rows, ggml_type_of(cache_type)));
        DeviceBuffer<float> out = poisoned(q_dim);
        DeviceBuffer<int32_t> slots = slots_at(0, position);
        // Step 11: the output's 8-bit blocks too, when the head is whole blocks of 32.
        const bool whole = heads.head_dim % kQ8BlockSize == 0;
        DeviceQ8Vector out_q8 = q8_scratch(q_dim);
        gpu::decode_attention(out.data(), device_q.data(), device_k.data(), device_v.data(),
                              cache_type, scratch.data(), capacity, heads, as_slots(slots),
                              whole ? out_q8.view() : Q8Vector{}, nullptr);
        // attention()'s tolerance and reasons (check_attention above): the same kernels.
        const std::vector<float> gpu_out = out.download();
        check_close(gpu_out, expected, {1e-5, 1e-4}, q_dim);
        if (whole) {  // quantize_row_q8 of the very floats written: the same bytes
            std::vector<BlockQ8> blocks(q_dim / kQ8BlockSize);
            quantize_row_q8(gpu_out.data(), blocks.data(), q_dim);
            const std::vector<BlockQ8> written = out_q8.download(q_dim);
            CHECK(std::memcmp(written.data(), blocks.data(), blocks.size() * sizeof(BlockQ8)) == 0);
        }
    }
}

TEST_CASE("decode_attention reads its position from the slots and equals attention") {
    if (!gpu_or_skip()) return;
    // Positions in an order that makes the number of chunks go up and down on one scratch.
    check_decode_attention_at(4100, {0, 1, 4097, 32, 256, 4099, 2}, {14, 2, 64});
    check_decode_attention_at(4100, {4099, 33, 0}, {12, 2, 128});
    check_decode_attention_at(600, {511, 599, 5}, {28, 4, 128});
    check_decode_attention_at(70, {69, 31, 64}, {6, 2, 33});
    // A long cache (grid of the most chunks) with a short sequence in it.
    check_decode_attention_at(32768, {3, 32767}, {12, 2, 128});
}

TEST_CASE("decode_attention over an F16 cache equals attention on the same halves") {
    if (!gpu_or_skip()) return;
    // The positions of 1, 33, 257 and 1000 cached rows and back, on one scratch; 0.5B's heads of
    // 64 (lanes 16-31 load nothing), 1.5B's and 7B's of 128 (a warp's loads: a whole row).
    check_decode_attention_at(1100, {0, 32, 256, 999, 1099, 5}, {14, 2, 64}, CacheType::F16);
    check_decode_attention_at(1100, {999, 256, 32, 0}, {12, 2, 128}, CacheType::F16);
    check_decode_attention_at(4100, {4099, 1000}, {28, 4, 128}, CacheType::F16);
}

TEST_CASE("store_cache_rows rounds to the nearest half as half.h does, bit for bit") {
    if (!gpu_or_skip()) return;
    for (int64_t n : {1, 7, 33, 4867, 100000}) {
        CAPTURE(n);
        // Values of every size F16 holds, and past it: subnormals, ties, 65504, overflow.
        std::vector<float> x = random_values(size_t(n), 90, -3.0f, 3.0f);
        for (int64_t i = 0; i < n; i++) x[i] = std::ldexp(x[i], int(i % 48) - 30);
        if (n > 4) x[1] = 65504.0f, x[2] = 65520.0f, x[3] = 1.0f + 1.0f / 2048, x[4] = -0.0f;
        std::vector<uint8_t> expected = encode(x, GgmlType::F16);
        DeviceBuffer<float> device_x(x);
        for (CacheType cache_type : kCacheTypes) {
            CAPTURE(int(cache_type));
            DeviceBuffer<uint8_t> rows = poisoned_cache(size_t(n) + 1, cache_type);
            gpu::store_cache_rows(rows.data(), cache_type, device_x.data(), n);
            const std::vector<uint8_t> written = rows.download();
            const size_t bytes = size_t(n) * cache_value_bytes(cache_type);
            const std::vector<uint8_t>& want =
                cache_type == CacheType::F16 ? expected : encode(x, GgmlType::F32);
            CHECK(std::memcmp(written.data(), want.data(), bytes) == 0);
            CHECK(std::isnan(cache_values(written, cache_type).back()));  // one past: untouched
        }
    }
}

TEST_CASE("matvec_add equals x + matmul: the residual add in the epilogue") {
    if (!gpu_or_skip()) return;
    // (in_dim, out_dim): the one-element loop, a warp a row, and 8960 and 18944 (rows split
    // over 4 warps); for the blocks, rows of 3 and 11 blocks (odd: Q8_0, Q5_0 and Q6_K rows
    // then start at both 2-byte alignments) and slices that fill no whole warp.
    const int shapes[][2] = {{7, 33},   {1536, 1536}, {8960, 1536}, {4867, 100},
                             {896, 70}, {96, 50},     {2816, 77},   {18944, 40}};
    for (const auto& shape : shapes) {
        for (GgmlType type : kAllWeightTypes) {
            const int in_dim = shape[0], out_dim = shape[1];
            if (!whole_blocks(type, in_dim)) continue;
            CAPTURE(in_dim);
            CAPTURE(out_dim);
            CAPTURE(ggml_type_info(uint32_t(type)).name);
            std::vector<float> in = random_values(in_dim, 40);
            std::vector<float> x = random_values(out_dim, 41);
            std::vector<uint8_t> w = random_weights(type, out_dim, in_dim, 42);
            std::vector<float> delta(out_dim), expected = x;
            decode_matmul(delta.data(), in.data(), w, type, in_dim, out_dim);
            residual_add(expected.data(), delta.data(), out_dim);

            DeviceBuffer<float> device_in(in), device_x(x);
            DeviceBuffer<uint8_t> device_w(w);
            DeviceQ8Vector in_q8 = q8_scratch(in_dim);
            gpu::matvec_add(device_x.data(), device_in.data(), device_w.data(), uint32_t(type),
                            in_dim, out_dim, in_q8.view(), false, nullptr);
            // matmul's tolerance (the same kernel), and then one float addition.
            check_close(device_x.download(), expected, {1e-4, 1e-4}, out_dim);
        }
    }
}

TEST_CASE("gate_up_swiglu equals rmsnorm, the gate and up matmuls and swiglu") {
    if (!gpu_or_skip()) return;
    // (d_model, d_ff): d_model 100 takes the one-element loop for F16 and BF16.
    const int shapes[][2] = {{100, 37}, {256, 512}, {896, 4864}, {1536, 8960}};
    for (const auto& shape : shapes) {
        for (GgmlType type : kAllWeightTypes) {
            const int d = shape[0], d_ff = shape[1];
            if (!whole_blocks(type, d)) continue;
            CAPTURE(d);
            CAPTURE(d_ff);
            CAPTURE(ggml_type_info(uint32_t(type)).name);
            std::vector<float> x = random_values(d, 50, -2.0f, 2.0f);
            std::vector<float> norm = random_values(d, 51, 0.5f, 1.5f);
            // Gate sums of order 3, so that silu's curve, not only its linear part, is tested
            // (for the plain types; random blocks give sums of order 1 at most).
            std::vector<uint8_t> wg = random_weights(type, d_ff, d, 52);
            if (ggml_type_info(uint32_t(type)).block_size == 1) {
                std::vector<float> gate_w = random_matrix(d_ff, d, 52);
                for (float& value : gate_w) value *= 3.0f;
                wg = encode(gate_w, type);
            }
            std::vector<uint8_t> wu = random_weights(type, d_ff, d, 53);
            std::vector<float> h(d), gate(d_ff), up(d_ff), expected(d_ff);
            rmsnorm(h.data(), x.data(), norm.data(), 1, d, 1e-6f);
            decode_matmul(gate.data(), h.data(), wg, type, d, d_ff);
            decode_matmul(up.data(), h.data(), wu, type, d, d_ff);
            swiglu(expected.data(), gate.data(), up.data(), d_ff);

            DeviceBuffer<float> device_x(x), device_norm(norm);
            DeviceBuffer<uint8_t> device_wg(wg), device_wu(wu);
            DeviceBuffer<float> out = poisoned(d_ff);
            DeviceQ8Vector x_q8 = q8_scratch(d);
            gpu::gate_up_swiglu(out.data(), device_x.data(), device_norm.data(), 1e-6f,
                                device_wg.data(), device_wu.data(), uint32_t(type), d, d_ff,
                                x_q8.view(), false, Q8Vector{}, nullptr, nullptr);
            // qkv_rope_cache's reasoning for the two sums (1e-4 + 1e-4 relative on gate sums
            // up to ~3 times larger), then silu(g) * u, whose slope in g is at most 1.1: the
            // same bound, with the 3x taken by the relative part.
            check_close(out.download(), expected, {3e-4, 1e-4}, d_ff);
        }
    }
}

TEST_CASE("gate_up_swiglu rounds its outputs for down, 32 rows at a time, as quantize_row_q8") {
    if (!gpu_or_skip()) return;
    const int shapes[][2] = {{256, 32}, {896, 4864}, {1536, 8960}};
    for (const auto& shape : shapes) {
        for (GgmlType type : {GgmlType::F16, GgmlType::Q4_K, GgmlType::Q5_0, GgmlType::Q8_0}) {
            const int d = shape[0], d_ff = shape[1];
            if (!whole_blocks(type, d)) continue;
            CAPTURE(d);
            CAPTURE(d_ff);
            CAPTURE(ggml_type_info(uint32_t(type)).name);
            DeviceBuffer<float> device_x(random_values(d, 54, -2.0f, 2.0f));
            DeviceBuffer<float> device_norm(random_values(d, 55, 0.5f, 1.5f));
            DeviceBuffer<uint8_t> device_wg(random_weights(type, d_ff, d, 56));
            DeviceBuffer<uint8_t> device_wu(random_weights(type, d_ff, d, 57));
            DeviceBuffer<float> out = poisoned(d_ff);
            DeviceBuffer<int> group_done(std::vector<int>(d_ff / kQ8BlockSize, 0));
            DeviceQ8Vector x_q8 = q8_scratch(d), out_q8 = q8_scratch(d_ff);
            for (int round = 0; round < 2; round++) {  // the counters reset for the next launch
                CAPTURE(round);
                gpu::gate_up_swiglu(out.data(), device_x.data(), device_norm.data(), 1e-6f,
                                    device_wg.data(), device_wu.data(), uint32_t(type), d, d_ff,
                                    x_q8.view(), false, out_q8.view(), group_done.data(), nullptr);
                const std::vector<float> outputs = out.download();
                std::vector<BlockQ8> expected(d_ff / kQ8BlockSize);
                quantize_row_q8(outputs.data(), expected.data(), d_ff);
                const std::vector<BlockQ8> written = out_q8.download(d_ff);
                CHECK(std::memcmp(written.data(), expected.data(),
                                  expected.size() * sizeof(BlockQ8)) == 0);
                const std::vector<int> counters = group_done.download();
                CHECK(std::count(counters.begin(), counters.end(), 0) == int(counters.size()));
            }
        }
    }
}

TEST_CASE("lm_head_argmax equals rmsnorm, matmul and argmax, and moves the slots on") {
    if (!gpu_or_skip()) return;
    // (d_model, n_vocab): Qwen's vocabulary (every block takes many rows), the tiny model's,
    // and vocabularies smaller than 1024 blocks of 4 rows, down to 5 rows in 2 blocks.
    const int shapes[][2] = {{64, 151936}, {256, 3005}, {100, 1000}, {896, 5}};
    for (const auto& shape : shapes) {
        for (GgmlType type : kAllWeightTypes) {
            const int d = shape[0], n_vocab = shape[1];
            if (!whole_blocks(type, d)) continue;
            CAPTURE(d);
            CAPTURE(n_vocab);
            CAPTURE(ggml_type_info(uint32_t(type)).name);
            std::vector<float> x = random_values(d, 60, -2.0f, 2.0f);
            std::vector<float> norm = random_values(d, 61, 0.5f, 1.5f);
            std::vector<uint8_t> bytes = random_weights(type, n_vocab, d, 62);
            std::vector<float> h(d), expected(n_vocab);
            rmsnorm(h.data(), x.data(), norm.data(), 1, d, 1e-6f);
            decode_matmul(expected.data(), h.data(), bytes, type, d, n_vocab);
            // The best row copied into an earlier and a later row: a tie across blocks,
            // which the first of them wins.
            const int best = argmax(expected.data(), n_vocab);
            const int earlier = best / 2, later = n_vocab - 1;
            const int64_t row_bytes = int64_t(ggml_row_bytes(uint32_t(type), uint64_t(d)));
            for (int row : {earlier, later})
                std::copy(bytes.begin() + best * row_bytes, bytes.begin() + (best + 1) * row_bytes,
                          bytes.begin() + row * row_bytes);
            decode_matmul(expected.data(), h.data(), bytes, type, d, n_vocab);

            DeviceBuffer<float> device_x(x), device_norm(norm);
            DeviceBuffer<uint8_t> device_w(bytes);
            DeviceBuffer<uint8_t> scratch(size_t(gpu::lm_head_argmax_scratch()));
            DeviceBuffer<float> logits = poisoned(n_vocab);
            DeviceBuffer<int32_t> slots = slots_at(-1, 41);
            DeviceQ8Vector x_q8 = q8_scratch(d);
            gpu::lm_head_argmax(logits.data(), scratch.data(), device_x.data(), device_norm.data(),
                                1e-6f, device_w.data(), uint32_t(type), d, n_vocab, as_slots(slots),
                                x_q8.view(), false, nullptr);
            // qkv_rope_cache's reasoning: the same fused norm and products.
            const std::vector<float> gpu_logits = logits.download();
            check_close(gpu_logits, expected, {1e-4, 1e-4});
            // The token is argmax() of the GPU's own logits, exactly; the identical rows give
            // identical sums, so the tie goes to the earlier copy.
            const std::vector<int32_t> after = slots.download();
            CHECK(after[0] == argmax(gpu_logits.data(), n_vocab));
            CHECK(after[0] == std::min(earlier, best));
            CHECK(after[1] == 42);
        }
    }
}

TEST_CASE("lm_head_argmax treats NaN logits as argmax does") {
    if (!gpu_or_skip()) return;
    const int d = 64, n_vocab = 20000;
    std::vector<float> x = random_values(d, 70), norm(d, 1.0f);
    for (int nan_row : {0, 7, 12345}) {
        CAPTURE(nan_row);
        std::vector<float> w = random_matrix(n_vocab, d, 71);
        w[size_t(nan_row) * d + 3] = std::numeric_limits<float>::quiet_NaN();
        DeviceBuffer<float> device_x(x), device_norm(norm), device_w(w);
        DeviceBuffer<uint8_t> scratch(size_t(gpu::lm_head_argmax_scratch()));
        DeviceBuffer<float> logits = poisoned(n_vocab);
        DeviceBuffer<int32_t> slots = slots_at(-1, 0);
        gpu::lm_head_argmax(logits.data(), scratch.data(), device_x.data(), device_norm.data(),
                            1e-6f, device_w.data(), uint32_t(GgmlType::F32), d, n_vocab,
                            as_slots(slots), Q8Vector{}, false, nullptr);
        const std::vector<float> gpu_logits = logits.download();
        CHECK(std::isnan(gpu_logits[nan_row]));
        // argmax() never moves to a NaN, and a NaN at 0 is where it starts and stays.
        CHECK(slots.download()[0] == argmax(gpu_logits.data(), n_vocab));
        if (nan_row == 0) CHECK(slots.download()[0] == 0);
    }
}

TEST_CASE("the fused kernels refuse what they cannot read, in one line") {
    if (!gpu_code_or_skip()) return;
    DeviceBuffer<int32_t> slots;
    const gpu::QkvWeights w{nullptr,
                            nullptr,
                            nullptr,
                            nullptr,
                            nullptr,
                            nullptr,
                            uint32_t(GgmlType::F16),
                            uint32_t(GgmlType::F16),
                            uint32_t(GgmlType::F16)};
    CHECK_THROWS_WITH_AS(
        gpu::qkv_rope_cache(nullptr, nullptr, nullptr, CacheType::F32, nullptr, nullptr, 1e-6f, w,
                            64, {2, 1, 33}, 1e6f, nullptr, Q8Vector{}, false, nullptr),
        "gpu::qkv_rope_cache needs an even head_dim, not 33", Error);
    CHECK_THROWS_WITH_AS(gpu::gate_up_swiglu(nullptr, nullptr, nullptr, 1e-6f, nullptr, nullptr,
                                             uint32_t(GgmlType::Q4_1), 64, 64, Q8Vector{}, false,
                                             Q8Vector{}, nullptr, nullptr),
                         "gpu::gate_up_swiglu reads F32, F16, BF16, Q8_0, Q5_0, Q4_K or Q6_K "
                         "weights, not Q4_1",
                         Error);
}

TEST_CASE("quantize_q8 writes the CPU's 8-bit blocks bit for bit, after rmsnorm or without") {
    if (!gpu_or_skip()) return;
    for (int n : {32, 96, 896, 1536, 18944}) {
        for (bool with_norm : {true, false}) {
            CAPTURE(n);
            CAPTURE(with_norm);
            std::vector<float> x = random_values(n, 80, -3.0f, 3.0f);
            x[5] = 0.0f;  // a zero, and a block of zeros: d = 0, q = 0
            std::fill(x.begin() + n - 32, x.end(), 0.0f);
            std::vector<float> norm = random_values(n, 81, 0.5f, 1.5f);
            std::vector<float> h = x;
            if (with_norm) rmsnorm(h.data(), x.data(), norm.data(), 1, n, 1e-6f);
            std::vector<BlockQ8> expected(n / kQ8BlockSize);
            quantize_row_q8(h.data(), expected.data(), n);

            DeviceBuffer<float> device_x(x), device_norm(norm);
            DeviceQ8Vector out = q8_scratch(n);
            gpu::quantize_q8(out.view(), device_x.data(), with_norm ? device_norm.data() : nullptr,
                             1e-6f, n, nullptr);
            // The same float operations in the same order (the sum of squares aside, which is
            // in double on both sides): the same bytes, and the stored half sums right (a wrong
            // one makes download()'s block sum INT32_MIN).
            const std::vector<BlockQ8> blocks = out.download(n);
            CHECK(std::memcmp(blocks.data(), expected.data(), expected.size() * sizeof(BlockQ8)) ==
                  0);
        }
    }
}
