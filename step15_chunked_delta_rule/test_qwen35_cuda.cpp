// Checks for step 14's kernels against their CPU twins in ops_cpu: Qwen3.5's partial RoPE and
// sigmoid gate (elementwise.cu), and the Gated DeltaNet's conv1d + SiLU, L2 norm, gates, delta
// rule and gated RMSNorm (gated_delta_net.cu), on random inputs of awkward sizes: channels and
// rows that fill no whole warp or block, key heads of 32 to 128 values, value heads of 20 to
// 128, as many value heads as key heads or 2 or 4 times as many, prompts of 1, 7 and 300
// tokens. Output buffers are filled with NaN first, so an element never written fails; the
// conv's window and the rule's state are compared after the call too, and a prompt given in two
// calls must give what it gives in one. Each tolerance is stated next to its check, in the form
// |gpu - cpu| <= abs + rel * |cpu|. Without a GPU these checks skip, except the refusals (with
// GPU code) and the check of the delta rule's tolerance itself, which runs on the CPU.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "device_buffer.h"
#include "error.h"
#include "ops_cpu.h"
#include "ops_cuda.h"
#include "test_gpu.h"
#include "test_random_weights.h"

TEST_CASE("gpu::partial_rope equals partial_rope and leaves each head's tail as it was") {
    if (!gpu_or_skip()) return;
    // (n_tokens, n_heads, head_dim, rope_dims): Qwen3.5's heads of 256 turning 64, a quarter
    // of a head of 128, one pair of a head of 6, and the whole head (rope itself).
    const int shapes[][4] = {{7, 3, 256, 64}, {33, 4, 128, 32}, {5, 2, 6, 2}, {1, 2, 64, 64}};
    for (const auto& shape : shapes) {
        const int n_tokens = shape[0], n_heads = shape[1], head_dim = shape[2];
        const int rope_dims = shape[3];
        for (int first_position : {0, 1000, 32760}) {
            CAPTURE(n_tokens);
            CAPTURE(n_heads);
            CAPTURE(head_dim);
            CAPTURE(rope_dims);
            CAPTURE(first_position);
            const std::vector<float> x = random_values(size_t(n_tokens) * n_heads * head_dim, 50);
            std::vector<float> expected = x;
            partial_rope(expected.data(), n_tokens, n_heads, head_dim, rope_dims, first_position,
                         1e7f);

            DeviceBuffer<float> device_x(x);
            gpu::partial_rope(device_x.data(), n_tokens, n_heads, head_dim, rope_dims,
                              first_position, 1e7f);
            const std::vector<float> got = device_x.download();
            // rope's tolerance (test_ops_cuda.cpp): the same angle in double, the same float
            // cos and sin; the GPU may fuse a*c - b*s into one multiply-add.
            check_close(got, expected, {1e-6, 1e-5}, head_dim);
            int touched = 0;  // values past rope_dims that changed at all
            for (size_t i = 0; i < x.size(); i++)
                if (int(i % head_dim) >= rope_dims && got[i] != x[i]) touched++;
            CHECK(touched == 0);
        }
    }
}

TEST_CASE("gpu::sigmoid_gate equals sigmoid_gate") {
    if (!gpu_or_skip()) return;
    for (int n : {1, 7, 33, 4867, 100000}) {
        CAPTURE(n);
        const std::vector<float> x = random_values(n, 51, -3.0f, 3.0f);
        const std::vector<float> gate = random_values(n, 52, -20.0f, 20.0f);
        std::vector<float> expected = x;
        sigmoid_gate(expected.data(), gate.data(), n);

        DeviceBuffer<float> device_x(x), device_gate(gate);
        gpu::sigmoid_gate(device_x.data(), device_gate.data(), n);
        // CUDA's expf is within 2 ulps of the CPU's; one division and one product follow.
        check_close(device_x.download(), expected, {1e-7, 1e-6});
    }
}

// ---- the Gated DeltaNet ----

// The conv on the GPU, its tokens given in two calls: [0, split), then [split, n_tokens).
// `window` is the window before, and after.
static std::vector<float> gpu_conv(std::vector<float>& window, const std::vector<float>& x,
                                   const std::vector<float>& weight, int n_tokens, int channels,
                                   int kernel, int split) {
    DeviceBuffer<float> device_x(x), device_window(window), device_weight(weight);
    DeviceBuffer<float> out = poisoned(x.size());
    const int64_t row = channels;
    gpu::causal_conv1d_silu(out.data(), device_x.data(), device_window.data(), device_weight.data(),
                            split, channels, kernel);
    gpu::causal_conv1d_silu(out.data() + split * row, device_x.data() + split * row,
                            device_window.data(), device_weight.data(), n_tokens - split, channels,
                            kernel);
    window = device_window.download();
    return out.download();
}

TEST_CASE("gpu::causal_conv1d_silu equals causal_conv1d_silu, window too; two calls equal one") {
    if (!gpu_or_skip()) return;
    // Channels: one, part of a warp, no multiple of a block, Qwen3.5-0.8B's 6144 (q, k and v:
    // 2 * 16 * 128 + 16 * 128). Kernels: Qwen3.5's 4, one tap (no window at all), the most the
    // registers hold. Tokens: 2 is fewer than a window of 3, 300 spans many chunks of 16.
    for (int channels : {1, 33, 1000, 6144}) {
        for (int kernel : {4, 1, 8}) {
            for (int n_tokens : {1, 2, 7, 300}) {
                CAPTURE(channels);
                CAPTURE(kernel);
                CAPTURE(n_tokens);
                const std::vector<float> x =
                    random_values(size_t(n_tokens) * channels, 53, -3.0f, 3.0f);
                const std::vector<float> weight = random_values(size_t(channels) * kernel, 54);
                // As an earlier call left it.
                const std::vector<float> window =
                    random_values(size_t(kernel - 1) * channels, 55, -3.0f, 3.0f);
                std::vector<float> expected(x.size()), expected_window = window;
                causal_conv1d_silu(expected.data(), x.data(), expected_window.data(), weight.data(),
                                   n_tokens, channels, kernel);

                std::vector<float> got_window = window;
                const std::vector<float> got =
                    gpu_conv(got_window, x, weight, n_tokens, channels, kernel, n_tokens);
                // The same products summed in the same order; the GPU rounds each multiply-add
                // once, the CPU may round twice: at most 8 terms of size <= 3 differ by half an
                // ulp (1.2e-7) each, 2e-6 in all; SiLU's slope is at most 1.1, and its expf is
                // within 2 ulps of the CPU's. A tap or an input off by one is off by ~1.
                check_close(got, expected, {2e-6, 1e-6}, channels);
                // The window holds inputs, copied: exactly.
                check_close(got_window, expected_window, {0.0, 0.0}, channels);

                // A prompt in two pieces, the first shorter than the window when n_tokens is 7:
                // each output is the same sum of the same floats (from x or from the window),
                // computed by the same code, so bit for bit what one call gives.
                std::vector<float> split_window = window;
                const int split = n_tokens / 3;
                CAPTURE(split);
                check_close(gpu_conv(split_window, x, weight, n_tokens, channels, kernel, split),
                            got, {0.0, 0.0}, channels);
                check_close(split_window, got_window, {0.0, 0.0}, channels);
            }
        }
    }
}

TEST_CASE("gpu::l2_normalize_rows equals l2_normalize_rows, a zero row too") {
    if (!gpu_or_skip()) return;
    // (n_rows, dim): a head of 32, rows of no whole warp, 300 tokens of 2 heads of 128, rows
    // longer than a warp's many strides, rows of one value.
    const int shapes[][2] = {{1, 32}, {7, 33}, {600, 128}, {3, 1000}, {5, 1}};
    for (const auto& shape : shapes) {
        const int n_rows = shape[0], dim = shape[1];
        for (float scale : {1.0f, 1.0f / std::sqrt(float(dim))}) {
            CAPTURE(n_rows);
            CAPTURE(dim);
            CAPTURE(scale);
            // Rows of different lengths, the first all zeros: eps keeps it finite (zeros out).
            std::vector<float> x = random_values(size_t(n_rows) * dim, 56, -3.0f, 3.0f);
            for (size_t i = 0; i < x.size(); i++)
                x[i] *= i < size_t(dim) ? 0.0f : float(1 + (i / dim) % 5);
            std::vector<float> expected = x;
            l2_normalize_rows(expected.data(), n_rows, dim, 1e-6f, scale);

            DeviceBuffer<float> device_x(x);
            gpu::l2_normalize_rows(device_x.data(), n_rows, dim, 1e-6f, scale);
            // The CPU sums the squares in double, the GPU in float (each lane its 1/32, then
            // 5 shuffles): at most ~37 roundings of the sum, 2.2e-6 of it, half that after the
            // square root, then a division and a product. A wrong row span or scale is off by
            // far more than 1e-5.
            check_close(device_x.download(), expected, {1e-7, 1e-5}, dim);
        }
    }
}

TEST_CASE("gpu::delta_net_gates equals delta_net_gates, on both sides of softplus's threshold") {
    if (!gpu_or_skip()) return;
    for (int n_tokens : {1, 7, 300}) {
        for (int n_heads : {1, 16, 33}) {
            CAPTURE(n_tokens);
            CAPTURE(n_heads);
            const size_t n = size_t(n_tokens) * n_heads;
            const std::vector<float> b = random_values(n, 57, -20.0f, 20.0f);
            // a + dt_bias from -33 to 33: softplus's log1p(e^x) and, above 20, x itself.
            const std::vector<float> a = random_values(n, 58, -30.0f, 30.0f);
            const std::vector<float> dt_bias = random_values(n_heads, 59, -3.0f, 3.0f);
            std::vector<float> A = random_values(n_heads, 60, -2.0f, 2.0f);
            for (float& value : A) value = -std::exp(value);  // the file's A = -exp(A_log)
            std::vector<float> expected_beta(n), expected_g(n);
            delta_net_gates(expected_beta.data(), expected_g.data(), b.data(), a.data(), A.data(),
                            dt_bias.data(), n_tokens, n_heads);

            DeviceBuffer<float> device_b(b), device_a(a), device_A(A), device_dt_bias(dt_bias);
            DeviceBuffer<float> beta = poisoned(n), g = poisoned(n);
            gpu::delta_net_gates(beta.data(), g.data(), device_b.data(), device_a.data(),
                                 device_A.data(), device_dt_bias.data(), n_tokens, n_heads);
            // expf within 2 ulps of the CPU's exp and log1pf within 1 of its log1p, a division
            // or a product after: a few ulps of each value, relative (beta goes down to 2e-9
            // and g to 1e-14, where an absolute bound would accept anything).
            check_close(beta.download(), expected_beta, {0.0, 1e-6}, n_heads);
            check_close(g.download(), expected_g, {0.0, 2e-6}, n_heads);
        }
    }
}

// ---- the gated delta rule ----

struct RuleShape {
    int dk, dv, n_key_heads, n_value_heads;
};

// One prompt's inputs to the rule, as the layer makes them.
struct RuleInputs {
    std::vector<float> q, k;     // (n_tokens, n_key_heads, dk)
    std::vector<float> v;        // (n_tokens, n_value_heads, dv)
    std::vector<float> g, beta;  // (n_tokens, n_value_heads)
    std::vector<float> state;    // (n_value_heads, dk, dv) as earlier tokens left it
};

static RuleInputs rule_inputs(const RuleShape& s, int n_tokens, uint32_t seed) {
    const size_t keys = size_t(n_tokens) * s.n_key_heads * s.dk;
    const size_t gates = size_t(n_tokens) * s.n_value_heads;
    RuleInputs in;
    // k of length 1 and q of length 1/sqrt(dk), as l2_normalize_rows makes them in the layer.
    in.q = random_values(keys, seed);
    in.k = random_values(keys, seed + 1);
    l2_normalize_rows(in.q.data(), n_tokens * s.n_key_heads, s.dk, 1e-6f,
                      1.0f / std::sqrt(float(s.dk)));
    l2_normalize_rows(in.k.data(), n_tokens * s.n_key_heads, s.dk, 1e-6f, 1.0f);
    in.v = random_values(gates * s.dv, seed + 2);
    // Decays e^g from 0.37 to 0.9995: short memories and ones longer than the prompt.
    in.g = random_values(gates, seed + 3, -1.0f, -0.0005f);
    in.beta = random_values(gates, seed + 4, 0.05f, 0.95f);
    in.state = random_values(size_t(s.n_value_heads) * s.dk * s.dv, seed + 5, -0.5f, 0.5f);
    return in;
}

struct RuleResult {
    std::vector<float> out;    // (n_tokens, n_value_heads, dv)
    std::vector<float> state;  // (n_value_heads, dk, dv) after the last token
};

static RuleResult cpu_rule(const RuleShape& s, const RuleInputs& in, int n_tokens) {
    RuleResult result{std::vector<float>(in.v.size()), in.state};
    gated_delta_rule(result.out.data(), result.state.data(), in.q.data(), in.k.data(), in.v.data(),
                     in.g.data(), in.beta.data(), n_tokens, s.n_key_heads, s.n_value_heads, s.dk,
                     s.dv);
    return result;
}

// The rule on the GPU, its tokens given in two calls: [0, split), then [split, n_tokens).
static RuleResult gpu_rule(const RuleShape& s, const RuleInputs& in, int n_tokens, int split) {
    DeviceBuffer<float> q(in.q), k(in.k), v(in.v), g(in.g), beta(in.beta), state(in.state);
    DeviceBuffer<float> out = poisoned(in.v.size());
    const int64_t key_row = int64_t(s.n_key_heads) * s.dk;             // one token's q or k
    const int64_t value_row = int64_t(s.n_value_heads) * s.dv;         // one token's v or out
    const int64_t gate_row = s.n_value_heads;                          // one token's g or beta
    const int pieces[2][2] = {{0, split}, {split, n_tokens - split}};  // (first, count)
    for (const auto& piece : pieces) {
        const int64_t first = piece[0];
        gpu::gated_delta_rule(
            out.data() + first * value_row, state.data(), q.data() + first * key_row,
            k.data() + first * key_row, v.data() + first * value_row, g.data() + first * gate_row,
            beta.data() + first * gate_row, piece[1], s.n_key_heads, s.n_value_heads, s.dk, s.dv);
    }
    return {out.download(), state.download()};
}

// The tolerance of the rule's outputs and states. With |k| = 1, 0 < beta < 1 and 0 < e^g < 1, a
// token maps each column of a state through e^g (I - beta k k^T), which shrinks or keeps any
// vector: an error made at one token never grows at the next, so the tokens' errors at most
// add up. A token rounds each state value a few times, about 1e-7 of the state's size, the CPU
// in one order, the GPU in another, its expf within 2 ulps of the CPU's exp. Over 300 tokens
// that is at most 3e-5 of the state's size were every rounding to fall the same way, and far
// less as they fall: the CPU's run stays within 1e-6 of one in double (the check below). The
// states and outputs are of order 0.1 to 1, so 1e-5 + 1e-4 relative holds them with room, and a
// missing decay or the other head order moves them by 0.01 or more (the check below too).
static const Tolerance kRuleTolerance = {1e-5, 1e-4};

// (dk, dv, n_key_heads, n_value_heads): as many value heads as key heads or 2 or 4 times as
// many (the file's tiled order then matters); dk of 1, 2, 3 and 4 registers a lane; dv of whole
// groups of 8 columns (a block) and of part of one.
static const RuleShape kRuleShapes[] = {{32, 32, 1, 1},  {64, 96, 2, 4},  {128, 128, 2, 8},
                                        {128, 32, 3, 3}, {32, 96, 3, 12}, {96, 20, 2, 2}};

TEST_CASE("gpu::gated_delta_rule equals gated_delta_rule, state too; two calls equal one") {
    if (!gpu_or_skip()) return;
    for (const RuleShape& s : kRuleShapes) {
        for (int n_tokens : {1, 7, 300}) {
            CAPTURE(s.dk);
            CAPTURE(s.dv);
            CAPTURE(s.n_key_heads);
            CAPTURE(s.n_value_heads);
            CAPTURE(n_tokens);
            const RuleInputs in = rule_inputs(s, n_tokens, 61);
            const RuleResult expected = cpu_rule(s, in, n_tokens);
            const RuleResult got = gpu_rule(s, in, n_tokens, n_tokens);
            check_close(got.out, expected.out, kRuleTolerance, s.dv);
            check_close(got.state, expected.state, kRuleTolerance, s.dv);

            // A prompt in two pieces: the state goes to memory as floats and comes back as the
            // same floats, and every token's arithmetic is the same code's, so bit for bit.
            const int split = n_tokens / 3;
            CAPTURE(split);
            const RuleResult pieces = gpu_rule(s, in, n_tokens, split);
            check_close(pieces.out, got.out, {0.0, 0.0}, s.dv);
            check_close(pieces.state, got.state, {0.0, 0.0}, s.dv);
        }
    }
}

// gated_delta_rule of ops_cpu.cpp with every value in double: the exact result, nearly.
static RuleResult rule_in_double(const RuleShape& s, const RuleInputs& in, int n_tokens) {
    const int dk = s.dk, dv = s.dv;
    std::vector<double> state(in.state.begin(), in.state.end()), out(in.v.size());
    for (int h = 0; h < s.n_value_heads; h++) {
        double* S = state.data() + size_t(h) * dk * dv;  // (dk, dv)
        for (int t = 0; t < n_tokens; t++) {
            const size_t key_row = (size_t(t) * s.n_key_heads + h % s.n_key_heads) * dk;
            const size_t head_index = size_t(t) * s.n_value_heads + h;
            const double decay = std::exp(double(in.g[head_index]));
            for (int j = 0; j < dv; j++) {
                double recalled = 0.0, read = 0.0;
                for (int i = 0; i < dk; i++) {
                    S[i * dv + j] *= decay;
                    recalled += S[i * dv + j] * in.k[key_row + i];
                }
                const double delta = in.beta[head_index] * (in.v[head_index * dv + j] - recalled);
                for (int i = 0; i < dk; i++) {
                    S[i * dv + j] += in.k[key_row + i] * delta;
                    read += S[i * dv + j] * in.q[key_row + i];
                }
                out[head_index * dv + j] = read;
            }
        }
    }
    return {std::vector<float>(out.begin(), out.end()),
            std::vector<float>(state.begin(), state.end())};
}

// The key heads repeated for each value head in the grouped order, value head h reading key
// head h / (n_value_heads / n_key_heads): (n_tokens, n_value_heads, dk), which the rule with
// n_key_heads = n_value_heads reads that way.
static std::vector<float> grouped_keys(const std::vector<float>& keys, const RuleShape& s,
                                       int n_tokens) {
    const int group = s.n_value_heads / s.n_key_heads;
    std::vector<float> grouped(size_t(n_tokens) * s.n_value_heads * s.dk);
    for (int t = 0; t < n_tokens; t++)
        for (int h = 0; h < s.n_value_heads; h++)
            for (int i = 0; i < s.dk; i++)
                grouped[(size_t(t) * s.n_value_heads + h) * s.dk + i] =
                    keys[(size_t(t) * s.n_key_heads + h / group) * s.dk + i];
    return grouped;
}

// Value head h's outputs of every token: (n_tokens, dv).
static std::vector<float> head_outputs(const std::vector<float>& out, const RuleShape& s, int h) {
    std::vector<float> head;
    for (size_t row = h; row * s.dv < out.size(); row += s.n_value_heads)
        head.insert(head.end(), out.begin() + row * s.dv, out.begin() + (row + 1) * s.dv);
    return head;
}

// How many of the values lie outside the rule's tolerance of the reference.
static int outside_rule_tolerance(const std::vector<float>& ours,
                                  const std::vector<float>& reference) {
    std::string report;
    return count_mismatches(ours, reference, kRuleTolerance, report);
}

TEST_CASE(
    "the delta rule's GPU tolerance holds float rounding, not a missing decay or head order") {
    const int n_tokens = 300;
    for (const RuleShape& s : {RuleShape{128, 128, 2, 8}, RuleShape{32, 96, 3, 12}}) {
        CAPTURE(s.dk);
        CAPTURE(s.n_value_heads);
        const RuleInputs in = rule_inputs(s, n_tokens, 61);
        const RuleResult cpu = cpu_rule(s, in, n_tokens);
        // Float rounding over 300 tokens, the CPU's order against (nearly) none: a tenth of
        // the tolerance, which the GPU's order, as far off in its own way, stays within.
        const RuleResult exact = rule_in_double(s, in, n_tokens);
        check_close(cpu.out, exact.out, {1e-6, 1e-5}, s.dv);
        check_close(cpu.state, exact.state, {1e-6, 1e-5}, s.dv);

        // A kernel that skipped the decay, or read key head h / 4 instead of h % 2, would fail
        // on most outputs (of the heads where the two orders differ), not on a few.
        RuleInputs no_decay = in;
        for (float& g : no_decay.g) g = 0.0f;
        const RuleResult undecayed = cpu_rule(s, no_decay, n_tokens);
        CHECK(outside_rule_tolerance(undecayed.out, cpu.out) > int(cpu.out.size()) / 2);
        CHECK(outside_rule_tolerance(undecayed.state, cpu.state) > int(cpu.state.size()) / 2);

        RuleInputs grouped = in;
        grouped.q = grouped_keys(in.q, s, n_tokens);
        grouped.k = grouped_keys(in.k, s, n_tokens);
        const RuleShape as_grouped{s.dk, s.dv, s.n_value_heads, s.n_value_heads};
        const RuleResult regrouped = cpu_rule(as_grouped, grouped, n_tokens);
        const int group = s.n_value_heads / s.n_key_heads;
        for (int h = 0; h < s.n_value_heads; h++) {
            if (h % s.n_key_heads == h / group) continue;  // the same key head either way
            CAPTURE(h);
            const std::vector<float> ours = head_outputs(regrouped.out, s, h);
            CHECK(outside_rule_tolerance(ours, head_outputs(cpu.out, s, h)) > int(ours.size()) / 2);
        }
    }
}

TEST_CASE("gpu::gated_rmsnorm equals gated_rmsnorm, also in place") {
    if (!gpu_or_skip()) return;
    // (n_rows, dim): 300 tokens of 16 value heads of 128 (Qwen3.5-0.8B), rows of no whole
    // warp, long rows, rows of one value.
    const int shapes[][2] = {{4800, 128}, {7, 33}, {3, 1000}, {5, 1}, {1, 96}};
    for (const auto& shape : shapes) {
        const int n_rows = shape[0], dim = shape[1];
        CAPTURE(n_rows);
        CAPTURE(dim);
        std::vector<float> x = random_values(size_t(n_rows) * dim, 62, -3.0f, 3.0f);
        for (size_t i = 0; i < x.size(); i++) x[i] *= float(1 + (i / dim) % 5);
        const std::vector<float> z = random_values(x.size(), 63, -10.0f, 10.0f);
        const std::vector<float> weight = random_values(dim, 64, 0.5f, 1.5f);
        std::vector<float> expected(x.size());
        gated_rmsnorm(expected.data(), x.data(), z.data(), weight.data(), n_rows, dim, 1e-6f);

        DeviceBuffer<float> device_x(x), device_z(z), device_weight(weight);
        DeviceBuffer<float> out = poisoned(x.size());
        gpu::gated_rmsnorm(out.data(), device_x.data(), device_z.data(), device_weight.data(),
                           n_rows, dim, 1e-6f);
        // rmsnorm's: the sum of squares in float against double (~1e-6 of 1/rms), then SiLU's
        // expf within 2 ulps and three products. A wrong row, weight or gate is off by ~1.
        check_close(out.download(), expected, {1e-6, 1e-5}, dim);
        gpu::gated_rmsnorm(device_x.data(), device_x.data(), device_z.data(), device_weight.data(),
                           n_rows, dim, 1e-6f);
        check_close(device_x.download(), expected, {1e-6, 1e-5}, dim);
    }
}

TEST_CASE("the DeltaNet kernels refuse sizes their registers cannot hold, in one line") {
    if (!gpu_code_or_skip()) return;
    CHECK_THROWS_WITH_AS(gpu::gated_delta_rule(nullptr, nullptr, nullptr, nullptr, nullptr, nullptr,
                                               nullptr, 1, 1, 1, 48, 32),
                         "gpu::gated_delta_rule needs key heads of a multiple of 32 values up to "
                         "256, not 48",
                         Error);
    CHECK_THROWS_WITH_AS(gpu::gated_delta_rule(nullptr, nullptr, nullptr, nullptr, nullptr, nullptr,
                                               nullptr, 1, 1, 1, 288, 32),
                         "gpu::gated_delta_rule needs key heads of a multiple of 32 values up to "
                         "256, not 288",
                         Error);
    CHECK_THROWS_WITH_AS(gpu::causal_conv1d_silu(nullptr, nullptr, nullptr, nullptr, 1, 32, 9),
                         "gpu::causal_conv1d_silu takes kernels of 1 to 8 taps, not 9", Error);
    CHECK_THROWS_WITH_AS(gpu::causal_conv1d_silu(nullptr, nullptr, nullptr, nullptr, 1, 32, 0),
                         "gpu::causal_conv1d_silu takes kernels of 1 to 8 taps, not 0", Error);
}
