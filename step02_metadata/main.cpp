// step02: read the header and every metadata key, then the model config and tokenizer summary.
//
//   make step02 && ./step02 models/tiny-qwen2.gguf
#include <cstdio>
#include <cstring>
#include <string>

#include "error.h"
#include "gguf_header.h"
#include "gguf_metadata.h"
#include "gguf_reader.h"
#include "model_config.h"

static void print_usage(std::FILE* out) {
    std::fprintf(out,
                 "usage: step02 MODEL.gguf\n"
                 "\n"
                 "Reads the GGUF header and metadata, prints every key with its type and value\n"
                 "(arrays and long strings shortened), then the model config derived from the\n"
                 "<architecture>.* keys and a summary of the tokenizer keys.\n"
                 "\n"
                 "  -h, --help   show this help\n");
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

int main(int argc, char** argv) {
    std::string model_path;
    for (int i = 1; i < argc; i++) {
        if (!std::strcmp(argv[i], "-h") || !std::strcmp(argv[i], "--help")) {
            print_usage(stdout);
            return 0;
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
        InputFile file(model_path);
        GgufReader reader(file);
        GgufHeader header = read_gguf_header(reader);

        std::printf("file:            %s\n", model_path.c_str());
        std::printf("file size:       %llu bytes (%.2f MiB)\n", (unsigned long long)file.size(),
                    double(file.size()) / (1024.0 * 1024.0));
        std::printf("magic:           GGUF (47 47 55 46)\n");
        std::printf("version:         %u\n", header.version);
        std::printf("tensor count:    %llu\n", (unsigned long long)header.tensor_count);
        std::printf("metadata count:  %llu\n", (unsigned long long)header.metadata_kv_count);

        GgufMetadata metadata = read_gguf_metadata(reader, header.metadata_kv_count);
        print_metadata(metadata);

        if (has_model_config(metadata)) print_model_config(read_model_config(metadata));
        else if (metadata.has("general.architecture"))
            std::printf("\nno model config: no '%s.block_count' key (a vocab-only file?)\n",
                        metadata.get("general.architecture").string_value.c_str());
        else std::printf("\nno model config: no general.architecture key\n");

        if (metadata.has("tokenizer.ggml.tokens"))
            print_tokenizer_summary(read_tokenizer_summary(metadata));
        else std::printf("\nno tokenizer: no tokenizer.ggml.tokens key\n");
    } catch (const Error& error) {
        std::fprintf(stderr, "error: %s\n", error.what());
        return 1;
    }
    return 0;
}
