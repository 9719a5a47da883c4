// device_kv_cache.h - the KV cache of kv_cache.h in device memory: the same layout, the same
// rules, so gpu::forward can write new keys and values straight into their rows.
//
// Step 11: its values are F32, as on the CPU, or F16 (CacheType, ops_cuda.h). A decode step's
// attention reads the whole cache of every layer, which at long contexts rivals the weights'
// bytes (at 4096 positions a quarter of the 1.5B model's Q4_K_M ones in F32): F16 halves that,
// for a rounding of each key and value to 11 significant bits. The kernels that write and read
// the rows take the type along with the pointers.
//
// Step 14, the hybrid cache of kv_cache.h: keys and values only for the attention layers, and for
// each Gated DeltaNet layer its conv window and its delta rule's state, always fp32 (whatever
// the cache type: the state adds every token's rounding up), zeroed at the start and by clear().
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "device_buffer.h"
#include "model_config.h"
#include "ops_cuda.h"

// Bytes of one key or value of the type: 4 or 2.
inline size_t cache_value_bytes(CacheType type) { return type == CacheType::F16 ? 2 : 4; }

struct DeviceKVCache {
    int n_layers = 0;
    int capacity = 0;                 // positions it can hold: the context limit
    int kv_dim = 0;                   // n_kv_heads * head_dim
    int n_filled = 0;                 // positions 0..n_filled-1 hold their keys and values
    CacheType type = CacheType::F32;  // of every key and value
    DeviceBuffer<uint8_t> k;          // (n_attention_layers, capacity, kv_dim) values of `type`
    DeviceBuffer<uint8_t> v;          // (n_attention_layers, capacity, kv_dim) values of `type`
    // Step 14: layer l's block of k and v, or of the recurrent state, by its kind (-1: none).
    std::vector<int> kv_block;     // (n_layers)
    std::vector<int> state_block;  // (n_layers)
    size_t conv_size = 0;          // (conv_kernel - 1) * channels floats a DeltaNet layer
    size_t ssm_size = 0;           // n_value_heads * dk * dv floats a DeltaNet layer
    DeviceBuffer<float> conv;      // (n_delta_net_layers, conv_kernel - 1, channels)
    DeviceBuffer<float> ssm;       // (n_delta_net_layers, n_value_heads, dk, dv)

    // Layer l's (capacity, kv_dim) keys or values, of `type`.
    void* keys(int layer) { return k.data() + layer_bytes() * kv_block[layer]; }
    void* values(int layer) { return v.data() + layer_bytes() * kv_block[layer]; }
    // Layer l's rows from `position` on.
    void* key_rows(int layer, int position) {
        return static_cast<uint8_t*>(keys(layer)) + row_bytes() * position;
    }
    void* value_rows(int layer, int position) {
        return static_cast<uint8_t*>(values(layer)) + row_bytes() * position;
    }
    // Step 14: a DeltaNet layer's window and state.
    float* conv_window(int layer) { return conv.data() + conv_size * state_block[layer]; }
    float* delta_state(int layer) { return ssm.data() + ssm_size * state_block[layer]; }
    size_t row_bytes() const { return size_t(kv_dim) * cache_value_bytes(type); }
    size_t layer_bytes() const { return row_bytes() * capacity; }
    // Forgets every position; step 14: the recurrent states go back to zeros.
    void clear();
    // Step 14: whether positions can be forgotten from the end (no recurrent state).
    bool can_rewind() const { return ssm.size() == 0; }
};

// Bytes a device cache of `capacity` positions takes: 2 (K and V) x the attention layers x
// capacity x kv_dim x 4 or 2, and (step 14) the recurrent states, recurrent_state_bytes().
size_t device_kv_cache_bytes(const ModelConfig& config, int capacity, CacheType type);

// An empty cache for up to `capacity` positions of keys and values of `type`, allocated on the
// device (the keys' and values' rows are never read before a pass writes them; the states are
// zeros). Fails like make_kv_cache() on a bad capacity.
DeviceKVCache make_device_kv_cache(const ModelConfig& config, int capacity,
                                   CacheType type = CacheType::F32);
