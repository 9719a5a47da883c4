// device_weights.h - the model's tensors copied to the GPU once, when the model is loaded.
//
// The GPU's matmul reads plain numbers, not ggml blocks, so every matrix is converted on the
// host first: dequantize() (step03) turns one row at a time into float, and the row is
// rounded to the device type. By default that is F16, 2 bytes per weight, or BF16 for a BF16
// matrix (its values may not fit F16's range): a 7B model then takes ~15 GB of a 24 GB card.
// F32 and quantized matrices lose precision in that rounding; WeightPrecision::F32 keeps them
// exact at 4 bytes per weight, for the checks against transformers. Norms and biases are F32.
#pragma once

#include <cstdint>
#include <vector>

#include "device_buffer.h"
#include "weights.h"

enum class WeightPrecision { Half, F32 };

// `rows` rows of `cols` weights of ggml type `type` (F16, BF16 or F32), row after row.
struct DeviceMatrix {
    DeviceBuffer<uint8_t> data;  // (rows, cols) weights of `type`
    uint32_t type = 0;
    int rows = 0;
    int cols = 0;
};

struct DeviceLayerWeights {
    DeviceBuffer<float> attn_norm;    // (d_model)
    DeviceMatrix attn_q;              // (q_dim, d_model)
    DeviceBuffer<float> attn_q_bias;  // (q_dim)
    DeviceMatrix attn_k;              // (kv_dim, d_model)
    DeviceBuffer<float> attn_k_bias;  // (kv_dim)
    DeviceMatrix attn_v;              // (kv_dim, d_model)
    DeviceBuffer<float> attn_v_bias;  // (kv_dim)
    DeviceMatrix attn_output;         // (d_model, q_dim)
    DeviceBuffer<float> ffn_norm;     // (d_model)
    DeviceMatrix ffn_gate;            // (d_ff, d_model)
    DeviceMatrix ffn_up;              // (d_ff, d_model)
    DeviceMatrix ffn_down;            // (d_model, d_ff)
};

struct DeviceWeights {
    int n_vocab = 0;
    DeviceMatrix token_embd;                 // (n_vocab, d_model)
    std::vector<DeviceLayerWeights> layers;  // (n_layers)
    DeviceBuffer<float> output_norm;         // (d_model)
    DeviceMatrix output;                     // (n_vocab, d_model), empty when tied
    bool tied_output = false;
};

// Converts and copies every tensor of `weights` (fails like any CUDA call if the device is
// out of memory). Host memory stays bounded: one matrix in its device type at a time.
DeviceWeights upload_weights(const Weights& weights,
                             WeightPrecision precision = WeightPrecision::Half);

// The LM head: `output`, or `token_embd` when the two are tied.
const DeviceMatrix& lm_head(const DeviceWeights& weights);

// Device memory taken by the weights, in bytes.
uint64_t device_bytes(const DeviceWeights& weights);

// Weight bytes one forward pass must read at least: every matrix and vector once, except the
// embedding table, of which only the tokens' rows are read (but all of it when it is also the
// LM head). Divided by the time of a pass, this gives the bandwidth the pass achieved.
uint64_t bytes_read_per_pass(const DeviceWeights& weights);
