// bench_decode_layers.cu - the decode step's kernels on block matrices (step 11 and later), each
// kind alone and all of them in a layer's order, replayed as CUDA graphs on a stream of our own
// with programmatic dependent launch, as the Decoder replays them. Not a test.
//
//   tools/bench/bench_decode_layers.sh [SHAPE [POSITIONS]]
//       builds this against step11's sources (or BENCH_STEPS) and prints one table per step;
//       POSITIONS: the cached positions the attention reads (default 512, the bench's prompt)
//
// A model's every layer gets weights of its own, in the types of Qwen's published Q4_K_M files
// (tools/fixtures/make_tiny_model.py --as-published: Q4_K, with Q6_K in V and down on the
// layers llama.cpp gives more bits; Q5_0 and Q8_0 where rows of 896 forbid K-quants), so one
// pass over the layers reads each weight once, from memory. The quants are random bytes; every
// f16 scale is a small normal number, so no product overflows.
//
// For each kind of kernel a graph launches it once a layer (the whole model's worth), and its
// microseconds a launch are that graph's time over the layer count: the kernel's cost when it
// follows kernels of its own kind. The last line replays one whole decode step's layers (the
// embedding and the LM head left out) and sets its time a layer beside the kinds' sum: the
// difference is what overlapping (PDL) wins or the switching between kinds costs.
//
// Output: tab-separated lines (`copy`, then `row` kernel, model, us a launch, weight bytes a
// launch), which bench_decode_layers.sh turns into a table.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include <cuda_runtime.h>

#include "cuda_check.h"
#include "cuda_device.h"
#include "cuda_graph.h"
#include "device_buffer.h"
#include "ggml_types.h"
#include "ops_cuda.h"
#include "q8_vector.h"

struct Shape {
    const char* name;
    int n_layers, d_model, d_ff, n_heads, n_kv_heads, head_dim;
};

// Qwen2.5's sizes (config.json of each model).
static const Shape kShapes[] = {
    {"0.5B", 24, 896, 4864, 14, 2, 64},
    {"1.5B", 28, 1536, 8960, 12, 2, 128},
    {"7B", 28, 3584, 18944, 28, 4, 128},
};

// llama.cpp's Q4_K_M rule for attn_v and ffn_down, with the layers counted in the order the
// published files' quantizer met them (make_tiny_model.py's quantizer_counter).
static bool more_bits(int layer, int n_layers) {
    std::vector<int> order(n_layers);
    for (int i = 0; i < n_layers; i++) order[i] = i;
    std::sort(order.begin(), order.end(),
              [](int a, int b) { return std::to_string(a) < std::to_string(b); });
    const int i = int(std::find(order.begin(), order.end(), layer) - order.begin());
    return i < n_layers / 8 || i >= 7 * n_layers / 8 || (i - n_layers / 8) % 3 == 2;
}

static GgmlType published_type(bool wants_more_bits, int row_len) {
    if (row_len % 256 != 0) return wants_more_bits ? GgmlType::Q8_0 : GgmlType::Q5_0;
    return wants_more_bits ? GgmlType::Q6_K : GgmlType::Q4_K;
}

// Random blocks of `type`, (rows, cols), with each f16 scale set to about 0.001.
static std::vector<uint8_t> random_blocks(GgmlType type, int rows, int cols, uint32_t seed) {
    const GgmlTypeInfo& info = ggml_type_info(uint32_t(type));
    const size_t n_blocks = size_t(rows) * cols / info.block_size;
    std::vector<uint8_t> bytes(n_blocks * info.block_bytes);
    std::mt19937 generator(seed);
    for (size_t i = 0; i < bytes.size(); i += 4) {
        const uint32_t word = generator();
        for (size_t k = 0; k < 4 && i + k < bytes.size(); k++) bytes[i + k] = uint8_t(word >> 8 * k);
    }
    std::vector<int> scale_offsets;
    switch (type) {
        case GgmlType::Q8_0: scale_offsets = {block_layout::Q8_0::kOffsetD}; break;
        case GgmlType::Q5_0: scale_offsets = {block_layout::Q5_0::kOffsetD}; break;
        case GgmlType::Q4_K:
            scale_offsets = {block_layout::Q4_K::kOffsetD, block_layout::Q4_K::kOffsetDmin};
            break;
        default: scale_offsets = {block_layout::Q6_K::kOffsetD}; break;
    }
    const uint16_t small = 0x1419;  // f16 of 0.00101
    for (size_t b = 0; b < n_blocks; b++)
        for (int offset : scale_offsets) {
            bytes[b * info.block_bytes + offset] = uint8_t(small);
            bytes[b * info.block_bytes + offset + 1] = uint8_t(small >> 8);
        }
    return bytes;
}

struct Matrix {
    DeviceBuffer<uint8_t> bytes;
    uint32_t type = 0;
    double n_bytes() const { return double(bytes.size()); }
};

static Matrix random_matrix(GgmlType type, int rows, int cols, uint32_t seed) {
    Matrix m;
    m.bytes.upload(random_blocks(type, rows, cols, seed));
    m.type = uint32_t(type);
    return m;
}

static std::vector<float> random_floats(size_t n, uint32_t seed, float low, float high) {
    std::mt19937 generator(seed);
    std::uniform_real_distribution<float> distribution(low, high);
    std::vector<float> values(n);
    for (float& value : values) value = distribution(generator);
    return values;
}

struct Layer {
    Matrix q, k, v, o, gate, up, down;
    DeviceBuffer<float> q_bias, k_bias, v_bias, attn_norm, ffn_norm;
    DeviceBuffer<uint16_t> keys, values;  // (positions + 1, kv_dim) halves
};

static Layer make_layer(const Shape& s, int l, int positions) {
    const int q_dim = s.n_heads * s.head_dim, kv_dim = s.n_kv_heads * s.head_dim;
    const bool more = more_bits(l, s.n_layers);
    const GgmlType plain = published_type(false, s.d_model);
    const uint32_t seed = 1000u * uint32_t(l);
    Layer layer;
    layer.q = random_matrix(plain, q_dim, s.d_model, seed + 1);
    layer.k = random_matrix(plain, kv_dim, s.d_model, seed + 2);
    layer.v = random_matrix(published_type(more, s.d_model), kv_dim, s.d_model, seed + 3);
    layer.o = random_matrix(plain, s.d_model, q_dim, seed + 4);
    layer.gate = random_matrix(plain, s.d_ff, s.d_model, seed + 5);
    layer.up = random_matrix(plain, s.d_ff, s.d_model, seed + 6);
    layer.down = random_matrix(published_type(more, s.d_ff), s.d_model, s.d_ff, seed + 7);
    layer.q_bias.upload(random_floats(q_dim, seed + 8, -0.1f, 0.1f));
    layer.k_bias.upload(random_floats(kv_dim, seed + 9, -0.1f, 0.1f));
    layer.v_bias.upload(random_floats(kv_dim, seed + 10, -0.1f, 0.1f));
    layer.attn_norm.upload(random_floats(s.d_model, seed + 11, 0.5f, 1.5f));
    layer.ffn_norm.upload(random_floats(s.d_model, seed + 12, 0.5f, 1.5f));
    std::vector<uint16_t> halves(size_t(positions + 1) * kv_dim);
    std::mt19937 generator(seed + 13);
    for (uint16_t& h : halves) h = uint16_t(0x3000 + generator() % 0x0C00);  // 0.125 .. 1
    layer.keys.upload(halves);
    layer.values.upload(halves);
    return layer;
}

// The decode step's scratch, as the Decoder holds it.
struct Buffers {
    DeviceBuffer<float> x, q, attn, ffn, attention_scratch;
    DeviceQ8Vector normed_q8, input_q8;
    DeviceBuffer<int> group_done;
    DeviceBuffer<gpu::DecodeSlots> slots;
};

static Buffers make_buffers(const Shape& s, const gpu::HeadShape& heads, int positions) {
    Buffers b;
    b.x.upload(random_floats(s.d_model, 7, -1.0f, 1.0f));
    b.q.upload(random_floats(size_t(s.n_heads) * s.head_dim, 8, -1.0f, 1.0f));
    b.attn.upload(random_floats(size_t(s.n_heads) * s.head_dim, 9, -1.0f, 1.0f));
    b.ffn.upload(random_floats(s.d_ff, 10, -1.0f, 1.0f));
    b.attention_scratch.resize(size_t(gpu::decode_attention_scratch(positions + 1, heads)));
    b.normed_q8.resize(s.d_model);
    b.input_q8.resize(std::max(s.d_ff, s.n_heads * s.head_dim));
    b.group_done.upload(std::vector<int>(size_t(s.d_ff) / kQ8BlockSize, 0));
    b.slots.upload({gpu::DecodeSlots{1, positions}});
    return b;
}

// Milliseconds of one replay of `graph`: warmed up, then the median of 7 runs of 20 replays.
static double replay_ms(const CudaGraph& graph, const GpuStream& stream) {
    cudaEvent_t start, stop;
    CUDA_CHECK(cudaEventCreate(&start));
    CUDA_CHECK(cudaEventCreate(&stop));
    for (int i = 0; i < 3; i++) graph.replay(stream.get());
    std::vector<double> runs;
    for (int r = 0; r < 7; r++) {
        CUDA_CHECK(cudaEventRecord(start, stream.get()));
        for (int i = 0; i < 20; i++) graph.replay(stream.get());
        CUDA_CHECK(cudaEventRecord(stop, stream.get()));
        CUDA_CHECK(cudaEventSynchronize(stop));
        float ms = 0.0f;
        CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
        runs.push_back(double(ms) / 20);
    }
    std::sort(runs.begin(), runs.end());
    CUDA_CHECK(cudaEventDestroy(start));
    CUDA_CHECK(cudaEventDestroy(stop));
    return runs[runs.size() / 2];
}

// The peak of a device-to-device cudaMemcpy, as bench_kernels.cu measures it: 2 bytes moved
// (one read, one written) per byte copied; the median of 7 runs of 20 copies.
static double copy_gb_per_s() {
    const size_t bytes = size_t(1) << 30;
    DeviceBuffer<uint8_t> source(bytes), destination(bytes);
    cudaEvent_t start, stop;
    CUDA_CHECK(cudaEventCreate(&start));
    CUDA_CHECK(cudaEventCreate(&stop));
    std::vector<double> runs;
    for (int r = 0; r < 8; r++) {
        CUDA_CHECK(cudaEventRecord(start));
        for (int i = 0; i < 20; i++)
            CUDA_CHECK(cudaMemcpy(destination.data(), source.data(), bytes, cudaMemcpyDeviceToDevice));
        CUDA_CHECK(cudaEventRecord(stop));
        CUDA_CHECK(cudaEventSynchronize(stop));
        float ms = 0.0f;
        CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
        if (r > 0) runs.push_back(double(ms) / 20);  // the first run warms up
    }
    std::sort(runs.begin(), runs.end());
    CUDA_CHECK(cudaEventDestroy(start));
    CUDA_CHECK(cudaEventDestroy(stop));
    return 2.0 * bytes / (runs[runs.size() / 2] * 1e6);
}

static void bench_shape(const Shape& shape, int positions) {
    // The rows name the model, and the cache's length where it is not the bench prompt's.
    const std::string name =
        positions == 512 ? shape.name : std::string(shape.name) + "@" + std::to_string(positions);
    Shape s = shape;
    s.name = name.c_str();
    const gpu::HeadShape heads{s.n_heads, s.n_kv_heads, s.head_dim};
    const int q_dim = s.n_heads * s.head_dim;
    std::vector<Layer> layers;
    for (int l = 0; l < s.n_layers; l++) layers.push_back(make_layer(s, l, positions));
    Buffers b = make_buffers(s, heads, positions);
    const float eps = 1e-6f;
    GpuStream stream;
    gpu::Stream st = stream.get();

    // One launch of each kind for layer l, in the order of forward_cuda.cpp's decode step.
    auto norm_q8 = [&](int l) {
        gpu::quantize_q8(b.normed_q8.view(), b.x.data(), layers[l].attn_norm.data(), eps,
                         s.d_model, st);
    };
    auto qkv = [&](int l) {
        const Layer& L = layers[l];
        const gpu::QkvWeights w{L.q.bytes.data(), L.k.bytes.data(), L.v.bytes.data(),
                                L.q_bias.data(),  L.k_bias.data(),  L.v_bias.data(),
                                L.q.type,         L.k.type,         L.v.type};
        gpu::qkv_rope_cache(b.q.data(), layers[l].keys.data(), layers[l].values.data(),
                            CacheType::F16, b.x.data(), L.attn_norm.data(), eps, w, s.d_model,
                            heads, 1e6f, b.slots.data(), b.normed_q8.view(), true, st);
    };
    auto attention = [&](int l) {
        gpu::decode_attention(b.attn.data(), b.q.data(), layers[l].keys.data(),
                              layers[l].values.data(), CacheType::F16,
                              b.attention_scratch.data(), positions + 1, heads, b.slots.data(),
                              b.input_q8.view(), st);
    };
    auto wo = [&](int l) {
        gpu::matvec_add(b.x.data(), b.attn.data(), layers[l].o.bytes.data(), layers[l].o.type,
                        q_dim, s.d_model, b.input_q8.view(), true, st);
    };
    auto gate_up = [&](int l) {
        gpu::gate_up_swiglu(b.ffn.data(), b.x.data(), layers[l].ffn_norm.data(), eps,
                            layers[l].gate.bytes.data(), layers[l].up.bytes.data(),
                            layers[l].gate.type, s.d_model, s.d_ff, b.normed_q8.view(), true,
                            b.input_q8.view(), b.group_done.data(), st);
    };
    auto down = [&](int l) {
        gpu::matvec_add(b.x.data(), b.ffn.data(), layers[l].down.bytes.data(),
                        layers[l].down.type, s.d_ff, s.d_model, b.input_q8.view(), true, st);
    };
    struct Kind {
        const char* name;
        std::function<void(int)> launch;
        std::function<double(int)> bytes;  // weight bytes of layer l's launch
    };
    const std::vector<Kind> kinds = {
        {"quantize_q8 (with the norm)", norm_q8, [](int) { return 0.0; }},
        {"qkv_rope_cache", qkv,
         [&](int l) {
             return layers[l].q.n_bytes() + layers[l].k.n_bytes() + layers[l].v.n_bytes();
         }},
        {"decode_attention (split, merge)", attention,
         [&](int) { return 2.0 * (positions + 1) * s.n_kv_heads * s.head_dim * 2; }},
        {"matvec_add Wo", wo, [&](int l) { return layers[l].o.n_bytes(); }},
        {"gate_up_swiglu", gate_up,
         [&](int l) { return layers[l].gate.n_bytes() + layers[l].up.n_bytes(); }},
        {"matvec_add down", down, [&](int l) { return layers[l].down.n_bytes(); }},
    };
    double kinds_us = 0.0, layer_bytes = 0.0;
    for (const Kind& kind : kinds) {
        CudaGraph graph;
        graph.capture(st, [&] {
            for (int l = 0; l < s.n_layers; l++) kind.launch(l);
        });
        double bytes = 0.0;
        for (int l = 0; l < s.n_layers; l++) bytes += kind.bytes(l);
        const double us = replay_ms(graph, stream) * 1e3 / s.n_layers;
        kinds_us += kind.name == kinds[0].name ? 2 * us : us;  // two roundings a layer
        layer_bytes += bytes / s.n_layers;
        std::printf("row\t%s\t%s\t%.2f\t%.0f\n", kind.name, s.name, us, bytes / s.n_layers);
    }
    CudaGraph step;
    step.capture(st, [&] {
        for (int l = 0; l < s.n_layers; l++) {
            norm_q8(l), qkv(l), attention(l), wo(l), norm_q8(l), gate_up(l), down(l);
        }
    });
    const double layer_us = replay_ms(step, stream) * 1e3 / s.n_layers;
    std::printf("row\tthe kinds' sum (quantize_q8 twice)\t%s\t%.2f\t%.0f\n", s.name, kinds_us,
                layer_bytes);
    std::printf("row\ta layer in the decode step's order\t%s\t%.2f\t%.0f\n", s.name, layer_us,
                layer_bytes);
    std::fflush(stdout);
}

int main(int argc, char** argv) {
    try {
        std::string why_not;
        if (!cuda_device_available(why_not)) {
            std::printf("bench_decode_layers: skipped, no CUDA device: %s\n", why_not.c_str());
            return 0;
        }
        const int positions = argc > 2 ? std::atoi(argv[2]) : 512;
        if (positions < 1 || positions > 131072) {
            std::fprintf(stderr, "bench_decode_layers: POSITIONS must be 1 to 131072, not %s\n",
                         argv[2]);
            return 1;
        }
        set_dependent_launch(true);
        const DeviceInfo device = device_info();
        std::printf("copy\t%s\t%.1f\t%.0f\n", device.name.c_str(), copy_gb_per_s(),
                    device.peak_gb_per_s);
        for (const Shape& s : kShapes)
            if (argc < 2 || std::string(argv[1]) == s.name) bench_shape(s, positions);
    } catch (const Error& error) {
        std::fprintf(stderr, "error: %s\n", error.what());
        return 1;
    }
    return 0;
}
