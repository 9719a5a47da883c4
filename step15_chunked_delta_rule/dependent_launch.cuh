// dependent_launch.cuh - programmatic dependent launch (PDL): each kernel of the decode step
// may start while the kernel before it in the stream is still finishing, and waits for it only
// where it needs its results. Written in step 10.
//
// Between two kernels of a stream the GPU normally leaves a gap: the second one's blocks are
// only dispatched once every block of the first has exited and its writes have been flushed,
// and then each block still has to ask for its first weights, which arrive a memory latency
// later. For a decode step of ~170 kernels of a few microseconds each, those gaps add up. With
// PDL (compute capability 9.0 and later) a kernel launched with the attribute
// cudaLaunchAttributeProgrammaticStreamSerialization may have its blocks dispatched early,
// while the previous kernel's last blocks are still running. Its blocks issue what does not
// depend on that kernel (the first loads of their weight rows) and then wait for it:
//
//   wait_for_previous_kernel()  returns once the previous kernel of the stream has completed
//                               and all its writes are visible to this kernel.
//   allow_next_kernel()         lets the next kernel's blocks be dispatched (once every block
//                               of this kernel has called it or exited).
//
// The rule every kernel launched this way must follow: before its wait, no read of a buffer
// that an earlier kernel writes (activations, the KV cache, the decode slots) and no write at
// all (an earlier kernel may still be reading what it would overwrite). Weights are read-only
// and may be loaded before. And every thread calls the wait unconditionally, also in blocks
// that have no work and return at once: a block that exits counts as having allowed the next
// kernel, so a kernel that could finish without waiting would let the next kernel start, and
// complete, before the kernel before it had finished. Each kernel waiting on its predecessor
// makes the chain hold: when a kernel's wait returns, every kernel before it has completed.
//
// allow_next_kernel() is called right after the wait, in every kernel: from then on the next
// kernel's blocks may take the multiprocessors this kernel's last blocks leave free and get
// their weight loads going during its tail. Calling it before the wait would let three
// kernels' blocks pile up on the GPU (one running, two waiting); after the wait there are at
// most two. Without it the next kernel is dispatched only as this one's blocks exit, which
// hides the launch but not the tail.
//
// A launch without the attribute (PDL off, the default stream, a GPU before compute capability
// 9.0) starts after the previous kernel has finished; the wait then returns at once. A CUDA
// graph captured from a stream keeps PDL launches as programmatic edges (CUDA 12.3 and later).
#pragma once

#include <utility>

#include "cuda_check.h"
#include "cuda_graph.h"

namespace gpu {

__device__ inline void wait_for_previous_kernel() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

__device__ inline void allow_next_kernel() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

// Launches kernel<<<grid, block, 0, stream>>>(args...), as a programmatic dependent launch when
// dependent_launch_enabled() (cuda_graph.h) and `stream` is a stream of our own: the default
// stream runs the prompt's kernels, most of which do not wait (rmsnorm, rope, ...), so its
// launches stay plain. `name` names the kernel in the error of a failed launch.
template <typename... Params, typename... Args>
void launch_kernel(const char* name, void (*kernel)(Params...), dim3 grid, dim3 block,
                   cudaStream_t stream, Args&&... args) {
    cudaLaunchAttribute programmatic{};
    programmatic.id = cudaLaunchAttributeProgrammaticStreamSerialization;
    programmatic.val.programmaticStreamSerializationAllowed = 1;
    const bool dependent = stream != nullptr && dependent_launch_enabled();
    cudaLaunchConfig_t config{};
    config.gridDim = grid;
    config.blockDim = block;
    config.dynamicSmemBytes = 0;
    config.stream = stream;
    config.attrs = dependent ? &programmatic : nullptr;
    config.numAttrs = dependent ? 1 : 0;
    const cudaError_t status = cudaLaunchKernelEx(&config, kernel, std::forward<Args>(args)...);
    if (status != cudaSuccess) {
        cudaGetLastError();  // reported here: the next check_launch() must not report it again
        fail("CUDA error: launching %s failed: %s", name, cudaGetErrorString(status));
    }
}

}  // namespace gpu
