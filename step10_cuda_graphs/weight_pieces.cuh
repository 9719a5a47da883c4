// weight_pieces.cuh - how the kernels read weights of any storage type: a weight as float, the
// one switch that turns a ggml type id into the device type a kernel is compiled for, and the
// shape of the kernels that read rows of W a warp at a time (matvec.cu, fused_decode.cu).
// Written in step 9; last changed in step 10 (kMatvecWarps and kLoadBatch, shared).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "error.h"
#include "ggml_types.h"

namespace gpu {

// A weight as float, whatever its storage type on the device.
__device__ inline float to_float(float value) { return value; }
__device__ inline float to_float(__half value) { return __half2float(value); }
__device__ inline float to_float(__nv_bfloat16 value) { return __bfloat162float(value); }

// Warps per block of the kernels that read a row of W a warp at a time.
constexpr int kMatvecWarps = 4;

// The 16-byte pieces of a row a lane loads before it uses the first. An unrolled loop does not
// do that for a row shorter than the unrolling: the GPU issues instructions in order, so each
// iteration's multiply-adds would wait for its own load before the next load is asked for.
// The batch's registers are the price: twice as many registers a thread can halve the blocks
// a multiprocessor holds, so a row much longer than a batch may read slower.
constexpr int kLoadBatch = 8;

inline const char* type_name(uint32_t type) { return ggml_type_info(type).name; }

template <typename T>
struct TypeTag {
    using type = T;
};

// Calls launch(TypeTag<W>{}) with W the device type of ggml type w_type; `op` names the
// operator in the error for any other type.
template <typename Launch>
static void with_weight_type(uint32_t w_type, const char* op, Launch&& launch) {
    switch (GgmlType(w_type)) {
        case GgmlType::F32: launch(TypeTag<float>{}); break;
        case GgmlType::F16: launch(TypeTag<__half>{}); break;
        case GgmlType::BF16: launch(TypeTag<__nv_bfloat16>{}); break;
        default: fail("gpu::%s reads F32, F16 or BF16 weights, not %s", op, type_name(w_type));
    }
}

}  // namespace gpu
