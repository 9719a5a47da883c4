// matmul.cu - gpu::matmul, out = x W^T: it chooses the kernel by the number of tokens, a warp
// per row of W for one (matvec.cu), a tile of out per block for more (tiled_gemm.cu).
// Written in step 9.
#include "ops_cuda.h"

namespace gpu {

void matmul(float* out, const float* x, const void* w, uint32_t w_type, int n_tokens, int in_dim,
            int out_dim) {
    if (int64_t(n_tokens) * out_dim == 0) return;
    if (n_tokens == 1) {
        matvec(out, x, w, w_type, in_dim, out_dim);
    } else {
        tiled_gemm(out, x, w, w_type, n_tokens, in_dim, out_dim);
    }
}

}  // namespace gpu
