// cuda_graph.h - a CUDA stream, and a CUDA graph captured from it, usable from plain C++ files.
//
// A kernel launch costs the CPU a few microseconds and the GPU a gap of about as much before
// the next kernel starts. A graph records a whole sequence of launches once (stream capture:
// the launches made on a capturing stream are recorded instead of run) and then replays all
// of them with one call, the GPU walking the recorded sequence without waiting for the host.
// What a replay cannot change is the launches' arguments: the same pointers, the same sizes.
// So every value that differs from one token to the next must be read from device memory by
// the kernels themselves (ops_cuda.h's DecodeSlots).
//
// Like device_buffer.h, only cuda_graph.cu includes the CUDA headers.
#pragma once

#include <cstddef>
#include <functional>

struct CUstream_st;     // cudaStream_t is a pointer to it
struct CUgraphExec_st;  // cudaGraphExec_t, an instantiated graph

// A stream of its own, created on construction. It is a blocking stream: work on the default
// stream (the prompt's kernels, the synchronous copies) still runs in order with it.
class GpuStream {
public:
    GpuStream();
    ~GpuStream();
    GpuStream(const GpuStream&) = delete;
    GpuStream& operator=(const GpuStream&) = delete;

    CUstream_st* get() const { return stream_; }
    void synchronize() const;  // waits for everything launched on it (checked)

private:
    CUstream_st* stream_ = nullptr;
};

// Programmatic dependent launch (dependent_launch.cuh): whether the decode step's kernels are
// launched so that each may start while the one before it is finishing. On by default where the
// device has compute capability 9.0 or later, and never on an older one; --no-pdl turns it off.
// A graph keeps the launches it was captured with: set it before the Decoder's first token.
void set_dependent_launch(bool on);
bool dependent_launch_enabled();  // on, and the current device supports it

// Queued on `stream`; the host memory must stay valid until the stream has passed the copy.
void copy_to_device_async(void* device_dst, const void* host_src, size_t bytes,
                          CUstream_st* stream);
void copy_to_host_async(void* host_dst, const void* device_src, size_t bytes, CUstream_st* stream);

class CudaGraph {
public:
    CudaGraph() = default;
    ~CudaGraph();
    CudaGraph(const CudaGraph&) = delete;
    CudaGraph& operator=(const CudaGraph&) = delete;

    // Records the launches `launch_all` makes on `stream` (which runs none of them) and
    // instantiates the graph, replacing any earlier one. A launch that is not allowed during a
    // capture (a synchronous copy, a cudaMalloc) makes it fail with the CUDA error.
    void capture(CUstream_st* stream, const std::function<void()>& launch_all);
    bool captured() const { return graph_ != nullptr; }
    int n_kernels() const { return n_kernels_; }  // counted when it was captured

    // Runs the recorded launches on `stream`, asynchronously.
    void replay(CUstream_st* stream) const;

private:
    CUgraphExec_st* graph_ = nullptr;
    int n_kernels_ = 0;
};
