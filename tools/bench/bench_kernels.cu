// bench_kernels.cu - how fast each operator of ops_cuda.h runs (not a test), in the manner of
// llm.c's dev/cuda: one row per operator and shape, with its time and the rate it got.
//
//   tools/bench/bench_kernels.sh    builds this against step08's and step09's sources, runs
//                                   both and prints one table with the two side by side
//   build/bench/bench_kernels_stepNN
//
// Shapes are Qwen2.5-1.5B's: d_model 1536, 12 query heads and 2 KV heads of 128, d_ff 8960,
// vocabulary 151936, weights in F16 as the steps upload them. One token is a decode step, 512
// a prompt (prefill); decode attention runs over 512, 4096 and 32768 cached positions. Inputs
// are random, never zeros, since zeros can hide wrong indexing and run faster than data.
//
// The H200's L2 cache holds ~60 MB, more than a 1.5B matrix (Wup: 27.5 MB): timed back to
// back on one buffer, a kernel would read W from the cache, not from memory. So every input
// read from memory is one of several copies that together pass 256 MB, and each call takes
// the next copy: each call's bytes come from memory, as in a forward pass.
//
// GB/s counts the bytes a kernel must move at least (each input read once, each output
// written once), a lower bound on its traffic; "% copy" sets it against a device-to-device
// cudaMemcpy measured in the same run, the practical ceiling. GFLOP/s counts 2 per multiply-add.
// Output: one tab-separated line per row (`row`, operator, shape, microseconds, bytes, flops),
// for tools/bench/kernel_table.py, after a `copy` line with the copy's GB/s.
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
constexpr size_t kRotationBytes = size_t(256) << 20;  // > 4 x the L2 cache

// Milliseconds per call of `launch(i)`, i = 0, 1, 2, ...: three warm-up calls, then as many
// timed calls as fit in ~60 ms (5 to 200) between two CUDA events; the median of 5 such runs.
// A call of over 20 ms (step 8's naive attention at 32768 positions) is timed alone, 3 times.
static double time_ms(const std::function<void(int)>& launch) {
    cudaEvent_t start, stop;
    CUDA_CHECK(cudaEventCreate(&start));
    CUDA_CHECK(cudaEventCreate(&stop));
    int call = 0;
    auto run = [&](int reps) {
        CUDA_CHECK(cudaEventRecord(start));
        for (int i = 0; i < reps; i++) launch(call++);
        CUDA_CHECK(cudaEventRecord(stop));
        CUDA_CHECK(cudaEventSynchronize(stop));
        float ms = 0.0f;
        CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
        return double(ms) / reps;
    };
    const double first = run(3);
    const bool slow = first > 20.0;
    const int reps = slow ? 1 : first > 0.0 ? std::max(5, std::min(200, int(60.0 / first))) : 200;
    std::vector<double> runs;
    for (int r = 0; r < (slow ? 3 : 5); r++) runs.push_back(run(reps));
    std::sort(runs.begin(), runs.end());
    CUDA_CHECK(cudaEventDestroy(start));
    CUDA_CHECK(cudaEventDestroy(stop));
    return runs[runs.size() / 2];
}

// Microseconds per call when kGraphCalls calls are replayed as one CUDA graph: what the kernel
// itself takes, once the host's cost of launching it one call at a time is gone (step 10's
// lesson). The kernels launch on the default stream, which this program builds per thread
// (nvcc --default-stream per-thread), so that stream can be captured.
constexpr int kGraphCalls = 20;

static double time_graph_us(const std::function<void(int)>& launch) {
    launch(0);  // allocations a first call makes happen outside the capture
    CUDA_CHECK(cudaStreamSynchronize(cudaStreamPerThread));
    cudaGraph_t graph;
    CUDA_CHECK(cudaStreamBeginCapture(cudaStreamPerThread, cudaStreamCaptureModeThreadLocal));
    for (int i = 0; i < kGraphCalls; i++) launch(i);
    CUDA_CHECK(cudaStreamEndCapture(cudaStreamPerThread, &graph));
    cudaGraphExec_t exec;
    CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
    const double ms = time_ms([&](int) {
        CUDA_CHECK(cudaGraphLaunch(exec, cudaStreamPerThread));
    });
    CUDA_CHECK(cudaGraphExecDestroy(exec));
    CUDA_CHECK(cudaGraphDestroy(graph));
    return ms * 1e3 / kGraphCalls;
}

static std::vector<float> random_floats(size_t n, uint32_t seed) {
    std::mt19937 generator(seed);
    std::uniform_real_distribution<float> distribution(-1.0f, 1.0f);
    std::vector<float> values(n);
    for (float& value : values) value = distribution(generator);
    return values;
}

// Copies of one random input, enough of them to pass kRotationBytes together (at least one).
template <typename T>
struct Rotation {
    std::vector<DeviceBuffer<T>> copies;
    T* at(int call) { return copies[size_t(call) % copies.size()].data(); }
};

template <typename T>
static Rotation<T> rotation(const std::vector<T>& values) {
    Rotation<T> r;
    const size_t bytes = std::max<size_t>(1, values.size() * sizeof(T));
    const size_t n = std::max<size_t>(1, (kRotationBytes + bytes - 1) / bytes);
    for (size_t i = 0; i < n; i++) r.copies.emplace_back(values);
    return r;
}

static Rotation<float> random_rotation(size_t n, uint32_t seed) {
    return rotation(random_floats(n, seed));
}

// An F16 matrix (rows, cols) with values of order 1/sqrt(cols), as a model's weights are.
static Rotation<__half> random_matrix(int rows, int cols, uint32_t seed, bool rotate = true) {
    std::mt19937 generator(seed);
    std::normal_distribution<float> distribution(0.0f, 1.0f / std::sqrt(float(cols)));
    std::vector<__half> values(size_t(rows) * cols);
    for (__half& value : values) value = __float2half(distribution(generator));
    if (rotate) return rotation(values);
    Rotation<__half> one;
    one.copies.emplace_back(values);
    return one;
}

// The peak of a device-to-device copy: 2 bytes moved (one read, one written) per byte copied.
static double copy_gb_per_s() {
    const size_t bytes = size_t(1) << 30;
    DeviceBuffer<uint8_t> source(bytes), destination(bytes);
    double ms = time_ms([&](int) {
        CUDA_CHECK(cudaMemcpy(destination.data(), source.data(), bytes, cudaMemcpyDeviceToDevice));
    });
    return 2.0 * bytes / (ms * 1e6);
}

// A row: the time per call launched one by one, and with graph = true also replayed in a
// graph (a "graph" row of its own, the same shape).
static void row(const char* op, const std::string& shape, double bytes, double flops,
                const std::function<void(int)>& launch, bool graph = false) {
    const double ms = time_ms(launch);
    std::printf("row\t%s\t%s\t%.2f\t%.0f\t%.0f\n", op, shape.c_str(), ms * 1e3, bytes, flops);
    if (graph)
        std::printf("row\t%s in a graph\t%s\t%.2f\t%.0f\t%.0f\n", op, shape.c_str(),
                    time_graph_us(launch), bytes, flops);
    std::fflush(stdout);
}

static std::string shape(const char* format, int a, int b = 0, int c = 0) {
    char text[96];
    std::snprintf(text, sizeof text, format, a, b, c);
    return text;
}

constexpr double kF = 4.0;  // bytes per float activation
constexpr double kH = 2.0;  // bytes per F16 weight

static void bench_matmul(const char* name, int n, int in_dim, int out_dim, uint32_t seed,
                         bool graph = false) {
    const uint32_t f16 = uint32_t(GgmlType::F16);
    Rotation<__half> w = random_matrix(out_dim, in_dim, seed, n == 1);
    DeviceBuffer<float> x(random_floats(size_t(n) * in_dim, seed + 1));
    DeviceBuffer<float> y(size_t(n) * out_dim);
    const double bytes = double(out_dim) * in_dim * kH + double(n) * (in_dim + out_dim) * kF;
    row("matmul", std::string(name) + shape(" (%d, %d) x (%d)^T", n, in_dim, out_dim), bytes,
        2.0 * n * in_dim * out_dim,
        [&](int i) { gpu::matmul(y.data(), x.data(), w.at(i), f16, n, in_dim, out_dim); },
        graph);
}

// One new token's attention over n_positions cached ones: the cache is read once.
static void bench_decode_attention(int n_positions) {
    const int q_dim = kHeads * kHeadDim, kv_dim = kKvHeads * kHeadDim;
    DeviceBuffer<float> q(random_floats(q_dim, 30)), out(q_dim);
    Rotation<float> k = random_rotation(size_t(n_positions) * kv_dim, 31);
    Rotation<float> v = random_rotation(size_t(n_positions) * kv_dim, 32);
    row("attention", shape("1 new token over %d positions", n_positions),
        2.0 * n_positions * kv_dim * kF + 2.0 * q_dim * kF, 0, [&](int i) {
            gpu::attention(out.data(), q.data(), k.at(i), v.at(i), 1, n_positions - 1, kHeads,
                           kKvHeads, kHeadDim);
        });
}

static void bench_prefill_attention(int n) {
    const int q_dim = kHeads * kHeadDim, kv_dim = kKvHeads * kHeadDim;
    DeviceBuffer<float> q(random_floats(size_t(n) * q_dim, 33)), out(size_t(n) * q_dim);
    DeviceBuffer<float> k(random_floats(size_t(n) * kv_dim, 34));
    DeviceBuffer<float> v(random_floats(size_t(n) * kv_dim, 35));
    // Causal: query t takes t + 1 scores and as many weighted values, each head_dim long.
    const double flops = 4.0 * kHeadDim * kHeads * (double(n) * (n + 1) / 2);
    row("attention", shape("prompt of %d tokens", n), double(n) * (2 * q_dim + 2 * kv_dim) * kF,
        flops, [&](int) {
            gpu::attention(out.data(), q.data(), k.data(), v.data(), n, 0, kHeads, kKvHeads,
                           kHeadDim);
        });
}

static void bench_rmsnorm(int n) {
    Rotation<float> x = random_rotation(size_t(n) * kDModel, 1);
    DeviceBuffer<float> out(size_t(n) * kDModel), weight(random_floats(kDModel, 3));
    row("rmsnorm", shape("(%d, %d)", n, kDModel), 2.0 * n * kDModel * kF + kDModel * kF, 0,
        [&](int i) { gpu::rmsnorm(out.data(), x.at(i), weight.data(), n, kDModel, 1e-6f); });
}

// One decode step's operators, then a prompt's: the series' shapes.
static void bench_all() {
    bench_rmsnorm(1);
    // The one-token products also in a graph (BENCH_GRAPH=1): their time without launches.
    const bool graph = std::getenv("BENCH_GRAPH") != nullptr;
    bench_matmul("Wq", 1, kDModel, kHeads * kHeadDim, 12, graph);
    bench_matmul("Wk", 1, kDModel, kKvHeads * kHeadDim, 13, graph);
    bench_matmul("Wup", 1, kDModel, kDff, 14, graph);
    bench_matmul("Wdown", 1, kDff, kDModel, 15, graph);
    bench_matmul("LM head", 1, kDModel, kVocab, 16, graph);
    for (int positions : {512, 4096, 32768}) bench_decode_attention(positions);
    {
        Rotation<float> logits = random_rotation(kVocab, 10);
        row("argmax", shape("(%d)", kVocab), kVocab * kF, 0,
            [&](int i) { gpu::argmax(logits.at(i), kVocab); });
    }
    {
        DeviceBuffer<float> x(random_floats(kDModel, 40)), delta(random_floats(kDModel, 41));
        row("residual_add", shape("(1, %d): a launch", kDModel), 3.0 * kDModel * kF, 0,
            [&](int) { gpu::residual_add(x.data(), delta.data(), kDModel); }, graph);
    }
    const int n = 512;
    bench_rmsnorm(n);
    bench_matmul("Wq", n, kDModel, kHeads * kHeadDim, 22);
    bench_matmul("Wk", n, kDModel, kKvHeads * kHeadDim, 23);
    bench_matmul("Wup", n, kDModel, kDff, 24);
    bench_matmul("Wdown", n, kDff, kDModel, 25);
    bench_prefill_attention(n);
}

int main() {
    try {
        std::string why_not;
        if (!cuda_device_available(why_not)) {
            std::printf("bench_kernels: skipped, no CUDA device: %s\n", why_not.c_str());
            return 0;
        }
        const DeviceInfo device = device_info();
        std::printf("copy\t%s\t%.1f\t%.0f\n", device.name.c_str(), copy_gb_per_s(),
                    device.peak_gb_per_s);
        bench_all();
    } catch (const Error& error) {
        std::fprintf(stderr, "error: %s\n", error.what());
        return 1;
    }
    return 0;
}
