// Checks for quant_dot: the 8-bit activation blocks, the block dot products against the float
// dot of the dequantized row (within a bound that a wrong scale exceeds), every SIMD kernel
// against the scalar one bit for bit, and matmul_q8 against block_dot and matmul(). The
// weights are random bytes with random but sane f16 scales; the rows have awkward lengths.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "dequantize.h"
#include "ggml_types.h"
#include "half.h"
#include "ops_cpu.h"
#include "quant_dot.h"
#include "test_skip.h"

namespace {

const uint32_t kQ8_0 = uint32_t(GgmlType::Q8_0), kQ5_0 = uint32_t(GgmlType::Q5_0);
const uint32_t kQ4_K = uint32_t(GgmlType::Q4_K), kQ6_K = uint32_t(GgmlType::Q6_K);

// The types the type table marks cpu_block_dot, in id order.
std::vector<uint32_t> block_dot_types() {
    std::vector<uint32_t> types;
    for (uint32_t id : ggml_type_ids())
        if (ggml_type_info(id).cpu_block_dot) types.push_back(id);
    return types;
}
const std::vector<uint32_t> kBlockTypes = block_dot_types();

// Row lengths that end in a partial group of eight activation blocks, or fill one exactly.
std::vector<int> awkward_lengths(uint32_t type) {
    if (ggml_type_info(type).block_size == 256) return {256, 768, 4864};
    return {32, 96, 896, 4864 + 32};
}

void put_f16(uint8_t* p, float value) {
    uint16_t bits = f32_to_f16(value);
    p[0] = uint8_t(bits);
    p[1] = uint8_t(bits >> 8);
}

float get_f16(const uint8_t* p) { return f16_to_f32(uint16_t(p[0] | (p[1] << 8))); }

// A row of n weights: random bytes, then every f16 scale set to a random normal value (random
// bytes would be NaNs, infinities and subnormals). Q4_K's d and dmin are positive, as
// llama.cpp's quantizer writes them; the other types' d take either sign.
std::vector<uint8_t> random_row(uint32_t type, int n, std::mt19937& rng) {
    const GgmlTypeInfo& info = ggml_type_info(type);
    std::vector<uint8_t> row(ggml_row_bytes(type, uint64_t(n)));  // (n / block_size, bytes)
    std::uniform_int_distribution<int> byte(0, 255);
    for (uint8_t& b : row) b = uint8_t(byte(rng));
    std::uniform_real_distribution<float> magnitude(0.5f, 2.0f);
    auto scale = [&](float unit, bool any_sign) {
        return unit * magnitude(rng) * (any_sign && byte(rng) % 2 ? -1.0f : 1.0f);
    };
    for (size_t at = 0; at < row.size(); at += info.block_bytes) {
        uint8_t* block = row.data() + at;
        if (type == kQ8_0) put_f16(block, scale(1e-3f, true));
        if (type == kQ5_0) put_f16(block, scale(1e-2f, true));
        if (type == kQ6_K) put_f16(block + 208, scale(1e-4f, true));
        if (type == kQ4_K) {
            put_f16(block, scale(1e-3f, false));      // d
            put_f16(block + 2, scale(1e-3f, false));  // dmin
        }
    }
    return row;
}

std::vector<float> dequantized(uint32_t type, const std::vector<uint8_t>& row, int n) {
    std::vector<float> w(n);  // (n)
    dequantize(type, row.data(), w.data(), n);
    return w;
}

// |scale part| + |min part| of every weight, which bounds what the block dot's float steps
// round: |w| itself, except for Q4_K, whose d * scale * q - dmin * min may cancel. Dequantizing
// the row with d made positive and dmin negative gives |d| * scale * q + |dmin| * min.
std::vector<float> magnitudes(uint32_t type, std::vector<uint8_t> row, int n) {
    if (type == kQ4_K) {
        for (size_t at = 0; at < row.size(); at += 144) {
            put_f16(&row[at], std::fabs(get_f16(&row[at])));
            put_f16(&row[at + 2], -std::fabs(get_f16(&row[at + 2])));
        }
    }
    std::vector<float> m = dequantized(type, row, n);
    for (float& value : m) value = std::fabs(value);
    return m;
}

std::vector<BlockQ8> quantized(const std::vector<float>& x) {
    std::vector<BlockQ8> blocks(x.size() / kQ8BlockSize);  // (n / 32)
    quantize_row_q8(x.data(), blocks.data(), int(x.size()));
    return blocks;
}

double exact_dot(const std::vector<float>& w, const std::vector<float>& x) {
    double sum = 0.0;
    for (size_t i = 0; i < w.size(); i++) sum += double(w[i]) * x[i];
    return sum;
}

// How far block_dot may be from exact_dot (the float dot of the dequantized row with x):
//   rounding x: q = rne(fl(x / d)) is within 1/2 + 2^-17 of x / d (|x / d| <= 127.0001, and
//     the division rounds by at most 2^-24 * 128), so |x - d q| <= d (1/2 + 2^-17): the first
//     term, sum over blocks of d_b / 2 (1 + 2^-15) sum_{i in b} |w_i|.
//   float steps: with u = 2^-24, each multiply, fused multiply-add and add rounds once by at
//     most u times its result. A block's term is rounded by at most 3 of them before it joins
//     its lane (Q4_K: dmin * B, the fma for y, the fma into the lane; the others 2), then by
//     one add per later block of its lane (< n_b / 8 + 1) and three in sum_dot_lanes; each
//     rounding is bounded by u times the sum of the magnitudes of the terms so far. The
//     dequantized reference row rounds once more. So (n_b / 8 + 8) u sum_i m_i |d_b q_i|,
//     with m_i the magnitudes above and |d_b q_i| <= |x_i| + d_b.
double dot_bound(const std::vector<float>& w, const std::vector<float>& m,
                 const std::vector<float>& x, const std::vector<BlockQ8>& xq) {
    const int n_blocks = int(xq.size());
    double activation_part = 0.0, float_part = 0.0;
    for (int b = 0; b < n_blocks; b++) {
        const double d = xq[b].d;
        for (int i = 32 * b; i < 32 * b + 32; i++) {
            activation_part += d / 2 * (1 + std::ldexp(1.0, -15)) * std::fabs(w[i]);
            float_part += m[i] * (std::fabs(x[i]) + d);
        }
    }
    return activation_part + (n_blocks / 8 + 8) * std::ldexp(1.0, -24) * float_part;
}

// Activations that follow the weights (x = w + noise): then the dot product is of the size of
// sum w^2, large beside the activations' rounding, and a 2% error in a scale stands out of the
// bound. With independent x it would hide in the bound's worst case.
std::vector<float> activations_like(const std::vector<float>& w, std::mt19937& rng) {
    double sum_of_squares = 0.0;
    for (float value : w) sum_of_squares += double(value) * value;
    const float rms = float(std::sqrt(sum_of_squares / w.size()));
    std::normal_distribution<float> noise(0.0f, 0.3f * rms);
    std::vector<float> x(w.size());  // (n)
    for (size_t i = 0; i < w.size(); i++) x[i] = w[i] + noise(rng);
    return x;
}

// Activations over a wide range: each block its own magnitude (from 1e-6 to 1e3), some blocks
// all zero, some with one value, some with ties to round.
std::vector<float> wild_activations(int n, std::mt19937& rng) {
    std::vector<float> x(n, 0.0f);  // (n)
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::uniform_int_distribution<int> kind(0, 9);
    std::uniform_real_distribution<float> exponent(-6.0f, 3.0f);
    for (int b = 0; b < n / kQ8BlockSize; b++) {
        float* values = x.data() + b * kQ8BlockSize;
        float scale = std::pow(10.0f, exponent(rng));
        switch (kind(rng)) {
            case 0: break;  // zeros
            case 1: values[kind(rng)] = -scale; break;
            case 2:  // halves of d = 1: every other value a tie
                values[0] = 127.0f;
                for (int i = 1; i < kQ8BlockSize; i++) values[i] = float(i - 16) + 0.5f;
                break;
            default:
                for (int i = 0; i < kQ8BlockSize; i++) values[i] = scale * normal(rng);
        }
    }
    return x;
}

bool same_bits(float a, float b) { return std::memcmp(&a, &b, sizeof a) == 0; }

std::string bits_text(float value) {
    uint32_t bits = f32_to_bits(value);
    char text[64];
    std::snprintf(text, sizeof text, "%.9g (0x%08x)", double(value), unsigned(bits));
    return text;
}

// Sets an environment variable for one scope, and restores what was there.
class ScopedEnv {
public:
    ScopedEnv(const char* name, const char* value) : name_(name) {
        const char* old = std::getenv(name);
        had_ = old != nullptr;
        if (had_) old_ = old;
        setenv(name, value, 1);
    }
    ~ScopedEnv() {
        if (had_) setenv(name_, old_.c_str(), 1);
        else unsetenv(name_);
    }

private:
    const char* name_;
    bool had_;
    std::string old_;
};

// Checks that `kernel` returns the scalar kernel's bits for random rows of every type.
void check_equals_scalar(DotKernel kernel) {
    std::mt19937 rng(11);
    for (uint32_t type : kBlockTypes) {
        const std::string name = ggml_type_info(type).name;
        for (int n : awkward_lengths(type)) {
            int mismatches = 0;
            for (int r = 0; r < 60; r++) {
                std::vector<uint8_t> row = random_row(type, n, rng);
                std::vector<BlockQ8> xq = quantized(wild_activations(n, rng));
                float want = block_dot(type, row.data(), xq.data(), n, DotKernel::Scalar);
                float got = block_dot(type, row.data(), xq.data(), n, kernel);
                if (!same_bits(got, want) && mismatches++ < 3)
                    FAIL_CHECK(name << " n=" << n << " row " << r << ": " << dot_kernel_name(kernel)
                                    << " " << bits_text(got) << ", scalar " << bits_text(want));
            }
            CHECK_MESSAGE(mismatches == 0, name << " n=" << n);
        }
    }
}

}  // namespace

TEST_CASE("quant_dot: quantize_row_q8 rounds each value to within d/2, with |q| <= 127") {
    std::mt19937 rng(1);
    const int n = 4864 + 32;
    std::vector<float> x = wild_activations(n, rng);
    x[40] = 3e38f;  // near the largest float, beside ordinary values
    x[41] = -1.0f;
    x[70] = -1e-30f;  // tiny, alone in its block
    std::vector<BlockQ8> blocks = quantized(x);
    for (int b = 0; b < n / kQ8BlockSize; b++) {
        CAPTURE(b);
        const BlockQ8& block = blocks[b];
        double amax = 0.0;
        int32_t sum = 0;
        for (int i = 0; i < 32; i++) amax = std::fmax(amax, std::fabs(x[32 * b + i]));
        CHECK(block.d == float(amax) / 127.0f);
        for (int i = 0; i < 32; i++) {
            double value = x[32 * b + i];
            CHECK(std::abs(block.q[i]) <= 127);
            CHECK(std::fabs(value - double(block.d) * block.q[i]) <=
                  double(block.d) / 2 * (1 + std::ldexp(1.0, -15)));
            if (std::fabs(value) == amax && amax > 0)  // the largest value is +-127 exactly
                CHECK(block.q[i] == (value > 0 ? 127 : -127));
            sum += block.q[i];
        }
        CHECK(block.sum == sum);
    }
}

TEST_CASE("quant_dot: quantize_row_q8 rounds ties to even, zeros to d = 0, NaN to d = NaN") {
    std::vector<float> x(3 * 32, 0.0f);  // (3, 32)
    const float ties[] = {127.0f, 0.5f, 1.5f, 2.5f, -0.5f, -1.5f, -2.5f, 126.5f, -0.0f};
    const int rounded[] = {127, 0, 2, 2, 0, -2, -2, 126, 0};
    for (int i = 0; i < 9; i++) x[i] = ties[i];  // block 0: d = 1 exactly
    x[32 + 5] = -0.0f;                           // block 1: only zeros, one of them negative
    x[64 + 3] = 1.0f;                            // block 2: an infinity among values
    x[64 + 4] = -std::numeric_limits<float>::infinity();
    std::vector<BlockQ8> blocks = quantized(x);
    CHECK(blocks[0].d == 1.0f);
    for (int i = 0; i < 9; i++) CHECK(blocks[0].q[i] == rounded[i]);
    CHECK(blocks[0].sum == 127 + 2 + 2 - 2 - 2 + 126);
    CHECK(f32_to_bits(blocks[1].d) == 0u);
    CHECK(std::isnan(blocks[2].d));
    for (int b = 1; b < 3; b++) {
        CHECK(blocks[b].sum == 0);
        for (int8_t q : blocks[b].q) CHECK(q == 0);
    }
    // The NaN block makes every kernel's dot product NaN, as a float dot product would be.
    std::mt19937 rng(2);
    std::vector<uint8_t> row = random_row(kQ8_0, 96, rng);
    for (DotKernel kernel : {DotKernel::Scalar, DotKernel::Avx2, DotKernel::Avx512Vnni})
        if (cpu_supports(kernel))
            CHECK(std::isnan(block_dot(kQ8_0, row.data(), blocks.data(), 96, kernel)));
    CHECK_THROWS_WITH(quantize_row_q8(x.data(), blocks.data(), 33),
                      "cannot quantize 33 activations: not a whole number of 32-value blocks");
}

TEST_CASE("quant_dot: block_dot is within the bound of the float dot product, a wrong scale not") {
    std::mt19937 rng(3);
    for (uint32_t type : kBlockTypes) {
        for (int n : awkward_lengths(type)) {
            for (int r = 0; r < 20; r++) {
                const std::string type_name = ggml_type_info(type).name;
                CAPTURE(type_name);
                CAPTURE(n);
                CAPTURE(r);
                std::vector<uint8_t> row = random_row(type, n, rng);
                std::vector<float> w = dequantized(type, row, n);
                std::vector<float> x = activations_like(w, rng);
                std::vector<BlockQ8> xq = quantized(x);
                const double exact = exact_dot(w, x);
                const double bound = dot_bound(w, magnitudes(type, row, n), x, xq);
                double got = block_dot(type, row.data(), xq.data(), n, DotKernel::Scalar);
                CHECK(std::fabs(got - exact) <= bound);
                // The same data with the activations' scales 2% too large must fail the bound.
                std::vector<BlockQ8> scaled = xq;
                for (BlockQ8& block : scaled) block.d *= 1.02f;
                double wrong = block_dot(type, row.data(), scaled.data(), n, DotKernel::Scalar);
                CHECK(std::fabs(wrong - exact) > bound);
                if (type == kQ4_K) {  // and so must Q4_K without its minimums
                    std::vector<uint8_t> no_min = row;
                    for (size_t at = 0; at < no_min.size(); at += 144) put_f16(&no_min[at + 2], 0);
                    wrong = block_dot(type, no_min.data(), xq.data(), n, DotKernel::Scalar);
                    CHECK(std::fabs(wrong - exact) > bound);
                }
            }
        }
    }
}

TEST_CASE("quant_dot: the AVX2 kernel equals the scalar kernel bit for bit") {
    if (!cpu_supports(DotKernel::Avx2)) return skip_test("this CPU lacks AVX2, FMA or F16C");
    check_equals_scalar(DotKernel::Avx2);
}

TEST_CASE("quant_dot: the AVX-512 VNNI kernel equals the scalar kernel bit for bit") {
    if (!cpu_supports(DotKernel::Avx512Vnni))
        return skip_test("this CPU lacks AVX-512 F/BW/VL/VNNI (or AVX2, FMA, F16C)");
    check_equals_scalar(DotKernel::Avx512Vnni);
}

TEST_CASE("quant_dot: matmul_q8 equals block_dot for every token and row, on every kernel") {
    std::mt19937 rng(4);
    for (DotKernel kernel : {DotKernel::Scalar, DotKernel::Avx2, DotKernel::Avx512Vnni}) {
        if (!cpu_supports(kernel)) continue;
        for (uint32_t type : kBlockTypes) {
            const int in_dim = awkward_lengths(type)[1];
            const size_t row_bytes = ggml_row_bytes(type, uint64_t(in_dim));
            // 13 rows: one tile a thread. Then two and a half tiles and a few rows more, so
            // that each thread's share ends inside a tile.
            const int tiled_rows = int(5 * kMatmulTileBytes / (2 * row_bytes)) + 3;
            std::vector<uint8_t> w;  // (tiled_rows, row bytes)
            for (int o = 0; o < tiled_rows; o++) {
                std::vector<uint8_t> row = random_row(type, in_dim, rng);
                w.insert(w.end(), row.begin(), row.end());
            }
            for (int out_dim : {13, tiled_rows}) {
                for (int n_tokens : {1, 3, 4, 9}) {  // one, four at once, and the leftovers
                    const std::string kernel_name = dot_kernel_name(kernel);
                    const std::string type_name = ggml_type_info(type).name;
                    CAPTURE(kernel_name);
                    CAPTURE(type_name);
                    CAPTURE(out_dim);
                    CAPTURE(n_tokens);
                    std::vector<float> x = wild_activations(n_tokens * in_dim, rng);
                    std::vector<float> out(size_t(n_tokens) * out_dim, -1.0f);  // (n_tokens, out)
                    matmul_q8(out.data(), x.data(), w.data(), type, n_tokens, in_dim, out_dim,
                              kernel);
                    std::vector<BlockQ8> xq = quantized(x);  // (n_tokens, in_dim / 32)
                    int mismatches = 0;
                    for (int t = 0; t < n_tokens; t++) {
                        const BlockQ8* token = xq.data() + t * (in_dim / kQ8BlockSize);
                        for (int o = 0; o < out_dim; o++) {
                            float want = block_dot(type, w.data() + o * row_bytes, token, in_dim,
                                                   DotKernel::Scalar);
                            mismatches += !same_bits(out[size_t(t) * out_dim + o], want);
                        }
                    }
                    CHECK(mismatches == 0);
                }
            }
        }
    }
}

TEST_CASE("quant_dot: matmul_q8 is matmul() for weights without a block dot product") {
    std::mt19937 rng(5);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    const int n_tokens = 3, out_dim = 5;
    struct Case {
        GgmlType type;
        int in_dim;
    };
    for (Case c : {Case{GgmlType::F32, 37}, Case{GgmlType::F16, 37}, Case{GgmlType::F16, 64},
                   Case{GgmlType::Q4_0, 64}}) {
        const uint32_t type = uint32_t(c.type);
        const std::string type_name = ggml_type_info(type).name;
        CAPTURE(type_name);
        CAPTURE(c.in_dim);
        std::vector<uint8_t> w(ggml_row_bytes(type, uint64_t(c.in_dim)) * out_dim);
        for (size_t at = 0; at + 1 < w.size(); at += 2) put_f16(&w[at], normal(rng));
        std::vector<float> x(size_t(n_tokens) * c.in_dim);  // (n_tokens, in_dim)
        for (float& value : x) value = normal(rng);
        std::vector<float> want(n_tokens * out_dim), got(n_tokens * out_dim);
        matmul(want.data(), x.data(), w.data(), type, n_tokens, c.in_dim, out_dim);
        matmul_q8(got.data(), x.data(), w.data(), type, n_tokens, c.in_dim, out_dim,
                  best_dot_kernel());
        CHECK(std::memcmp(got.data(), want.data(), want.size() * sizeof(float)) == 0);
    }
}

TEST_CASE("quant_dot: block_dot refuses types without a block dot and rows of partial blocks") {
    std::vector<uint8_t> row(4 * 144, 0);
    std::vector<BlockQ8> xq(32, BlockQ8{});
    CHECK_THROWS_WITH(
        block_dot(uint32_t(GgmlType::Q4_0), row.data(), xq.data(), 64, DotKernel::Scalar),
        "Q4_0 weights have no block dot product");
    CHECK_THROWS_WITH(block_dot(kQ4_K, row.data(), xq.data(), 96, DotKernel::Scalar),
                      "a row of 96 Q4_K weights is not a whole number of its blocks and of 32");
    CHECK(block_dot(kQ4_K, row.data(), xq.data(), 256, DotKernel::Scalar) == 0.0f);
}

TEST_CASE("quant_dot: every kernel has a block dot for the table's cpu_block_dot types alone") {
    CHECK(kBlockTypes == std::vector<uint32_t>{kQ5_0, kQ8_0, kQ4_K, kQ6_K});
    std::vector<BlockQ8> xq(8, BlockQ8{});
    for (DotKernel kernel : {DotKernel::Scalar, DotKernel::Avx2, DotKernel::Avx512Vnni}) {
        if (!cpu_supports(kernel)) continue;
        for (uint32_t id : ggml_type_ids()) {
            const GgmlTypeInfo& type = ggml_type_info(id);
            if (type.block_size == 1 || 256 % type.block_size != 0) continue;
            CAPTURE(type.name);
            CAPTURE(dot_kernel_name(kernel));
            std::vector<uint8_t> row(ggml_row_bytes(id, 256), 0);  // zero scales: a dot of 0
            if (type.cpu_block_dot)
                CHECK(block_dot(id, row.data(), xq.data(), 256, kernel) == 0.0f);
            else
                CHECK_THROWS_WITH(
                    block_dot(id, row.data(), xq.data(), 256, kernel),
                    (std::string(type.name) + " weights have no block dot product").c_str());
        }
    }
}

TEST_CASE("quant_dot: QWEN_DOT_KERNEL picks the kernel, and refuses what it cannot run") {
    {
        ScopedEnv forced("QWEN_DOT_KERNEL", "scalar");
        CHECK(best_dot_kernel() == DotKernel::Scalar);
    }
    {
        ScopedEnv forced("QWEN_DOT_KERNEL", "neon");
        CHECK_THROWS_WITH(best_dot_kernel(),
                          "QWEN_DOT_KERNEL=neon: not a kernel (scalar, avx2 or avx512vnni)");
    }
    if (!cpu_supports(DotKernel::Avx512Vnni)) {
        ScopedEnv forced("QWEN_DOT_KERNEL", "avx512vnni");
        CHECK_THROWS_WITH(best_dot_kernel(),
                          "QWEN_DOT_KERNEL=avx512vnni: this CPU cannot run the AVX-512 VNNI "
                          "kernel");
    } else {
        ScopedEnv forced("QWEN_DOT_KERNEL", "avx512vnni");
        CHECK(best_dot_kernel() == DotKernel::Avx512Vnni);
    }
    ScopedEnv unset("QWEN_DOT_KERNEL", "");  // empty: the CPU's best
    DotKernel best = best_dot_kernel();
    CHECK(cpu_supports(best));
    if (cpu_supports(DotKernel::Avx512Vnni)) CHECK(best == DotKernel::Avx512Vnni);
    CHECK(std::string(dot_kernel_name(DotKernel::Avx512Vnni)) == "AVX-512 VNNI");
}
