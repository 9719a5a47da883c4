// device_kv_cache.cpp - sizing the device cache. Plain C++: DeviceBuffer does the CUDA calls.
// Step 14: the hybrid layout of kv_cache.cpp, the states zeroed by copying zeros in.
#include "device_kv_cache.h"

#include "kv_cache.h"

void DeviceKVCache::clear() {
    n_filled = 0;
    if (conv.size() > 0) conv.upload(std::vector<float>(conv.size(), 0.0f));
    if (ssm.size() > 0) ssm.upload(std::vector<float>(ssm.size(), 0.0f));
}

size_t device_kv_cache_bytes(const ModelConfig& config, int capacity, CacheType type) {
    return 2 * size_t(config.count_layers(LayerKind::Attention)) * capacity * config.n_kv_heads *
               config.head_dim * cache_value_bytes(type) +
           recurrent_state_bytes(config);
}

DeviceKVCache make_device_kv_cache(const ModelConfig& config, int capacity, CacheType type) {
    check_kv_cache_capacity(config, capacity);
    // The CPU's cache of one position gives the layout: which layer has which block.
    const KVCache layout = make_kv_cache(config, 1);
    DeviceKVCache cache;
    cache.n_layers = int(config.n_layers);
    cache.capacity = capacity;
    cache.kv_dim = int(config.n_kv_heads * config.head_dim);
    cache.type = type;
    cache.kv_block = layout.kv_block;
    cache.state_block = layout.state_block;
    cache.conv_size = layout.conv_size;
    cache.ssm_size = layout.ssm_size;
    const size_t bytes = size_t(config.count_layers(LayerKind::Attention)) * cache.layer_bytes();
    cache.k.resize(bytes);
    cache.v.resize(bytes);
    cache.conv.resize(layout.conv.size());
    cache.ssm.resize(layout.ssm.size());
    cache.clear();
    return cache;
}
