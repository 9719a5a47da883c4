// device_weights.cpp - convert on the host, one matrix at a time, then copy. Step 14: each
// layer's tensors by its kind.
#include "device_weights.h"

#include <cstring>

#include "dequantize.h"
#include "ggml_types.h"
#include "half.h"

// The type a matrix of `file_type` gets on the device: its own when the kernels read its
// blocks (step 11: the type table's gpu_reads_blocks, quant_blocks_cuda.cuh), else F16 (BF16
// for BF16, whose values may not fit F16's range).
static uint32_t device_type(uint32_t file_type, WeightPrecision precision) {
    if (precision == WeightPrecision::F32) return uint32_t(GgmlType::F32);
    if (ggml_type_info(file_type).gpu_reads_blocks) return file_type;
    if (file_type == uint32_t(GgmlType::BF16)) return uint32_t(GgmlType::BF16);
    return uint32_t(GgmlType::F16);
}

// Writes n floats as `type` (F32, F16 or BF16) at dst, rounding to nearest even.
static void store_row(const float* row, int n, uint32_t type, uint8_t* dst) {
    if (type == uint32_t(GgmlType::F32)) {
        std::memcpy(dst, row, size_t(n) * 4);
        return;
    }
    const bool bf16 = type == uint32_t(GgmlType::BF16);
    for (int i = 0; i < n; i++) {
        uint16_t bits = bf16 ? f32_to_bf16(row[i]) : f32_to_f16(row[i]);
        std::memcpy(dst + size_t(i) * 2, &bits, 2);
    }
}

// Copies the file's bytes as they are: the matrix keeps its blocks.
static DeviceMatrix upload_blocks(const WeightMatrix& matrix) {
    DeviceMatrix result;
    result.type = matrix.type;
    result.rows = matrix.rows;
    result.cols = matrix.cols;
    const uint8_t* bytes = static_cast<const uint8_t*>(matrix.data);
    const uint64_t n_bytes = uint64_t(matrix.rows) * ggml_row_bytes(matrix.type, matrix.cols);
    result.data.upload(std::vector<uint8_t>(bytes, bytes + n_bytes));
    return result;
}

// The matrix as `type`, converted on the host: F32, F16 or BF16, or its own block type.
static DeviceMatrix upload_matrix(const WeightMatrix& matrix, uint32_t type,
                                  const ConversionNotice& notice) {
    if (type == matrix.type && ggml_type_info(type).gpu_reads_blocks) return upload_blocks(matrix);
    if (notice && is_block_type(matrix.type) && type != uint32_t(GgmlType::F32))
        notice(matrix.type);
    DeviceMatrix result;
    result.type = type;
    result.rows = matrix.rows;
    result.cols = matrix.cols;
    const size_t element_bytes = result.type == uint32_t(GgmlType::F32) ? 4 : 2;
    const size_t out_row_bytes = size_t(matrix.cols) * element_bytes;
    const uint64_t in_row_bytes = ggml_row_bytes(matrix.type, uint64_t(matrix.cols));
    const uint8_t* rows = static_cast<const uint8_t*>(matrix.data);
    std::vector<uint8_t> converted(size_t(matrix.rows) * out_row_bytes);  // (rows, cols)
#pragma omp parallel
    {
        std::vector<float> row(matrix.cols);  // (cols) this thread's dequantized row
#pragma omp for schedule(static)
        for (int r = 0; r < matrix.rows; r++) {
            dequantize(matrix.type, rows + uint64_t(r) * in_row_bytes, row.data(), matrix.cols);
            store_row(row.data(), matrix.cols, result.type, converted.data() + r * out_row_bytes);
        }
    }
    result.data.upload(converted);
    return result;
}

static DeviceMatrix upload_matrix(const WeightMatrix& matrix, WeightPrecision precision,
                                  const ConversionNotice& notice) {
    return upload_matrix(matrix, device_type(matrix.type, precision), notice);
}

// An attention layer's tensors.
static void upload_attention(const LayerWeights& layer, WeightPrecision precision,
                             const ConversionNotice& notice, DeviceLayerWeights& w) {
    w.attn_q = upload_matrix(layer.attn_q, precision, notice);
    w.attn_q_bias.upload(layer.attn_q_bias);
    w.attn_k = upload_matrix(layer.attn_k, precision, notice);
    w.attn_k_bias.upload(layer.attn_k_bias);
    w.attn_v = upload_matrix(layer.attn_v, precision, notice);
    w.attn_v_bias.upload(layer.attn_v_bias);
    w.attn_q_norm.upload(layer.attn_q_norm);
    w.attn_k_norm.upload(layer.attn_k_norm);
    w.attn_output = upload_matrix(layer.attn_output, precision, notice);
}

// Step 14: a Gated DeltaNet layer's tensors.
static void upload_delta_net(const LayerWeights& layer, WeightPrecision precision,
                             const ConversionNotice& notice, DeviceLayerWeights& w) {
    w.attn_qkv = upload_matrix(layer.attn_qkv, precision, notice);
    w.attn_gate = upload_matrix(layer.attn_gate, precision, notice);
    w.ssm_conv1d.upload(layer.ssm_conv1d);
    w.ssm_beta = upload_matrix(layer.ssm_beta, precision, notice);
    w.ssm_alpha = upload_matrix(layer.ssm_alpha, precision, notice);
    w.ssm_dt_bias.upload(layer.ssm_dt_bias);
    w.ssm_a.upload(layer.ssm_a);
    w.ssm_norm.upload(layer.ssm_norm);
    w.ssm_out = upload_matrix(layer.ssm_out, precision, notice);
}

DeviceWeights upload_weights(const Weights& weights, WeightPrecision precision,
                             const ConversionNotice& notice) {
    DeviceWeights result;
    result.n_vocab = weights.n_vocab;
    result.attention = weights.attention;
    result.token_embd = upload_matrix(weights.token_embd, precision, notice);
    for (const LayerWeights& layer : weights.layers) {
        DeviceLayerWeights w;
        w.attn_norm.upload(layer.attn_norm);
        // Step 14: the layer's kind is the tensors it holds (a DeltaNet layer has attn_qkv).
        if (layer.attn_qkv.data != nullptr) upload_delta_net(layer, precision, notice, w);
        else upload_attention(layer, precision, notice, w);
        w.ffn_norm.upload(layer.ffn_norm);
        // One kernel reads gate and up together (gate_up_swiglu), so they need one type:
        // when the file gives them two, both become the type neither keeps, F16.
        uint32_t gate_type = device_type(layer.ffn_gate.type, precision);
        uint32_t up_type = device_type(layer.ffn_up.type, precision);
        if (gate_type != up_type) gate_type = up_type = uint32_t(GgmlType::F16);
        w.ffn_gate = upload_matrix(layer.ffn_gate, gate_type, notice);
        w.ffn_up = upload_matrix(layer.ffn_up, up_type, notice);
        w.ffn_down = upload_matrix(layer.ffn_down, precision, notice);
        result.layers.push_back(std::move(w));
    }
    result.output_norm.upload(weights.output_norm);
    result.tied_output = weights.tied_output;
    if (!weights.tied_output) result.output = upload_matrix(weights.output, precision, notice);
    return result;
}

const DeviceMatrix& lm_head(const DeviceWeights& weights) {
    return weights.tied_output ? weights.token_embd : weights.output;
}

// Everything of a layer, embedding and LM head aside.
static uint64_t layer_bytes(const DeviceLayerWeights& w) {
    uint64_t bytes = 0;
    for (const DeviceMatrix* m :
         {&w.attn_q, &w.attn_k, &w.attn_v, &w.attn_output, &w.attn_qkv, &w.attn_gate, &w.ssm_beta,
          &w.ssm_alpha, &w.ssm_out, &w.ffn_gate, &w.ffn_up, &w.ffn_down})
        bytes += m->data.allocated_bytes();
    for (const DeviceBuffer<float>* v :
         {&w.attn_norm, &w.attn_q_bias, &w.attn_k_bias, &w.attn_v_bias, &w.attn_q_norm,
          &w.attn_k_norm, &w.ssm_conv1d, &w.ssm_dt_bias, &w.ssm_a, &w.ssm_norm, &w.ffn_norm})
        bytes += v->allocated_bytes();
    return bytes;
}

uint64_t device_bytes(const DeviceWeights& weights) {
    uint64_t bytes = weights.token_embd.data.allocated_bytes() +
                     weights.output.data.allocated_bytes() + weights.output_norm.allocated_bytes();
    for (const DeviceLayerWeights& layer : weights.layers) bytes += layer_bytes(layer);
    return bytes;
}

uint64_t bytes_read_per_pass(const DeviceWeights& weights) {
    uint64_t bytes =
        lm_head(weights).data.allocated_bytes() + weights.output_norm.allocated_bytes();
    for (const DeviceLayerWeights& layer : weights.layers) bytes += layer_bytes(layer);
    return bytes;
}
