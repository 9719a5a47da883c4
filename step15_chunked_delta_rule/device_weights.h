// device_weights.h - the model's tensors copied to the GPU once, when the model is loaded.
//
// Step 11: a matrix of Q8_0, Q5_0, Q4_K or Q6_K blocks is copied as the file stores it, and
// the kernels dequantize its blocks in registers (quant_blocks_cuda.cuh): a Q4_K_M 7B model
// takes ~4.7 GB instead of ~15. Every other matrix is converted on the host first: dequantize()
// (step03) turns one row at a time into float, and the row is rounded to F16, or BF16 for a
// BF16 matrix (its values may not fit F16's range). An F32 matrix loses precision in that
// rounding; WeightPrecision::F32 turns every matrix into F32, exact at 4 bytes per weight, for
// the checks against transformers. Norms and biases are F32.
// Step 14: a qwen35 layer holds the tensors of its kind, as LayerWeights does (weights.h): a Gated
// DeltaNet layer's matrices are uploaded as any matrix, its small tensors as floats, and the
// other kind's stay empty.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "device_buffer.h"
#include "weights.h"

enum class WeightPrecision { Half, F32 };

// `rows` rows of `cols` weights of ggml type `type` (F16, BF16, F32 or a block type the GPU
// reads), row after row.
struct DeviceMatrix {
    DeviceBuffer<uint8_t> data;  // (rows, cols) weights of `type`
    uint32_t type = 0;
    int rows = 0;
    int cols = 0;
};

struct DeviceLayerWeights {
    DeviceBuffer<float> attn_norm;    // (d_model)
    DeviceMatrix attn_q;              // (q_dim, d_model); qwen35: (2 q_dim, d_model)
    DeviceBuffer<float> attn_q_bias;  // (q_dim), empty (null) where the model has no biases
    DeviceMatrix attn_k;              // (kv_dim, d_model)
    DeviceBuffer<float> attn_k_bias;  // (kv_dim)
    DeviceMatrix attn_v;              // (kv_dim, d_model)
    DeviceBuffer<float> attn_v_bias;  // (kv_dim)
    DeviceBuffer<float> attn_q_norm;  // (head_dim), step 13: QK-norm's; empty without it
    DeviceBuffer<float> attn_k_norm;  // (head_dim)
    DeviceMatrix attn_output;         // (d_model, q_dim)
    // Step 14: a Gated DeltaNet layer (weights.h: C = 2 Hk dk + Hv dv, the file's head order).
    DeviceMatrix attn_qkv;            // (C, d_model)
    DeviceMatrix attn_gate;           // (Hv dv, d_model)
    DeviceBuffer<float> ssm_conv1d;   // (C, conv_kernel)
    DeviceMatrix ssm_beta;            // (Hv, d_model)
    DeviceMatrix ssm_alpha;           // (Hv, d_model)
    DeviceBuffer<float> ssm_dt_bias;  // (Hv)
    DeviceBuffer<float> ssm_a;        // (Hv)
    DeviceBuffer<float> ssm_norm;     // (dv)
    DeviceMatrix ssm_out;             // (d_model, Hv dv)
    DeviceBuffer<float> ffn_norm;     // (d_model); qwen35's post_attention_norm
    DeviceMatrix ffn_gate;            // (d_ff, d_model)
    DeviceMatrix ffn_up;              // (d_ff, d_model)
    DeviceMatrix ffn_down;            // (d_model, d_ff)
};

struct DeviceWeights {
    int n_vocab = 0;
    AttentionParts attention;  // step 13: Qwen2's biases or Qwen3's QK-norm (weights.h)
    DeviceMatrix token_embd;                 // (n_vocab, d_model)
    std::vector<DeviceLayerWeights> layers;  // (n_layers)
    DeviceBuffer<float> output_norm;         // (d_model)
    DeviceMatrix output;                     // (n_vocab, d_model), empty when tied
    bool tied_output = false;
};

// Told the file type of each quantized matrix that is converted to F16 because no kernel reads
// its blocks, e.g. to print a notice.
using ConversionNotice = std::function<void(uint32_t file_type)>;

// Converts and copies every tensor of `weights` (fails like any CUDA call if the device is
// out of memory). Host memory stays bounded: one matrix in its device type at a time.
DeviceWeights upload_weights(const Weights& weights,
                             WeightPrecision precision = WeightPrecision::Half,
                             const ConversionNotice& notice = ConversionNotice());

// The LM head: `output`, or `token_embd` when the two are tied.
const DeviceMatrix& lm_head(const DeviceWeights& weights);

// Device memory taken by the weights, in bytes.
uint64_t device_bytes(const DeviceWeights& weights);

// Weight bytes one forward pass must read at least: every matrix and vector once, except the
// embedding table, of which only the tokens' rows are read (but all of it when it is also the
// LM head). Divided by the time of a pass, this gives the bandwidth the pass achieved.
uint64_t bytes_read_per_pass(const DeviceWeights& weights);
