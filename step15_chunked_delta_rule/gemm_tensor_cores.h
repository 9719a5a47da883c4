// gemm_tensor_cores.h - step 12: a prompt's matrix products on the tensor cores.
//
// gpu::matmul (ops_cuda.h) sends every product of more than one token here when the weights
// are F16, BF16 or blocks; F32 weights (the checks' exact path) keep step 9's float GEMM.
#pragma once

#include <cstdint>

namespace gpu {

// Whether this GPU has the instructions of tensor_core_ptx.cuh: compute capability 8.0
// (Ampere) or later. On an older one (Turing) the prompt keeps step 9's kernels.
bool gpu_has_tensor_core_mma();

// Whether tensor_core_matmul takes weights of this ggml type: F16, BF16, Q8_0, Q5_0, Q4_K, Q6_K.
bool tensor_cores_take(uint32_t w_type);

// out = x W^T, with x (n_tokens, in_dim) and out (n_tokens, out_dim) F32 in device memory and W
// (out_dim, in_dim) of type w_type. x is first rounded to the operand type, F16 (BF16 for BF16
// weights), into a scratch matrix of whole tiles; a block matrix's weights are dequantized
// into F16 tiles in shared memory. Products are added up in F32.
void tensor_core_matmul(float* out, const float* x, const void* w, uint32_t w_type, int n_tokens,
                        int in_dim, int out_dim);

// The tile height (tokens) that tensor_core_matmul picks for this shape: 128, or 64 when
// 128-token tiles would leave multiprocessors without a tile.
int tensor_core_tile_tokens(int n_tokens, int out_dim);

}  // namespace gpu
