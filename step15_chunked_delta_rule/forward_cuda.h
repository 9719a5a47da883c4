// forward_cuda.h - the network of forward_cpu.h on the GPU: the same operator calls in the
// same order, each one a kernel of ops_cuda.h working on device buffers.
//
// As on the CPU, a pass runs only the new tokens and reads every earlier position's keys and
// values from the cache, here a DeviceKVCache in device memory.
//
// Step 10 adds the Decoder: a prompt still runs as above, kernel by kernel, but each later
// token runs 6 fused kernels a layer (ops_cuda.h), recorded once as a CUDA graph and replayed.
//
// Step 14: qwen35's layers run on the prompt path as on the CPU (forward_cpu.h), a Gated
// DeltaNet layer through gated_delta_net.cu's kernels with its window and state in the cache.
// The Decoder's graph runs them too: a DeltaNet layer reads no position (its window and state
// are where the last token left them), so its kernels replay as they are; the gated attention
// reads its position from the slots (gated_qk_norm_rope_cache).
#pragma once

#include <cstdint>
#include <vector>

#include "cuda_graph.h"
#include "device_buffer.h"
#include "device_kv_cache.h"
#include "device_weights.h"
#include "forward_cpu.h"
#include "model_config.h"
#include "ops_cuda.h"
#include "quant_dot.h"

// A prompt runs kPromptChunk tokens at a time, each chunk's attention reading the cache the
// chunks before it filled. A chunk this long makes every product compute-bound (each weight,
// read once a chunk, serves every token of the chunk), while the activations stay small at any
// prompt length: gate and up are (kPromptChunk, d_ff) floats, not (prompt length, d_ff).
// (llama.cpp's physical batch, -ub, is 512 by default too.)
constexpr int kPromptChunk = 512;

// Every activation of one forward pass, in device memory, sized for the longest chunk run so
// far (DeviceBuffer only grows), and the logits of the whole pass.
struct DeviceRunState {
    int n_tokens = 0;            // the chunk's tokens
    DeviceBuffer<int32_t> ids;   // (n_tokens) the input token ids
    DeviceBuffer<float> x;       // (n_tokens, d_model) the residual stream
    DeviceBuffer<float> h;       // (n_tokens, d_model) normalized input of a sublayer
    DeviceBuffer<float> q;       // (n_tokens, n_heads * head_dim)
    DeviceBuffer<float> k;       // (n_tokens, n_kv_heads * head_dim) new keys for an F16 cache
    DeviceBuffer<float> v;       // (n_tokens, n_kv_heads * head_dim) new values for an F16 cache
    DeviceBuffer<float> attn;    // (n_tokens, n_heads * head_dim) attention before Wo
    DeviceBuffer<float> delta;   // (n_tokens, d_model) a sublayer's output, added to x
    DeviceBuffer<float> gate;    // (n_tokens, d_ff) becomes silu(gate) * up
    DeviceBuffer<float> up;      // (n_tokens, d_ff)
    DeviceBuffer<float> logits;  // (n_logit_rows, n_vocab), see LogitRows
    // Step 14: the gated attention's (empty without an output gate).
    DeviceBuffer<float> query_gate;  // (n_tokens, n_heads, 2, head_dim) Q's projection
    DeviceBuffer<float> attn_gate;   // (n_tokens, n_heads * head_dim)
    // Step 14: a Gated DeltaNet layer's (empty without such layers); C = 2 Hk dk + Hv dv.
    DeviceBuffer<float> mixed_qkv;   // (n_tokens, C) the projection, the convolution's input
    DeviceBuffer<float> qkv;         // (n_tokens, C) after the convolution: q | k | v per token
    DeviceBuffer<float> q_heads;     // (n_tokens, Hk, dk) normalized and scaled
    DeviceBuffer<float> k_heads;     // (n_tokens, Hk, dk) normalized
    DeviceBuffer<float> v_heads;     // (n_tokens, Hv, dv)
    DeviceBuffer<float> z;           // (n_tokens, Hv, dv) the output's gate
    DeviceBuffer<float> beta_in;     // (n_tokens, Hv) b
    DeviceBuffer<float> alpha_in;    // (n_tokens, Hv) a
    DeviceBuffer<float> beta;        // (n_tokens, Hv)
    DeviceBuffer<float> decay;       // (n_tokens, Hv) g, the log of the state's decay
    DeviceBuffer<float> recurrent;   // (n_tokens, Hv, dv) the delta rule's output, then normed
    // Step 15: the chunked delta rule's matrices, ceil(n_tokens / 64) chunks a value head.
    gpu::DeltaChunkScratch delta_chunks;
};

namespace gpu {

// forward() of forward_cpu.h on the GPU: runs `ids` at the positions after those in the
// cache, adds their keys and values to it, and leaves the logits in state.logits (on the
// device; state.logits.download() copies them to the host). It runs in chunks of kPromptChunk
// tokens, the products and attention on the tensor cores (unless the weights are F32). Fails
// like forward() on an empty sequence, more tokens than the cache has room for, or a token id
// outside the vocabulary.
void forward(const ModelConfig& config, const DeviceWeights& weights,
             const std::vector<int32_t>& ids, DeviceKVCache& cache, DeviceRunState& state,
             LogitRows rows);

// The model step generate_greedy() takes (NextTokenFn): a pass over the new ids on the cache,
// the argmax of the last position taken on the GPU, and its logits copied to the host only
// when asked for.
int32_t next_token(const ModelConfig& config, const DeviceWeights& weights,
                   const std::vector<int32_t>& new_ids, DeviceKVCache& cache, DeviceRunState& state,
                   std::vector<float>* logits);

// ---- Step 10: one token, one graph ----

// What a decode step reads and writes besides the weights and the cache. Allocated once, so
// the pointers a captured graph holds stay valid for as long as the Decoder lives (a prompt's
// DeviceRunState grows, and moves, with the prompt).
struct DecodeBuffers {
    DeviceBuffer<int32_t> slots;            // (2) DecodeSlots: the token and its position
    DeviceBuffer<float> x;                  // (d_model) the residual stream
    DeviceBuffer<float> q;                  // (n_heads * head_dim)
    DeviceBuffer<float> attn;               // (n_heads * head_dim) attention before Wo
    DeviceBuffer<float> ffn;                // (d_ff) silu(gate) * up
    DeviceBuffer<float> logits;             // (n_vocab)
    DeviceBuffer<float> attention_scratch;  // the chunks' partial results, for a full cache
    DeviceBuffer<uint8_t> argmax_scratch;   // the LM head blocks' winners
    // Step 11: block matrices' inputs rounded to 8 bits
    DeviceQ8Vector normed_q8;       // (d_model) rmsnorm(x) * g, for QKV, gate/up and the LM head
    DeviceQ8Vector input_q8;        // (max(n_heads * head_dim, d_ff)) the input of Wo or down
    DeviceBuffer<int> group_done;   // (d_ff / 32) gate/up's blocks that round down's input
    // Step 13, QK-norm only (empty otherwise): where the blocks of a head meet (HeadNormScratch)
    DeviceBuffer<float> head_rows;  // (n_heads + n_kv_heads, head_dim)
    DeviceBuffer<int> head_done;    // (n_heads + n_kv_heads)
    // Step 14, a model with recurrent layers only (empty otherwise); C = 2 Hk dk + Hv dv.
    DeviceBuffer<float> h;           // (d_model) rmsnorm(x), for the float matrices
    DeviceBuffer<float> query_gate;  // (n_heads, 2, head_dim) the gated Q projection
    DeviceBuffer<float> attn_gate;   // (n_heads * head_dim)
    DeviceBuffer<float> k;           // (n_kv_heads * head_dim) before the norm and RoPE
    DeviceBuffer<float> v;           // (n_kv_heads * head_dim)
    DeviceBuffer<float> mixed_qkv;   // (C) the projection, the convolution's input
    DeviceBuffer<float> qkv;         // (C) after it: q | k | v, normalized in place
    DeviceBuffer<float> z;           // (Hv dv) the output's gate
    DeviceBuffer<float> beta_in;     // (Hv) b, then beta
    DeviceBuffer<float> alpha_in;    // (Hv) a
    DeviceBuffer<float> decay;       // (Hv) g
    DeviceBuffer<float> recurrent;   // (Hv dv) the delta rule's output, then normed
};

// Kernels in one decode step: the embedding, 6 a layer (7 where V's type on the device is not
// Q's and K's and no published pairing, 8 where all three differ), the LM head and the final
// argmax, and (step 11) a quantize_q8 for each normalized input a block matrix reads (after the
// embedding, after Wo and after down), and one before Wo where the attention cannot write its
// input (head_dim not a multiple of 32); Wo's and down's inputs are rounded by the kernels that
// produce them. (Step 13: Qwen3's QK-norm adds none, inside qkv_rope_cache.) Step 14: a Gated
// DeltaNet layer takes 10 kernels before its output projection and the gated attention 7 before
// Wo, each one more where a matrix of its input is F16 or F32 (the rmsnorm it reads).
int kernels_per_decode_step(const ModelConfig& config, const DeviceWeights& weights);

// Launches one decode step on `stream`: it runs the token in the slots at their position,
// writes its key and value into the cache, and leaves the logits in buffers.logits, the
// argmax in the token slot and the next position in the position slot. Reads nothing from
// the host, so it can be captured.
void launch_decode_step(const ModelConfig& config, const DeviceWeights& weights,
                        DeviceKVCache& cache, DecodeBuffers& buffers, Stream stream);

// The GPU's model step (NextTokenFn) of step 10. A prompt runs as forward() does; one new
// token runs launch_decode_step, replayed from a graph captured at the first one (or, with
// use_graph false, launched kernel by kernel: --no-graph). The host writes the slots only
// when they do not already hold its token and position: after an argmax (greedy decoding)
// they do, so a replay follows a replay with nothing copied in, and only the chosen id (and
// the logits when asked for) is copied out. Step 14: a model with recurrent layers (qwen35)
// replays its graph too; its states, like the cache, are where the last step left them.
class Decoder {
public:
    Decoder(const ModelConfig& config, const DeviceWeights& weights, DeviceKVCache& cache,
            bool use_graph);

    int32_t next_token(const std::vector<int32_t>& new_ids, std::vector<float>* logits);

    int n_graph_kernels() const { return graph_.n_kernels(); }  // 0 before the first capture

private:
    void allocate_hybrid_buffers(const ModelConfig& config);  // step 14

    const ModelConfig& config_;
    const DeviceWeights& weights_;
    DeviceKVCache& cache_;
    bool use_graph_;
    DeviceRunState prompt_state_;
    DecodeBuffers buffers_;
    GpuStream stream_;
    CudaGraph graph_;
    DecodeSlots host_slots_{};  // what the slots hold, when slots_known_
    bool slots_known_ = false;  // false until a decode step ran, and after every prompt
};

}  // namespace gpu
