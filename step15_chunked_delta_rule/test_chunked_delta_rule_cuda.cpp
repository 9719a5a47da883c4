// Checks for step 15's chunked delta rule on the GPU (chunked_delta_rule.cu:
// gpu::chunked_gated_delta_rule) against step 14's recurrence on the CPU (gated_delta_rule) and
// on the GPU (gpu::gated_delta_rule): outputs and the state after the last token, on inputs made
// as the layer makes them (q and k L2-normalized, beta in (0, 1)), with decays near 0, near 1
// and both mixed; prompts of 1, 63, 64, 65, 1000 and 8192 tokens; Qwen3.5's heads of 128 with as
// many value heads as key heads, twice as many (2 key heads, 4 value heads; 16 and 32 as in the
// larger models), and short heads (dk 32, dv 48) that the kernels pad; keys nearly parallel
// with beta near 1; a state left by an earlier call; a prompt in two calls. Outputs are filled
// with NaN first, so a value never written fails. The bound and its reason stand next to
// kGpuChunkBound (test_delta_rule_inputs.h); a CPU check shows why the products cannot take
// plain F16 operands. Without a GPU these checks skip, except that one and the refusals (with GPU
// code).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "device_buffer.h"
#include "error.h"
#include "ops_cpu.h"
#include "ops_cuda.h"
#include "test_delta_rule_inputs.h"
#include "test_gpu.h"
#include "test_random_weights.h"

namespace {

using namespace delta_rule_checks;

// A GPU rule, chunked or token by token, its tokens given in two calls: [0, split), then
// [split, n_tokens).
enum class GpuRule { Chunked, Recurrent };

RuleResult gpu_rule(GpuRule rule, const RuleShape& s, const RuleInputs& in, int n_tokens,
                    int split) {
    DeviceBuffer<float> q(in.q), k(in.k), v(in.v), g(in.g), beta(in.beta), state(in.state);
    DeviceBuffer<float> out = poisoned(in.v.size());
    const int64_t key_row = int64_t(s.n_key_heads) * s.dk;             // one token's q or k
    const int64_t value_row = int64_t(s.n_value_heads) * s.dv;         // one token's v or out
    const int64_t gate_row = s.n_value_heads;                          // one token's g or beta
    const int pieces[2][2] = {{0, split}, {split, n_tokens - split}};  // (first, count)
    gpu::DeltaChunkScratch scratch;
    scratch.reserve(std::max(split, n_tokens - split), s.n_value_heads, s.dv);
    for (const auto& piece : pieces) {
        const int64_t first = piece[0], count = piece[1];
        float* o = out.data() + first * value_row;
        const float* qs = q.data() + first * key_row;
        const float* ks = k.data() + first * key_row;
        const float* vs = v.data() + first * value_row;
        const float* gs = g.data() + first * gate_row;
        const float* betas = beta.data() + first * gate_row;
        if (rule == GpuRule::Chunked)
            gpu::chunked_gated_delta_rule(o, state.data(), qs, ks, vs, gs, betas, count,
                                          s.n_key_heads, s.n_value_heads, s.dk, s.dv, scratch);
        else
            gpu::gated_delta_rule(o, state.data(), qs, ks, vs, gs, betas, count, s.n_key_heads,
                                  s.n_value_heads, s.dk, s.dv);
    }
    return {out.download(), state.download()};
}

// (n_key_heads, n_value_heads, dk, dv): Qwen3.5's heads of 128, as many value heads as key heads
// and twice as many (value head h reads key head h % n_key_heads); short heads, which the
// kernels pad to 128 with zeros, three value heads on one key head and dv a slice of 16 and a
// half; the larger models' 16 key and 32 value heads.
const RuleShape kSmallShapes[] = {{2, 2, 128, 128}, {2, 4, 128, 128}, {1, 3, 32, 48}};
const RuleShape kWideShape = {16, 32, 128, 128};

// The shapes for a prompt of n_tokens: the wide one up to 1000 tokens, to keep the CPU's
// reference short.
std::vector<RuleShape> shapes_for(int n_tokens) {
    std::vector<RuleShape> shapes(std::begin(kSmallShapes), std::end(kSmallShapes));
    if (n_tokens > 1 && n_tokens <= 1000) shapes.push_back(kWideShape);
    return shapes;
}

const Decays kAllDecays[] = {Decays::NearZero, Decays::NearOne, Decays::Mixed};

// x rounded to 11 significant bits, as F16 stores it (range aside).
float rounded_to_f16(float x) {
    if (x == 0.0f) return 0.0f;
    const int e = std::ilogb(x);
    return std::ldexp(std::nearbyint(std::ldexp(x, 10 - e)), e - 10);
}

std::vector<float> rounded_to_f16(std::vector<float> x) {
    for (float& value : x) value = rounded_to_f16(value);
    return x;
}

}  // namespace

TEST_CASE(
    "gpu::chunked_gated_delta_rule equals gated_delta_rule from 1 to 8192 tokens, within the "
    "bound") {
    if (!gpu_or_skip()) return;
    double out_gap = 0.0, state_gap = 0.0, exact_gap = 0.0;
    for (Decays decays : kAllDecays) {
        for (int n_tokens : {1, 63, 64, 65, 1000, 8192}) {
            for (const RuleShape& s : shapes_for(n_tokens)) {
                CAPTURE(decays_name(decays));
                CAPTURE(n_tokens);
                CAPTURE(s.n_key_heads);
                CAPTURE(s.n_value_heads);
                CAPTURE(s.dk);
                const RuleInputs in = rule_inputs(s, n_tokens, decays, 80);
                const RuleResult expected = recurrent(s, in, n_tokens);
                const RuleResult got = gpu_rule(GpuRule::Chunked, s, in, n_tokens, n_tokens);
                check_close(got.out, expected.out, kGpuChunkBound, s.dv);
                check_close(got.state, expected.state, kGpuChunkBound, s.dv);
                out_gap = std::max(out_gap, largest_difference(got.out, expected.out));
                state_gap = std::max(state_gap, largest_difference(got.state, expected.state));
                if (n_tokens <= 1000 && s.n_value_heads <= 4) {
                    const RuleResult exact = recurrent_in_double(s, in, n_tokens);
                    exact_gap = std::max({exact_gap, largest_difference(got.out, exact.out),
                                          largest_difference(got.state, exact.state)});
                }
            }
        }
    }
    MESSAGE("largest |gpu chunked - recurrent|: outputs "
            << out_gap << ", states " << state_gap
            << "; from the double recurrence: " << exact_gap);
}

TEST_CASE("gpu::chunked_gated_delta_rule: keys nearly parallel and beta near 1 (A near all ones)") {
    if (!gpu_or_skip()) return;
    // T's entries stay within 1 (test_chunked_delta_rule.cpp says why), so F16's range holds
    // them, and the split form their precision.
    const RuleShape s = kSmallShapes[1];
    const int n_tokens = 1000;
    RuleInputs in = rule_inputs(s, n_tokens, Decays::NearOne, 81);
    const std::vector<float> noise = random_values(in.k.size(), 82, -0.05f, 0.05f);
    for (size_t i = 0; i < in.k.size(); i++) in.k[i] = (i % s.dk == 0 ? 1.0f : 0.0f) + noise[i];
    l2_normalize_rows(in.k.data(), n_tokens * s.n_key_heads, s.dk, 1e-6f, 1.0f);
    in.beta = random_values(in.beta.size(), 83, 0.9f, 0.99f);
    const RuleResult expected = recurrent(s, in, n_tokens);
    const RuleResult got = gpu_rule(GpuRule::Chunked, s, in, n_tokens, n_tokens);
    check_close(got.out, expected.out, kGpuChunkBound, s.dv);
    check_close(got.state, expected.state, kGpuChunkBound, s.dv);
}

TEST_CASE("gpu::chunked_gated_delta_rule: a prompt in two calls, the state carried, equals one") {
    if (!gpu_or_skip()) return;
    const int n_tokens = 1000;
    for (const RuleShape& s : {kSmallShapes[1], kSmallShapes[2]}) {
        for (Decays decays : kAllDecays) {
            CAPTURE(s.dk);
            CAPTURE(decays_name(decays));
            const RuleInputs in = rule_inputs(s, n_tokens, decays, 84);
            const RuleResult whole = gpu_rule(GpuRule::Chunked, s, in, n_tokens, n_tokens);
            // Cut at a chunk's end: the same chunks; the state goes to memory as the floats the
            // registers held and comes back as them, so bit for bit.
            const RuleResult at_chunk =
                gpu_rule(GpuRule::Chunked, s, in, n_tokens, 3 * kDeltaChunkSize);
            check_close(at_chunk.out, whole.out, {0.0, 0.0}, s.dv);
            check_close(at_chunk.state, whole.state, {0.0, 0.0}, s.dv);
            // Cut anywhere (a chat's turn): other chunks, other roundings, within the bound of
            // the recurrence both.
            const RuleResult expected = recurrent(s, in, n_tokens);
            for (int split : {1, 37, 999}) {
                CAPTURE(split);
                const RuleResult pieces = gpu_rule(GpuRule::Chunked, s, in, n_tokens, split);
                check_close(pieces.out, expected.out, kGpuChunkBound, s.dv);
                check_close(pieces.state, expected.state, kGpuChunkBound, s.dv);
            }
        }
    }
}

TEST_CASE("gpu::chunked_gated_delta_rule equals gpu::gated_delta_rule, the kernel it replaces") {
    if (!gpu_or_skip()) return;
    // The token-by-token kernel is within ~1e-6 of the CPU's recurrence (test_qwen35_cuda.cpp),
    // so the chunked one's bound holds against it too.
    const int n_tokens = 1000;
    for (const RuleShape& s : {kSmallShapes[0], kWideShape}) {
        for (Decays decays : kAllDecays) {
            CAPTURE(s.n_value_heads);
            CAPTURE(decays_name(decays));
            const RuleInputs in = rule_inputs(s, n_tokens, decays, 85);
            const RuleResult recurrent = gpu_rule(GpuRule::Recurrent, s, in, n_tokens, n_tokens);
            const RuleResult chunked = gpu_rule(GpuRule::Chunked, s, in, n_tokens, n_tokens);
            check_close(chunked.out, recurrent.out, kGpuChunkBound, s.dv);
            check_close(chunked.state, recurrent.state, kGpuChunkBound, s.dv);
        }
    }
}

TEST_CASE("the GPU chunk bound holds the split form, not plain F16 operands") {
    // What plain F16 operands would give, at the least: the CPU's chunk form one chunk a call,
    // q, k, v and the state rounded to F16 before each chunk (a kernel rounding each product's
    // operands rounds T, W, U and V' as well). With decays near 1 the state keeps what each
    // chunk's rounding did to it, and most of its values fall outside the bound, by up to 30
    // times; with short memories the rounding fades and the bound alone could not tell.
    const RuleShape s = kSmallShapes[0];
    const int n_tokens = 1000;
    const RuleInputs in = rule_inputs(s, n_tokens, Decays::NearOne, 86);
    const RuleInputs f16_in = {
        rounded_to_f16(in.q), rounded_to_f16(in.k), rounded_to_f16(in.v), in.g, in.beta, in.state};
    const int64_t key_row = int64_t(s.n_key_heads) * s.dk;      // one token's q or k
    const int64_t value_row = int64_t(s.n_value_heads) * s.dv;  // one token's v or out
    const int64_t gate_row = s.n_value_heads;                   // one token's g or beta
    RuleResult f16{std::vector<float>(in.v.size()), in.state};
    for (int64_t first = 0; first < n_tokens; first += kDeltaChunkSize) {
        f16.state = rounded_to_f16(f16.state);
        chunked_gated_delta_rule(
            f16.out.data() + first * value_row, f16.state.data(), f16_in.q.data() + first * key_row,
            f16_in.k.data() + first * key_row, f16_in.v.data() + first * value_row,
            f16_in.g.data() + first * gate_row, f16_in.beta.data() + first * gate_row,
            std::min<int>(kDeltaChunkSize, n_tokens - first), s.n_key_heads, s.n_value_heads, s.dk,
            s.dv);
    }
    const RuleResult expected = recurrent(s, in, n_tokens);
    std::string report;
    CHECK(count_mismatches(f16.state, expected.state, kGpuChunkBound, report) >
          int(expected.state.size()) / 2);
}

TEST_CASE("gpu::chunked_gated_delta_rule refuses heads longer than 128, in one line") {
    if (!gpu_code_or_skip()) return;
    gpu::DeltaChunkScratch scratch;
    CHECK_THROWS_WITH_AS(
        gpu::chunked_gated_delta_rule(nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr,
                                      1, 1, 1, 256, 128, scratch),
        "gpu::chunked_gated_delta_rule takes heads of 1 to 128 values, not dk "
        "256 and dv 128",
        Error);
}

TEST_CASE("gpu::chunked_gated_delta_rule refuses a scratch reserved for fewer tokens") {
    if (!gpu_code_or_skip()) return;
    gpu::DeltaChunkScratch scratch;  // empty: no device memory
    CHECK_THROWS_WITH_AS(
        gpu::chunked_gated_delta_rule(nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr,
                                      65, 1, 2, 128, 128, scratch),
        "gpu::chunked_gated_delta_rule: the scratch has no room for 65 tokens of "
        "2 heads (DeltaChunkScratch::reserve)",
        Error);
}
