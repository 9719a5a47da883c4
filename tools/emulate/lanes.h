// lanes.h - a CUDA kernel's threads run on the CPU, one fiber (ucontext) per thread and one
// block at a time, so that a kernel built on warp-wide instructions (mma.sync, ldmatrix) can be
// run where there is no GPU: to check its fragment layouts and its numbers against the CPU.
//
// What it models: threadIdx/blockIdx, __syncthreads, static and dynamic shared memory (the
// dynamic part filled with 0xff bytes, a NaN in every float, so a value read before it is
// written shows), the two warp instructions of tensor_core_ptx.cuh, with the lane layouts
// PTX's ISA documents, and the warp's shuffles and vote (__shfl_xor_sync, __shfl_sync,
// __all_sync; whole warps). mma's products are exact (F16 times F16 fits a double); their sum is
// exact too, or with EMU_TRUNCATE set, cut toward zero 24 bits below the largest addend, as
// published measurements of the tensor cores' fp32 accumulation describe.
// What it does not: timing, concurrency (a race shows only in the order the fibers run), cp.async,
// atomics. A deadlock (a barrier some threads never reach) stops it with a message.
#pragma once

#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <ucontext.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <vector>

namespace emu {

struct Fiber {
    ucontext_t context;
    std::vector<char> stack;
    bool done = false;
};

// What a warp's lanes hand each other in one instruction.
struct Warp {
    int arrived = 0;
    long generation = 0;
    uint32_t a[32][4];  // mma: each lane's A registers
    uint32_t b[32][2];  // mma: each lane's B registers
    const void* address[32];  // ldmatrix: each lane's row address
    uint32_t word[32];        // a shuffle: each lane's value, as bits
};

struct Block {
    uint3 index;
    dim3 dim, grid;
    std::vector<Fiber> fibers;  // (threads)
    std::vector<Warp> warps;    // (threads / 32)
    int current = 0;            // the thread running now
    ucontext_t scheduler;
    int arrived = 0;       // threads at the block barrier
    long generation = 0;   // block barriers passed
    long progress = 0;     // anything a thread did that another may wait for
    std::function<void()> body;
    std::vector<uint8_t> dynamic_shared;
};

inline Block* g_block = nullptr;
inline bool g_truncate = getenv("EMU_TRUNCATE") != nullptr;

[[noreturn]] inline void die(const char* what) {
    fprintf(stderr, "lanes.h: %s (block %u %u, thread %d)\n", what, g_block->index.x,
            g_block->index.y, g_block->current);
    exit(2);
}

inline uint3 thread_idx() {
    const int i = g_block->current, x = g_block->dim.x, y = g_block->dim.y;
    return {unsigned(i % x), unsigned(i / x % y), unsigned(i / (x * y))};
}
inline uint8_t* dynamic_shared() { return g_block->dynamic_shared.data(); }
// blockDim, which a kernel's text names as emu::block_dim() (run.sh rewrites it: a macro would
// also rewrite cudaLaunchConfig_t's member of that name).
inline dim3 block_dim() { return g_block->dim; }

inline void yield() {
    Block& b = *g_block;
    swapcontext(&b.fibers[b.current].context, &b.scheduler);
}

// Waits until `count` threads have arrived at the barrier (arrived, generation).
inline void barrier(int& arrived, long& generation, int count) {
    const long g = generation;
    g_block->progress++;
    if (++arrived == count) {
        arrived = 0;
        generation++;
        return;
    }
    while (generation == g) yield();
}

inline void sync_block() {
    Block& b = *g_block;
    barrier(b.arrived, b.generation, int(b.fibers.size()));
}
inline Warp& warp() { return g_block->warps[g_block->current / 32]; }
inline int lane() { return g_block->current % 32; }
inline void sync_warp() {
    Warp& w = warp();
    barrier(w.arrived, w.generation, 32);
}

inline void fiber_main() {
    g_block->body();
    g_block->fibers[g_block->current].done = true;
    g_block->progress++;
}

// Runs one block: its threads in turn, each until it waits or ends, until all have ended.
inline void run_block(Block& b) {
    const int threads = int(b.fibers.size());
    for (int i = 0; i < threads; i++) {
        Fiber& f = b.fibers[i];
        f.stack.resize(256 * 1024);
        getcontext(&f.context);
        f.context.uc_stack.ss_sp = f.stack.data();
        f.context.uc_stack.ss_size = f.stack.size();
        f.context.uc_link = &b.scheduler;
        makecontext(&f.context, fiber_main, 0);
    }
    for (;;) {
        bool running = false;
        const long before = b.progress;
        for (int i = 0; i < threads; i++) {
            if (b.fibers[i].done) continue;
            running = true;
            b.current = i;
            swapcontext(&b.scheduler, &b.fibers[i].context);
        }
        if (!running) break;
        if (b.progress == before) die("deadlock: no thread moved in a whole round");
    }
    if (b.arrived != 0) die("a block barrier some threads never reached");
}

// kernel<<<grid, block, shared_bytes>>>(args...), one block after another.
template <typename Kernel, typename... Args>
void launch(Kernel kernel, dim3 grid, dim3 block, size_t shared_bytes, Args... args) {
    const int threads = block.x * block.y * block.z;
    if (threads % 32 != 0) die("blocks of whole warps only");
    for (unsigned z = 0; z < grid.z; z++)
        for (unsigned y = 0; y < grid.y; y++)
            for (unsigned x = 0; x < grid.x; x++) {
                Block b;
                b.index = {x, y, z};
                b.dim = block;
                b.grid = grid;
                b.fibers.resize(threads);
                b.warps.resize(threads / 32);
                b.dynamic_shared.assign(shared_bytes, 0xff);
                b.body = [&] { kernel(args...); };
                g_block = &b;
                run_block(b);
                g_block = nullptr;
            }
}

// ---- the warp's instructions ----

inline float half_at(uint32_t reg, int which) {
    const uint16_t bits = which == 0 ? uint16_t(reg & 0xffff) : uint16_t(reg >> 16);
    __half h;
    memcpy(&h, &bits, 2);
    return __half2float(h);
}

// acc + sum of 16 exact products, rounded to float (or cut, with EMU_TRUNCATE).
inline float accumulate(float acc, const double (&products)[16]) {
    double sum = acc, largest = std::fabs(double(acc));
    for (double p : products) {
        sum += p;
        largest = std::max(largest, std::fabs(p));
    }
    if (!g_truncate || largest == 0.0) return float(sum);
    const double unit = std::ldexp(1.0, std::ilogb(largest) - 23);
    return float(std::trunc(sum / unit) * unit);
}

// mma.sync.m16n8k16.row.col.f32.f16.f16.f32. Lane l: group l / 4, pair 2 (l % 4).
//   a[i]: A's row group + 8 (i % 2), columns pair, pair + 1 (+ 8 for i >= 2)
//   b0, b1: B's rows pair, pair + 1 (+ 8 for b1) of column group
//   acc[e]: rows group (e < 2) or group + 8, column pair + e % 2
inline void mma_f16(float (&acc)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
    Warp& w = warp();
    const int l = lane();
    memcpy(w.a[l], a, sizeof(a));
    w.b[l][0] = b0;
    w.b[l][1] = b1;
    sync_warp();
    const int group = l / 4, pair = 2 * (l % 4);
    for (int e = 0; e < 4; e++) {
        const int row = group + 8 * (e / 2), column = pair + e % 2;
        double products[16];
        for (int k = 0; k < 16; k++) {
            const int holder_a = (row % 8) * 4 + (k % 8) / 2, quarter = row / 8 + 2 * (k / 8);
            const int holder_b = column * 4 + (k % 8) / 2;
            products[k] = double(half_at(w.a[holder_a][quarter], k % 2)) *
                          double(half_at(w.b[holder_b][k / 8], k % 2));
        }
        acc[e] = accumulate(acc[e], products);
    }
    sync_warp();
}

inline uint16_t half_bits_at(const void* row, int column) {
    uint16_t bits;
    memcpy(&bits, static_cast<const char*>(row) + 2 * column, 2);
    return bits;
}

// ldmatrix.sync.aligned.m8n8.x4(.trans).shared.b16: lanes 8i .. 8i + 7 give the row addresses
// of matrix i; r[i] gets matrix i's row l / 4, columns 2 (l % 4) and + 1 (transposed: column
// l / 4, rows 2 (l % 4) and + 1).
inline void ldmatrix_x4(uint32_t (&r)[4], const void* row, bool transposed) {
    Warp& w = warp();
    const int l = lane();
    if (reinterpret_cast<uintptr_t>(row) % 16 != 0) die("an ldmatrix row not on 16 bytes");
    w.address[l] = row;
    sync_warp();
    for (int i = 0; i < 4; i++) {
        uint32_t low, high;
        if (!transposed) {
            low = half_bits_at(w.address[8 * i + l / 4], 2 * (l % 4));
            high = half_bits_at(w.address[8 * i + l / 4], 2 * (l % 4) + 1);
        } else {
            low = half_bits_at(w.address[8 * i + 2 * (l % 4)], l / 4);
            high = half_bits_at(w.address[8 * i + 2 * (l % 4) + 1], l / 4);
        }
        r[i] = low | (high << 16);
    }
    sync_warp();
}

// A shuffle of every lane's 4-byte value: lane l gets lane source(l)'s.
template <typename T, typename Source>
T shuffle(T value, Source source) {
    static_assert(sizeof(T) == 4, "shuffles of 4-byte values");
    Warp& w = warp();
    const int l = lane();
    memcpy(&w.word[l], &value, 4);
    sync_warp();
    const int from = source(l);
    if (from < 0 || from >= 32) die("a shuffle from outside the warp");
    memcpy(&value, &w.word[from], 4);
    sync_warp();
    return value;
}

}  // namespace emu

// The kernel's CUDA words, as the emulation reads them. Shared memory is `static`: one copy,
// which the blocks, run one at a time, take in turn.
#undef __global__
#undef __device__
#undef __host__
#undef __forceinline__
#undef __launch_bounds__
#undef __align__
#undef __shared__
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __align__(n) alignas(n)
#define __shared__ static
#define threadIdx (emu::thread_idx())
#define blockIdx (emu::g_block->index)
inline void __syncthreads() { emu::sync_block(); }
inline void __syncwarp(unsigned = 0xffffffffu) { emu::sync_warp(); }
template <typename T>
T __shfl_xor_sync(unsigned mask, T value, int lane_mask) {
    if (mask != 0xffffffffu) emu::die("shuffles of whole warps only");
    return emu::shuffle(value, [&](int l) { return l ^ lane_mask; });
}
template <typename T>
T __shfl_sync(unsigned mask, T value, int source_lane) {
    if (mask != 0xffffffffu) emu::die("shuffles of whole warps only");
    return emu::shuffle(value, [&](int) { return source_lane; });
}
inline int __all_sync(unsigned mask, int predicate) {
    if (mask != 0xffffffffu) emu::die("votes of whole warps only");
    int all = predicate != 0;
    for (int offset = 1; offset < 32; offset *= 2) all &= __shfl_xor_sync(mask, all, offset);
    return all;
}
using std::max;
using std::min;
