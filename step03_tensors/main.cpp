// step03: read the tensor directory, map the file, and look inside one tensor.
//
//   make step03 && ./step03 models/tiny-qwen2.gguf
//   ./step03 models/tiny-qwen2.gguf --tensor blk.0.attn_q.weight
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "dequantize.h"
#include "error.h"
#include "ggml_types.h"
#include "gguf_metadata.h"
#include "gguf_tensors.h"
#include "model_config.h"

static void print_usage(std::FILE* out) {
    std::fprintf(
        out,
        "usage: step03 MODEL.gguf [--tensor NAME]\n"
        "\n"
        "Reads the GGUF header, metadata and tensor directory, checks every tensor against\n"
        "the file, and prints the model config and a table of the tensors.\n"
        "\n"
        "  --tensor NAME   instead of the table, show one tensor: its shape, type, size,\n"
        "                  first values and min/max/mean/std after dequantization\n"
        "  -h, --help      show this help\n");
}

static void print_metadata(const GgufMetadata& metadata) {
    std::printf("\nmetadata (%zu keys):\n", metadata.size());
    for (const auto& [key, value] : metadata.entries())
        std::printf("  %-40s %-15s %s\n", key.c_str(), gguf_value_type_name(value).c_str(),
                    format_gguf_value(value).c_str());
}

static void print_model_config(const ModelConfig& config) {
    std::printf("\nmodel config (%s):\n", config.architecture.c_str());
    std::printf("  layers:          %u\n", config.n_layers);
    std::printf("  d_model:         %u\n", config.d_model);
    std::printf("  d_ff:            %u\n", config.d_ff);
    std::printf("  heads:           %u (head_dim %u)\n", config.n_heads, config.head_dim);
    std::printf("  kv heads:        %u (%u query heads share each)\n", config.n_kv_heads,
                config.n_heads / config.n_kv_heads);
    std::printf("  context length:  %u\n", config.context_length);
    std::printf("  rope base:       %g\n", double(config.rope_base));
    std::printf("  rms eps:         %g\n", double(config.rms_eps));
    std::printf("  vocab size:      %u\n", config.n_vocab);
}

static void print_tokenizer_summary(const TokenizerSummary& tokenizer) {
    std::printf("\ntokenizer:\n");
    std::printf("  model:           %s (pre-tokenizer %s)\n", tokenizer.model.c_str(),
                tokenizer.pre.empty() ? "not set" : tokenizer.pre.c_str());
    std::printf("  tokens:          %llu\n", (unsigned long long)tokenizer.n_tokens);
    std::printf("  merges:          %llu\n", (unsigned long long)tokenizer.n_merges);
    std::printf("  bos / eos / pad: %lld / %lld / %lld (-1: not set)\n",
                (long long)tokenizer.bos_id, (long long)tokenizer.eos_id,
                (long long)tokenizer.pad_id);
    std::printf("  chat template:   %s\n", tokenizer.has_chat_template ? "yes" : "no");
}

static std::string format_dims(const std::vector<uint64_t>& dims) {
    std::string text = "[";
    for (size_t i = 0; i < dims.size(); i++) text += (i ? ", " : "") + std::to_string(dims[i]);
    return text + "]";
}

// The tensor table, then the bytes per type and where the data section starts.
static void print_tensors(const GgufFile& file) {
    size_t name_width = 4;
    for (const TensorInfo& tensor : file.tensors)
        name_width = std::max(name_width, tensor.name.size());
    std::printf("\ntensors (%zu):\n", file.tensors.size());
    std::printf("  %-*s  %-7s  %-20s  %12s  %12s\n", int(name_width), "name", "type",
                "dims (ne0 first)", "bytes", "offset");
    std::map<uint32_t, std::pair<size_t, uint64_t>> per_type;  // type id -> (tensors, bytes)
    uint64_t total_bytes = 0;
    for (const TensorInfo& tensor : file.tensors) {
        std::printf("  %-*s  %-7s  %-20s  %12llu  %12llu\n", int(name_width), tensor.name.c_str(),
                    ggml_type_info(tensor.type).name, format_dims(tensor.dims).c_str(),
                    (unsigned long long)tensor.n_bytes, (unsigned long long)tensor.offset);
        per_type[tensor.type].first++;
        per_type[tensor.type].second += tensor.n_bytes;
        total_bytes += tensor.n_bytes;
    }
    std::printf("\nbytes per type:\n");
    for (const auto& [type, totals] : per_type)
        std::printf("  %-7s  %4zu tensors  %12llu bytes\n", ggml_type_info(type).name, totals.first,
                    (unsigned long long)totals.second);
    std::printf("  %-7s  %4zu tensors  %12llu bytes (%.2f MiB)\n", "total", file.tensors.size(),
                (unsigned long long)total_bytes, double(total_bytes) / (1024.0 * 1024.0));
    std::printf(
        "\ndata section:    starts at byte %llu (alignment %u); offsets above are from there\n",
        (unsigned long long)file.data_offset, file.alignment);
}

// Dequantizes the tensor one row at a time (a whole embedding matrix as float32 could take
// gigabytes) and prints its first values and statistics.
static void print_tensor_values(const TensorInfo& tensor) {
    constexpr uint64_t kValuesShown = 8;
    std::printf("\ntensor %s\n", tensor.name.c_str());
    std::printf("  type:    %s\n", ggml_type_info(tensor.type).name);
    std::printf("  dims:    %s (ne0 first: %llu rows of %llu)\n", format_dims(tensor.dims).c_str(),
                (unsigned long long)tensor.n_rows(), (unsigned long long)tensor.dims[0]);
    std::printf("  bytes:   %llu at data offset %llu\n", (unsigned long long)tensor.n_bytes,
                (unsigned long long)tensor.offset);

    uint64_t row_length = tensor.dims[0];
    uint64_t row_bytes = ggml_row_bytes(tensor.type, row_length);
    std::vector<float> row(row_length);  // (ne0,)
    double sum = 0.0, sum_squares = 0.0;
    float min_value = INFINITY, max_value = -INFINITY;
    std::printf("  first:  ");
    for (uint64_t r = 0; r < tensor.n_rows(); r++) {
        dequantize(tensor.type, tensor.data + r * row_bytes, row.data(), int64_t(row_length));
        for (uint64_t i = 0; i < row_length; i++) {
            if (r * row_length + i < kValuesShown) std::printf(" %.6g", double(row[i]));
            min_value = std::min(min_value, row[i]);
            max_value = std::max(max_value, row[i]);
            sum += row[i];
            sum_squares += double(row[i]) * row[i];
        }
    }
    double n = double(tensor.n_elements);
    double mean = sum / n;
    // population standard deviation: sqrt(E[x^2] - E[x]^2), clamped against rounding below 0
    double std_dev = std::sqrt(std::max(0.0, sum_squares / n - mean * mean));
    std::printf("\n  min %.6g  max %.6g  mean %.6g  std %.6g\n", double(min_value),
                double(max_value), mean, std_dev);
}

int main(int argc, char** argv) {
    std::string model_path;
    std::string tensor_name;
    for (int i = 1; i < argc; i++) {
        if (!std::strcmp(argv[i], "-h") || !std::strcmp(argv[i], "--help")) {
            print_usage(stdout);
            return 0;
        }
        if (!std::strcmp(argv[i], "--tensor")) {
            if (i + 1 >= argc) {
                std::fprintf(stderr, "error: flag --tensor needs a value\n");
                return 2;
            }
            tensor_name = argv[++i];
            continue;
        }
        if (argv[i][0] == '-' || !model_path.empty()) {
            std::fprintf(stderr, "error: unexpected argument '%s'\n", argv[i]);
            print_usage(stderr);
            return 2;
        }
        model_path = argv[i];
    }
    if (model_path.empty()) {
        print_usage(stderr);
        return 2;
    }

    try {
        GgufFile file = open_gguf(model_path);
        const GgufHeader& header = file.header;
        const GgufMetadata& metadata = file.metadata;
        if (!tensor_name.empty()) {
            print_tensor_values(file.get(tensor_name));
            return 0;
        }

        std::printf("file:            %s\n", model_path.c_str());
        std::printf("file size:       %llu bytes (%.2f MiB)\n",
                    (unsigned long long)file.mapping->size(),
                    double(file.mapping->size()) / (1024.0 * 1024.0));
        std::printf("magic:           GGUF (47 47 55 46)\n");
        std::printf("version:         %u\n", header.version);
        std::printf("tensor count:    %llu\n", (unsigned long long)header.tensor_count);
        std::printf("metadata count:  %llu\n", (unsigned long long)header.metadata_kv_count);

        print_metadata(metadata);

        if (has_model_config(metadata)) print_model_config(read_model_config(metadata));
        else if (metadata.has("general.architecture"))
            std::printf("\nno model config: no '%s.block_count' key (a vocab-only file?)\n",
                        metadata.get("general.architecture").string_value.c_str());
        else std::printf("\nno model config: no general.architecture key\n");

        if (metadata.has("tokenizer.ggml.tokens"))
            print_tokenizer_summary(read_tokenizer_summary(metadata));
        else std::printf("\nno tokenizer: no tokenizer.ggml.tokens key\n");
        print_tensors(file);
    } catch (const Error& error) {
        std::fprintf(stderr, "error: %s\n", error.what());
        return 1;
    }
    return 0;
}
