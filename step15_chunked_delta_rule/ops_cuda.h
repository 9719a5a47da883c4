// ops_cuda.h - the operators of ops_cpu.h as CUDA kernels: same names (in namespace gpu), same
// arguments, same results up to float rounding, but every pointer is a device pointer. After
// them come step 10's fused kernels for one token (fused_decode.cu), each equal to a
// composition of them.
//
// The kernels read memory the way the GPU wants it read: a warp per row of W for one token
// (matvec.cu), shared-memory tiles for many (tiled_gemm.cu), block-wide reductions for RMSNorm
// and argmax (rmsnorm.cu, argmax.cu), and attention split over the cached positions
// (decode_attention.cu, prompt_attention.cu); the element-wise operators are in
// elementwise.cu. The declarations are step 6's, so forward_cuda.cpp runs them unchanged.
// Step 14 adds Qwen3.5's: partial RoPE and the attention's sigmoid gate (elementwise.cu), and
// the Gated DeltaNet's operators (gated_delta_net.cu); step 15 the delta rule in chunks
// (chunked_delta_rule.cu).
// Launches are asynchronous; a function returns before its kernel has finished, and a later
// copy to the host waits for it.
//
// Weight matrices on the device are F32, F16 or BF16, or (step 11) the file's own blocks of
// Q8_0, Q5_0, Q4_K or Q6_K, dequantized in registers (quant_blocks_cuda.cuh); device_weights.h
// converts every other type on the host. `table_type` and `w_type` are those ggml type ids,
// anything else fails.
#pragma once

#include <cstddef>
#include <cstdint>

#include "device_buffer.h"
#include "ops_cpu.h"
#include "q8_vector.h"

struct CUstream_st;  // a cudaStream_t points to one (cuda_graph.h); nullptr is the default stream

// The element type of the KV cache on the device (device_kv_cache.h; step 11), which the kernels
// that write and read the cache take as an argument: F32, the keys and values as computed, or
// F16, each rounded to nearest (11 significant bits), half the bytes to store and to read.
enum class CacheType { F32, F16 };

namespace gpu {

using Stream = CUstream_st*;

// out[t] = row ids[t] of the table; `ids` is on the device too.
void embedding(float* out, const void* table, uint32_t table_type, const int32_t* ids, int n_tokens,
               int dim, Stream stream = nullptr);

// RMSNorm, one block of 256 threads per token; `out` may be `x`. (Step 14: on `stream`, for the
// hybrid's decode step, as the Gated DeltaNet's operators and sigmoid_gate below.)
void rmsnorm(float* out, const float* x, const float* weight, int n_tokens, int dim, float eps,
             Stream stream = nullptr);

// out = x W^T, accumulating in float: for one token a warp per row of W (matvec_kernel), for
// more a 64 x 64 tile of out per block (tiled_gemm_kernel). Step 12: more than one token of an
// F16, BF16 or block matrix runs on the tensor cores (gemm_tensor_cores.h), with x rounded to
// F16 (BF16 for BF16 weights); F32 matrices keep the float kernels.
void matmul(float* out, const float* x, const void* w, uint32_t w_type, int n_tokens, int in_dim,
            int out_dim);

void add_bias(float* x, const float* bias, int n_tokens, int dim);

// NEOX RoPE, one thread per rotated pair; the angle is computed in double as on the CPU.
void rope(float* x, int n_tokens, int n_heads, int head_dim, int first_position, float base);

// Step 14: rope() on the first rope_dims values of each head alone (ops_cpu.h's partial_rope),
// rope_kernel with its angles spread over rope_dims: rope() is partial_rope with rope_dims =
// head_dim, the same kernel and the same arithmetic.
void partial_rope(float* x, int n_tokens, int n_heads, int head_dim, int rope_dims,
                  int first_position, float base);

// Step 14: x[i] *= sigmoid(gate[i]), one thread per element.
void sigmoid_gate(float* x, const float* gate, int64_t n, Stream stream = nullptr);

// Step 14: ops_cpu.h's split_query_gate, one thread per value of the query: each token's
// (n_heads, 2, head_dim) row into query and gate, (n_tokens, n_heads * head_dim) each.
void split_query_gate(float* query, float* gate, const float* query_gate, int n_tokens,
                      int n_heads, int head_dim);

// Step 13: qk_norm() then rope() of ops_cpu.h in one kernel, a block per (token, head) (Qwen3's
// prompt path, head_norm.cu): the norm joins the pass over Q and K that RoPE makes anyway.
void qk_norm_rope(float* x, const float* weight, int n_tokens, int n_heads, int head_dim,
                  int first_position, float base, float eps);
// Step 14: qk_norm() then partial_rope(): the same kernel turning only the first rope_dims values
// of each head (qwen35); qk_norm_rope is this with rope_dims = head_dim.
void qk_norm_partial_rope(float* x, const float* weight, int n_tokens, int n_heads, int head_dim,
                          int rope_dims, int first_position, float base, float eps);

// Causal grouped-query attention of new queries over the cached keys and values, as in
// ops_cpu.h, with the softmax computed on the fly (online) rather than over a stored row of
// scores. One new token (decode): the positions split into chunks over many blocks, then
// merged. More (a prompt): a block per 16 queries of one head. Heads of up to 256 values (step
// 14; 128 before) and up to 8 query heads per key/value head; other shapes fail. k and v hold values of
// cache_type (step 11): floats, or halves (then head_dim must be a multiple of 4).
void attention(float* out, const float* q, const void* k, const void* v, int n_tokens,
               int first_position, int n_heads, int n_kv_heads, int head_dim,
               CacheType cache_type = CacheType::F32);

void swiglu(float* out, const float* gate, const float* up, int64_t n);

// rows = x, n values rounded to the cache's type (step 11): how a prompt's keys and values,
// computed as floats, enter an F16 cache.
void store_cache_rows(void* rows, CacheType cache_type, const float* x, int64_t n);

void residual_add(float* x, const float* delta, int64_t n);

// Index of the largest of n values, the first one on a tie (as the CPU's); waits for the
// device to return it. Like the CPU's, it never picks a NaN, unless x[0] is one.
int argmax(const float* x, int n);

// ---- Step 14: the Gated DeltaNet layer (gated_delta_net.cu), ops_cpu.h's contracts ----

// A thread per channel and chunk of 16 tokens; the window (kernel - 1, channels) is updated in
// place. Kernels of up to 8 taps (Qwen3.5's has 4); longer ones fail.
void causal_conv1d_silu(float* out, const float* x, float* window, const float* weight,
                        int n_tokens, int channels, int kernel, Stream stream = nullptr);

// Each token's convolved row q | k | v (n_tokens, 2 qk_width + value_width) into q and k
// (n_tokens, qk_width) and v (n_tokens, value_width), one thread per value: what
// forward_cpu.cpp's split_qkv does.
void split_qkv(float* q, float* k, float* v, const float* qkv, int n_tokens, int qk_width,
               int value_width);

// A warp per row. In place.
void l2_normalize_rows(float* x, int n_rows, int dim, float eps, float scale,
                       Stream stream = nullptr);

// A thread per (token, value head).
void delta_net_gates(float* beta, float* g, const float* b, const float* a, const float* A,
                     const float* dt_bias, int n_tokens, int n_heads, Stream stream = nullptr);

// The whole recurrence in one launch: a warp per column of a value head's state, which stays
// in the warp's registers over all n_tokens tokens; state read at the start and written back
// at the end. dk must be a multiple of 32 up to 256; other sizes fail.
void gated_delta_rule(float* out, float* state, const float* q, const float* k, const float* v,
                      const float* g, const float* beta, int n_tokens, int n_key_heads,
                      int n_value_heads, int dk, int dv, Stream stream = nullptr);

// A chunk's mma operands in DeltaChunkScratch: W (C, 128) and diag(e^G) Q (C, 128) are 32
// fragments of 16 x 16 each, P (C, C) 16, (diag(e^(G_last - G)) K)^T (128, C) 32
// (chunked_delta_rule.cu).
constexpr int kDeltaChunkFragments = 32 + 32 + 16 + 32;
constexpr int kDeltaFragmentWords = 2 * 32 * 4;  // hi and lo, 32 lanes, 4 registers of 2 halves

// Step 15: what chunked_gated_delta_rule's first kernel leaves for its second, per value head
// and chunk of C = kDeltaChunkSize tokens, n_chunks = ceil(n_tokens / C) (a short last chunk's
// rows past its tokens are zeros). The caller owns it, sized for its longest call: the
// prompt's DeviceRunState (forward_cuda.h) for kPromptChunk tokens, a check for its own.
struct DeltaChunkScratch {
    DeviceBuffer<uint32_t> fragments;  // (n_value_heads, n_chunks, kDeltaChunkFragments,
                                       //  kDeltaFragmentWords) in the order the warps read them
    DeviceBuffer<float> u;             // (n_value_heads, n_chunks, C, dv) U = T diag(beta) V
    DeviceBuffer<float> chunk_decays;  // (n_value_heads, n_chunks) e^(G_last)

    // Room for calls of up to n_tokens tokens; the buffers only grow (DeviceBuffer::resize).
    void reserve(int n_tokens, int n_value_heads, int dv) {
        const size_t chunks =
            size_t(n_value_heads) * ((n_tokens + kDeltaChunkSize - 1) / kDeltaChunkSize);
        fragments.resize(chunks * kDeltaChunkFragments * kDeltaFragmentWords);
        u.resize(chunks * kDeltaChunkSize * dv);
        chunk_decays.resize(chunks);
    }
};

// gated_delta_rule chunk by chunk, ops_cpu.h's chunked_gated_delta_rule with its chunks of
// kDeltaChunkSize (chunked_delta_rule.cu): every chunk's own matrices at once into `scratch`,
// then the state through the chunks, the products on the tensor cores (compute capability 8.0
// and later) in the split F16 form that keeps fp32's precision within a factor of 12. dk and
// dv up to 128, and a scratch reserved for at least n_tokens; anything else fails.
//   q, k: (n_tokens, n_key_heads, dk)   v, out: (n_tokens, n_value_heads, dv)
//   g, beta: (n_tokens, n_value_heads)  state: (n_value_heads, dk, dv), carried across calls
void chunked_gated_delta_rule(float* out, float* state, const float* q, const float* k,
                              const float* v, const float* g, const float* beta, int n_tokens,
                              int n_key_heads, int n_value_heads, int dk, int dv,
                              DeltaChunkScratch& scratch, Stream stream = nullptr);

// A warp per row; `out` may be `x`.
void gated_rmsnorm(float* out, const float* x, const float* z, const float* weight, int n_rows,
                   int dim, float eps, Stream stream = nullptr);

// ---- the kernels that matmul and attention choose between ----

// matmul of one token: a warp (or, for long rows, a block) per row of W.
void matvec(float* out, const float* x, const void* w, uint32_t w_type, int in_dim,
            int out_dim);
// matmul of several tokens: a 64 x 64 tile of out per block.
void tiled_gemm(float* out, const float* x, const void* w, uint32_t w_type, int n_tokens,
                int in_dim, int out_dim);
// attention of one new token, at first_position: chunks of the positions, then their merge.
void split_attention(float* out, const float* q, const void* k, const void* v, int first_position,
                     int n_heads, int n_kv_heads, int head_dim, CacheType cache_type);
// attention of several new tokens: a block per 16 queries of one head.
void prefill_attention(float* out, const float* q, const void* k, const void* v, int n_tokens,
                       int first_position, int n_heads, int n_kv_heads, int head_dim,
                       CacheType cache_type);

// ---- Step 10: one token's pass in 6 kernels a layer, ready to be captured in a graph ----
//
// Step 9 ran 19 kernels a layer for one token; most of them are tiny (a bias add over 1536
// floats), and each costs a launch gap of microseconds. These kernels do the same arithmetic
// in fewer launches: what a small kernel did moves into the epilogue (the code after the dot
// products) or the prologue of a matrix-vector product that reads the same data anyway.
// Every one takes the stream it runs on and reads the token and its position from device
// memory (`slots`), never from an argument, so a graph captured once replays for every token.

struct DecodeSlots {
    int32_t token;     // the token this step runs: the last step's argmax, or the host's choice
    int32_t position;  // its position: the cache's filled length before this step
};

// The attention sublayer's products: matrices of any device type, F32 biases. Step 13: the
// biases are null where the model has none (Qwen3), and q_norm, k_norm are QK-norm's weights,
// null where it has none (Qwen2).
struct QkvWeights {
    const void* q;        // (n_heads * head_dim, d_model)
    const void* k;        // (n_kv_heads * head_dim, d_model)
    const void* v;        // (n_kv_heads * head_dim, d_model)
    const float* q_bias;  // (n_heads * head_dim)
    const float* k_bias;  // (n_kv_heads * head_dim)
    const float* v_bias;  // (n_kv_heads * head_dim)
    uint32_t q_type, k_type, v_type;
    const float* q_norm = nullptr;  // (head_dim)
    const float* k_norm = nullptr;  // (head_dim)
};

// Step 13: where the blocks that compute one head of Q or K meet for its QK-norm (the norm
// needs the whole head's sum of squares, and a block computes 4 of its pairs). Unused when
// QkvWeights has no q_norm.
struct HeadNormScratch {
    float* rows;  // (n_heads + n_kv_heads, head_dim) the heads before the norm: Q's, then K's
    int* done;    // (n_heads + n_kv_heads) blocks done a head; zero between launches
};

struct HeadShape {
    int n_heads;
    int n_kv_heads;
    int head_dim;
};

// ---- Step 11: block matrices are multiplied with 8-bit activations ----
//
// For a matrix of Q8_0, Q5_0, Q4_K or Q6_K blocks the kernels below take their input rounded to
// 8 bits (a Q8Vector, q8_vector.h: the values of the CPU's BlockQ8 blocks) and multiply it
// with the blocks in integers (dp4a), as the CPU's matmul_q8 does: the same 8-bit values, so
// the same integer sums. An F32, F16 or BF16 matrix's product stays in floats.
//
// Where it can, the kernel that makes an input rounds it, so that no product waits for a
// kernel of its own: the attention's merge writes Wo's input, gate_up_swiglu writes down's. The
// normalized inputs of QKV, gate/up and the LM head need the whole residual vector first, so a
// quantize_q8 launch after the product that completes it rounds them (the decode step), and a
// function given `*_q8_written = false` rounds its input itself first (the checks).

// out = x (n values, a multiple of 32) rounded to 8 bits, or rmsnorm(x) * norm_weight as the
// CPU's rmsnorm computes it when norm_weight is not null.
void quantize_q8(Q8Vector out, const float* x, const float* norm_weight, float eps, int n,
                 Stream stream);

// rmsnorm, the Q, K and V products, their biases and RoPE in one kernel: q = rope(Wq h + bq),
// and the key rope(Wk h + bk) and value Wv h + bv written into row slots->position of this
// layer's cache (k_cache, v_cache: (capacity, n_kv_heads * head_dim) values of cache_type), with
// h = rmsnorm(x). Step 13, with w.q_norm: q = rope(qk_norm(Wq h)) and the key
// rope(qk_norm(Wk h)) (biases added first when there are any), eps the model's, through
// `scratch`; head_dim must then be a multiple of 8 (a block's 4 pairs lie in one head).
// A warp computes the two rows that RoPE turns together, (i, i + head_dim / 2) of one head.
// One launch when Q and K share a type and V's is theirs, Q6_K or Q8_0 (Qwen's published
// files), else one a type. x_q8 (d_model) holds h rounded to 8 bits when x_q8_written, and
// receives it otherwise, when one of the matrices is a block type.
void qkv_rope_cache(float* q, void* k_cache, void* v_cache, CacheType cache_type, const float* x,
                    const float* norm_weight, float eps, const QkvWeights& w, int d_model,
                    HeadShape heads, float rope_base, const DecodeSlots* slots,
                    HeadNormScratch scratch, Q8Vector x_q8, bool x_q8_written, Stream stream);

// Floats of scratch decode_attention needs for a cache of `capacity` positions.
int64_t decode_attention_scratch(int capacity, HeadShape heads);

// attention() for the one query at slots->position, over positions 0..slots->position: the
// split kernel and its merge, the chunk layout worked out on the device from the position
// (the same layout attention() chooses) with a grid sized for `capacity` positions.
// Step 11: with out_q8.q not null, out rounded to 8 bits is written there too, for a
// block-type Wo, by the merge kernel (head_dim a multiple of 32; else it fails).
void decode_attention(float* out, const float* q, const void* k_cache, const void* v_cache,
                      CacheType cache_type, float* scratch, int capacity, HeadShape heads,
                      const DecodeSlots* slots, Q8Vector out_q8, Stream stream);

// x += in W^T: the matrix-vector product with the residual add in its epilogue (the attention
// output and down projections). in_q8 (in_dim): in rounded to 8 bits, for a block type, which
// this function writes first unless in_q8_written.
void matvec_add(float* x, const float* in, const void* w, uint32_t w_type, int in_dim, int out_dim,
                Q8Vector in_q8, bool in_q8_written, Stream stream);

// Step 14: out = in W^T, matvec_add without the add (the hybrid's products that start a vector).
void matvec_decode(float* out, const float* in, const void* w, uint32_t w_type, int in_dim,
                   int out_dim, Q8Vector in_q8, bool in_q8_written, Stream stream);
// out = silu(Wgate h) * (Wup h) with h = rmsnorm(x): a warp computes row i of both products,
// so the two matrices must be of one type. x_q8 as for qkv_rope_cache. With out_q8.q not null
// (d_ff a multiple of 32) out rounded to 8 bits is written there too: the last of the blocks
// that compute 32 rows rounds them, counting in group_done (d_ff / 32 ints, zero between
// launches).
void gate_up_swiglu(float* out, const float* x, const float* norm_weight, float eps,
                    const void* w_gate, const void* w_up, uint32_t w_type, int d_model, int d_ff,
                    Q8Vector x_q8, bool x_q8_written, Q8Vector out_q8, int* group_done,
                    Stream stream);

// Step 14: the gated attention's decode step between its products and the attention, in one
// kernel: query head h of query_gate ((n_heads, 2, head_dim): each head's query, then its gate)
// normalized by q_norm and turned by partial RoPE at slots->position into q (n_heads * head_dim),
// its gate copied into gate; key head h of k normalized by k_norm and turned into row
// slots->position of k_cache, and value head h of v copied into v_cache's. A block a head.
void gated_qk_norm_rope_cache(float* q, float* gate, void* k_cache, void* v_cache,
                              CacheType cache_type, const float* query_gate, const float* k,
                              const float* v, const float* q_norm, const float* k_norm,
                              HeadShape heads, int rope_dims, float rope_base, float eps,
                              const DecodeSlots* slots, Stream stream);
// Bytes of scratch lm_head_argmax needs.
int64_t lm_head_argmax_scratch();

// The final rmsnorm, the LM head (logits = W rmsnorm(x)) and argmax(), which writes the chosen
// id into slots->token and moves slots->position on by one: the next step's input, without
// the host. Each block leaves the best of its rows in `scratch`; a last kernel picks among them.
// x_q8 as for qkv_rope_cache.
void lm_head_argmax(float* logits, void* scratch, const float* x, const float* norm_weight,
                    float eps, const void* w, uint32_t w_type, int d_model, int n_vocab,
                    DecodeSlots* slots, Q8Vector x_q8, bool x_q8_written, Stream stream);

}  // namespace gpu
