// weight_pieces.cuh - how the kernels read weights of any storage type: a weight as float, and
// the one switch that turns a ggml type id into the device type a kernel is compiled for.
// Written in step 9.
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
