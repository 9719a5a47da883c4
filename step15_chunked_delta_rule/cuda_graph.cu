// cuda_graph.cu - the CUDA calls behind cuda_graph.h.
#include "cuda_graph.h"

#include <vector>

#include "cuda_check.h"

GpuStream::GpuStream() { CUDA_CHECK(cudaStreamCreate(&stream_)); }

GpuStream::~GpuStream() {
    if (stream_) cudaStreamDestroy(stream_);  // in a destructor: errors are ignored
}

void GpuStream::synchronize() const { CUDA_CHECK(cudaStreamSynchronize(stream_)); }

static bool dependent_launch_wanted = true;  // set_dependent_launch()

void set_dependent_launch(bool on) { dependent_launch_wanted = on; }

bool dependent_launch_enabled() {
    if (!dependent_launch_wanted) return false;
    static const bool supported = [] {
        int device = 0, major = 0;
        CUDA_CHECK(cudaGetDevice(&device));
        CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
        return major >= 9;
    }();
    return supported;
}

void copy_to_device_async(void* device_dst, const void* host_src, size_t bytes,
                          CUstream_st* stream) {
    if (bytes > 0)
        CUDA_CHECK(cudaMemcpyAsync(device_dst, host_src, bytes, cudaMemcpyHostToDevice, stream));
}

void copy_to_host_async(void* host_dst, const void* device_src, size_t bytes, CUstream_st* stream) {
    if (bytes > 0)
        CUDA_CHECK(cudaMemcpyAsync(host_dst, device_src, bytes, cudaMemcpyDeviceToHost, stream));
}

CudaGraph::~CudaGraph() {
    if (graph_) cudaGraphExecDestroy(graph_);
}

// The number of kernel nodes of a captured graph, for the log's "N kernels per token".
static int count_kernels(cudaGraph_t graph) {
    size_t n_nodes = 0;
    CUDA_CHECK(cudaGraphGetNodes(graph, nullptr, &n_nodes));
    std::vector<cudaGraphNode_t> nodes(n_nodes);
    CUDA_CHECK(cudaGraphGetNodes(graph, nodes.data(), &n_nodes));
    int n_kernels = 0;
    for (cudaGraphNode_t node : nodes) {
        cudaGraphNodeType type;
        CUDA_CHECK(cudaGraphNodeGetType(node, &type));
        if (type == cudaGraphNodeTypeKernel) n_kernels++;
    }
    return n_kernels;
}

void CudaGraph::capture(CUstream_st* stream, const std::function<void()>& launch_all) {
    if (graph_) {
        CUDA_CHECK(cudaGraphExecDestroy(graph_));
        graph_ = nullptr;
    }
    // ThreadLocal: only a forbidden call made by this thread ends the capture with an error.
    CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
    cudaGraph_t graph = nullptr;
    try {
        launch_all();
    } catch (...) {
        cudaStreamEndCapture(stream, &graph);  // leave the stream usable, then report
        if (graph) cudaGraphDestroy(graph);
        throw;
    }
    CUDA_CHECK(cudaStreamEndCapture(stream, &graph));
    try {
        n_kernels_ = count_kernels(graph);
        CUDA_CHECK(cudaGraphInstantiate(&graph_, graph, 0));
    } catch (...) {
        cudaGraphDestroy(graph);
        throw;
    }
    CUDA_CHECK(cudaGraphDestroy(graph));  // the instantiated graph keeps what it needs
}

void CudaGraph::replay(CUstream_st* stream) const {
    if (!graph_) fail("CudaGraph::replay: no graph has been captured");
    CUDA_CHECK(cudaGraphLaunch(graph_, stream));
}
