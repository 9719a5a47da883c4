// bench_kernels.cu - how fast each of step06's naive kernels runs (not a test), in the manner
// of llm.c's dev/cuda: one row per kernel and shape, with its time and the bandwidth it got.
//
//   tools/bench_kernels.sh              builds this against step06's sources and runs it
//   build/bench/bench_kernels [N_TOKENS...]   (default: 1 and 512)
//
// Shapes are Qwen2.5-1.5B's: d_model 1536, 12 query heads and 2 KV heads of 128, d_ff 8960,
// vocabulary 151936, weights in F16 as step06 uploads them. One token is what each generation
// step costs per token of the sequence (decode); 512 is a long prompt (prefill). Inputs are
// random, since speed does not depend on the values here.
//
// GB/s counts the bytes a kernel must move at least (each input read once, each output
// written once), so it is a lower bound on the traffic; "% copy" sets it against a
// device-to-device cudaMemcpy measured in the same run, the practical ceiling.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include <cuda_fp16.h>

#include "cuda_check.h"
#include "cuda_device.h"
#include "device_buffer.h"
#include "ggml_types.h"
#include "ops_cuda.h"

constexpr int kDModel = 1536;
constexpr int kHeads = 12;
constexpr int kKvHeads = 2;
constexpr int kHeadDim = 128;
constexpr int kDff = 8960;
constexpr int kVocab = 151936;

// Milliseconds per call of `launch`: two warm-up calls, then as many timed calls as fit in
// ~200 ms (3 to 100), timed together between two CUDA events.
static double time_ms(const std::function<void()>& launch) {
    cudaEvent_t start, stop;
    CUDA_CHECK(cudaEventCreate(&start));
    CUDA_CHECK(cudaEventCreate(&stop));
    auto run = [&](int reps) {
        CUDA_CHECK(cudaEventRecord(start));
        for (int i = 0; i < reps; i++) launch();
        CUDA_CHECK(cudaEventRecord(stop));
        CUDA_CHECK(cudaEventSynchronize(stop));
        float ms = 0.0f;
        CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
        return double(ms) / reps;
    };
    const double first = run(2);
    const int reps = first > 0.0 ? std::max(3, std::min(100, int(200.0 / first))) : 100;
    const double ms = run(reps);
    CUDA_CHECK(cudaEventDestroy(start));
    CUDA_CHECK(cudaEventDestroy(stop));
    return ms;
}

// A device buffer of n random floats in [-1, 1).
static DeviceBuffer<float> random_buffer(size_t n, uint32_t seed) {
    std::mt19937 generator(seed);
    std::uniform_real_distribution<float> distribution(-1.0f, 1.0f);
    std::vector<float> values(n);
    for (float& value : values) value = distribution(generator);
    return DeviceBuffer<float>(values);
}

// An F16 matrix (rows, cols) with values of order 1/sqrt(cols), as a model's weights are.
static DeviceBuffer<__half> random_matrix(int rows, int cols, uint32_t seed) {
    std::mt19937 generator(seed);
    std::normal_distribution<float> distribution(0.0f, 1.0f / std::sqrt(float(cols)));
    std::vector<__half> values(size_t(rows) * cols);
    for (__half& value : values) value = __float2half(distribution(generator));
    return DeviceBuffer<__half>(values);
}

// The peak of a device-to-device copy: 2 bytes moved (one read, one written) per byte copied.
static double copy_gb_per_s() {
    const size_t bytes = size_t(1) << 30;
    DeviceBuffer<uint8_t> source(bytes), destination(bytes);
    double ms = time_ms([&] {
        CUDA_CHECK(cudaMemcpy(destination.data(), source.data(), bytes, cudaMemcpyDeviceToDevice));
    });
    return 2.0 * bytes / (ms * 1e6);
}

struct Table {
    double copy_gb_per_s;

    void header() const {
        std::printf("%-13s %-32s %11s %9s %7s %9s\n", "kernel", "shape", "time (us)", "GB/s",
                    "% copy", "GFLOP/s");
    }

    // One row; flops = 0 leaves the last column empty.
    void row(const char* kernel, const std::string& shape, double bytes, double flops,
             const std::function<void()>& launch) const {
        const double ms = time_ms(launch);
        const double gb_per_s = bytes / (ms * 1e6);
        std::printf("%-13s %-32s %11.1f %9.1f %6.1f%%", kernel, shape.c_str(), ms * 1e3, gb_per_s,
                    100.0 * gb_per_s / copy_gb_per_s);
        if (flops > 0) std::printf(" %9.1f", flops / (ms * 1e6));
        std::printf("\n");
    }
};

static std::string shape(const char* format, int a, int b = 0, int c = 0) {
    char text[64];
    std::snprintf(text, sizeof text, format, a, b, c);
    return text;
}

// Every kernel at n tokens: the operators of one layer, then the model's ends.
static void bench_tokens(const Table& table, int n) {
    const uint32_t f16 = uint32_t(GgmlType::F16);
    const int q_dim = kHeads * kHeadDim, kv_dim = kKvHeads * kHeadDim;
    DeviceBuffer<float> x = random_buffer(size_t(n) * kDModel, 1);
    DeviceBuffer<float> out = random_buffer(size_t(n) * kDModel, 2);
    DeviceBuffer<float> norm = random_buffer(kDModel, 3);
    DeviceBuffer<float> q = random_buffer(size_t(n) * q_dim, 4);
    DeviceBuffer<float> k = random_buffer(size_t(n) * kv_dim, 5);
    DeviceBuffer<float> v = random_buffer(size_t(n) * kv_dim, 6);
    DeviceBuffer<float> attn = random_buffer(size_t(n) * q_dim, 7);
    DeviceBuffer<float> gate = random_buffer(size_t(n) * kDff, 8);
    DeviceBuffer<float> up = random_buffer(size_t(n) * kDff, 9);
    DeviceBuffer<float> logits = random_buffer(size_t(n) * kVocab, 10);
    DeviceBuffer<__half> embedding_table = random_matrix(kVocab, kDModel, 11);
    DeviceBuffer<__half> w_q = random_matrix(q_dim, kDModel, 12);
    DeviceBuffer<__half> w_k = random_matrix(kv_dim, kDModel, 13);
    DeviceBuffer<__half> w_up = random_matrix(kDff, kDModel, 14);
    DeviceBuffer<__half> w_down = random_matrix(kDModel, kDff, 15);
    std::vector<int32_t> host_ids(n);
    for (int t = 0; t < n; t++) host_ids[t] = (t * 7919) % kVocab;
    DeviceBuffer<int32_t> ids(host_ids);
    const double f = 4.0;  // bytes per float activation
    const double h = 2.0;  // bytes per F16 weight

    std::printf("-- %d token%s\n", n, n == 1 ? "" : "s");
    table.row(
        "embedding", shape("(%d, %d) rows of F16", n, kDModel), n * kDModel * (h + f), 0,
        [&] { gpu::embedding(x.data(), embedding_table.data(), f16, ids.data(), n, kDModel); });
    table.row("rmsnorm", shape("(%d, %d)", n, kDModel), 2.0 * n * kDModel * f + kDModel * f, 0,
              [&] { gpu::rmsnorm(out.data(), x.data(), norm.data(), n, kDModel, 1e-6f); });

    // matmul: the bytes are the weights (read once) plus x and out; flops 2 per weight a token.
    auto bench_matmul = [&](const std::string& name, float* y, const float* input,
                            const DeviceBuffer<__half>& w, int in_dim, int out_dim) {
        const double bytes = double(out_dim) * in_dim * h + double(n) * (in_dim + out_dim) * f;
        table.row("matmul", name + shape(" %d x %d", in_dim, out_dim), bytes,
                  2.0 * n * in_dim * out_dim,
                  [&] { gpu::matmul(y, input, w.data(), f16, n, in_dim, out_dim); });
    };
    bench_matmul("Wq", q.data(), x.data(), w_q, kDModel, q_dim);
    bench_matmul("Wk", k.data(), x.data(), w_k, kDModel, kv_dim);
    bench_matmul("Wup", up.data(), x.data(), w_up, kDModel, kDff);
    bench_matmul("Wdown", out.data(), gate.data(), w_down, kDff, kDModel);
    bench_matmul("LM head", logits.data(), x.data(), embedding_table, kDModel, kVocab);

    table.row("add_bias", shape("(%d, %d)", n, q_dim), 2.0 * n * q_dim * f + q_dim * f, 0,
              [&] { gpu::add_bias(q.data(), norm.data(), n, q_dim); });
    table.row("rope", shape("(%d, %d heads x %d)", n, kHeads, kHeadDim), 2.0 * n * q_dim * f, 0,
              [&] { gpu::rope(q.data(), n, kHeads, kHeadDim, 0, 1e6f); });
    // Attention's minimum traffic: q, k and v read once, the output written once.
    table.row("attention", shape("%d tokens, %d/%d heads", n, kHeads, kKvHeads),
              double(n) * (2 * q_dim + 2 * kv_dim) * f, 0, [&] {
                  gpu::attention(attn.data(), q.data(), k.data(), v.data(), n, kHeads, kKvHeads,
                                 kHeadDim);
              });
    table.row("swiglu", shape("(%d, %d)", n, kDff), 3.0 * n * kDff * f, 0,
              [&] { gpu::swiglu(gate.data(), gate.data(), up.data(), int64_t(n) * kDff); });
    table.row("residual_add", shape("(%d, %d)", n, kDModel), 3.0 * n * kDModel * f, 0,
              [&] { gpu::residual_add(x.data(), out.data(), int64_t(n) * kDModel); });
    // Generation takes the argmax of the last position's logits only, once per token.
    if (n == 1)
        table.row("argmax", shape("(%d)", kVocab), kVocab * f, 0,
                  [&] { gpu::argmax(logits.data(), kVocab); });
}

int main(int argc, char** argv) {
    try {
        std::string why_not;
        if (!cuda_device_available(why_not)) {
            std::printf("bench_kernels: skipped, no CUDA device: %s\n", why_not.c_str());
            return 0;
        }
        const DeviceInfo device = device_info();
        const Table table{copy_gb_per_s()};
        std::printf("%s: device-to-device copy %.0f GB/s (peak by clock x bus width %.0f GB/s)\n",
                    device.name.c_str(), table.copy_gb_per_s, device.peak_gb_per_s);
        table.header();
        std::vector<int> token_counts;
        for (int i = 1; i < argc; i++) token_counts.push_back(std::atoi(argv[i]));
        if (token_counts.empty()) token_counts = {1, 512};
        for (int n : token_counts) bench_tokens(table, n);
    } catch (const Error& error) {
        std::fprintf(stderr, "error: %s\n", error.what());
        return 1;
    }
    return 0;
}
