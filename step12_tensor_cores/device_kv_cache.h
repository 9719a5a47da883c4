// device_kv_cache.h - the KV cache of kv_cache.h in device memory: the same layout, the same
// rules, so gpu::forward can write new keys and values straight into their rows.
#pragma once

#include <cstddef>

#include "device_buffer.h"
#include "model_config.h"

struct DeviceKVCache {
    int n_layers = 0;
    int capacity = 0;       // positions it can hold: the context limit
    int kv_dim = 0;         // n_kv_heads * head_dim
    int n_filled = 0;       // positions 0..n_filled-1 hold their keys and values
    DeviceBuffer<float> k;  // (n_layers, capacity, kv_dim)
    DeviceBuffer<float> v;  // (n_layers, capacity, kv_dim)

    float* keys(int layer) { return k.data() + size_t(layer) * capacity * kv_dim; }
    float* values(int layer) { return v.data() + size_t(layer) * capacity * kv_dim; }
    void clear() { n_filled = 0; }
};

// An empty cache for up to `capacity` positions, allocated on the device (its contents are
// never read before a pass writes them). Fails like make_kv_cache() on a bad capacity.
DeviceKVCache make_device_kv_cache(const ModelConfig& config, int capacity);
