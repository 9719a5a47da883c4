// chunk_launch.h - step 15's two chunk kernels (chunked_delta_rule.cu, up to its launch code,
// made into build/emulate/chunk_kernels.inc by run.sh) launched as chunked_gated_delta_rule
// launches them, with host vectors for the scratch; lanes.h runs them.
#pragma once

#include "chunk_kernels.inc"

#include <cmath>
#include <vector>

namespace gpu {

inline void emulated_chunked_rule(float* out, float* state, const float* q, const float* k,
                                  const float* v, const float* g, const float* beta, int n_tokens,
                                  int n_key_heads, int n_value_heads, int dk, int dv) {
    const size_t chunks = size_t(n_value_heads) * chunk_count(n_tokens);
    std::vector<uint32_t> fragments(chunks * kDeltaChunkFragments * kDeltaFragmentWords,
                                    0xffffffff);
    std::vector<float> u(chunks * kChunk * dv, NAN), chunk_decays(chunks, NAN);
    const ChunkArgs a{out,         state,         q,  k,  v, g, beta, n_tokens, n_key_heads,
                      n_value_heads, dk, dv, {fragments.data(), u.data(), chunk_decays.data()}};
    emu::launch(chunk_prepare_kernel, dim3(chunk_count(n_tokens), n_value_heads),
                dim3(kChunkThreads), sizeof(PrepareTiles), a);
    emu::launch(chunk_state_pass_kernel,
                dim3(n_value_heads, (dv + kSliceColumns - 1) / kSliceColumns), dim3(kChunkThreads),
                0, a);
}

}  // namespace gpu
