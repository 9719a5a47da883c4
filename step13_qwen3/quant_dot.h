// quant_dot.h - step 11 on the CPU: dot products of GGUF weight blocks with 8-bit activations.
//
// Steps 05-10 turned every row of a quantized W back into 32-bit floats before multiplying:
// for a Q4_K row, 0.56 bytes a weight became 4, and a float multiply-add per weight followed.
// Here, as in llama.cpp, the activation row x is rounded once per matmul to 8-bit blocks
// (BlockQ8: 32 values, one float scale), and each weight block is multiplied with the
// activation block beneath it in integers: 32 small-integer products summed exactly, then one
// float multiply by the two blocks' scales. The integer part is what SIMD instructions do 32
// or 64 at a time (AVX2's vpmaddubsw, AVX-512 VNNI's vpdpbusd).
//
// Every kernel (scalar, AVX2, AVX-512 VNNI) computes each block's integer sums exactly and then
// combines them with the same float operations in the same order, so all of them return the
// same float bit for bit: the SIMD paths are checked against the scalar one for equality.
// The order (quant_dot.cpp writes each type's formula out): activation block b's float term is
// added by one fused multiply-add to partial sum b % kDotLanes, and the partial sums are added
// up by sum_dot_lanes. Eight partial sums are one AVX register of floats, so a SIMD kernel
// finishes eight blocks with a few vector instructions and never adds across a register until
// the row is done.
#pragma once

#include <cstdint>

// 32 activations as q[i] = round(x[i] / d), |q[i]| <= 127, d = max |x[i]| / 127 (0 for a block
// of zeros), and sum = q[0] + ... + q[31] (what the K-quants' minimums multiply).
struct BlockQ8 {
    float d;
    int32_t sum;
    int8_t q[32];
};
constexpr int kQ8BlockSize = 32;

// Quantizes x (n values, n a multiple of 32) into n / 32 blocks. Scalar code for every kernel:
// it is O(n), the dot products after it are O(n * rows). The rounding is to nearest, ties to
// even, of the correctly rounded x[i] / d, so |x[i] - d * q[i]| <= d / 2 up to float rounding.
// A block holding an infinity or a NaN gets d = NaN (and q = 0): the dot products it enters
// are NaN, as the float path's would be.
void quantize_row_q8(const float* x, BlockQ8* blocks, int n);

// Which instructions compute the integer sums.
enum class DotKernel { Scalar, Avx2, Avx512Vnni };

// The fastest kernel this CPU runs (cpuid, through __builtin_cpu_supports). The environment
// variable QWEN_DOT_KERNEL=scalar|avx2|avx512vnni picks one instead, for benchmarks and
// debugging; it fails with one line for another value or a kernel this CPU lacks. Read at
// every call: callers ask once and keep the answer.
DotKernel best_dot_kernel();
bool cpu_supports(DotKernel kernel);
const char* dot_kernel_name(DotKernel kernel);  // "scalar", "AVX2", "AVX-512 VNNI"

// sum over i of w[i] * x[i] for one row of n weights of type w_type (n a multiple of the type's
// block size, and of 32), with x quantized as above: the value every kernel returns alike. The
// types with a block dot product are those the type table marks cpu_block_dot (ggml_types.cpp):
// Q8_0, Q5_0, Q4_K and Q6_K, what Qwen's published Q8_0, Q4_K_M and Q5_K_M files use.
float block_dot(uint32_t w_type, const void* w_row, const BlockQ8* x, int n, DotKernel kernel);

// out = x W^T (ops_cpu.h's matmul) with each token's row of x quantized by quantize_row_q8
// first, and OpenMP threads over the rows of W. For a type without a block dot product, or
// rows that are not whole blocks, it is matmul() itself. A prompt (more than one token) goes
// through W in tiles of kMatmulTileBytes of rows, each tile taking every token before the next
// tile starts: the tile stays in the core's L2 cache, and the few tokens multiplied at a time
// in L1.
constexpr uint64_t kMatmulTileBytes = 128 * 1024;
void matmul_q8(float* out, const float* x, const void* w, uint32_t w_type, int n_tokens, int in_dim,
               int out_dim, DotKernel kernel);

// The partial sums a row's blocks went into, added in a fixed tree: lanes k and k + 4, then
// those sums k and k + 2, then the last two. Every kernel ends a row with this tree (the SIMD
// kernels in registers).
constexpr int kDotLanes = 8;
float sum_dot_lanes(const float* lanes);  // (kDotLanes)
