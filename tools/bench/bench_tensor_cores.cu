// bench_tensor_cores.cu - step 12's kernels timed at Qwen2.5's prompt shapes (not a test): the
// GEMM of every product of a layer, on the tensor cores (F16 and Q4_K weights) beside step 9's
// float GEMM, and flash attention beside step 9's prompt attention. cuBLAS, the yardstick, is
// timed on the same shapes by tools/bench/bench_cublas.py; `tools/gpu/run.sh 12 kernels OUT`
// builds this with step 12's CUDA files and prints both:
//
//   nvcc -O2 -std=c++17 -arch=sm_90 -Istep12_tensor_cores -Icommon \
//       tools/bench/bench_tensor_cores.cu step12_tensor_cores/*.cu \
//       step12_tensor_cores/ggml_types.cpp -o build/bench_tensor_cores
//   build/bench_tensor_cores 1.5b 512
//
// Output: one tab-separated line per row: kernel, shape, microseconds, TFLOP/s (2 per
// multiply-add). Each time is the median of 7 runs of back-to-back calls between two CUDA
// events, after 3 warm-up calls. Inputs are random (zeros can run faster than data).
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "cuda_check.h"
#include "device_buffer.h"
#include "flash_attention.h"
#include "gemm_tensor_cores.h"
#include "ggml_types.h"
#include "half.h"
#include "ops_cuda.h"
#include "median_time.cuh"

struct Shape {
    const char* name;
    int d_model, n_heads, n_kv_heads, head_dim, d_ff;
};
static const Shape kShapes[] = {{"0.5b", 896, 14, 2, 64, 4864},
                                {"1.5b", 1536, 12, 2, 128, 8960},
                                {"7b", 3584, 28, 4, 128, 18944}};

constexpr int kCallsPerRun = 10;  // median_ms's back-to-back calls a timed run

static std::vector<float> random_floats(size_t n, uint32_t seed, float scale) {
    std::mt19937 generator(seed);
    std::uniform_real_distribution<float> value(-scale, scale);
    std::vector<float> values(n);
    for (float& v : values) v = value(generator);
    return values;
}

// Bytes of a (rows, cols) matrix of `type`: random bytes, with each block's f16 scale bytes
// set small enough for finite weights (for Q4_K: d and dmin at offsets 0 and 2).
static std::vector<uint8_t> random_matrix(GgmlType type, int rows, int cols) {
    const GgmlTypeInfo& info = ggml_type_info(uint32_t(type));
    std::vector<uint8_t> bytes(size_t(rows) * cols / info.block_size * info.block_bytes);
    std::mt19937 generator(7);
    for (uint8_t& b : bytes) b = uint8_t(generator());
    if (type == GgmlType::F16) {
        for (size_t i = 0; i + 1 < bytes.size(); i += 2) {
            const uint16_t bits = f32_to_f16(float(int(generator() % 2001) - 1000) * 1e-5f);
            bytes[i] = uint8_t(bits), bytes[i + 1] = uint8_t(bits >> 8);
        }
    } else {  // Q4_K
        for (size_t b = 0; b < bytes.size(); b += info.block_bytes)
            for (int offset : {0, 2}) {
                const uint16_t bits = f32_to_f16(1e-4f);
                bytes[b + offset] = uint8_t(bits), bytes[b + offset + 1] = uint8_t(bits >> 8);
            }
    }
    return bytes;
}

static void row(const char* kernel, const std::string& shape, double ms, double flops) {
    std::printf("%s\t%s\t%.1f\t%.1f\n", kernel, shape.c_str(), ms * 1e3,
                flops / (ms * 1e-3) / 1e12);
    std::fflush(stdout);
}

int main(int argc, char** argv) {
    if (argc != 3) {
        std::fprintf(stderr, "usage: bench_tensor_cores SIZE N_TOKENS   (SIZE: 0.5b 1.5b 7b)\n");
        return 2;
    }
    const Shape* shape = nullptr;
    for (const Shape& s : kShapes)
        if (std::strcmp(s.name, argv[1]) == 0) shape = &s;
    if (!shape) {
        std::fprintf(stderr, "bench_tensor_cores: no shape %s\n", argv[1]);
        return 2;
    }
    const int n = std::atoi(argv[2]);
    const int d = shape->d_model, q_dim = shape->n_heads * shape->head_dim;
    const int kv_dim = shape->n_kv_heads * shape->head_dim;
    // The products of one layer (QKV as one matrix, gate and up each), as (out_dim, in_dim).
    const int products[][2] = {
        {q_dim + 2 * kv_dim, d}, {d, q_dim}, {shape->d_ff, d}, {d, shape->d_ff}};
    const char* names[] = {"qkv", "wo", "gate/up", "down"};
    for (int p = 0; p < 4; p++) {
        const int out_dim = products[p][0], in_dim = products[p][1];
        const std::string label = std::string(names[p]) + " " + std::to_string(n) + "x" +
                                  std::to_string(in_dim) + "x" + std::to_string(out_dim);
        const double flops = 2.0 * n * in_dim * out_dim;
        DeviceBuffer<float> x(random_floats(size_t(n) * in_dim, 1, 1.0f));
        DeviceBuffer<float> out(size_t(n) * out_dim);
        DeviceBuffer<float> w_f32(random_floats(size_t(out_dim) * in_dim, 2, 0.03f));
        row("step09 float GEMM (F32 W)", label, median_ms([&] {
                gpu::matmul(out.data(), x.data(), w_f32.data(), uint32_t(GgmlType::F32), n, in_dim,
                            out_dim);
            }, kCallsPerRun),
            flops);
        for (GgmlType type : {GgmlType::F16, GgmlType::Q4_K}) {
            DeviceBuffer<uint8_t> w(random_matrix(type, out_dim, in_dim));
            const std::string kernel =
                std::string("step12 tensor cores (") + ggml_type_info(uint32_t(type)).name +
                " W, tile " + std::to_string(gpu::tensor_core_tile_tokens(n, out_dim)) + ")";
            row(kernel.c_str(), label, median_ms([&] {
                    gpu::tensor_core_matmul(out.data(), x.data(), w.data(), uint32_t(type), n,
                                            in_dim, out_dim);
                }, kCallsPerRun),
                flops);
        }
    }
    // Attention of an n-token prompt from position 0: 4 n^2 head_dim flops a head, halved by
    // the causal mask.
    DeviceBuffer<float> q(random_floats(size_t(n) * q_dim, 3, 1.0f));
    DeviceBuffer<float> k(random_floats(size_t(n) * kv_dim, 4, 1.0f));
    DeviceBuffer<float> v(random_floats(size_t(n) * kv_dim, 5, 1.0f));
    DeviceBuffer<float> out(size_t(n) * q_dim);
    const double flops = 2.0 * double(n) * n * shape->head_dim * shape->n_heads;
    const std::string label = "attention " + std::to_string(n) + " positions";
    row("step09 prompt attention", label, median_ms([&] {
            gpu::attention(out.data(), q.data(), k.data(), v.data(), n, 0, shape->n_heads,
                           shape->n_kv_heads, shape->head_dim);
        }, kCallsPerRun),
        flops);
    row("step12 flash attention", label, median_ms([&] {
            gpu::flash_attention(out.data(), q.data(), k.data(), v.data(), n, 0, shape->n_heads,
                                 shape->n_kv_heads, shape->head_dim);
        }, kCallsPerRun),
        flops);
    return 0;
}
