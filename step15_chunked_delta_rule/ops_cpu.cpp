// ops_cpu.cpp - the operators, written as plain loops. OpenMP splits the expensive ones (matmul
// over output rows, attention over token/head pairs, step 14's delta rule over value heads)
// across cores, and swiglu, whose exp per value is the costliest of the rest; the others cost
// next to nothing beside them. Step 15: the delta rule in chunks (chunked_gated_delta_rule)
// splits over value heads as the token-by-token one does.
#include "ops_cpu.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "dequantize.h"
#include "error.h"
#include "ggml_types.h"

// Sum of a[i] * b[i]. `omp simd reduction` lets the compiler keep several partial sums in
// vector registers (it may not reorder a float sum on its own).
static float dot(const float* a, const float* b, int n) {
    float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
    for (int i = 0; i < n; i++) sum += a[i] * b[i];
    return sum;
}

void embedding(float* out, const void* table, uint32_t table_type, const int32_t* ids, int n_tokens,
               int dim) {
    const uint8_t* rows = static_cast<const uint8_t*>(table);
    uint64_t row_bytes = ggml_row_bytes(table_type, uint64_t(dim));
    for (int t = 0; t < n_tokens; t++)
        dequantize(table_type, rows + uint64_t(ids[t]) * row_bytes, out + int64_t(t) * dim, dim);
}

void rmsnorm(float* out, const float* x, const float* weight, int n_tokens, int dim, float eps) {
    // BEGIN SOLUTION step05 rmsnorm
    for (int t = 0; t < n_tokens; t++) {
        const float* row = x + int64_t(t) * dim;
        float* result = out + int64_t(t) * dim;
        double sum_of_squares = 0.0;
        for (int i = 0; i < dim; i++) sum_of_squares += double(row[i]) * row[i];
        float inv_rms = float(1.0 / std::sqrt(sum_of_squares / dim + eps));
        for (int i = 0; i < dim; i++) result[i] = row[i] * inv_rms * weight[i];
    }
    // END SOLUTION
}

void qk_norm(float* x, const float* weight, int n_tokens, int n_heads, int head_dim, float eps) {
    // BEGIN SOLUTION step13 qk_norm
    rmsnorm(x, x, weight, n_tokens * n_heads, head_dim, eps);  // a head is a row of head_dim
    // END SOLUTION
}

void matmul(float* out, const float* x, const void* w, uint32_t w_type, int n_tokens, int in_dim,
            int out_dim) {
    // BEGIN SOLUTION step05 matmul
    const uint8_t* rows = static_cast<const uint8_t*>(w);
    uint64_t row_bytes = ggml_row_bytes(w_type, uint64_t(in_dim));
#pragma omp parallel
    {
        std::vector<float> w_row(in_dim);  // (in_dim) this thread's dequantized row of W
#pragma omp for schedule(static)
        for (int o = 0; o < out_dim; o++) {
            dequantize(w_type, rows + uint64_t(o) * row_bytes, w_row.data(), in_dim);
            for (int t = 0; t < n_tokens; t++)
                out[int64_t(t) * out_dim + o] = dot(w_row.data(), x + int64_t(t) * in_dim, in_dim);
        }
    }
    // END SOLUTION
}

void add_bias(float* x, const float* bias, int n_tokens, int dim) {
    for (int t = 0; t < n_tokens; t++)
        for (int i = 0; i < dim; i++) x[int64_t(t) * dim + i] += bias[i];
}

void rope(float* x, int n_tokens, int n_heads, int head_dim, int first_position, float base) {
    // BEGIN SOLUTION step05 rope
    int half = head_dim / 2;
    for (int t = 0; t < n_tokens; t++) {
        double position = double(first_position) + t;
        for (int i = 0; i < half; i++) {
            // The angle in double: at position 30000 a float angle would already be off by
            // ~0.002 rad. Every head of this token uses the same cos/sin.
            double angle = position * std::pow(double(base), -2.0 * i / head_dim);
            float c = float(std::cos(angle));
            float s = float(std::sin(angle));
            for (int h = 0; h < n_heads; h++) {
                float* head = x + (int64_t(t) * n_heads + h) * head_dim;
                float first = head[i];
                float second = head[i + half];
                head[i] = first * c - second * s;
                head[i + half] = second * c + first * s;
            }
        }
    }
    // END SOLUTION
}

void partial_rope(float* x, int n_tokens, int n_heads, int head_dim, int rope_dims,
                  int first_position, float base) {
    const int half = rope_dims / 2;
    for (int t = 0; t < n_tokens; t++) {
        const double position = double(first_position) + t;
        for (int i = 0; i < half; i++) {
            // rope()'s angle, with the frequencies spread over rope_dims instead of head_dim.
            const double angle = position * std::pow(double(base), -2.0 * i / rope_dims);
            const float c = float(std::cos(angle));
            const float s = float(std::sin(angle));
            for (int h = 0; h < n_heads; h++) {
                float* head = x + (int64_t(t) * n_heads + h) * head_dim;
                const float first = head[i];
                const float second = head[i + half];
                head[i] = first * c - second * s;
                head[i + half] = second * c + first * s;
            }
        }
    }
}

void split_query_gate(float* query, float* gate, const float* query_gate, int n_tokens,
                      int n_heads, int head_dim) {
    for (int64_t row = 0; row < int64_t(n_tokens) * n_heads; row++) {  // one head of one token
        const float* from = query_gate + row * 2 * head_dim;            // (2, head_dim)
        for (int i = 0; i < head_dim; i++) {
            query[row * head_dim + i] = from[i];
            gate[row * head_dim + i] = from[head_dim + i];
        }
    }
}

static float sigmoid(float x) { return 1.0f / (1.0f + std::exp(-x)); }
static float silu(float x) { return x / (1.0f + std::exp(-x)); }

void sigmoid_gate(float* x, const float* gate, int64_t n) {
    for (int64_t i = 0; i < n; i++) x[i] *= sigmoid(gate[i]);
}

void softmax(float* x, int n) {
    // Subtracting the maximum keeps exp() from overflowing; exp(-inf - max) is exactly 0. A
    // comparison finds it: NaNs never win, as with std::fmax, which is a library call a value.
    float max_value = -INFINITY;
    for (int i = 0; i < n; i++)
        if (x[i] > max_value) max_value = x[i];
    float sum = 0.0f;
    for (int i = 0; i < n; i++) {
        x[i] = std::exp(x[i] - max_value);
        sum += x[i];
    }
    for (int i = 0; i < n; i++) x[i] /= sum;
}

void attention(float* out, const float* q, const float* k, const float* v, int n_tokens,
               int first_position, int n_heads, int n_kv_heads, int head_dim) {
    // BEGIN SOLUTION step07 attention
    int q_dim = n_heads * head_dim;
    int kv_dim = n_kv_heads * head_dim;
    int n_keys = first_position + n_tokens;   // every position so far
    int heads_per_kv = n_heads / n_kv_heads;  // query heads that share one key/value head
    float scale = 1.0f / std::sqrt(float(head_dim));
#pragma omp parallel
    {
        std::vector<float> scores(n_keys);  // (n_keys) one query's weights over all keys
#pragma omp for schedule(dynamic)
        for (int pair = 0; pair < n_tokens * n_heads; pair++) {
            int t = pair / n_heads;
            int h = pair % n_heads;
            int kv_head = h / heads_per_kv;
            int position = first_position + t;
            const float* query = q + int64_t(t) * q_dim + h * head_dim;
            // Causal: the query at `position` sees keys 0..position. A later key's weight
            // would be exactly 0 (its score -inf), so those keys are left out.
            for (int j = 0; j <= position; j++) {
                const float* key = k + int64_t(j) * kv_dim + kv_head * head_dim;
                scores[j] = dot(query, key, head_dim) * scale;
            }
            softmax(scores.data(), position + 1);
            float* result = out + int64_t(t) * q_dim + h * head_dim;
            for (int d = 0; d < head_dim; d++) result[d] = 0.0f;
            for (int j = 0; j <= position; j++) {
                const float* value = v + int64_t(j) * kv_dim + kv_head * head_dim;
                // `omp simd`: result and value do not overlap, so the compiler may take
                // several dimensions an instruction (each result[d] still sums in the order of j).
#pragma omp simd
                for (int d = 0; d < head_dim; d++) result[d] += scores[j] * value[d];
            }
        }
    }
    // END SOLUTION
}

void swiglu(float* out, const float* gate, const float* up, int64_t n) {
    // BEGIN SOLUTION step05 swiglu
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; i++) {
        float g = gate[i];
        out[i] = g / (1.0f + std::exp(-g)) * up[i];
    }
    // END SOLUTION
}

void residual_add(float* x, const float* delta, int64_t n) {
    for (int64_t i = 0; i < n; i++) x[i] += delta[i];
}

int argmax(const float* x, int n) {
    if (n <= 0) return 0;
    // The best value kept beside its index: reading x[best] instead would make each comparison
    // wait for a load whose address the comparison before it chose.
    int best = 0;
    float best_value = x[0];
    for (int i = 1; i < n; i++) {
        if (x[i] > best_value) {
            best = i;
            best_value = x[i];
        }
    }
    return best;
}

void causal_conv1d_silu(float* out, const float* x, float* window, const float* weight,
                        int n_tokens, int channels, int kernel) {
    // BEGIN SOLUTION step14 causal_conv1d_silu
    const int history = kernel - 1;  // inputs before token 0 that token 0 still sees
    for (int t = 0; t < n_tokens; t++) {
        for (int c = 0; c < channels; c++) {
            const float* taps = weight + int64_t(c) * kernel;  // (kernel)
            float sum = 0.0f;
            for (int j = 0; j < kernel; j++) {
                const int source = t - history + j;  // < 0: an input of an earlier call
                const float input = source >= 0 ? x[int64_t(source) * channels + c]
                                                : window[int64_t(history + source) * channels + c];
                sum += taps[j] * input;
            }
            out[int64_t(t) * channels + c] = silu(sum);
        }
    }
    // The window becomes the last `history` of (window, x): row i is position n_tokens + i of
    // the two joined. Rows are read at or after the one written, so in place is safe.
    for (int i = 0; i < history; i++) {
        const int joined = n_tokens + i;
        const float* from = joined < history ? window + int64_t(joined) * channels
                                             : x + int64_t(joined - history) * channels;
        for (int c = 0; c < channels; c++) window[int64_t(i) * channels + c] = from[c];
    }
    // END SOLUTION
}

void l2_normalize_rows(float* x, int n_rows, int dim, float eps, float scale) {
    for (int r = 0; r < n_rows; r++) {
        float* row = x + int64_t(r) * dim;
        double sum_of_squares = 0.0;
        for (int i = 0; i < dim; i++) sum_of_squares += double(row[i]) * row[i];
        const float factor = float(scale / std::sqrt(sum_of_squares + eps));
        for (int i = 0; i < dim; i++) row[i] *= factor;
    }
}

// log(1 + e^x), computed as torch's softplus: x itself above 20, where e^x is past float's
// precision next to 1 (and would overflow further up).
static float softplus(float x) { return x > 20.0f ? x : std::log1p(std::exp(x)); }

void delta_net_gates(float* beta, float* g, const float* b, const float* a, const float* A,
                     const float* dt_bias, int n_tokens, int n_heads) {
    for (int t = 0; t < n_tokens; t++)
        for (int h = 0; h < n_heads; h++) {
            const int64_t i = int64_t(t) * n_heads + h;
            beta[i] = sigmoid(b[i]);
            g[i] = A[h] * softplus(a[i] + dt_bias[h]);
        }
}

void gated_delta_rule(float* out, float* state, const float* q, const float* k, const float* v,
                      const float* g, const float* beta, int n_tokens, int n_key_heads,
                      int n_value_heads, int dk, int dv) {
    // BEGIN SOLUTION step14 gated_delta_rule
#pragma omp parallel
    {
        std::vector<float> delta(dv);  // (dv) one token's correction, then its output
#pragma omp for schedule(static)
        for (int h = 0; h < n_value_heads; h++) {
            float* S = state + int64_t(h) * dk * dv;  // (dk, dv)
            const int key_head = h % n_key_heads;     // the file's tiled order
            for (int t = 0; t < n_tokens; t++) {
                const float* q_t = q + (int64_t(t) * n_key_heads + key_head) * dk;  // (dk)
                const float* k_t = k + (int64_t(t) * n_key_heads + key_head) * dk;  // (dk)
                const float* v_t = v + (int64_t(t) * n_value_heads + h) * dv;       // (dv)
                float* o_t = out + (int64_t(t) * n_value_heads + h) * dv;           // (dv)
                const float decay = std::exp(g[int64_t(t) * n_value_heads + h]);
                const float b = beta[int64_t(t) * n_value_heads + h];
                // S = e^g S, and what it recalls for k: S^T k.
                for (int j = 0; j < dv; j++) delta[j] = 0.0f;
                for (int i = 0; i < dk; i++) {
                    float* row = S + int64_t(i) * dv;
                    for (int j = 0; j < dv; j++) {
                        row[j] *= decay;
                        delta[j] += row[j] * k_t[i];
                    }
                }
                for (int j = 0; j < dv; j++) delta[j] = b * (v_t[j] - delta[j]);
                // S += k delta^T, and o = S^T q.
                for (int j = 0; j < dv; j++) o_t[j] = 0.0f;
                for (int i = 0; i < dk; i++) {
                    float* row = S + int64_t(i) * dv;
                    for (int j = 0; j < dv; j++) {
                        row[j] += k_t[i] * delta[j];
                        o_t[j] += row[j] * q_t[i];
                    }
                }
            }
        }
    }
    // END SOLUTION
}

// ---- Step 15: the gated delta rule in chunks ----

// The rule's inputs as gated_delta_rule takes them, for the chunk functions below.
struct DeltaRuleInputs {
    const float* q;     // (n_tokens, n_key_heads, dk)
    const float* k;     // (n_tokens, n_key_heads, dk)
    const float* v;     // (n_tokens, n_value_heads, dv)
    const float* g;     // (n_tokens, n_value_heads)
    const float* beta;  // (n_tokens, n_value_heads)
    int n_key_heads, n_value_heads, dk, dv;
};

// One value head's chunk of c tokens (c <= C), one row a token, and the chunk form's matrices.
// A thread keeps one for all its chunks, sized for the longest. The (c, c) matrices are stored
// c wide.
struct DeltaChunk {
    int c = 0;                // the chunk's tokens
    std::vector<float> Q, K;  // (C, dk)
    std::vector<float> V;     // (C, dv)
    std::vector<float> beta;  // (C)
    // (C) G_t = g_0 + ... + g_t, the log of the decay since the chunk's start, in double: the
    // decay between two tokens is e^(G_t - G_s), and a float G is a multiple of 1e-6 after one
    // g of -10 (3e-5 after thirty), too coarse for the g near -1e-4 that may follow. In double,
    // G and its differences keep a float's precision; each exp is a float's.
    std::vector<double> G;
    std::vector<float> A;  // (C, C) strict_lower(diag(beta) K K^T (*) e^(G_t - G_s))
    std::vector<float> T;  // (C, C) (I + A)^-1, unit lower triangular
    std::vector<float> W;  // (C, dk) T diag(beta e^G) K
    std::vector<float> U;  // (C, dv) T diag(beta) V, then V' = U - W S

    DeltaChunk(int C, int dk, int dv)
        : Q(size_t(C) * dk),
          K(size_t(C) * dk),
          V(size_t(C) * dv),
          beta(C),
          G(C),
          A(size_t(C) * C),
          T(size_t(C) * C),
          W(size_t(C) * dk),
          U(size_t(C) * dv) {}
};

// e^(G_t - G_s), s <= t: the decay from just after token s to just after token t.
static float decay_between(const DeltaChunk& ch, int t, int s) {
    return std::exp(float(ch.G[t] - ch.G[s]));
}

// e^(G_t): the decay from the chunk's start to just after token t.
static float decay_to(const DeltaChunk& ch, int t) { return std::exp(float(ch.G[t])); }

// Value head h's tokens first .. first + c - 1 into the chunk's rows, and their running log decay.
static void load_chunk(DeltaChunk& ch, const DeltaRuleInputs& in, int h, int first, int c) {
    const int dk = in.dk, dv = in.dv, key_head = h % in.n_key_heads;  // the file's tiled order
    ch.c = c;
    double log_decay = 0.0;
    for (int t = 0; t < c; t++) {
        const int64_t token = first + t;
        const int64_t key_row = (token * in.n_key_heads + key_head) * dk;
        const int64_t gate = token * in.n_value_heads + h;
        for (int i = 0; i < dk; i++) ch.Q[t * dk + i] = in.q[key_row + i];
        for (int i = 0; i < dk; i++) ch.K[t * dk + i] = in.k[key_row + i];
        for (int j = 0; j < dv; j++) ch.V[t * dv + j] = in.v[gate * dv + j];
        ch.beta[t] = in.beta[gate];
        log_decay += double(in.g[gate]);
        ch.G[t] = log_decay;
    }
}

// A, then T = (I + A)^-1. A's entry (t, s), s < t, is how much token s's write moves token t's
// recall: beta_t (k_t . k_s) e^(G_t - G_s). Row t of (I + A) T = I reads
// T_t = e_t - sum_{s<t} A_ts T_s, whose rows s < t are known by then: forward substitution.
static void solve_chunk(DeltaChunk& ch, int dk) {
    const int c = ch.c;
    for (int t = 0; t < c; t++)
        for (int s = 0; s < t; s++)
            ch.A[t * c + s] =
                ch.beta[t] * dot(&ch.K[t * dk], &ch.K[s * dk], dk) * decay_between(ch, t, s);
    for (int t = 0; t < c; t++) {
        float* row = &ch.T[t * c];  // (c)
        for (int j = 0; j < c; j++) row[j] = j == t ? 1.0f : 0.0f;
        for (int s = 0; s < t; s++) {
            const float a = ch.A[t * c + s];
            for (int j = 0; j <= s; j++) row[j] -= a * ch.T[s * c + j];
        }
    }
}

// W = T diag(beta e^G) K and U = T diag(beta) V: row t mixes the rows s <= t.
static void weigh_chunk(DeltaChunk& ch, int dk, int dv) {
    const int c = ch.c;
    for (int t = 0; t < c; t++) {
        float* w = &ch.W[t * dk];  // (dk)
        float* u = &ch.U[t * dv];  // (dv)
        for (int i = 0; i < dk; i++) w[i] = 0.0f;
        for (int j = 0; j < dv; j++) u[j] = 0.0f;
        for (int s = 0; s <= t; s++) {
            const float tb = ch.T[t * c + s] * ch.beta[s];
            const float tbe = tb * decay_to(ch, s);
            for (int i = 0; i < dk; i++) w[i] += tbe * ch.K[s * dk + i];
            for (int j = 0; j < dv; j++) u[j] += tb * ch.V[s * dv + j];
        }
    }
}

// V' = U - W S in U's place: row t is token t's delta, beta_t (v_t - what the state recalls for
// k_t after the chunk's decay and the writes before t).
static void chunk_deltas(DeltaChunk& ch, const float* S, int dk, int dv) {
    for (int t = 0; t < ch.c; t++) {
        float* u = &ch.U[t * dv];  // (dv)
        for (int i = 0; i < dk; i++) {
            const float w = ch.W[t * dk + i];
            const float* state_row = S + int64_t(i) * dv;  // (dv)
            for (int j = 0; j < dv; j++) u[j] -= w * state_row[j];
        }
    }
}

// O = diag(e^G) Q S + (Q K^T (*) causal e^(G_t - G_s)) V': what the chunk's decayed start state
// gives each query, and the deltas written so far, token t's own included.
static void chunk_outputs(float* out, const DeltaChunk& ch, const float* S,
                          const DeltaRuleInputs& in, int h, int first) {
    const int dk = in.dk, dv = in.dv;
    for (int t = 0; t < ch.c; t++) {
        float* o = out + ((int64_t(first) + t) * in.n_value_heads + h) * dv;  // (dv)
        const float* q = &ch.Q[t * dk];                                       // (dk)
        const float decay = decay_to(ch, t);
        for (int j = 0; j < dv; j++) o[j] = 0.0f;
        for (int i = 0; i < dk; i++) {
            const float qi = decay * q[i];
            const float* state_row = S + int64_t(i) * dv;  // (dv)
            for (int j = 0; j < dv; j++) o[j] += qi * state_row[j];
        }
        for (int s = 0; s <= t; s++) {
            const float score = dot(q, &ch.K[s * dk], dk) * decay_between(ch, t, s);
            for (int j = 0; j < dv; j++) o[j] += score * ch.U[s * dv + j];
        }
    }
}

// The state after the chunk: S = e^(G_last) S + (diag(e^(G_last - G)) K)^T V', the start state
// decayed over the whole chunk and each token's write decayed over the tokens after it.
static void carry_state(float* S, const DeltaChunk& ch, int dk, int dv) {
    const int last = ch.c - 1;
    const float decay = decay_to(ch, last);
    for (int i = 0; i < dk; i++) {
        float* state_row = S + int64_t(i) * dv;  // (dv)
        for (int j = 0; j < dv; j++) state_row[j] *= decay;
        for (int s = 0; s < ch.c; s++) {
            const float weight = ch.K[s * dk + i] * decay_between(ch, last, s);
            for (int j = 0; j < dv; j++) state_row[j] += weight * ch.U[s * dv + j];
        }
    }
}

void chunked_gated_delta_rule(float* out, float* state, const float* q, const float* k,
                              const float* v, const float* g, const float* beta, int n_tokens,
                              int n_key_heads, int n_value_heads, int dk, int dv, int chunk_size) {
    if (chunk_size < 1) fail("chunked_gated_delta_rule: a chunk of %d tokens", chunk_size);
    const DeltaRuleInputs in = {q, k, v, g, beta, n_key_heads, n_value_heads, dk, dv};
#pragma omp parallel
    {
        DeltaChunk chunk(chunk_size, dk, dv);
#pragma omp for schedule(static)
        for (int h = 0; h < n_value_heads; h++) {
            float* S = state + int64_t(h) * dk * dv;  // (dk, dv)
            for (int first = 0; first < n_tokens; first += chunk_size) {
                load_chunk(chunk, in, h, first, std::min(chunk_size, n_tokens - first));
                solve_chunk(chunk, dk);
                weigh_chunk(chunk, dk, dv);
                chunk_deltas(chunk, S, dk, dv);
                chunk_outputs(out, chunk, S, in, h, first);
                carry_state(S, chunk, dk, dv);
            }
        }
    }
}

void gated_rmsnorm(float* out, const float* x, const float* z, const float* weight, int n_rows,
                   int dim, float eps) {
    for (int r = 0; r < n_rows; r++) {
        const float* row = x + int64_t(r) * dim;
        const float* gate = z + int64_t(r) * dim;
        float* result = out + int64_t(r) * dim;
        double sum_of_squares = 0.0;
        for (int i = 0; i < dim; i++) sum_of_squares += double(row[i]) * row[i];
        const float inv_rms = float(1.0 / std::sqrt(sum_of_squares / dim + eps));
        for (int i = 0; i < dim; i++) result[i] = weight[i] * (row[i] * inv_rms) * silu(gate[i]);
    }
}
