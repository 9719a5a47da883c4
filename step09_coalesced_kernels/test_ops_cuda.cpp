// Checks for ops_cuda: every kernel against its CPU twin in ops_cpu on random inputs of
// awkward sizes: lengths that are not multiples of a warp, a block, a 16-byte load or a tile
// (1, 7, 33, 4867, ...), next to the multiples the fast paths take (1536, 8960, 4872), so the
// partly used last warp, tile and chunk and every bounds check are exercised. Each output
// buffer is filled with NaN before the kernel runs, so an element it never writes fails. Each
// tolerance is stated next to its check, in the form |gpu - cpu| <= abs + rel * |cpu|.
// Without a GPU these checks skip, except the ones that fail before touching the device.
#include <doctest/doctest.h>

#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "device_buffer.h"
#include "ggml_types.h"
#include "half.h"
#include "ops_cpu.h"
#include "ops_cuda.h"
#include "test_gpu.h"

// Weights rounded to `type` (F32, F16 or BF16), as the bytes both sides read.
static std::vector<uint8_t> encode(const std::vector<float>& values, GgmlType type) {
    std::vector<uint8_t> bytes;
    const int n_bytes = type == GgmlType::F32 ? 4 : 2;
    for (float value : values) {
        uint32_t bits = f32_to_bits(value);
        if (type == GgmlType::F16) bits = f32_to_f16(value);
        if (type == GgmlType::BF16) bits = f32_to_bf16(value);
        for (int b = 0; b < n_bytes; b++) bytes.push_back(uint8_t(bits >> (8 * b)));
    }
    return bytes;
}

static const GgmlType kWeightTypes[] = {GgmlType::F32, GgmlType::F16, GgmlType::BF16};

// n NaNs on the device: an output buffer that fails every comparison until it is written.
static DeviceBuffer<float> poisoned(size_t n) {
    return DeviceBuffer<float>(std::vector<float>(n, std::numeric_limits<float>::quiet_NaN()));
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
// inputs are drawn with seeds seed, seed + 1, seed + 2.
static void check_attention(int n_tokens, int first_position, int n_heads, int n_kv_heads,
                            int head_dim, uint32_t seed) {
    CAPTURE(n_tokens);
    CAPTURE(first_position);
    CAPTURE(n_heads);
    CAPTURE(n_kv_heads);
    CAPTURE(head_dim);
    const size_t q_size = size_t(n_tokens) * n_heads * head_dim;
    const size_t kv_size = size_t(first_position + n_tokens) * n_kv_heads * head_dim;
    std::vector<float> q = random_values(q_size, seed, -2.0f, 2.0f);
    std::vector<float> k = random_values(kv_size, seed + 1, -2.0f, 2.0f);
    std::vector<float> v = random_values(kv_size, seed + 2);
    std::vector<float> expected(q_size);
    attention(expected.data(), q.data(), k.data(), v.data(), n_tokens, first_position, n_heads,
              n_kv_heads, head_dim);

    DeviceBuffer<float> device_q(q), device_k(k), device_v(v);
    DeviceBuffer<float> out = poisoned(q_size);
    gpu::attention(out.data(), device_q.data(), device_k.data(), device_v.data(), n_tokens,
                   first_position, n_heads, n_kv_heads, head_dim);
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
    CHECK_THROWS_WITH_AS(gpu::matmul(nullptr, nullptr, nullptr, uint32_t(GgmlType::Q8_0), 1, 32, 1),
                         "gpu::matmul reads F32, F16 or BF16 weights, not Q8_0", Error);
    CHECK_THROWS_WITH_AS(
        gpu::embedding(nullptr, nullptr, uint32_t(GgmlType::Q4_K), nullptr, 1, 256),
        "gpu::embedding reads F32, F16 or BF16 tables, not Q4_K", Error);
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
