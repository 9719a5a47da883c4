// matmul.cu - gpu::matmul, out = x W^T: it chooses the kernel by the number of tokens and the
// weights' type: a warp per row of W for one token (matvec.cu); for more, the tensor cores
// for F16, BF16 and block matrices when the GPU has them (gemm_tensor_cores.cu), else a tile
// of out per block in float (tiled_gemm.cu), which keeps F32 matrices, the checks' exact path.
// Written in step 9; last changed in step 12 (the tensor cores).
#include "gemm_tensor_cores.h"
#include "ops_cuda.h"

namespace gpu {

void matmul(float* out, const float* x, const void* w, uint32_t w_type, int n_tokens, int in_dim,
            int out_dim) {
    if (int64_t(n_tokens) * out_dim == 0) return;
    if (n_tokens == 1) {
        matvec(out, x, w, w_type, in_dim, out_dim);
    } else if (tensor_cores_take(w_type) && gpu_has_tensor_core_mma()) {
        tensor_core_matmul(out, x, w, w_type, n_tokens, in_dim, out_dim);
    } else {
        tiled_gemm(out, x, w, w_type, n_tokens, in_dim, out_dim);
    }
}

}  // namespace gpu
