// Checks for step 12's tensor-core kernels against the CPU: the GEMM (gemm_tensor_cores.cu) on
// every weight type it takes and on shapes that are not multiples of its tiles, flash attention
// (flash_attention.cu) from 1 to 4097 positions, and the chunked prompt (forward_cuda.cpp).
//
// The tensor cores multiply 16-bit operands, so each check has two references:
//   - the CPU on the *rounded* operands (x to F16 or BF16, weights and block weights to F16,
//     q, k, v to F16), summed in double: what the kernel multiplies, so only the F32 sums
//     differ, and a wrong element, row or tile shows far above them;
//   - for the GEMM, the CPU on the exact operands, within the bound the rounding implies.
// Output buffers are poisoned with NaN first, so an element never written fails. A GPU older
// than Ampere has no such instructions (the prompt keeps step 9's kernels there): they skip.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "dequantize.h"
#include "device_buffer.h"
#include "device_kv_cache.h"
#include "device_weights.h"
#include "flash_attention.h"
#include "forward_cpu.h"
#include "forward_cuda.h"
#include "gemm_tensor_cores.h"
#include "ggml_types.h"
#include "half.h"
#include "kv_cache.h"
#include "ops_cpu.h"
#include "ops_cuda.h"
#include "test_gpu.h"
#include "test_random_weights.h"
#include "test_tiny_model.h"

// True when the GPU has mma.m16n8k16 and cp.async; otherwise marks the check skipped.
static bool tensor_cores_or_skip() {
    if (!gpu_or_skip()) return false;
    if (gpu::gpu_has_tensor_core_mma()) return true;
    skip_test("this GPU is older than Ampere (compute capability 8.0): no tensor-core mma");
    return false;
}

static float round_to_f16(float value) { return f16_to_f32(f32_to_f16(value)); }
static float round_to_bf16(float value) { return bf16_to_f32(f32_to_bf16(value)); }

// The unit roundoff of a 16-bit operand: 2^-11 for F16 (11 significant bits), 2^-8 for BF16.
static double operand_roundoff(GgmlType type) {
    return type == GgmlType::BF16 ? std::ldexp(1.0, -8) : std::ldexp(1.0, -11);
}

// W's bytes as floats, row after row (dequantize() for a block type).
static std::vector<float> weights_as_floats(const uint8_t* w, uint32_t type, int rows, int cols) {
    std::vector<float> values(size_t(rows) * cols);
    const uint64_t row_bytes = ggml_row_bytes(type, uint64_t(cols));
    for (int r = 0; r < rows; r++)
        dequantize(type, w + r * row_bytes, values.data() + size_t(r) * cols, cols);
    return values;
}

struct GemmReference {
    std::vector<float> exact;       // (n_tokens, out_dim) x W^T of the exact operands
    std::vector<float> rounded;     // the same of the rounded operands
    std::vector<double> magnitude;  // sum over k of |x_k w_k|, each output's scale of error
};

static GemmReference gemm_reference(const std::vector<float>& x, const std::vector<float>& w,
                                    GgmlType type, int n_tokens, int in_dim, int out_dim) {
    auto round = type == GgmlType::BF16 ? round_to_bf16 : round_to_f16;
    std::vector<float> x_rounded(x.size()), w_rounded(w.size());
    std::transform(x.begin(), x.end(), x_rounded.begin(), round);
    std::transform(w.begin(), w.end(), w_rounded.begin(), round);
    GemmReference r;
    const size_t n = size_t(n_tokens) * out_dim;
    r.exact.resize(n), r.rounded.resize(n), r.magnitude.resize(n);
    for (int t = 0; t < n_tokens; t++)
        for (int o = 0; o < out_dim; o++) {
            double exact = 0, rounded = 0, magnitude = 0;
            for (int k = 0; k < in_dim; k++) {
                const size_t xi = size_t(t) * in_dim + k, wi = size_t(o) * in_dim + k;
                exact += double(x[xi]) * w[wi];
                rounded += double(x_rounded[xi]) * w_rounded[wi];
                magnitude += std::fabs(double(x[xi]) * w[wi]);
            }
            const size_t i = size_t(t) * out_dim + o;
            r.exact[i] = float(exact), r.rounded[i] = float(rounded), r.magnitude[i] = magnitude;
        }
    return r;
}

// Counts the outputs with |gpu - reference| above bound_scale * magnitude + 1e-6 and reports
// the first ones.
static void check_within(const std::vector<float>& gpu, const std::vector<float>& reference,
                         const std::vector<double>& magnitude, double bound_scale, int row_length) {
    REQUIRE(gpu.size() == reference.size());
    int mismatches = 0;
    std::string report;
    for (size_t i = 0; i < gpu.size(); i++) {
        const double allowed = 1e-6 + bound_scale * magnitude[i];
        if (std::fabs(double(gpu[i]) - reference[i]) <= allowed) continue;  // NaN fails
        if (++mismatches <= 5)
            report += strprintf("  (%zu, %zu) gpu %.9g, reference %.9g, allowed %.3g\n",
                                i / row_length, i % row_length, gpu[i], reference[i], allowed);
    }
    INFO(mismatches << " of " << gpu.size() << " outputs outside " << bound_scale
                    << " * sum|x w| + 1e-6:\n"
                    << report);
    CHECK(mismatches == 0);
}

TEST_CASE("the tensor-core GEMM equals x W^T on the rounded operands, for every weight type") {
    if (!tensor_cores_or_skip()) return;
    // (n_tokens, in_dim, out_dim): 1, 2, 17, 65, 513 tokens (tiles of 64 and 128 tokens, cut on
    // every side), in_dim not a multiple of the 32-deep steps (96, 1000) or of 8 (77, 17: the
    // one-weight-at-a-time path), out_dim cut inside a 128-wide tile and inside an mma column
    // of 8 (33, 129, 4867), and 8960, a long walk. 513 x 4867 takes 128-token tiles.
    const int shapes[][3] = {{1, 64, 33},      {2, 256, 64},     {17, 77, 130},
                             {17, 1536, 1000}, {65, 17, 129},    {513, 96, 200},
                             {33, 8960, 65},   {513, 256, 4867}, {130, 1000, 257}};
    std::vector<GgmlType> types;  // the type table's tensor_core_gemm rows
    for (uint32_t id : ggml_type_ids())
        if (ggml_type_info(id).tensor_core_gemm) types.push_back(GgmlType(id));
    REQUIRE(types.size() == 6);  // F16, BF16, Q8_0, Q5_0, Q4_K, Q6_K
    for (const auto& shape : shapes) {
        const int n_tokens = shape[0], in_dim = shape[1], out_dim = shape[2];
        for (GgmlType type : types) {
            if (!whole_blocks(type, in_dim)) continue;
            CAPTURE(n_tokens);
            CAPTURE(in_dim);
            CAPTURE(out_dim);
            CAPTURE(ggml_type_info(uint32_t(type)).name);
            std::vector<float> x = random_values(size_t(n_tokens) * in_dim, 3);
            std::vector<uint8_t> w = random_weights(type, out_dim, in_dim, 4);
            const GemmReference reference =
                gemm_reference(x, weights_as_floats(w.data(), uint32_t(type), out_dim, in_dim),
                               type, n_tokens, in_dim, out_dim);

            DeviceBuffer<float> device_x(x);
            DeviceBuffer<float> out = poisoned(reference.exact.size());
            DeviceBuffer<uint8_t> device_w(w);
            gpu::tensor_core_matmul(out.data(), device_x.data(), device_w.data(), uint32_t(type),
                                    n_tokens, in_dim, out_dim);
            const std::vector<float> gpu = out.download();
            // On the rounded operands each product is exact in F32 (11 x 11 bits, or 8 x 8),
            // so only the F32 additions differ: at most in_dim roundings of 2^-24 of the
            // running sum, which is below sum|x w|: in_dim * 2^-24 * sum|x w|, the textbook
            // bound of a float sum (0.05% at 8960). A term taken from the wrong row, column
            // or k step is of order sum|x w| / in_dim and shows for in_dim up to ~4000; a
            // wrong tile or fragment quarter (8 to 16 terms) at every size.
            check_within(gpu, reference.rounded, reference.magnitude, in_dim * std::ldexp(1.0, -24),
                         out_dim);
            // Against the exact operands: x and W are each rounded once (relative error u,
            // the operand's unit roundoff), so each product moves by at most 2u of itself:
            // 2u * sum|x w|, plus the sums' bound above.
            check_within(gpu, reference.exact, reference.magnitude,
                         2 * operand_roundoff(type) + in_dim * std::ldexp(1.0, -24), out_dim);
        }
    }
}

TEST_CASE("gpu::matmul takes the tensor cores for prompts of 16-bit and block matrices only") {
    if (!gpu_code_or_skip()) return;
    CHECK(gpu::tensor_cores_take(uint32_t(GgmlType::F16)));
    CHECK(gpu::tensor_cores_take(uint32_t(GgmlType::BF16)));
    CHECK(gpu::tensor_cores_take(uint32_t(GgmlType::Q4_K)));
    CHECK_FALSE(gpu::tensor_cores_take(uint32_t(GgmlType::F32)));   // the exact path
    CHECK_FALSE(gpu::tensor_cores_take(uint32_t(GgmlType::Q4_0)));  // converted to F16 at load
    for (uint32_t id : ggml_type_ids()) {  // the type table's tensor_core_gemm column
        CAPTURE(ggml_type_info(id).name);
        CHECK(gpu::tensor_cores_take(id) == ggml_type_info(id).tensor_core_gemm);
    }
    CHECK_THROWS_WITH_AS(
        gpu::tensor_core_matmul(nullptr, nullptr, nullptr, uint32_t(GgmlType::F32), 2, 8, 8),
        "gpu::tensor_core_matmul takes F16, BF16, Q8_0, Q5_0, Q4_K or Q6_K "
        "weights, not F32",
        Error);
}

// n_tokens new queries at first_position.. over first_position + n_tokens cached positions:
// flash attention against the CPU's attention on q, k and v rounded to F16. Returns the output.
// With an F16 cache (step 11's) the keys and values are uploaded as those halves.
static std::vector<float> check_flash_attention(int n_tokens, int first_position, int n_heads,
                                                int n_kv_heads, int head_dim,
                                                CacheType cache_type = CacheType::F32) {
    CAPTURE(n_tokens);
    CAPTURE(first_position);
    CAPTURE(n_heads);
    CAPTURE(n_kv_heads);
    CAPTURE(head_dim);
    CAPTURE(int(cache_type));
    const int n_positions = first_position + n_tokens;
    // Queries of +-3 make some softmax rows peaked (scores up to ~9 over sqrt(head_dim)).
    std::vector<float> q = random_values(size_t(n_tokens) * n_heads * head_dim, 11, -3.0f, 3.0f);
    std::vector<float> k = random_values(size_t(n_positions) * n_kv_heads * head_dim, 12);
    std::vector<float> v = random_values(size_t(n_positions) * n_kv_heads * head_dim, 13);
    for (std::vector<float>* values : {&q, &k, &v})
        std::transform(values->begin(), values->end(), values->begin(), round_to_f16);
    std::vector<float> expected(q.size());
    attention(expected.data(), q.data(), k.data(), v.data(), n_tokens, first_position, n_heads,
              n_kv_heads, head_dim);

    const GgmlType kv_type = cache_type == CacheType::F16 ? GgmlType::F16 : GgmlType::F32;
    DeviceBuffer<float> device_q(q);
    DeviceBuffer<uint8_t> device_k(encode(k, kv_type)), device_v(encode(v, kv_type));
    DeviceBuffer<float> out = poisoned(q.size());
    gpu::flash_attention(out.data(), device_q.data(), device_k.data(), device_v.data(), n_tokens,
                         first_position, n_heads, n_kv_heads, head_dim, cache_type);
    // The operands are those of the CPU, exactly; what is left is the softmax weights p,
    // rounded to F16 before P V (relative 2^-11 each), while their sum l stays F32: the output,
    // a weighted mean of values within +-1, moves by at most 2^-11 from each, 2 * 2^-11 = 1e-3
    // in all (the F32 sums add ~1e-6). A key seen through a wrong mask or a wrong head moves an
    // output by its weight, up to 1 at the first positions; 1e-3 catches it wherever a query
    // sees fewer than ~500 keys, which every shape below has.
    const std::vector<float> result = out.download();
    check_close(result, expected, {2 * std::ldexp(1.0, -11), 0.0}, n_heads * head_dim);
    return result;
}

TEST_CASE("flash attention equals attention on F16 operands from 1 to 4097 positions") {
    if (!tensor_cores_or_skip()) return;
    // A prompt from position 0 (1, 17, 64, 65, 513 tokens: query tiles of 64, cut or whole),
    // a prompt after a cache (a second chunk), and one ending at position 4096; head sizes 64
    // and 128, groups of 1 to 7 query heads per KV head (the tiny model's 2, Qwen's 5 to 7).
    check_flash_attention(1, 0, 2, 1, 64);
    check_flash_attention(17, 0, 4, 2, 64);
    check_flash_attention(64, 0, 14, 2, 64);
    check_flash_attention(65, 0, 12, 2, 128);
    check_flash_attention(513, 0, 7, 1, 128);
    check_flash_attention(100, 412, 4, 4, 64);
    check_flash_attention(97, 4000, 12, 2, 128);
    check_flash_attention(1, 4096, 28, 4, 128);
}

TEST_CASE("flash attention takes Qwen3.5's heads of 256 values") {
    if (!tensor_cores_or_skip()) return;
    // 0.8B's 8 query heads on 2 KV heads, 4B's 16 on 4: prompts cut inside a query tile, a
    // second chunk after a cache, and an F16 cache giving the float cache's outputs bit for bit.
    check_flash_attention(1, 0, 8, 2, 256);
    check_flash_attention(65, 0, 8, 2, 256);
    check_flash_attention(513, 0, 16, 4, 256);
    check_flash_attention(97, 4000, 8, 2, 256);
    const std::vector<float> from_floats = check_flash_attention(257, 257, 8, 2, 256);
    CHECK(check_flash_attention(257, 257, 8, 2, 256, CacheType::F16) == from_floats);
}

TEST_CASE("flash attention over an F16 cache gives the float cache's outputs, bit for bit") {
    if (!tensor_cores_or_skip()) return;
    // The keys and values are halves already (check_flash_attention), so the tiles hold the same
    // bits whether they were copied from halves or rounded from floats: the same mma, the same
    // outputs. Prompts of 1, 33, 257 and 1000 tokens, alone and after as many cached positions.
    for (int head_dim : {64, 128})
        for (int length : {1, 33, 257, 1000})
            for (int first_position : {0, length}) {
                const int n_heads = head_dim == 64 ? 14 : 12;
                const std::vector<float> from_floats =
                    check_flash_attention(length, first_position, n_heads, 2, head_dim);
                CHECK(check_flash_attention(length, first_position, n_heads, 2, head_dim,
                                            CacheType::F16) == from_floats);
            }
}

TEST_CASE("flash attention refuses head sizes it has no kernel for, in one line") {
    if (!gpu_code_or_skip()) return;
    CHECK(gpu::flash_attention_takes(64));
    CHECK(gpu::flash_attention_takes(128));
    CHECK(gpu::flash_attention_takes(256));
    CHECK_FALSE(gpu::flash_attention_takes(96));
    CHECK_THROWS_WITH_AS(gpu::flash_attention(nullptr, nullptr, nullptr, nullptr, 2, 0, 2, 1, 96),
                         "gpu::flash_attention handles heads of 64, 128 or 256 values, not 96",
                         Error);
}

// A prompt of n tokens on the tiny model (F16 weights), in one gpu::forward call (two chunks
// of at most kPromptChunk) and one chunk at a time by hand: the calls split the prompt where the chunks do,
// so the two run the same kernels on the same numbers and agree bit for bit.
TEST_CASE("a long prompt runs in chunks of kPromptChunk: one call equals a call per chunk") {
    if (!tensor_cores_or_skip()) return;
    const LoadedModel& model = tiny_model();
    DeviceWeights weights = upload_weights(model.weights);
    const int n = kPromptChunk + 300;  // a whole chunk and a part: the tiny model holds 1024
    REQUIRE(n <= int(model.config.context_length));
    std::vector<int32_t> ids;
    for (int i = 0; i < n; i++) ids.push_back((i * 331 + 17) % 3000);

    DeviceRunState state;
    DeviceKVCache whole = make_device_kv_cache(model.config, n);
    gpu::forward(model.config, weights, ids, whole, state, LogitRows::All);
    const std::vector<float> one_call = state.logits.download();
    REQUIRE(one_call.size() == size_t(n) * model.weights.n_vocab);

    DeviceKVCache by_hand = make_device_kv_cache(model.config, n);
    std::vector<float> per_chunk;
    for (int first = 0; first < n; first += kPromptChunk) {
        const int size = std::min(kPromptChunk, n - first);
        std::vector<int32_t> chunk(ids.begin() + first, ids.begin() + first + size);
        gpu::forward(model.config, weights, chunk, by_hand, state, LogitRows::All);
        const std::vector<float> logits = state.logits.download();
        per_chunk.insert(per_chunk.end(), logits.begin(), logits.end());
    }
    CHECK(per_chunk == one_call);
    CHECK(whole.n_filled == n);

    // LastOnly runs the LM head on the last row alone, which takes the float matvec instead of
    // the tensor cores: the logits then differ by the rounding of that row's h to F16, at most
    // 2^-11 sum_k |h_k w_ik| <= 2^-11 |h| |w_i| (Cauchy-Schwarz), with |h| <= sqrt(d_model) *
    // max |output_norm| (RMSNorm makes the row's mean square 1 before the weight). Here that
    // bound is computed per logit, from the LM head's rows as the GPU holds them (F16).
    DeviceKVCache last = make_device_kv_cache(model.config, n);
    gpu::forward(model.config, weights, ids, last, state, LogitRows::LastOnly);
    const std::vector<float> last_logits = state.logits.download();
    const WeightMatrix& head = model.weights.output;
    const int n_vocab = model.weights.n_vocab, d = head.cols;
    double largest_norm_weight = 0;
    for (float g : model.weights.output_norm)
        largest_norm_weight = std::max(largest_norm_weight, std::fabs(double(g)));
    const double h_length = std::sqrt(double(d)) * largest_norm_weight;
    const std::vector<float> head_rows =
        weights_as_floats(static_cast<const uint8_t*>(head.data), head.type, n_vocab, d);
    int mismatches = 0;
    for (int i = 0; i < n_vocab; i++) {
        double w_length = 0;
        for (int k = 0; k < d; k++) {
            const double w = round_to_f16(head_rows[size_t(i) * d + k]);
            w_length += w * w;
        }
        const double allowed = 1e-5 + std::ldexp(1.0, -11) * h_length * std::sqrt(w_length);
        const double gpu_all = one_call[size_t(n - 1) * n_vocab + i];
        if (!(std::fabs(last_logits[i] - gpu_all) <= allowed)) mismatches++;
    }
    CHECK(mismatches == 0);
}
