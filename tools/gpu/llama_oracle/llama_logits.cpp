// llama-logits: what llama.cpp computes for given token ids, so its numbers can be set beside
// transformers' and ours (the second oracle of a model file: same file, another reader).
//
//   llama-logits MODEL.gguf IDS.txt OUT.logits.f32 [--gpu] [--greedy N]
//
// IDS.txt holds the prompt's token ids, whitespace-separated. The program evaluates them in one
// batch, writes the logits at the last position to OUT (float32, little-endian, n_vocab of
// them), then, with --greedy N, feeds back the argmax N times and prints the N ids on stdout.
// --gpu offloads every layer (a CUDA build); without it the CPU computes.
#include "llama.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

[[noreturn]] static void fail(const std::string& message) {
    std::fprintf(stderr, "llama-logits: %s\n", message.c_str());
    std::exit(1);
}

static std::vector<llama_token> read_ids(const char* path) {
    std::ifstream in(path);
    if (!in) fail(std::string("cannot open ") + path);
    std::vector<llama_token> ids;
    long id = 0;
    while (in >> id) ids.push_back(llama_token(id));
    if (!in.eof()) fail(std::string(path) + " holds something other than token ids");
    if (ids.empty()) fail(std::string(path) + " holds no token ids");
    return ids;
}

struct Arguments {
    const char* model = nullptr;
    const char* ids = nullptr;
    const char* out = nullptr;
    bool gpu = false;
    int greedy = 0;
};

static Arguments parse(int argc, char** argv) {
    Arguments a;
    std::vector<const char*> positional;
    for (int i = 1; i < argc; ++i) {
        if (std::strcmp(argv[i], "--gpu") == 0) a.gpu = true;
        else if (std::strcmp(argv[i], "--greedy") == 0 && i + 1 < argc) a.greedy = std::atoi(argv[++i]);
        else positional.push_back(argv[i]);
    }
    if (positional.size() != 3)
        fail("usage: llama-logits MODEL.gguf IDS.txt OUT.logits.f32 [--gpu] [--greedy N]");
    a.model = positional[0], a.ids = positional[1], a.out = positional[2];
    return a;
}

static void quiet(ggml_log_level level, const char* text, void*) {
    if (level == GGML_LOG_LEVEL_ERROR) std::fputs(text, stderr);
}

int main(int argc, char** argv) {
    const Arguments a = parse(argc, argv);
    std::vector<llama_token> ids = read_ids(a.ids);
    llama_log_set(quiet, nullptr);
    llama_backend_init();

    llama_model_params model_params = llama_model_default_params();
    model_params.n_gpu_layers = a.gpu ? 999 : 0;
    llama_model* model = llama_model_load_from_file(a.model, model_params);
    if (!model) fail(std::string("llama.cpp could not load ") + a.model);
    const int n_vocab = llama_vocab_n_tokens(llama_model_get_vocab(model));

    llama_context_params context_params = llama_context_default_params();
    const int n = int(ids.size());
    context_params.n_ctx = uint32_t(std::max(64, n + a.greedy + 8));
    context_params.n_batch = context_params.n_ubatch = uint32_t(std::max(n, 1));
    context_params.no_perf = true;
    // Nothing rounded that transformers' fp32 keeps: an F32 cache (the default is F16) and no
    // flash attention (its CPU kernel works in F16: with it, the tiny Qwen3's logits moved by
    // up to 2e-2 from transformers', without it by 3e-5).
    context_params.type_k = GGML_TYPE_F32;
    context_params.type_v = GGML_TYPE_F32;
    context_params.flash_attn_type = LLAMA_FLASH_ATTN_TYPE_DISABLED;
    // Without --gpu, nothing on a GPU: a CUDA build otherwise sends a batch's large products
    // there even with no layer offloaded (the 90-token prompt then moved by 2.5e-2).
    context_params.op_offload = a.gpu;
    llama_context* context = llama_init_from_model(model, context_params);
    if (!context) fail("llama.cpp could not make a context");

    if (llama_decode(context, llama_batch_get_one(ids.data(), n)) != 0) fail("llama_decode failed");
    const float* logits = llama_get_logits_ith(context, -1);  // (n_vocab)
    std::FILE* out = std::fopen(a.out, "wb");
    if (!out || std::fwrite(logits, sizeof(float), size_t(n_vocab), out) != size_t(n_vocab))
        fail(std::string("cannot write ") + a.out);
    std::fclose(out);

    for (int step = 0; step < a.greedy; ++step) {
        const float* row = llama_get_logits_ith(context, -1);
        llama_token next = llama_token(std::max_element(row, row + n_vocab) - row);
        std::printf("%s%d", step ? " " : "", next);
        if (llama_decode(context, llama_batch_get_one(&next, 1)) != 0) fail("llama_decode failed");
    }
    if (a.greedy) std::printf("\n");
    llama_free(context);
    llama_model_free(model);
    return 0;
}
