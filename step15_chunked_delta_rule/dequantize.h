// dequantize.h - turn `n` elements stored as ggml type `type` back into float32.
//
// One function per storage type, each a direct transcription of the block layout it reads
// (see the comments in dequantize.cpp). `n` must be a multiple of the type's block size and
// `src` must point at whole blocks.
#pragma once

#include <cstdint>

void dequantize_f32(const void* src, float* dst, int64_t n);
void dequantize_f16(const void* src, float* dst, int64_t n);
void dequantize_bf16(const void* src, float* dst, int64_t n);
void dequantize_q4_0(const void* src, float* dst, int64_t n);
void dequantize_q4_1(const void* src, float* dst, int64_t n);
void dequantize_q5_0(const void* src, float* dst, int64_t n);
void dequantize_q5_1(const void* src, float* dst, int64_t n);
void dequantize_q8_0(const void* src, float* dst, int64_t n);
void dequantize_q2_k(const void* src, float* dst, int64_t n);
void dequantize_q3_k(const void* src, float* dst, int64_t n);
void dequantize_q4_k(const void* src, float* dst, int64_t n);
void dequantize_q5_k(const void* src, float* dst, int64_t n);
void dequantize_q6_k(const void* src, float* dst, int64_t n);
void dequantize_iq4_nl(const void* src, float* dst, int64_t n);

// Dispatches on the type id. Fails with "dequantization of IQ2_XXS is not supported" for a
// known type without a routine, and like ggml_type_info() for an unknown id.
void dequantize(uint32_t type_id, const void* src, float* dst, int64_t n);
