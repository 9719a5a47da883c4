// test_delta_rule_inputs.h - the delta rule's test inputs and references, shared by the CPU
// checks of the chunked rule (test_chunked_delta_rule.cpp) and the GPU ones
// (test_chunked_delta_rule_cuda.cpp): random inputs made as the layer makes them, step 14's
// recurrence on the CPU, the same recurrence in double, the GPU's bound against it, and the
// largest difference of two results.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "ops_cpu.h"
#include "test_gpu.h"

// In a namespace of their own: test_qwen35_cuda.cpp, in the same test program, has a RuleShape
// of its own at file scope.
namespace delta_rule_checks {

struct RuleShape {
    int n_key_heads, n_value_heads, dk, dv;
};

// Where the log decays g are drawn from: e^g near 0, near 1, or each token one or the other.
enum class Decays { NearZero, NearOne, Mixed };

inline std::string decays_name(Decays d) {
    return d == Decays::NearZero ? "near 0" : d == Decays::NearOne ? "near 1" : "mixed";
}

// One prompt's inputs to the rule, and the state an earlier call left.
struct RuleInputs {
    std::vector<float> q, k;     // (n_tokens, n_key_heads, dk)
    std::vector<float> v;        // (n_tokens, n_value_heads, dv)
    std::vector<float> g, beta;  // (n_tokens, n_value_heads)
    std::vector<float> state;    // (n_value_heads, dk, dv)
};

inline std::vector<float> log_decays(size_t n, Decays decays, uint32_t seed) {
    std::vector<float> g(n);
    std::mt19937 generator(seed);
    std::uniform_real_distribution<float> near_zero(-12.0f, -8.0f), near_one(-2e-4f, -5e-5f);
    std::bernoulli_distribution coin(0.5);
    for (float& x : g) {
        const bool zero =
            decays == Decays::NearZero || (decays == Decays::Mixed && coin(generator));
        x = zero ? near_zero(generator) : near_one(generator);
    }
    return g;
}

inline RuleInputs rule_inputs(const RuleShape& s, int n_tokens, Decays decays, uint32_t seed) {
    const size_t keys = size_t(n_tokens) * s.n_key_heads * s.dk;
    const size_t gates = size_t(n_tokens) * s.n_value_heads;
    RuleInputs in;
    // q of length 1 / sqrt(dk) and k of length 1, as l2_normalize_rows makes them in the layer.
    in.q = random_values(keys, seed);
    in.k = random_values(keys, seed + 1);
    l2_normalize_rows(in.q.data(), n_tokens * s.n_key_heads, s.dk, 1e-6f,
                      1.0f / std::sqrt(float(s.dk)));
    l2_normalize_rows(in.k.data(), n_tokens * s.n_key_heads, s.dk, 1e-6f, 1.0f);
    in.v = random_values(gates * s.dv, seed + 2);
    in.g = log_decays(gates, decays, seed + 3);
    in.beta = random_values(gates, seed + 4, 0.01f, 0.99f);
    in.state = random_values(size_t(s.n_value_heads) * s.dk * s.dv, seed + 5, -0.5f, 0.5f);
    return in;
}

struct RuleResult {
    std::vector<float> out;    // (n_tokens, n_value_heads, dv)
    std::vector<float> state;  // (n_value_heads, dk, dv) after the last token
};

inline RuleResult recurrent(const RuleShape& s, const RuleInputs& in, int n_tokens) {
    RuleResult r{std::vector<float>(in.v.size()), in.state};
    gated_delta_rule(r.out.data(), r.state.data(), in.q.data(), in.k.data(), in.v.data(),
                     in.g.data(), in.beta.data(), n_tokens, s.n_key_heads, s.n_value_heads, s.dk,
                     s.dv);
    return r;
}

// The recurrence with every value in double: the exact result, nearly.
inline RuleResult recurrent_in_double(const RuleShape& s, const RuleInputs& in, int n_tokens) {
    const int dk = s.dk, dv = s.dv;
    std::vector<double> state(in.state.begin(), in.state.end()), out(in.v.size());
    std::vector<double> delta(dv);
    for (int h = 0; h < s.n_value_heads; h++) {
        double* S = state.data() + size_t(h) * dk * dv;  // (dk, dv)
        for (int t = 0; t < n_tokens; t++) {
            const size_t key_row = (size_t(t) * s.n_key_heads + h % s.n_key_heads) * dk;
            const size_t gate = size_t(t) * s.n_value_heads + h;
            const double decay = std::exp(double(in.g[gate]));
            for (double& x : delta) x = 0.0;
            for (int i = 0; i < dk; i++)
                for (int j = 0; j < dv; j++) {
                    S[i * dv + j] *= decay;
                    delta[j] += S[i * dv + j] * in.k[key_row + i];
                }
            for (int j = 0; j < dv; j++)
                delta[j] = in.beta[gate] * (in.v[gate * dv + j] - delta[j]);
            for (int j = 0; j < dv; j++) out[gate * dv + j] = 0.0;
            for (int i = 0; i < dk; i++)
                for (int j = 0; j < dv; j++) {
                    S[i * dv + j] += in.k[key_row + i] * delta[j];
                    out[gate * dv + j] += S[i * dv + j] * in.q[key_row + i];
                }
        }
    }
    return {std::vector<float>(out.begin(), out.end()),
            std::vector<float>(state.begin(), state.end())};
}

// The bound on |gpu chunked - recurrent|, derived in chunked_delta_rule.cu's header: every
// product there takes its operands in the split form hi + lo (two F16 values), each known to
// 2^-22 of itself, so a product term is off by up to 3 * 2^-22 = 7.2e-7 of |a| |b| where the
// CPU's float FMA is off by 2^-24: 12 times as much. A chunk's value is a sum of C + dk = 192
// such terms of at most the state's size, and its error does not grow along the prompt (the
// CPU's argument, test_chunked_delta_rule.cpp): 1.4e-4 of the state's size if every rounding
// fell the same way, about sqrt(192) * 7.2e-7 = 1e-5 as they fall either way. The CPU forms are
// within 1.6e-6 of exact (measured there). 3e-5 + 3e-5 |x| is three times the estimate; the
// GPU checks print the largest differences (test_chunked_delta_rule_cuda.cpp), to compare
// with it; tools/emulate/chunk_rule.cpp holds the kernels run lane by lane on the CPU to it.
const Tolerance kGpuChunkBound = {3e-5, 3e-5};

inline double largest_difference(const std::vector<float>& a, const std::vector<float>& b) {
    double largest = 0.0;
    for (size_t i = 0; i < a.size(); i++)
        largest = std::max(largest, std::fabs(double(a[i]) - double(b[i])));
    return largest;
}

}  // namespace delta_rule_checks
