// forward_cuda.h - the network of forward_cpu.h on the GPU: the same operator calls in the
// same order, each one a kernel of ops_cuda.h working on device buffers.
//
// As on the CPU, a pass runs only the new tokens and reads every earlier position's keys and
// values from the cache, here a DeviceKVCache in device memory.
#pragma once

#include <cstdint>
#include <vector>

#include "device_buffer.h"
#include "device_kv_cache.h"
#include "device_weights.h"
#include "forward_cpu.h"
#include "model_config.h"

// Every activation of one forward pass, in device memory, sized for the longest sequence run
// so far (DeviceBuffer only grows).
struct DeviceRunState {
    int n_tokens = 0;
    DeviceBuffer<int32_t> ids;   // (n_tokens) the input token ids
    DeviceBuffer<float> x;       // (n_tokens, d_model) the residual stream
    DeviceBuffer<float> h;       // (n_tokens, d_model) normalized input of a sublayer
    DeviceBuffer<float> q;       // (n_tokens, n_heads * head_dim)
    DeviceBuffer<float> attn;    // (n_tokens, n_heads * head_dim) attention before Wo
    DeviceBuffer<float> delta;   // (n_tokens, d_model) a sublayer's output, added to x
    DeviceBuffer<float> gate;    // (n_tokens, d_ff) becomes silu(gate) * up
    DeviceBuffer<float> up;      // (n_tokens, d_ff)
    DeviceBuffer<float> logits;  // (n_logit_rows, n_vocab), see LogitRows
};

namespace gpu {

// forward() of forward_cpu.h on the GPU: runs `ids` at the positions after those in the
// cache, adds their keys and values to it, and leaves the logits in state.logits (on the
// device; state.logits.download() copies them to the host). Fails like forward() on an empty
// sequence, more tokens than the cache has room for, or a token id outside the vocabulary.
void forward(const ModelConfig& config, const DeviceWeights& weights,
             const std::vector<int32_t>& ids, DeviceKVCache& cache, DeviceRunState& state,
             LogitRows rows);

// The model step generate_greedy() takes (NextTokenFn): a pass over the new ids on the cache,
// the argmax of the last position taken on the GPU, and its logits copied to the host only
// when asked for.
int32_t next_token(const ModelConfig& config, const DeviceWeights& weights,
                   const std::vector<int32_t>& new_ids, DeviceKVCache& cache, DeviceRunState& state,
                   std::vector<float>* logits);

}  // namespace gpu
