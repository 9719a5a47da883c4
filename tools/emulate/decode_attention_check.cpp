// decode_attention_check.cpp - step 11's split decode attention (decode_attention.cu: the split
// and merge kernels) run lane by lane on the CPU (lanes.h), against attention in double on the
// same keys and values: one query over 1 to 600 cached positions, float and F16 caches, heads of
// Qwen2.5-0.5B, 1.5B and 7B, the tiny model's and two awkward ones, grids of many chunks and of
// few (so a chunk holds several passes). Usage: decode_attention_check [check]; `check`, as
// `make test` runs it: up to 300 positions, and only the failed cases printed.
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

// Device functions that the kernels' headers (quant_blocks_cuda.cuh, reduce.cuh) use in code the
// split and merge kernels never call: declared, not defined, so that a call would not link.
template <typename T>
T __ldg(const T* p);
int __dp4a(int, int, int);
unsigned __funnelshift_r(unsigned, unsigned, unsigned);
void __threadfence();
int atomicAdd(int*, int);
using std::isfinite;
using std::isnan;

#include "decode_attention_kernels.inc"

namespace {

struct Case {
    int n_positions, n_heads, n_kv_heads, head_dim, multiprocessors;
    CacheType cache;
};

// Attention in double of one query over n_positions rows of K and V (each rounded as the cache
// holds it): out (n_heads, head_dim).
template <typename Cache>
std::vector<double> reference(const Case& c, const std::vector<float>& q,
                              const std::vector<Cache>& k, const std::vector<Cache>& v) {
    const int group = c.n_heads / c.n_kv_heads, kv_dim = c.n_kv_heads * c.head_dim;
    std::vector<double> out(size_t(c.n_heads) * c.head_dim, 0.0);
    for (int h = 0; h < c.n_heads; h++) {
        const int kv = h / group;
        std::vector<double> score(c.n_positions);
        double max = -INFINITY, sum = 0.0;
        for (int p = 0; p < c.n_positions; p++) {
            double dot = 0.0;
            for (int d = 0; d < c.head_dim; d++)
                dot += double(q[h * c.head_dim + d]) *
                       double(gpu::as_float(k[size_t(p) * kv_dim + kv * c.head_dim + d]));
            score[p] = dot / std::sqrt(double(c.head_dim));
            max = std::max(max, score[p]);
        }
        for (int p = 0; p < c.n_positions; p++) sum += (score[p] = std::exp(score[p] - max));
        for (int p = 0; p < c.n_positions; p++)
            for (int d = 0; d < c.head_dim; d++)
                out[h * c.head_dim + d] +=
                    score[p] / sum *
                    double(gpu::as_float(v[size_t(p) * kv_dim + kv * c.head_dim + d]));
    }
    return out;
}

// The split and merge kernels as split_attention launches them, on `multiprocessors` of them.
template <typename Cache>
std::vector<float> emulated(const Case& c, const std::vector<float>& q, const std::vector<Cache>& k,
                            const std::vector<Cache>& v) {
    using namespace gpu;
    const int blocks_per_chunk = all_head_blocks(c.n_heads, c.n_kv_heads);  // max_decode_chunks'
    const int max_chunks =
        std::max(1, kBlocksPerMultiprocessor * c.multiprocessors / blocks_per_chunk);
    const int n_chunks = chunk_layout(c.n_positions, max_chunks).n_chunks;
    const size_t stats = size_t(n_chunks) * c.n_heads;
    std::vector<float> scratch(stats * (c.head_dim + 2), NAN);  // poisoned
    const ChunkPartials partials{scratch.data(), scratch.data() + stats,
                                 scratch.data() + 2 * stats};
    std::vector<float> out(size_t(c.n_heads) * c.head_dim, NAN);
    emu::launch(split_attention_kernel<Cache>, dim3(n_chunks, blocks_per_chunk),
                dim3(kDecodeWarps * kWarpSize), 0, partials, q.data(), k.data(), v.data(),
                c.n_positions, static_cast<const int32_t*>(nullptr), max_chunks, c.n_heads,
                c.n_kv_heads, c.head_dim);
    emu::launch(merge_chunks_kernel, dim3(c.n_heads), dim3(kDecodeWarps * kWarpSize), 0, out.data(),
                partials, c.n_positions, static_cast<const int32_t*>(nullptr), max_chunks,
                c.n_heads, c.head_dim, Q8Vector{});
    return out;
}

// Whether every output is within 1e-5 + 1e-5 |expected| (float sums of at most a few hundred
// terms of size <= 1: their rounding is far below it; a wrong weight or a lost chunk is not).
template <typename Cache>
bool run(const Case& c, std::mt19937& random, bool quiet) {
    std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
    const size_t kv_size = size_t(c.n_positions) * c.n_kv_heads * c.head_dim;
    std::vector<float> q(size_t(c.n_heads) * c.head_dim);
    for (float& x : q) x = 2.0f * uniform(random);
    std::vector<Cache> k(kv_size), v(kv_size);  // rounded as the kernels that write a cache round
    for (size_t i = 0; i < kv_size; i++) gpu::store(k.data(), int64_t(i), uniform(random));
    for (size_t i = 0; i < kv_size; i++) gpu::store(v.data(), int64_t(i), uniform(random));
    const std::vector<float> got = emulated(c, q, k, v);
    const std::vector<double> expected = reference(c, q, k, v);
    double worst = 0.0;
    int outside = 0;
    for (size_t i = 0; i < got.size(); i++) {
        const double gap = std::fabs(double(got[i]) - expected[i]);
        worst = std::isnan(gap) ? INFINITY : std::max(worst, gap);
        if (!(gap <= 1e-5 + 1e-5 * std::fabs(expected[i])) && outside++ < 3)
            printf("  out[%zu] = %.7g, expected %.7g\n", i, got[i], expected[i]);
    }
    if (!quiet || outside)
        printf(
            "%s %4d positions, heads %d/%d of %d, %s cache, %d multiprocessors: largest gap %.2e\n",
            outside ? "FAIL" : "ok  ", c.n_positions, c.n_heads, c.n_kv_heads, c.head_dim,
            c.cache == CacheType::F16 ? "F16" : "F32", c.multiprocessors, worst);
    return outside == 0;
}

}  // namespace

int main(int argc, char** argv) {
    const bool quiet = argc > 1 && std::string(argv[1]) == "check";
    std::mt19937 random(11);
    // (n_heads, n_kv_heads, head_dim): 1.5B, 0.5B, 7B (a group of 7 ends in a block of one
    // head), the tiny model, an odd group of 3 and a head of 33 (float cache only).
    const int heads[][3] = {{12, 2, 128}, {14, 2, 64}, {28, 4, 128},
                            {4, 2, 64},   {6, 2, 36},  {6, 2, 33}};
    int passed = 0, failed = 0;
    for (int n_positions : {1, 31, 32, 33, 300, 600}) {
        if (quiet && (n_positions == 31 || n_positions == 32 || n_positions == 600)) continue;
        for (const auto& h : heads)
            for (int multiprocessors : {132, 2})  // many chunks of one pass; a few of many passes
                for (CacheType cache : {CacheType::F32, CacheType::F16}) {
                    if (cache == CacheType::F16 && h[2] % 4 != 0) continue;
                    const Case c{n_positions, h[0], h[1], h[2], multiprocessors, cache};
                    const bool ok = cache == CacheType::F16 ? run<__half>(c, random, quiet)
                                                            : run<float>(c, random, quiet);
                    (ok ? passed : failed)++;
                }
    }
    printf("emulated_decode_attention: %d passed, %d failed, 0 skipped\n", passed, failed);
    return failed != 0;
}
