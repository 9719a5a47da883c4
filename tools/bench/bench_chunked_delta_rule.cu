// bench_chunked_delta_rule.cu - step 15's chunked delta rule timed at Qwen3.5's prompt shapes (not
// a test): gpu::chunked_gated_delta_rule (its two kernels, chunk_prepare and chunk_state_pass)
// beside step 14's recurrence gpu::gated_delta_rule, the kernel it replaces for a prompt, on one
// layer's heads (0.8B: 16 key and 16 value heads; 4B: 16 and 32, as 9B; dk = dv = 128).
//
//   nvcc -O2 -std=c++17 -arch=sm_90 -Istep15_chunked_delta_rule -Icommon \
//       tools/bench/bench_chunked_delta_rule.cu step15_chunked_delta_rule/*.cu \
//       step15_chunked_delta_rule/ggml_types.cpp -o build/bench/bench_chunked_delta_rule
//   build/bench/bench_chunked_delta_rule 0.8b 4096
//
// Output: one tab-separated line per row: kernel, shape, tokens, microseconds, TFLOP/s of the
// chunk form's products (2 per multiply-add, counted as if every product were whole), and the
// same per mma issued (three for each product: the split form's hi lo, lo hi and hi hi). Each
// time is median_time.cuh's median; every call updates the state the next one starts from (the
// rule's contraction keeps it bounded).
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

#include "cuda_check.h"
#include "device_buffer.h"
#include "ops_cuda.h"
#include "median_time.cuh"

struct Heads {
    const char* name;
    int n_key_heads, n_value_heads;
};
static const Heads kHeads[] = {{"0.8b", 16, 16}, {"4b", 16, 32}};
constexpr int kHeadDim = 128;  // dk = dv in every Qwen3.5 size

constexpr int kCallsPerRun = 5;  // median_ms's back-to-back calls a timed run

// n rows of `dim` values, each scaled to length 1 as the layer's L2 norm leaves q and k.
static std::vector<float> unit_rows(std::mt19937& rng, int64_t n, int dim) {
    std::normal_distribution<float> normal;
    std::vector<float> x(size_t(n) * dim);
    for (int64_t r = 0; r < n; r++) {
        double sum = 0.0;
        for (int i = 0; i < dim; i++) sum += double(x[r * dim + i] = normal(rng)) * x[r * dim + i];
        for (int i = 0; i < dim; i++) x[r * dim + i] /= float(std::sqrt(sum));
    }
    return x;
}

static std::vector<float> uniform(std::mt19937& rng, size_t n, float low, float high) {
    std::uniform_real_distribution<float> value(low, high);
    std::vector<float> x(n);
    for (float& v : x) v = value(rng);
    return x;
}

// FLOPs of the chunk form's products for n_tokens of one value head, as whole products: per
// chunk K K^T and Q K^T (C C dk each), W and U (C C dk, C C dv), W S and Q S (C dk dv each),
// P V' (C C dv) and K^T V' (dk C dv).
static double chunk_flops(int n_tokens) {
    const double c = kDeltaChunkSize, d = kHeadDim;
    const double chunks = std::ceil(n_tokens / c);
    return chunks * 2.0 * (4 * c * c * d + 3 * c * d * d + c * c * d);
}

static void bench(const Heads& heads, int n_tokens) {
    std::mt19937 rng(7);
    const int64_t key_values = int64_t(n_tokens) * heads.n_key_heads;
    const int64_t value_rows = int64_t(n_tokens) * heads.n_value_heads;
    DeviceBuffer<float> q(unit_rows(rng, key_values, kHeadDim));
    DeviceBuffer<float> k(unit_rows(rng, key_values, kHeadDim));
    DeviceBuffer<float> v(uniform(rng, size_t(value_rows) * kHeadDim, -1.0f, 1.0f));
    DeviceBuffer<float> g(uniform(rng, size_t(value_rows), -2.0f, -0.01f));  // log decays
    DeviceBuffer<float> beta(uniform(rng, size_t(value_rows), 0.05f, 0.95f));
    const std::vector<float> state0(size_t(heads.n_value_heads) * kHeadDim * kHeadDim, 0.0f);
    DeviceBuffer<float> state(state0), out(size_t(value_rows) * kHeadDim);
    gpu::DeltaChunkScratch scratch;
    scratch.reserve(n_tokens, heads.n_value_heads, kHeadDim);

    const double flops = chunk_flops(n_tokens) * heads.n_value_heads;
    const auto row = [&](const char* kernel, double ms) {
        printf("%s\t%s\t%d\t%.1f\t%.2f\t%.2f\n", kernel, heads.name, n_tokens, ms * 1e3,
               flops / (ms * 1e-3) / 1e12, 3 * flops / (ms * 1e-3) / 1e12);
    };
    row("chunked_gated_delta_rule", median_ms([&] {
            gpu::chunked_gated_delta_rule(out.data(), state.data(), q.data(), k.data(), v.data(),
                                          g.data(), beta.data(), n_tokens, heads.n_key_heads,
                                          heads.n_value_heads, kHeadDim, kHeadDim, scratch);
        }, kCallsPerRun));
    row("gated_delta_rule (step 14)", median_ms([&] {
            gpu::gated_delta_rule(out.data(), state.data(), q.data(), k.data(), v.data(), g.data(),
                                  beta.data(), n_tokens, heads.n_key_heads, heads.n_value_heads,
                                  kHeadDim, kHeadDim);
        }, kCallsPerRun));
    CUDA_CHECK(cudaDeviceSynchronize());
}

int main(int argc, char** argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: %s 0.8b|4b TOKENS\n", argv[0]);
        return 2;
    }
    for (const Heads& heads : kHeads)
        if (strcmp(heads.name, argv[1]) == 0) {
            bench(heads, atoi(argv[2]));
            return 0;
        }
    fprintf(stderr, "%s: no shape '%s' (0.8b or 4b)\n", argv[0], argv[1]);
    return 2;
}
