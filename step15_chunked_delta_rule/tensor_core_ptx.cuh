// tensor_core_ptx.cuh - step 12: the three instructions a tensor-core kernel is built from,
// each a one-line function around inline PTX (the GPU's assembly language).
//
//   mma          a warp multiplies a 16 x 16 tile of A by a 16 x 8 tile of B and adds the
//                product to a 16 x 8 tile of floats: 2048 multiply-adds in one instruction
//   ldmatrix     a warp loads four 8 x 8 tiles of 16-bit values from shared memory, each
//                lane receiving exactly the values mma wants from it
//   cp.async     a thread starts a 16-byte copy from global to shared memory that does not
//                pass through its registers, and goes on at once; it waits for it later
//
// CUDA's WMMA API does the first two behind opaque "fragments", whose layout is unspecified,
// so a kernel cannot put a value it computed into one (flash attention does). PTX names the
// layout: in a warp, lane l holds fragment elements of row l / 4 ("group") and columns
// 2 * (l % 4) and +1 ("pair"), and the 16 x 16 A tile is four 8 x 8 quarters, taken in the order
// top left, bottom left, top right, bottom right. docs/en/step12.md draws it.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

namespace gpu {

// Where a shared-memory variable is, as the 32-bit address PTX's shared-memory instructions take.
__device__ inline uint32_t shared_address(const void* p) {
    return uint32_t(__cvta_generic_to_shared(p));
}

// ldmatrix .x4: lanes 8i .. 8i + 7 give the addresses of the 8 rows (16 bytes each) of matrix i;
// r[i] receives, in every lane, two values of matrix i: row group, columns pair.
__device__ inline void load_matrix_x4(uint32_t (&r)[4], const void* row) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(shared_address(row)));
}
// The same with every matrix transposed: r[i] holds rows pair of column group.
__device__ inline void load_matrix_x4_transposed(uint32_t (&r)[4], const void* row) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(shared_address(row)));
}

// cp.async and mma.m16n8k16 came with Ampere (compute capability 8.0). The programs also carry
// code for Turing (sm_75), where these two compile to a trap: gpu_has_tensor_core_mma()
// (gemm_tensor_cores.h) keeps such a GPU on step 9's kernels, so it never runs them.
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800

// cp.async: 16 bytes from global memory to shared memory. When `valid` is false it reads nothing
// and writes 16 zero bytes (a source size of 0), which is how a tile's edge is padded.
__device__ inline void copy_async_16(void* shared, const void* global, bool valid) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(shared_address(shared)),
                 "l"(global), "r"(valid ? 16 : 0));
}
// Closes the group of copies this thread issued since the last commit.
__device__ inline void copy_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
// Waits until at most `pending` of this thread's groups are still in flight.
template <int pending>
__device__ inline void copy_async_wait() {
    asm volatile("cp.async.wait_group %0;\n" ::"n"(pending));
}

// mma m16n8k16: acc (16 x 8 floats) += A (16 x 16) B (16 x 8), A and B of F16 or BF16 (Operand).
//   a[0..3]  A's quarters as ldmatrix gives them: rows group and group + 8, columns pair and
//            pair + 8 (a[0]: row group, columns pair; a[1]: row group + 8; a[2], a[3]: + 8 columns)
//   b[0..1]  B's rows pair and pair + 8 of column group
//   acc[0..3] rows group (acc[0], acc[1]) and group + 8 (acc[2], acc[3]), columns pair
template <typename Operand>
__device__ inline void mma_16x8x16(float (&acc)[4], const uint32_t (&a)[4], uint32_t b0,
                                   uint32_t b1) {
    if constexpr (std::is_same_v<Operand, __half>) {
        asm volatile(
            "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, "
            "{%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
            : "+f"(acc[0]), "+f"(acc[1]), "+f"(acc[2]), "+f"(acc[3])
            : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
    } else {
        static_assert(std::is_same_v<Operand, __nv_bfloat16>, "mma takes F16 or BF16 operands");
        asm volatile(
            "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, "
            "{%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
            : "+f"(acc[0]), "+f"(acc[1]), "+f"(acc[2]), "+f"(acc[3])
            : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
    }
}

#else

__device__ inline void copy_async_16(void*, const void*, bool) { __trap(); }
__device__ inline void copy_async_commit() { __trap(); }
template <int pending>
__device__ inline void copy_async_wait() {
    __trap();
}
template <typename Operand>
__device__ inline void mma_16x8x16(float (&)[4], const uint32_t (&)[4], uint32_t, uint32_t) {
    __trap();
}

#endif

// Two floats rounded to the operand type (to nearest even) and packed into one 32-bit
// register, the first in the low half: the unit of every fragment and of a 16-byte row piece.
template <typename Operand>
__device__ inline uint32_t pack_pair(float low, float high) {
    if constexpr (std::is_same_v<Operand, __half>) {
        const __half2 pair = __floats2half2_rn(low, high);
        return *reinterpret_cast<const uint32_t*>(&pair);
    } else {
        const __nv_bfloat162 pair = __floats2bfloat162_rn(low, high);
        return *reinterpret_cast<const uint32_t*>(&pair);
    }
}

// A float rounded to the operand type, as stored.
template <typename Operand>
__device__ inline Operand to_operand(float value) {
    if constexpr (std::is_same_v<Operand, __half>) return __float2half_rn(value);
    else return __float2bfloat16_rn(value);
}

}  // namespace gpu
