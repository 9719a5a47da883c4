// no_cuda.cpp - what a build without the CUDA toolkit links in place of the .cu files.
//
// The Makefile compiles this file only when nvcc is missing, and then leaves out every .cu
// file. Every function of theirs that the .cpp files call is defined here too, so the program
// and its checks still build and run on the CPU: no GPU is ever found (main() then runs on the
// CPU, the GPU checks skip), and anything that would need one fails with the same one line
// saying how to get a build with GPU code.
#include "cuda_device.h"
#include "cuda_graph.h"
#include "device_buffer.h"
#include "error.h"
#include "flash_attention.h"
#include "gemm_tensor_cores.h"
#include "ops_cuda.h"

static const char kNoGpuCode[] =
    "this build has no GPU code, since nvcc was missing when it was built; install the CUDA "
    "toolkit or set CUDA_HOME, then make clean and build again";

[[noreturn]] static void no_gpu_code() { fail("%s", kNoGpuCode); }

bool built_with_gpu_code() { return false; }

bool cuda_device_available(std::string& why_not) {
    why_not = kNoGpuCode;
    return false;
}

DeviceInfo device_info() { no_gpu_code(); }
int multiprocessor_count() { no_gpu_code(); }

// Empty buffers need no device, as in device_buffer.cu: an unused DeviceBuffer costs nothing.
void* device_malloc(size_t bytes) {
    if (bytes > 0) no_gpu_code();
    return nullptr;
}
void device_free(void*) {}
void copy_to_device(void*, const void*, size_t bytes) {
    if (bytes > 0) no_gpu_code();
}
void copy_to_host(void*, const void*, size_t bytes) {
    if (bytes > 0) no_gpu_code();
}

// No stream can be created, so no graph is ever captured or replayed.
GpuStream::GpuStream() { no_gpu_code(); }
GpuStream::~GpuStream() {}
void GpuStream::synchronize() const { no_gpu_code(); }
void copy_to_device_async(void*, const void*, size_t bytes, CUstream_st*) {
    if (bytes > 0) no_gpu_code();
}
void copy_to_host_async(void*, const void*, size_t bytes, CUstream_st*) {
    if (bytes > 0) no_gpu_code();
}
void set_dependent_launch(bool) {}
bool dependent_launch_enabled() { return false; }
CudaGraph::~CudaGraph() {}
void CudaGraph::capture(CUstream_st*, const std::function<void()>&) { no_gpu_code(); }
void CudaGraph::replay(CUstream_st*) const { no_gpu_code(); }

namespace gpu {

void embedding(float*, const void*, uint32_t, const int32_t*, int, int, Stream) { no_gpu_code(); }
void rmsnorm(float*, const float*, const float*, int, int, float, Stream) { no_gpu_code(); }
void matmul(float*, const float*, const void*, uint32_t, int, int, int) { no_gpu_code(); }
void add_bias(float*, const float*, int, int) { no_gpu_code(); }
void rope(float*, int, int, int, int, float) { no_gpu_code(); }
void partial_rope(float*, int, int, int, int, int, float) { no_gpu_code(); }
void sigmoid_gate(float*, const float*, int64_t, Stream) { no_gpu_code(); }
void split_query_gate(float*, float*, const float*, int, int, int) { no_gpu_code(); }
void qk_norm_rope(float*, const float*, int, int, int, int, float, float) { no_gpu_code(); }
void qk_norm_partial_rope(float*, const float*, int, int, int, int, int, float, float) {
    no_gpu_code();
}
void attention(float*, const float*, const void*, const void*, int, int, int, int, int, CacheType) {
    no_gpu_code();
}
void swiglu(float*, const float*, const float*, int64_t) { no_gpu_code(); }
void store_cache_rows(void*, CacheType, const float*, int64_t) { no_gpu_code(); }
void residual_add(float*, const float*, int64_t) { no_gpu_code(); }
int argmax(const float*, int) { no_gpu_code(); }

void causal_conv1d_silu(float*, const float*, float*, const float*, int, int, int, Stream) {
    no_gpu_code();
}
void split_qkv(float*, float*, float*, const float*, int, int, int) { no_gpu_code(); }
void l2_normalize_rows(float*, int, int, float, float, Stream) { no_gpu_code(); }
void delta_net_gates(float*, float*, const float*, const float*, const float*, const float*, int,
                     int, Stream) {
    no_gpu_code();
}
void gated_delta_rule(float*, float*, const float*, const float*, const float*, const float*,
                      const float*, int, int, int, int, int, Stream) {
    no_gpu_code();
}
void chunked_gated_delta_rule(float*, float*, const float*, const float*, const float*,
                              const float*, const float*, int, int, int, int, int,
                              DeltaChunkScratch&, Stream) {
    no_gpu_code();
}
void gated_rmsnorm(float*, const float*, const float*, const float*, int, int, float, Stream) {
    no_gpu_code();
}

void quantize_q8(Q8Vector, const float*, const float*, float, int, Stream) { no_gpu_code(); }
void qkv_rope_cache(float*, void*, void*, CacheType, const float*, const float*, float,
                    const QkvWeights&, int, HeadShape, float, const DecodeSlots*, HeadNormScratch,
                    Q8Vector, bool, Stream) {
    no_gpu_code();
}
int64_t decode_attention_scratch(int, HeadShape) { no_gpu_code(); }
void decode_attention(float*, const float*, const void*, const void*, CacheType, float*, int,
                      HeadShape, const DecodeSlots*, Q8Vector, Stream) {
    no_gpu_code();
}
void matvec_add(float*, const float*, const void*, uint32_t, int, int, Q8Vector, bool, Stream) {
    no_gpu_code();
}
void matvec_decode(float*, const float*, const void*, uint32_t, int, int, Q8Vector, bool, Stream) {
    no_gpu_code();
}
void gate_up_swiglu(float*, const float*, const float*, float, const void*, const void*, uint32_t,
                    int, int, Q8Vector, bool, Q8Vector, int*, Stream) {
    no_gpu_code();
}
void gated_qk_norm_rope_cache(float*, float*, void*, void*, CacheType, const float*, const float*,
                              const float*, const float*, const float*, HeadShape, int, float,
                              float, const DecodeSlots*, Stream) {
    no_gpu_code();
}
int64_t lm_head_argmax_scratch() { no_gpu_code(); }
void lm_head_argmax(float*, void*, const float*, const float*, float, const void*, uint32_t, int,
                    int, DecodeSlots*, Q8Vector, bool, Stream) {
    no_gpu_code();
}

bool gpu_has_tensor_core_mma() { no_gpu_code(); }
bool tensor_cores_take(uint32_t) { no_gpu_code(); }
void tensor_core_matmul(float*, const float*, const void*, uint32_t, int, int, int) {
    no_gpu_code();
}
int tensor_core_tile_tokens(int, int) { no_gpu_code(); }
bool flash_attention_takes(int) { no_gpu_code(); }
void flash_attention(float*, const float*, const void*, const void*, int, int, int, int, int,
                     CacheType) {
    no_gpu_code();
}

}  // namespace gpu
