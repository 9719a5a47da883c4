// tensor_core_ptx.cuh, as lanes.h runs it: step 12's warp instructions (the file of the same
// name in the step folders) done by the emulation, so a kernel that includes this one compiles
// for the CPU unchanged. mma takes F16 operands only here.
#pragma once

#include <type_traits>

#include "lanes.h"

namespace gpu {

inline void load_matrix_x4(uint32_t (&r)[4], const void* row) { emu::ldmatrix_x4(r, row, false); }
inline void load_matrix_x4_transposed(uint32_t (&r)[4], const void* row) {
    emu::ldmatrix_x4(r, row, true);
}

template <typename Operand>
inline void mma_16x8x16(float (&acc)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
    static_assert(std::is_same_v<Operand, __half>, "emulated for F16 operands");
    emu::mma_f16(acc, a, b0, b1);
}

}  // namespace gpu
