// bench_quant_dot.cpp - how fast step11's matmul_q8 multiplies Qwen2.5-0.5B's weight matrices,
// with each dot kernel, beside step 5's matmul() and a plain read of memory (not a test).
//
//   mkdir -p build/bench
//   g++ -O2 -g -std=c++17 -Wall -Wextra -fopenmp -Istep11_quantized_weights -Icommon
//       tools/bench/bench_quant_dot.cpp
//       step11_quantized_weights/{quant_dot,quant_dot_x86,dequantize,ggml_types,ops_cpu}.cpp
//       -o build/bench/bench_quant_dot                         (one command, on one line)
//   OMP_NUM_THREADS=2 build/bench/bench_quant_dot [SECONDS]
//
// Every matrix has the shape and type of one in models/qwen2.5-coder-0.5b-instruct.gguf (random
// blocks with sane scales: the speed does not depend on the values). Each measurement is the
// median of runs over many copies of the matrix, taken in turn, so that every run reads its
// weights from memory as a decode step does, not from a cache; SECONDS (default 1) is how long
// each measurement may take. Printed: milliseconds, GB/s of weights read (10^9 bytes), and for
// 512 tokens (a prompt, as tools/bench/bench_prompt.txt) GMAC/s; then what one decode step's
// and one prompt's matmuls add up to.
#include <omp.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "cli.h"
#include "ggml_types.h"
#include "half.h"
#include "ops_cpu.h"
#include "quant_dot.h"
#include "timer.h"

namespace {

struct Shape {
    const char* tensors;
    GgmlType type;
    int rows, cols;
    int per_token;   // matrices of this shape and type that one decode step multiplies
    int per_prompt;  // of those, the ones a prompt multiplies with every token (not the LM head)
};

// The 24 layers' matrices and the LM head (token_embd is only looked up).
const Shape kShapes[] = {
    {"attn_q, attn_output", GgmlType::Q5_0, 896, 896, 48, 48},
    {"attn_k, attn_v", GgmlType::Q5_0, 128, 896, 36, 36},
    {"attn_v", GgmlType::Q8_0, 128, 896, 12, 12},
    {"ffn_gate, ffn_up", GgmlType::Q5_0, 4864, 896, 48, 48},
    {"ffn_down", GgmlType::Q4_K, 896, 4864, 12, 12},
    {"ffn_down", GgmlType::Q6_K, 896, 4864, 12, 12},
    {"output (LM head)", GgmlType::Q8_0, 151936, 896, 1, 0},
};

constexpr int kPrefillTokens = 512;
constexpr double kCopiesBytes = 1.5e9;  // above the last-level cache (lscpu: 480 MiB here)

// Random bytes with every f16 scale a small normal number, as in test_quant_dot.cpp.
std::vector<uint8_t> random_matrix(uint32_t type, int rows, int cols) {
    const GgmlTypeInfo& info = ggml_type_info(type);
    std::vector<uint8_t> w(ggml_row_bytes(type, uint64_t(cols)) * rows);  // (rows, row bytes)
    std::mt19937_64 rng(7);
    for (size_t at = 0; at + 8 <= w.size(); at += 8) {
        uint64_t bits = rng();
        for (int k = 0; k < 8; k++) w[at + k] = uint8_t(bits >> (8 * k));
    }
    static_assert(block_layout::Q8_0::kOffsetD == 0 && block_layout::Q5_0::kOffsetD == 0 &&
                      block_layout::Q4_K::kOffsetD == 0,
                  "the f16 d opens Q8_0, Q5_0 and Q4_K blocks");
    const int d_offset = type == uint32_t(GgmlType::Q6_K) ? block_layout::Q6_K::kOffsetD : 0;
    const int dmin_offset = block_layout::Q4_K::kOffsetDmin;
    const uint16_t d = f32_to_f16(1e-3f);
    for (size_t at = 0; at < w.size(); at += info.block_bytes) {
        w[at + d_offset] = uint8_t(d);
        w[at + d_offset + 1] = uint8_t(d >> 8);
        if (type == uint32_t(GgmlType::Q4_K)) {
            w[at + dmin_offset] = uint8_t(d);
            w[at + dmin_offset + 1] = uint8_t(d >> 8);
        }
    }
    return w;
}

// The median time of `run`, in ms: at least 3 runs (1 when one takes over 2 s), up to 101,
// until `seconds` have passed.
template <class Run>
double median_ms(double seconds, Run run) {
    std::vector<double> times;
    Timer total;
    while (times.size() < 101) {
        Timer timer;
        run(int(times.size()));
        times.push_back(timer.elapsed_ms());
        bool enough = times.size() >= 3 || times.back() > 2000.0;
        if (enough && total.elapsed_s() > seconds) break;
    }
    std::sort(times.begin(), times.end());
    return times[times.size() / 2];
}

// The bandwidth ceiling: a sum over 300 MB that no cache holds, by all threads; with
// `prefetch`, each thread also asks for the line 2 KB ahead, as matmul_q8 does (the hardware
// prefetchers stop at every 4 KB page).
double memory_read_gbs(double seconds, bool prefetch) {
    std::vector<uint64_t> buffer(300'000'000 / sizeof(uint64_t), 1);  // (37.5M)
    constexpr int64_t kAhead = 2048 / sizeof(uint64_t), kLine = 64 / sizeof(uint64_t);
    uint64_t total = 0;
    double ms = median_ms(seconds, [&](int) {
        uint64_t sum = 0;
        const int64_t n = int64_t(buffer.size());
#pragma omp parallel for schedule(static) reduction(+ : sum)
        for (int64_t i = 0; i < n; i++) {
            if (prefetch && i % kLine == 0 && i + kAhead < n)
                __builtin_prefetch(&buffer[i + kAhead]);
            sum += buffer[i];
        }
        total += sum;
    });
    if (total == 0) std::printf("(impossible: the sum is 0)\n");  // keeps the loop alive
    return double(buffer.size() * sizeof(uint64_t)) / ms / 1e6;
}

struct Method {
    std::string name;
    bool exact;        // matmul(), the float path of steps 05-10
    DotKernel kernel;  // otherwise matmul_q8 with this kernel
};

}  // namespace

int main(int argc, char** argv) {
    try {
        const double seconds = argc > 1 ? parse_float(argv[1], "SECONDS") : 1.0;
        std::vector<Method> methods = {{"matmul() f32", true, DotKernel::Scalar}};
        for (DotKernel kernel : {DotKernel::Scalar, DotKernel::Avx2, DotKernel::Avx512Vnni})
            if (cpu_supports(kernel)) methods.push_back({dot_kernel_name(kernel), false, kernel});
        std::printf("%d OpenMP threads; best kernel here: %s\n\n", omp_get_max_threads(),
                    dot_kernel_name(best_dot_kernel()));
        std::printf("%-20s %-5s %13s %6s  %-13s %9s %7s %7s\n", "tensors", "type", "rows x cols",
                    "tokens", "method", "ms", "GB/s", "GMAC/s");
        std::vector<double> decode_ms(methods.size(), 0.0);  // (methods) one decode step's
        std::vector<double> prompt_ms(methods.size(), 0.0);  // (methods) one prompt's
        double decode_bytes = 0.0;
        for (const Shape& shape : kShapes) {
            const uint32_t type = uint32_t(shape.type);
            const std::vector<uint8_t> matrix = random_matrix(type, shape.rows, shape.cols);
            const double bytes = double(matrix.size());
            const int n_copies = std::max(1, int(kCopiesBytes / bytes));
            std::vector<uint8_t> copies(matrix.size() * n_copies);  // (n_copies, matrix bytes)
            for (int c = 0; c < n_copies; c++)
                std::copy(matrix.begin(), matrix.end(), copies.begin() + c * matrix.size());
            decode_bytes += shape.per_token * bytes;
            std::mt19937 rng(8);
            std::normal_distribution<float> normal(0.0f, 1.0f);
            std::vector<float> x(size_t(kPrefillTokens) * shape.cols);  // (512, cols)
            for (float& value : x) value = normal(rng);
            std::vector<float> out(size_t(kPrefillTokens) * shape.rows);  // (512, rows)
            for (int n_tokens : {1, kPrefillTokens}) {
                if (n_tokens > 1 && shape.per_prompt == 0) continue;
                for (size_t m = 0; m < methods.size(); m++) {
                    const Method& method = methods[m];
                    // The scalar kernel defines the results; its speed on a prompt is no news.
                    if (n_tokens > 1 && !method.exact && method.kernel == DotKernel::Scalar)
                        continue;
                    double ms = median_ms(seconds, [&](int run) {
                        const uint8_t* w = copies.data() + (run % n_copies) * matrix.size();
                        if (method.exact)
                            matmul(out.data(), x.data(), w, type, n_tokens, shape.cols, shape.rows);
                        else
                            matmul_q8(out.data(), x.data(), w, type, n_tokens, shape.cols,
                                      shape.rows, method.kernel);
                    });
                    if (n_tokens == 1) decode_ms[m] += shape.per_token * ms;
                    else prompt_ms[m] += shape.per_prompt * ms;
                    double macs = double(shape.rows) * shape.cols * n_tokens;
                    std::printf("%-20s %-5s %6d x %-5d %6d  %-13s %9.3f %7.2f", shape.tensors,
                                ggml_type_info(type).name, shape.rows, shape.cols, n_tokens,
                                method.name.c_str(), ms, bytes / ms / 1e6);
                    if (n_tokens > 1) std::printf(" %7.2f", macs / ms / 1e6);
                    std::printf("\n");
                }
            }
        }
        std::printf(
            "\nmemory read (sum over 300 MB): %.2f GB/s, with software prefetch %.2f GB/s\n",
            memory_read_gbs(seconds, false), memory_read_gbs(seconds, true));
        std::printf("\none decode step's matmuls (%.0f MB of weights):\n", decode_bytes / 1e6);
        for (size_t m = 0; m < methods.size(); m++)
            std::printf("  %-13s %8.2f ms  %6.2f GB/s\n", methods[m].name.c_str(), decode_ms[m],
                        decode_bytes / decode_ms[m] / 1e6);
        std::printf("\none prompt's matmuls, %d tokens (the LM head aside):\n", kPrefillTokens);
        for (size_t m = 0; m < methods.size(); m++)
            if (prompt_ms[m] > 0)
                std::printf("  %-13s %8.1f ms  %6.1f tokens/s\n", methods[m].name.c_str(),
                            prompt_ms[m], kPrefillTokens / prompt_ms[m] * 1e3);
        return 0;
    } catch (const Error& error) {
        std::fprintf(stderr, "error: %s\n", error.what());
        return 1;
    }
}
