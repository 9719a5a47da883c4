// ops_cpu.cpp - the operators, written as plain loops. OpenMP splits the two expensive ones
// (matmul over output rows, attention over token/head pairs) across cores, and swiglu, whose
// exp per value is the costliest of the rest; the others cost next to nothing beside them.
#include "ops_cpu.h"

#include <cmath>
#include <vector>

#include "dequantize.h"
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
