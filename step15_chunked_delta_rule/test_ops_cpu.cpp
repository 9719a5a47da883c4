// Checks for ops_cpu: every operator alone, on inputs small enough that the expected values
// follow by hand or from a short closed form. Sizes are deliberately awkward (7, 37, 3-element
// heads) wherever the operator allows it.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "ggml_types.h"
#include "half.h"
#include "ops_cpu.h"
#include "test_bytes.h"

static const double kLn3 = std::log(3.0);

TEST_CASE("rmsnorm of 1..n divides by sqrt((n+1)(2n+1)/6 + eps)") {
    const int dim = 37;
    const float eps = 1e-6f;
    std::vector<float> x(2 * dim), weight(dim), out(2 * dim);  // (2, 37)
    for (int i = 0; i < dim; i++) {
        x[i] = float(i + 1);  // token 0: 1..37, mean square (38 * 75) / 6 = 475
        x[dim + i] = -2.0f;   // token 1: constant, mean square 4
        weight[i] = 0.5f + 0.25f * float(i % 3);
    }
    rmsnorm(out.data(), x.data(), weight.data(), 2, dim, eps);
    for (int i = 0; i < dim; i++) {
        CHECK(out[i] ==
              doctest::Approx((i + 1) / std::sqrt(475.0 + eps) * weight[i]).epsilon(1e-6));
        CHECK(out[dim + i] ==
              doctest::Approx(-2.0 / std::sqrt(4.0 + eps) * weight[i]).epsilon(1e-6));
    }
    rmsnorm(x.data(), x.data(), weight.data(), 2, dim, eps);  // in place gives the same
    CHECK(x == out);
}

TEST_CASE("rmsnorm keeps an all-zero row at zero thanks to eps") {
    std::vector<float> x(5, 0.0f), weight(5, 1.0f), out(5, 1.0f);
    rmsnorm(out.data(), x.data(), weight.data(), 1, 5, 1e-6f);
    for (float value : out) CHECK(value == 0.0f);
}

// A head whose first-half element i is 1 and whose partner i + half is 0 becomes
// (cos(angle_i), sin(angle_i)) in those two slots: the NEOX pairing, not neighbours.
// Step 13: Qwen3's QK-norm. Each head has its own rms: a head of large values beside one of small
// ones comes out on the same scale, and a norm over the whole row (q_dim values) would not.
TEST_CASE("qk_norm normalizes each head on its own, with one weight vector for every head") {
    const int n_tokens = 2, n_heads = 3, head_dim = 6;
    const float eps = 1e-6f;
    std::vector<float> x(n_tokens * n_heads * head_dim), weight(head_dim);  // (2, 3 * 6)
    for (int i = 0; i < head_dim; i++) weight[i] = 0.5f + 0.25f * float(i);
    for (int row = 0; row < n_tokens * n_heads; row++)  // head h of token t: (i + 1) * 10^row
        for (int i = 0; i < head_dim; i++)
            x[row * head_dim + i] = float((i + 1) * std::pow(10.0, row - 2));
    std::vector<float> out = x;
    qk_norm(out.data(), weight.data(), n_tokens, n_heads, head_dim, eps);
    // Every head is (i + 1) * scale: mean square of 1..6 is 91 / 6, whatever the scale.
    for (int row = 0; row < n_tokens * n_heads; row++) {
        CAPTURE(row);
        const double scale = std::pow(10.0, row - 2), mean_square = 91.0 / 6.0 * scale * scale;
        for (int i = 0; i < head_dim; i++)
            CHECK(out[row * head_dim + i] ==
                  doctest::Approx((i + 1) * scale / std::sqrt(mean_square + eps) * weight[i])
                      .epsilon(1e-6));
    }
    // It is rmsnorm() over rows of head_dim, bit for bit.
    std::vector<float> rows(x.size());
    rmsnorm(rows.data(), x.data(), weight.data(), n_tokens * n_heads, head_dim, eps);
    CHECK(out == rows);
}

TEST_CASE("rope rotates element i with element i + head_dim/2 by pos * base^(-2i/d)") {
    const int n_heads = 3, head_dim = 6, half = 3;
    const float base = 10000.0f;
    for (int position : {0, 1, 7, 30000}) {
        CAPTURE(position);
        std::vector<float> x(n_heads * head_dim, 0.0f);  // (1, n_heads * head_dim)
        for (int h = 0; h < n_heads; h++)
            for (int i = 0; i < half; i++) x[h * head_dim + i] = 1.0f;
        rope(x.data(), 1, n_heads, head_dim, position, base);
        for (int h = 0; h < n_heads; h++) {
            for (int i = 0; i < half; i++) {
                double angle = position * std::pow(10000.0, -2.0 * i / head_dim);
                CHECK(x[h * head_dim + i] == doctest::Approx(std::cos(angle)).epsilon(1e-6));
                CHECK(x[h * head_dim + i + half] == doctest::Approx(std::sin(angle)).epsilon(1e-6));
            }
        }
    }
}

TEST_CASE("rope at position 0 changes nothing and later positions rotate pairs, keeping length") {
    const int head_dim = 4;  // angles: pos * 16^0 = pos and pos * 16^(-1/2) = pos / 4
    std::vector<float> x = {1.0f, 2.0f, 3.0f, 4.0f,   // token 0 (position 5)
                            1.0f, 2.0f, 3.0f, 4.0f};  // token 1 (position 6)
    std::vector<float> unchanged = x;
    rope(unchanged.data(), 2, 1, head_dim, 0, 16.0f);
    CHECK(unchanged[0] == 1.0f);
    CHECK(unchanged[1] == 2.0f);
    CHECK(unchanged[2] == 3.0f);
    CHECK(unchanged[3] == 4.0f);
    CHECK(unchanged[4] == doctest::Approx(1.0 * std::cos(1.0) - 3.0 * std::sin(1.0)));  // pos 1

    rope(x.data(), 2, 1, head_dim, 5, 16.0f);
    for (int t = 0; t < 2; t++) {
        double pos = 5 + t;
        const float* head = &x[t * head_dim];
        // pair (0, 2) turns by pos, pair (1, 3) by pos / 4
        CHECK(head[0] == doctest::Approx(1 * std::cos(pos) - 3 * std::sin(pos)));
        CHECK(head[2] == doctest::Approx(3 * std::cos(pos) + 1 * std::sin(pos)));
        CHECK(head[1] == doctest::Approx(2 * std::cos(pos / 4) - 4 * std::sin(pos / 4)));
        CHECK(head[3] == doctest::Approx(4 * std::cos(pos / 4) + 2 * std::sin(pos / 4)));
        CHECK(head[0] * head[0] + head[2] * head[2] == doctest::Approx(10.0));
    }
}

TEST_CASE("softmax gives -inf exactly 0 and survives huge inputs") {
    std::vector<float> x = {0.0f, float(kLn3), -INFINITY, float(std::log(4.0))};
    softmax(x.data(), 4);
    CHECK(x[0] == doctest::Approx(1.0 / 8));
    CHECK(x[1] == doctest::Approx(3.0 / 8));
    CHECK(x[2] == 0.0f);
    CHECK(x[3] == doctest::Approx(4.0 / 8));

    std::vector<float> big = {1000.0f, 1000.0f + float(kLn3), -INFINITY};
    softmax(big.data(), 3);
    CHECK(big[0] == doctest::Approx(0.25));
    CHECK(big[1] == doctest::Approx(0.75));
    CHECK(big[2] == 0.0f);

    std::vector<float> one = {-INFINITY, -5.0f};
    softmax(one.data(), 2);
    CHECK(one[0] == 0.0f);
    CHECK(one[1] == 1.0f);
}

// With one token, attention returns the value vector of the query head's KV head, whatever
// the query: this pins the grouped-query head mapping h -> h / (n_heads / n_kv_heads).
TEST_CASE("attention maps query heads onto their shared key/value head") {
    const int n_heads = 6, n_kv_heads = 2, head_dim = 3;
    std::vector<float> q(n_heads * head_dim), k(n_kv_heads * head_dim, 0.5f);
    std::vector<float> v = {1, 2, 3, 10, 20, 30};  // (1, n_kv_heads * head_dim)
    for (size_t i = 0; i < q.size(); i++) q[i] = float(i) - 4.0f;
    std::vector<float> out(n_heads * head_dim);
    attention(out.data(), q.data(), k.data(), v.data(), 1, 0, n_heads, n_kv_heads, head_dim);
    for (int h = 0; h < n_heads; h++) {
        int kv = h < 3 ? 0 : 1;  // heads 0-2 share KV head 0, heads 3-5 share KV head 1
        for (int d = 0; d < head_dim; d++)
            CHECK(out[h * head_dim + d] == doctest::Approx(v[kv * head_dim + d]));
    }
}

// Queries orthogonal to every key give equal scores, so token t averages values 0..t: any
// leak from a later position would change the mean.
TEST_CASE("attention is causal: token t averages only positions 0..t when scores are equal") {
    const int n_tokens = 5, head_dim = 3;
    std::vector<float> q(n_tokens * head_dim), k(n_tokens * head_dim), v(n_tokens * head_dim);
    for (int t = 0; t < n_tokens; t++) {
        q[t * head_dim + 0] = 1.0f;  // queries along x, keys along y
        k[t * head_dim + 1] = float(t + 1);
        for (int d = 0; d < head_dim; d++) v[t * head_dim + d] = float(10 * t + d);
    }
    std::vector<float> out(n_tokens * head_dim);
    attention(out.data(), q.data(), k.data(), v.data(), n_tokens, 0, 1, 1, head_dim);
    for (int t = 0; t < n_tokens; t++)
        for (int d = 0; d < head_dim; d++)
            CHECK(out[t * head_dim + d] == doctest::Approx(10.0 * t / 2.0 + d));  // mean of 10j+d
}

// Token 1 scores key 0 with 0 and key 1 with sqrt(head_dim) * ln 3 before scaling; after the
// 1/sqrt(head_dim) scale the weights are softmax(0, ln 3) = (1/4, 3/4).
TEST_CASE("attention scales scores by 1/sqrt(head_dim)") {
    const int head_dim = 3;
    float lift = float(std::sqrt(3.0) * kLn3);
    std::vector<float> q = {0, 0, 0, lift, 0, 0};  // (2, head_dim)
    std::vector<float> k = {0, 1, 0, 1, 0, 0};
    std::vector<float> v = {4, 8, -4, 0, 4, 8};
    std::vector<float> out(2 * head_dim);
    attention(out.data(), q.data(), k.data(), v.data(), 2, 0, 1, 1, head_dim);
    CHECK(out[0] == doctest::Approx(4.0));
    CHECK(out[3] == doctest::Approx(0.25 * 4 + 0.75 * 0));
    CHECK(out[4] == doctest::Approx(0.25 * 8 + 0.75 * 4));
    CHECK(out[5] == doctest::Approx(0.25 * -4 + 0.75 * 8));
}

TEST_CASE("swiglu is silu(gate) * up") {
    // silu(ln 3) = ln 3 * sigmoid(ln 3) = ln 3 * 3/4; silu(-ln 3) = -ln 3 * 1/4
    std::vector<float> gate = {0.0f, float(kLn3), -float(kLn3), 30.0f, -30.0f};
    std::vector<float> up = {5.0f, 2.0f, 2.0f, 1.0f, 1.0f};
    std::vector<float> out(5);
    swiglu(out.data(), gate.data(), up.data(), 5);
    CHECK(out[0] == 0.0f);
    CHECK(out[1] == doctest::Approx(2 * 0.75 * kLn3));
    CHECK(out[2] == doctest::Approx(2 * -0.25 * kLn3));
    CHECK(out[3] == doctest::Approx(30.0));
    CHECK(std::fabs(out[4]) < 1e-10);
    swiglu(gate.data(), gate.data(), up.data(), 5);  // in place
    CHECK(gate == out);
}

TEST_CASE("add_bias adds per column and residual_add per element") {
    std::vector<float> x = {1, 2, 3, 4, 5, 6};  // (2, 3)
    std::vector<float> bias = {10, 20, 30};
    add_bias(x.data(), bias.data(), 2, 3);
    CHECK(x == std::vector<float>{11, 22, 33, 14, 25, 36});
    std::vector<float> delta = {-11, -22, -33, 1, 1, 1};
    residual_add(x.data(), delta.data(), 6);
    CHECK(x == std::vector<float>{0, 0, 0, 15, 26, 37});
}

TEST_CASE("argmax returns the first of equal maxima") {
    std::vector<float> x = {-3.0f, -1.0f, -2.0f, -1.0f};
    CHECK(argmax(x.data(), 4) == 1);
    std::vector<float> single = {-INFINITY};
    CHECK(argmax(single.data(), 1) == 0);
}

// F16 matrix with small integers: every product and sum is exact, so the result must be too.
TEST_CASE("matmul of an F16 matrix with awkward sizes is exact on small integers") {
    const int n_tokens = 3, in_dim = 7, out_dim = 5;
    ByteBuilder w;  // (out_dim, in_dim) stored as F16: W[o][i] = o - i
    for (int o = 0; o < out_dim; o++)
        for (int i = 0; i < in_dim; i++) w.u16(f32_to_f16(float(o - i)));
    std::vector<float> x(n_tokens * in_dim);  // (n_tokens, in_dim): x[t][i] = t + i
    for (int t = 0; t < n_tokens; t++)
        for (int i = 0; i < in_dim; i++) x[t * in_dim + i] = float(t + i);
    std::vector<float> out(n_tokens * out_dim);  // (n_tokens, out_dim)
    matmul(out.data(), x.data(), w.bytes.data(), uint32_t(GgmlType::F16), n_tokens, in_dim,
           out_dim);
    for (int t = 0; t < n_tokens; t++) {
        for (int o = 0; o < out_dim; o++) {
            // sum_i (o - i)(t + i) = 7ot + 21(o - t) - 91, with sum i = 21, sum i^2 = 91
            CHECK(out[t * out_dim + o] == float(7 * o * t + 21 * (o - t) - 91));
        }
    }
}

// Q8_0 block: f16 scale d, then 32 int8 q; value = d * q. Two rows of two blocks each, so the
// row stride (2 * 34 bytes) matters.
TEST_CASE("matmul dequantizes hand-made Q8_0 rows") {
    const int in_dim = 64, out_dim = 2;
    ByteBuilder w;
    for (int o = 0; o < out_dim; o++) {
        for (int block = 0; block < 2; block++) {
            float d = block == 0 ? 0.5f : -0.25f;
            w.u16(f32_to_f16(o == 0 ? d : 2 * d));
            for (int j = 0; j < 32; j++) w.u8(uint8_t(int8_t(j - 16)));
        }
    }
    REQUIRE(w.size() == 2 * ggml_row_bytes(uint32_t(GgmlType::Q8_0), in_dim));
    std::vector<float> ones(in_dim, 1.0f), ramp(in_dim);
    for (int i = 0; i < in_dim; i++) ramp[i] = i < 32 ? 1.0f : 0.0f;
    std::vector<float> x = ones;
    x.insert(x.end(), ramp.begin(), ramp.end());  // (2, in_dim)
    std::vector<float> out(2 * out_dim);
    matmul(out.data(), x.data(), w.bytes.data(), uint32_t(GgmlType::Q8_0), 2, in_dim, out_dim);
    // sum_j (j - 16) over j = 0..31 = 496 - 512 = -16
    CHECK(out[0] == doctest::Approx(0.5 * -16 + -0.25 * -16));  // row 0, all ones
    CHECK(out[1] == doctest::Approx(1.0 * -16 + -0.5 * -16));   // row 1, all ones
    CHECK(out[2] == doctest::Approx(0.5 * -16));                // row 0, first block only
    CHECK(out[3] == doctest::Approx(1.0 * -16));                // row 1, first block only
}

// Q4_K super-block of 256: f16 d, f16 dmin, 12 bytes of 6-bit scales/mins, 128 bytes of
// nibbles. Scales all 1 and mins all 0 (bytes 0-3 = 1, 4-7 = 0, 8-11 = 0x01), d = 1, dmin = 0:
// each element is its nibble. Nibble byte 0x21 puts 1 in the low half of every 64-element
// chunk and 2 in the high half.
TEST_CASE("matmul dequantizes a hand-made Q4_K row") {
    ByteBuilder w;
    for (int row = 0; row < 2; row++) {
        w.u16(f32_to_f16(row == 0 ? 1.0f : 0.5f)).u16(f32_to_f16(0.0f));
        for (int i = 0; i < 4; i++) w.u8(1);
        for (int i = 0; i < 4; i++) w.u8(0);
        for (int i = 0; i < 4; i++) w.u8(0x01);
        for (int i = 0; i < 128; i++) w.u8(0x21);
    }
    std::vector<float> x(256, 1.0f);
    std::vector<float> out(2);
    matmul(out.data(), x.data(), w.bytes.data(), uint32_t(GgmlType::Q4_K), 1, 256, 2);
    CHECK(out[0] == doctest::Approx(128 * 1 + 128 * 2));
    CHECK(out[1] == doctest::Approx(0.5 * (128 * 1 + 128 * 2)));
}

TEST_CASE("embedding copies the rows named by the ids") {
    const int dim = 3;
    ByteBuilder table;  // 4 rows of F32: row r = (r, 10r, 100r)
    for (int r = 0; r < 4; r++) table.f32(float(r)).f32(10.0f * r).f32(100.0f * r);
    std::vector<int32_t> ids = {2, 0, 3, 2};
    std::vector<float> out(ids.size() * dim);
    embedding(out.data(), table.bytes.data(), uint32_t(GgmlType::F32), ids.data(), 4, dim);
    CHECK(out == std::vector<float>{2, 20, 200, 0, 0, 0, 3, 30, 300, 2, 20, 200});

    ByteBuilder q8;  // 2 rows of Q8_0, dim 32: row r has d = r + 1 and q = j
    for (int r = 0; r < 2; r++) {
        q8.u16(f32_to_f16(float(r + 1)));
        for (int j = 0; j < 32; j++) q8.u8(uint8_t(j));
    }
    std::vector<int32_t> one = {1};
    std::vector<float> row(32);
    embedding(row.data(), q8.bytes.data(), uint32_t(GgmlType::Q8_0), one.data(), 1, 32);
    for (int j = 0; j < 32; j++) CHECK(row[j] == float(2 * j));
}
