// step15: step14's program, which runs a prompt's Gated DeltaNet layers in chunks of 64 tokens,
// on the CPU (ops_cpu.cpp: chunked_gated_delta_rule) and on the GPU's tensor cores
// (chunked_delta_rule.cu), and each later token by the recurrence.
// step14: step13's program for the Qwen3.5 hybrid as well (arch qwen35): Gated DeltaNet layers,
// whose recurrent state has a fixed size, between gated full-attention layers. It runs on the
// CPU, exact (--f32-activations) or with 8-bit activations, and on the GPU, where each new token
// replays one CUDA graph as a Qwen2.5 token does; Qwen2.5 and Qwen3 run as in step 13. The
// cache is hybrid: keys and values for the attention layers, a state for each DeltaNet layer.
//
//   make step15 && ./step15 models/tiny-qwen2.gguf -p "Once upon a time," -n 32 --seed 42
//   ./step15 models/qwen2.5-coder-0.5b-instruct.gguf -i          chat; /reset, /exit
//   ./step15 models/qwen2.5-coder-0.5b-instruct.gguf -f long_prompt.txt -n 0     a prompt's speed
//   ./step15 qwen3-0.6b.gguf -i --no-think          Qwen3's template without the reasoning
//   ./step15 models/tiny-qwen35.gguf -p "Once upon a time," -n 32     the hybrid
//   ./step15 models/tiny-qwen2.gguf --tokenize -p "Hello"           the prompt's ids, and exit
#include <algorithm>
#include <cerrno>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include <omp.h>
#include <unistd.h>

#include "chat.h"
#include "chat_template.h"
#include "cli.h"
#include "cuda_device.h"
#include "cuda_graph.h"
#include "device_kv_cache.h"
#include "device_weights.h"
#include "error.h"
#include "forward_cpu.h"
#include "forward_cuda.h"
#include "generate.h"
#include "ggml_types.h"
#include "gguf_tensors.h"
#include "half.h"
#include "kv_cache.h"
#include "model_config.h"
#include "perplexity.h"
#include "quant_dot.h"
#include "reply_stream.h"
#include "sampler.h"
#include "timer.h"
#include "tokenizer.h"
#include "weights.h"

static std::string read_file_bytes(const std::string& path) {
    std::FILE* file = std::fopen(path.c_str(), "rb");
    if (!file) fail("cannot open '%s': %s", path.c_str(), std::strerror(errno));
    std::string bytes;
    char buffer[1 << 16];
    size_t count;
    while ((count = std::fread(buffer, 1, sizeof buffer, file)) > 0) bytes.append(buffer, count);
    const bool failed = std::ferror(file);
    std::fclose(file);
    if (failed) fail("cannot read '%s'", path.c_str());
    return bytes;
}

// Little-endian float32, assembled byte by byte whatever the host's byte order.
static void write_f32_le(const std::string& path, const std::vector<float>& values) {
    std::vector<uint8_t> bytes;
    bytes.reserve(values.size() * 4);
    for (float value : values) {
        const uint32_t bits = f32_to_bits(value);
        for (int b = 0; b < 4; b++) bytes.push_back(uint8_t(bits >> (8 * b)));
    }
    std::FILE* file = std::fopen(path.c_str(), "wb");
    if (!file) fail("cannot write '%s': %s", path.c_str(), std::strerror(errno));
    const size_t written = std::fwrite(bytes.data(), 1, bytes.size(), file);
    const bool closed = std::fclose(file) == 0;
    if (written != bytes.size() || !closed) fail("cannot write '%s'", path.c_str());
}

struct Options {
    std::string model_path;
    std::string prompt;
    bool has_prompt = false;
    bool interactive = false;
    std::optional<std::string> system_prompt;  // --system; none: the template's default
    int n_new = 256;
    bool chat = false;
    bool enable_thinking = true;  // --no-think: false
    bool print_ids = false;
    bool tokenize = false;         // --tokenize: print the prompt's ids and exit
    std::string dump_logits_path;  // empty: no dump
    int threads = 0;               // 0: OpenMP's default (every core, or OMP_NUM_THREADS)
    int context_limit = 0;         // 0: the model's context length, at most 4096

    std::string device;            // "cuda", "cpu", or "": cuda when there is a GPU
    bool check = false;            // --check: GPU and CPU side by side
    bool use_graph = true;         // --no-graph: false
    bool use_pdl = true;           // --no-pdl: false (on only where the GPU supports it)
    std::string perplexity_path;   // --perplexity FILE; empty: generate
    bool int8_activations = true;  // --f32-activations: false
    CacheType cache_type = CacheType::F16;  // --cache-type: the GPU's KV cache

    SamplerSettings sampling;
    bool has_seed = false;
};

// The program's flags: how --help shows each one and what it sets in `o`.
static std::vector<Flag> flag_table(Options& o) {
    return {
        {"-m", "MODEL.gguf", "the model (or give it as the first argument)",
         [&o](const char* v) { o.model_path = v; }},
        {"-p", "TEXT", "the prompt",
         [&o](const char* v) {
             o.prompt = v;
             o.has_prompt = true;
         }},
        {"-f", "FILE", "read the prompt from FILE (its exact bytes)",
         [&o](const char* v) {
             o.prompt = read_file_bytes(v);
             o.has_prompt = true;
         }},
        {"-i", nullptr,
         "chat, one user turn per line of stdin (or of a pipe):\n"
         "/reset starts a new conversation, /exit quits",
         [&o](const char*) { o.interactive = true; }},
        {"--system", "TEXT",
         "the system turn's text (default: the template's, Qwen2.5's\n"
         "system prompt; Qwen3's has no system turn)",
         [&o](const char* v) { o.system_prompt = v; }},
        {"-n", "N",
         "tokens to generate, per reply with -i (default 256;\n"
         "0 runs only the prompt)",
         [&o](const char* v) {
             o.n_new = int(parse_int_in(v, "-n", 0, INT_MAX, "a count of 0 or more"));
         }},
        {"--chat", nullptr,
         "wrap the prompt in the file's chat template: the system\n"
         "turn, the prompt as the user turn, then the generation\n"
         "prompt",
         [&o](const char*) { o.chat = true; }},
        {"--no-think", nullptr,
         "with Qwen3's template (--chat, -i): no reasoning, the\n"
         "generation prompt ends in an empty <think></think> block",
         [&o](const char*) { o.enable_thinking = false; }},
        {"--ids", nullptr, "print the generated token ids instead of text",
         [&o](const char*) { o.print_ids = true; }},
        {"--tokenize", nullptr,
         "print the prompt's token ids (-p or -f; with --chat, of\n"
         "the rendered conversation) on one line and exit",
         [&o](const char*) { o.tokenize = true; }},
        {"--dump-logits", "PATH",
         "write the logits of the last prompt position to PATH\n"
         "(n_vocab little-endian float32 values)",
         [&o](const char* v) { o.dump_logits_path = v; }},
        {"--device", "cuda|cpu",
         "where the model runs (default: cuda when there is a\n"
         "GPU, else cpu with a notice)",
         [&o](const char* v) {
             o.device = v;
             if (o.device != "cuda" && o.device != "cpu")
                 fail("flag --device expects cuda or cpu, got '%s'", v);
         }},
        {"--no-graph", nullptr,
         "launch each new token's kernels one by one instead of\n"
         "replaying them as one CUDA graph (the same kernels)",
         [&o](const char*) { o.use_graph = false; }},
        {"--no-pdl", nullptr,
         "launch each new token's kernels without programmatic\n"
         "dependent launch: each starts only once the one before\n"
         "it has finished (the same kernels, the same results)",
         [&o](const char*) { o.use_pdl = false; }},
        {"--perplexity", "FILE",
         "no generation: the perplexity of FILE's tokens (up to -c)\n"
         "as one sequence, each predicted from those before it",
         [&o](const char* v) { o.perplexity_path = v; }},
        {"--cache-type", "f32|f16",
         "the type of the GPU's KV cache (default f16: half the\n"
         "bytes a token's attention reads; the CPU's stays f32)",
         [&o](const char* v) {
             const std::string type = v;
             if (type != "f32" && type != "f16")
                 fail("flag --cache-type expects f32 or f16, got '%s'", v);
             o.cache_type = type == "f16" ? CacheType::F16 : CacheType::F32;
         }},
        {"--f32-activations", nullptr,
         "on the CPU, multiply quantized matrices as step 10 did:\n"
         "each row turned into floats, no 8-bit activations",
         [&o](const char*) { o.int8_activations = false; }},
        {"--check", nullptr,
         "run every step on the GPU and on the CPU, print the\n"
         "largest difference of their logits and both next\n"
         "tokens (needs a GPU)",
         [&o](const char*) { o.check = true; }},
        {"-t", "N", "CPU threads (default: every core)",
         [&o](const char* v) {
             o.threads = int(parse_int_in(v, "-t", 1, 4096, "1 to 4096 threads"));
         }},
        {"-c", "N",
         "context limit in tokens, the KV cache's size (default: the\n"
         "model's context length or 4096, whichever is smaller)",
         [&o](const char* v) {
             o.context_limit = int(parse_int_in(v, "-c", 1, INT_MAX, "a positive token count"));
         }},
        {"-h, --help", nullptr, "show this help", nullptr},  // wants_help() looks for it first
        {nullptr, nullptr,
         "sampling, applied in this order (defaults: Qwen2.5's generation_config):", nullptr},
        {"--repeat-penalty", "X",
         "divide the positive logits of recent tokens by X and\n"
         "multiply the negative ones (default 1.05; 1 is off)",
         [&o](const char* v) {
             const double penalty = parse_float(v, "--repeat-penalty");
             if (penalty <= 0) fail("flag --repeat-penalty expects more than 0, got %g", penalty);
             o.sampling.repeat_penalty = float(penalty);
         }},
        {"--repeat-last-n", "N", "how many recent tokens the penalty looks at (default 64)",
         [&o](const char* v) {
             o.sampling.repeat_last_n =
                 int(parse_int_in(v, "--repeat-last-n", 0, INT_MAX, "0 or more"));
         }},
        {"--temp", "X",
         "temperature (default 0.7; 0 is greedy: the argmax of\n"
         "the model's logits, as step07, with no penalty)",
         [&o](const char* v) {
             const double t = parse_float(v, "--temp");
             if (t < 0) fail("flag --temp expects 0 or more, got %g", t);
             o.sampling.temperature = float(t);
         }},
        {"--top-k", "N", "keep the N most likely tokens (default 20; 0 is off)",
         [&o](const char* v) {
             o.sampling.top_k = int(parse_int_in(v, "--top-k", 0, INT_MAX, "0 or more"));
         }},
        {"--top-p", "X",
         "keep the fewest tokens whose probability adds up to\n"
         "X (default 0.8; 1 is off)",
         [&o](const char* v) {
             const double p = parse_float(v, "--top-p");
             if (p <= 0 || p > 1) fail("flag --top-p expects a number in (0, 1], got %g", p);
             o.sampling.top_p = float(p);
         }},
        {"--min-p", "X",
         "keep the tokens at least X times as likely as the best\n"
         "(default 0, off)",
         [&o](const char* v) {
             const double p = parse_float(v, "--min-p");
             if (p < 0 || p > 1) fail("flag --min-p expects a number in [0, 1], got %g", p);
             o.sampling.min_p = float(p);
         }},
        {"--seed", "N", "the draws' seed (default: a random one, printed)",
         [&o](const char* v) {
             o.sampling.seed = uint64_t(parse_int_in(v, "--seed", 0, LLONG_MAX, "0 or more"));
             o.has_seed = true;
         }},
    };
}

// "qwen2, qwen3, qwen35": the architectures this program runs.
static std::string supported_architectures() {
    std::string names;
    for (const char* name : kArchitectures) names += (names.empty() ? "" : ", ") + std::string(name);
    return names;
}

static void print_usage(std::FILE* out) {
    std::fprintf(
        out,
        "usage: step15 MODEL.gguf (-p TEXT | -f FILE | -i | --perplexity FILE) [options]\n"
        "\n"
        "Runs the model's forward pass on the GPU (the prompt on the tensor cores, each new\n"
        "token one replayed CUDA graph of fused kernels) or the CPU, with a KV cache, and\n"
        "prints the sampled continuation as it is generated, then a timing line on stderr,\n"
        "with the bandwidth achieved on the GPU; -i chats.\n"
        "\n"
        "Architectures: %s. qwen35 (Qwen3.5, Gated DeltaNet layers between gated\n"
        "attention layers) runs each new token on the GPU as a prompt of one, kernel by\n"
        "kernel (no fused kernels, no CUDA graph yet); its cache is keys and values for\n"
        "the attention layers plus a recurrent state of fixed size.\n"
        "\n",
        supported_architectures().c_str());
    Options unused;
    print_flags(out, flag_table(unused));
    std::fprintf(out,
                 "\n"
                 "Generation stops after N tokens, at the context limit, or at <|im_end|> or\n"
                 "<|endoftext|>.\n"
                 "\n"
                 "environment: QWEN_DOT_KERNEL=scalar|avx2|avx512vnni picks the CPU's integer dot\n"
                 "products (default: the fastest this CPU runs; all give the same results).\n"
                 "\n"
                 "environment: OMP_WAIT_POLICY=passive makes idle CPU threads sleep at once\n"
                 "instead of spinning a while (OpenMP's default, the faster one on an idle\n"
                 "machine): use it when other work keeps the cores busy.\n");
}

// Reads the command line; fails with one line naming the flag that is wrong.
static Options parse_options(int argc, char** argv) {
    Options options;
    parse_flags(argc, argv, flag_table(options), [&](const char* argument) {
        if (argument[0] == '-' || !options.model_path.empty())
            fail("unexpected argument '%s'", argument);
        options.model_path = argument;
    });
    if (options.model_path.empty()) fail("no model given");
    if (options.tokenize && (options.interactive || !options.perplexity_path.empty()))
        fail("--tokenize prints the ids of -p or -f: give it without -i or --perplexity");
    if (!options.perplexity_path.empty()) {
        if (options.interactive || options.has_prompt || options.check)
            fail("--perplexity reads its text from FILE: give it without -p, -f, -i or --check");
        return options;
    }

    if (options.interactive && options.has_prompt)
        fail("-i reads the turns from stdin: give it without -p or -f");
    const bool has_dump = !options.dump_logits_path.empty();
    if (options.interactive && (options.chat || options.print_ids || has_dump))
        fail("-i is a chat in text: --chat, --ids and --dump-logits do not apply");
    if (!options.interactive && !options.has_prompt)
        fail("no prompt given: use -p TEXT, -f FILE or -i");
    if (options.has_prompt && options.prompt.empty() && !options.chat && !options.tokenize)
        fail("the prompt is empty: there is nothing to continue");
    // A seed printed at the start repeats the run when passed back with --seed.
    if (!options.has_seed) options.sampling.seed = std::random_device()();
    if (options.check && options.device == "cpu")
        fail("--check compares the GPU with the CPU, it cannot run with --device cpu");
    return options;
}

// -c, which may not exceed the model's context length. The cache is allocated for the whole
// context up front: 4096 positions by default rather than Qwen2.5's 32768, which would take 8
// times the memory for a short chat.
static int choose_context_limit(const Options& options, const ModelConfig& config) {
    if (options.context_limit > int(config.context_length))
        fail("-c %d is larger than the model's context length %u", options.context_limit,
             config.context_length);
    return options.context_limit > 0 ? options.context_limit
                                     : int(std::min(config.context_length, 4096u));
}

// The file's chat template, with thinking as --no-think says.
static ChatTemplate chat_template_of(const Options& options, const GgufMetadata& metadata) {
    ChatTemplate chat_template = read_chat_template(metadata);
    chat_template.enable_thinking = options.enable_thinking;
    return chat_template;
}

// The prompt's text: with --chat, a conversation of the system turn (if any) and the prompt as
// the user turn, rendered with the file's template and the generation prompt.
static std::string prompt_text(const Options& options, const ChatTemplate& chat_template) {
    if (!options.chat) return options.prompt;
    std::vector<ChatMessage> messages;
    if (options.system_prompt) messages.push_back({"system", *options.system_prompt});
    messages.push_back({"user", options.prompt});
    return render_chat(chat_template, messages, true);
}

// --tokenize: the prompt's ids on one line, as llama.cpp's llama-tokenize prints them with
// --ids but space-separated. Only the vocabulary is read: a vocab-only file will do.
static void print_prompt_ids(const Options& options) {
    GgufFile file = open_gguf(options.model_path);
    const Tokenizer tokenizer(read_vocabulary(file.metadata));
    const std::vector<int32_t> ids =
        tokenizer.encode(prompt_text(options, chat_template_of(options, file.metadata)));
    std::string line;
    for (int32_t id : ids) line += (line.empty() ? "" : " ") + std::to_string(id);
    std::printf("%s\n", line.c_str());
}

// The prompt's tokens, wrapped in the chat template with --chat (none with -i or --perplexity),
// refused when they do not fit in the context: the tokenizer is all this needs, so it is
// refused before the weights load.
static std::vector<int32_t> encode_prompt(const Options& options, const Tokenizer& tokenizer,
                                          const ChatTemplate& chat_template, int context_limit) {
    if (options.interactive || !options.perplexity_path.empty()) return {};  // read later
    std::vector<int32_t> prompt = tokenizer.encode(prompt_text(options, chat_template));
    if (prompt.size() > size_t(context_limit))
        fail("the prompt has %zu tokens, more than the context limit of %d (-c)", prompt.size(),
             context_limit);
    return prompt;
}

// Step 14: the hybrid's layers on stderr, and a notice for the MTP blocks it does not run.
static void describe_hybrid(const ModelConfig& config) {
    if (config.has_recurrent_layers()) {
        const DeltaNetConfig& dn = config.delta_net;
        std::fprintf(stderr,
                     "hybrid: %d Gated DeltaNet layers (%u key heads of %u, %u value heads of "
                     "%u, conv %u) and %d attention layers (RoPE on %u of %u)\n",
                     config.count_layers(LayerKind::DeltaNet), dn.n_key_heads, dn.key_dim,
                     dn.n_value_heads, dn.value_dim, dn.conv_kernel,
                     config.count_layers(LayerKind::Attention), config.rope_dims, config.head_dim);
    }
    if (config.n_nextn_layers > 0)
        std::fprintf(stderr,
                     "notice: the file's %u next-token-prediction (MTP) block%s not run\n",
                     config.n_nextn_layers, config.n_nextn_layers == 1 ? " is" : "s are");
}

// Checks and loads every weight, then describes the model on stderr. The progress line is
// redrawn in place on a terminal; a log file gets only the final count.
static Weights load_model_weights(const GgufFile& file, const ModelConfig& config,
                                  const Timer& load_timer) {
    const bool on_terminal = isatty(fileno(stderr));
    Weights weights = load_weights(file, config, [&](size_t checked, size_t total) {
        if (on_terminal || checked == total)
            std::fprintf(stderr, "%sloading: %zu/%zu tensors checked", on_terminal ? "\r" : "",
                         checked, total);
    });
    std::fprintf(stderr, " in %.1f ms\n", load_timer.elapsed_ms());
    std::fprintf(stderr,
                 "model: %s, %u layers, d_model %u, %u heads (%u KV) of %u, d_ff %u, "
                 "vocab %d, context %u%s\n",
                 config.architecture.c_str(), config.n_layers, config.d_model, config.n_heads,
                 config.n_kv_heads, config.head_dim, config.d_ff, weights.n_vocab,
                 config.context_length, weights.tied_output ? ", LM head tied" : "");
    describe_hybrid(config);
    return weights;
}

enum class Device { Cpu, Cuda };

// --device, or else the GPU when there is one and the CPU when there is not (`why_not` then
// says why, for a notice). Asked before the model loads, so that --device cuda and --check fail
// at once on a machine (or a build) without a GPU.
static Device choose_device(const Options& options, std::string& why_not) {
    if (options.device == "cpu") return Device::Cpu;
    if (cuda_device_available(why_not)) return Device::Cuda;
    if (options.device == "cuda" || options.check) fail("no CUDA device: %s", why_not.c_str());
    return Device::Cpu;
}

// --check: runs each model step on the GPU and on the CPU, prints how far apart their logits
// are, and goes on with the GPU's token. Both read the file's blocks. The CPU rounds every
// matmul's input to 8-bit blocks (unless --f32-activations); the GPU rounds a decode step's
// the same way, rounds a prompt's to 16 bits for the tensor cores (gemm_tensor_cores.cu; F32
// matrices excepted), and reads other quantized types rounded to F16 (device_weights.h). So on
// quantized files the two differ by those roundings as well as by the order of the float sums.
struct SideBySide {
    NextTokenFn on_gpu;
    NextTokenFn on_cpu;
    float largest_difference = 0.0f;
    int n_steps = 0;
    int n_positions = 0;  // positions run so far, the new ones included

    int n_disagreements = 0;  // steps where the CPU would have chosen another token

    int32_t step(const std::vector<int32_t>& ids, std::vector<float>* logits) {
        std::vector<float> gpu_logits, cpu_logits;  // (n_vocab) each
        const int32_t gpu_token = on_gpu(ids, &gpu_logits);
        const int32_t cpu_token = on_cpu(ids, &cpu_logits);
        float difference = 0.0f;
        for (size_t i = 0; i < gpu_logits.size(); i++) {
            const float d = std::fabs(gpu_logits[i] - cpu_logits[i]);
            if (!(d <= difference)) difference = d;  // a NaN sticks
        }
        if (!(difference <= largest_difference)) largest_difference = difference;
        n_steps++;
        if (gpu_token != cpu_token) n_disagreements++;
        n_positions += int(ids.size());

        std::fprintf(stderr,
                     "check: %zu new of %d tokens: largest |gpu - cpu| logit difference %.3g, "
                     "next token gpu %d, cpu %d%s\n",
                     ids.size(), n_positions, difference, gpu_token, cpu_token,
                     gpu_token == cpu_token ? "" : " (differ)");
        if (logits) *logits = std::move(gpu_logits);
        return gpu_token;
    }

    void print_summary() const {
        std::fprintf(stderr,
                     "check: %d steps (their times include the CPU's), largest logit "
                     "difference %.3g; ",
                     n_steps, largest_difference);
        if (n_disagreements == 0) std::fprintf(stderr, "the next tokens agree at every step\n");
        else
            std::fprintf(stderr, "the next tokens differ at %d of %d steps\n", n_disagreements,
                         n_steps);
    }
};

// A pass reads every weight at least once, so the weight bytes over the time of a pass give
// a lower bound on the bandwidth it achieved, to set against the GPU's peak.
static std::string gpu_throughput(const GenerationStats& stats, uint64_t bytes_per_pass,
                                  const DeviceInfo& device) {
    const double ms_per_pass =
        stats.n_passes > 0 ? stats.generate_ms / stats.n_passes : stats.prompt_ms;
    const double gb_per_s = double(bytes_per_pass) / (ms_per_pass * 1e6);
    return strprintf(" | %s: %.3f GB of weights per token, %.1f GB/s = %.1f%% of %.0f GB/s",
                     device.name.c_str(), double(bytes_per_pass) / 1e9, gb_per_s,
                     100.0 * gb_per_s / device.peak_gb_per_s, device.peak_gb_per_s);
}

static std::string cpu_threads() {
    const int threads = omp_get_max_threads();
    return strprintf(" | %d thread%s", threads, threads == 1 ? "" : "s");
}

// Where the model runs: the GPU's copy of the weights and each device's run state, and the
// model step that generation calls, the GPU's, the CPU's or (--check) both side by side.
struct Runner {
    Device device;
    const Options& options;
    const ModelConfig& config;
    const Weights& weights;
    DeviceInfo gpu_info;
    DeviceWeights device_weights;  // stays empty on the CPU
    KVCache cache;                 // one cache for each device that runs the model
    DeviceKVCache device_cache;
    RunState state;
    std::unique_ptr<gpu::Decoder> gpu_decoder;
    DeviceRunState device_state;           // --perplexity's chunks on the GPU
    std::vector<float> downloaded_logits;  // (chunk, n_vocab), a chunk's from the GPU

    SideBySide side_by_side;
    NextTokenFn model_step;

    Runner(const Options& run_options, Device run_device, const ModelConfig& model_config,
           const Weights& model_weights, int context_limit)
        : device(run_device), options(run_options), config(model_config), weights(model_weights) {
        if (device == Device::Cuda) {
            gpu_info = device_info();
            upload();
        }
        make_caches(context_limit);
        if (device == Device::Cpu || options.check) set_up_cpu();
        if (device == Device::Cuda) start_decoder();

        side_by_side.on_cpu = [this](const std::vector<int32_t>& ids, std::vector<float>* logits) {
            return next_token(config, weights, ids, cache, state, logits);
        };
        side_by_side.on_gpu = [this](const std::vector<int32_t>& ids, std::vector<float>* logits) {
            return gpu_decoder->next_token(ids, logits);
        };
        model_step = device == Device::Cuda ? side_by_side.on_gpu : side_by_side.on_cpu;
        if (options.check)
            model_step = [this](const std::vector<int32_t>& ids, std::vector<float>* logits) {
                return side_by_side.step(ids, logits);
            };
    }
    Runner(const Runner&) = delete;  // its model steps point into it

    // The weights to the GPU, with a notice naming the quantized types converted to F16.
    void upload() {
        Timer upload_timer;
        std::set<std::string> converted;  // quantized types no kernel reads as blocks
        device_weights = upload_weights(weights, WeightPrecision::Half, [&](uint32_t type) {
            converted.insert(ggml_type_info(type).name);
        });
        std::fprintf(stderr,
                     "device: %s, %.1f GiB, peak %.0f GB/s | weights uploaded in %.1f ms: "
                     "%.1f MiB of device memory\n",
                     gpu_info.name.c_str(), gpu_info.total_memory / 1073741824.0,
                     gpu_info.peak_gb_per_s, upload_timer.elapsed_ms(),
                     device_bytes(device_weights) / 1048576.0);
        if (converted.empty()) return;
        std::string names;
        for (const std::string& name : converted) names += (names.empty() ? "" : ", ") + name;
        std::fprintf(stderr,
                     "notice: matrices of %s converted to F16 on the GPU: no kernel reads their "
                     "blocks, or a gate/up pair had two types\n",
                     names.c_str());
    }

    // One KV cache for each device that runs the model (both with --check), of context_limit
    // positions: F32 on the CPU, --cache-type on the GPU. Step 14: a model with recurrent layers
    // has the hybrid cache, whose states (fp32 on both) do not grow with the context.
    void make_caches(int context_limit) {
        const bool on_the_cpu = device == Device::Cpu || options.check;
        const char* gpu_type = options.cache_type == CacheType::F16 ? "F16" : "F32";
        if (device == Device::Cuda)
            device_cache = make_device_kv_cache(config, context_limit, options.cache_type);
        if (on_the_cpu) cache = make_kv_cache(config, context_limit);
        if (config.has_recurrent_layers()) {
            // What grows with the context and what does not, for each cache made.
            const size_t state = recurrent_state_bytes(config);
            if (device == Device::Cuda)
                print_hybrid_cache(
                    device_kv_cache_bytes(config, context_limit, options.cache_type) - state,
                    state, context_limit, strprintf("K and V in %s on the GPU", gpu_type));
            if (on_the_cpu)
                print_hybrid_cache(kv_cache_bytes(config, context_limit), state, context_limit,
                                   "K and V in F32 on the CPU");
            return;
        }
        std::string sizes;  // "F16, 112.00 MiB on the GPU; F32, 224.00 MiB on the CPU"
        if (device == Device::Cuda)
            sizes = strprintf(
                "%s, %.2f MiB on the GPU", gpu_type,
                device_kv_cache_bytes(config, context_limit, options.cache_type) / 1048576.0);
        if (on_the_cpu)
            sizes += strprintf("%sF32, %.2f MiB on the CPU", sizes.empty() ? "" : "; ",
                               kv_cache_bytes(config, context_limit) / 1048576.0);
        std::fprintf(stderr, "KV cache: %d positions x %u layers x %u values for K and V: %s\n",
                     context_limit, config.n_layers, config.n_kv_heads * config.head_dim,
                     sizes.c_str());
    }

    static void print_hybrid_cache(size_t kv_bytes, size_t state_bytes, int positions,
                                   const std::string& where) {
        std::fprintf(stderr, "cache: KV %.2f MB for %d positions + state %.2f MB, constant: %s\n",
                     kv_bytes / 1e6, positions, state_bytes / 1e6, where.c_str());
    }

    // The CPU's matrix products: 8-bit activations unless --f32-activations.
    void set_up_cpu() {
        state.int8_activations = options.int8_activations;
        std::fprintf(stderr, "cpu: %s\n",
                     options.int8_activations
                         ? strprintf("Q8_0/Q5_0/Q4_K/Q6_K matrices times 8-bit activations, "
                                     "%s integer dot products",
                                     dot_kernel_name(state.dot_kernel))
                               .c_str()
                         : "every matrix row turned into floats (--f32-activations)");
    }

    // The GPU's decoder: each new token's fused kernels, replayed as one CUDA graph (launched one
    // by one with --no-graph), each kernel starting while the one before it finishes where the GPU
    // can (not with --no-pdl).
    void start_decoder() {
        set_dependent_launch(options.use_pdl);  // before the Decoder captures its graph
        gpu_decoder =
            std::make_unique<gpu::Decoder>(config, device_weights, device_cache, options.use_graph);
        const char* pdl = dependent_launch_enabled() ? "with programmatic dependent launch"
                          : options.use_pdl ? "without programmatic dependent launch (the GPU is "
                                              "older than compute capability 9.0)"
                                            : "without programmatic dependent launch (--no-pdl)";
        std::fprintf(
            stderr, "decode: %d kernels per token, %s, %s\n",
            gpu::kernels_per_decode_step(config, device_weights),
            options.use_graph ? "replayed as one CUDA graph" : "launched one by one (--no-graph)",
            pdl);
    }

    // --perplexity: every position's logits of a chunk of new tokens, on the model's device.
    ChunkLogitsFn chunk_logits() {
        if (device == Device::Cpu) return cpu_chunk_logits(config, weights, cache, state);
        return [this](const std::vector<int32_t>& new_ids) {
            gpu::forward(config, device_weights, new_ids, device_cache, device_state,
                         LogitRows::All);
            downloaded_logits = device_state.logits.download();
            return static_cast<const float*>(downloaded_logits.data());
        };
    }

    // The end of the timing line: the GPU's bandwidth, or the CPU's thread count.
    std::string more_stats(const GenerationStats& stats) const {
        return device == Device::Cuda
                   ? gpu_throughput(stats, bytes_read_per_pass(device_weights), gpu_info)
                   : cpu_threads();
    }

    // Forgets every position from n on, in each cache (all of them for n = 0; step 14: a
    // recurrent state goes back only to 0, kv_cache.h).
    void keep_positions(int n) {
        ::keep_positions(cache, n);
        if (n == 0) device_cache.clear();
        else device_cache.n_filled = std::min(device_cache.n_filled, n);
    }

    // Step 14: whether the caches can forget the last positions (no recurrent state).
    bool can_rewind() const {
        return device == Device::Cuda ? device_cache.can_rewind() : cache.can_rewind();
    }

    void print_check_summary() const {
        if (options.check) side_by_side.print_summary();
    }
};

// --perplexity: the file's tokens, cut at the context limit, in chunks of kPerplexityChunk.
constexpr int kPerplexityChunk = 128;  // a chunk's logits: 128 x 151936 floats, 78 MB

static void run_perplexity(const std::string& path, int context_limit, const Tokenizer& tokenizer,
                           int n_vocab, const ChunkLogitsFn& run_chunk) {
    std::vector<int32_t> ids = tokenizer.encode(read_file_bytes(path));
    if (int(ids.size()) > context_limit) {
        std::fprintf(stderr, "perplexity: %s has %zu tokens; the first %d are used (-c)\n",
                     path.c_str(), ids.size(), context_limit);
        ids.resize(context_limit);
    }
    Timer timer;
    const bool on_terminal = isatty(fileno(stderr));
    const Perplexity result =
        perplexity(run_chunk, ids, n_vocab, kPerplexityChunk, [&](int n_run, int n_total) {
            if (on_terminal) std::fprintf(stderr, "\rperplexity: %d/%d tokens run", n_run, n_total);
        });
    if (on_terminal) std::fprintf(stderr, "\n");
    const double ms = timer.elapsed_ms();
    std::printf("%s\n", format_perplexity(result).c_str());
    // The last token is only predicted: n - 1 positions run.
    const size_t n_run = ids.size() - 1;
    std::fprintf(stderr, "prompt: %zu tokens in %.1f ms (%.1f tokens/s)\n", n_run, ms,
                 n_run * 1000.0 / ms);
}

// The sampling settings on stderr (the seed repeats a run), and the sampler they make.
static Sampler announce_sampler(const SamplerSettings& sampling) {
    std::fprintf(stderr,
                 "sampling: repeat-penalty %g (last %d), temp %g, top-k %d, top-p %g, "
                 "min-p %g, seed %llu\n",
                 sampling.repeat_penalty, sampling.repeat_last_n, sampling.temperature,
                 sampling.top_k, sampling.top_p, sampling.min_p, (unsigned long long)sampling.seed);
    return make_sampler(sampling);
}

// -i: a conversation on the caches, one user turn per line of stdin (chat.h).
static void run_chat_mode(const Options& options, Runner& runner, const Tokenizer& tokenizer,
                          const ChatTemplate& chat_template, int context_limit) {
    Sampler sampler = announce_sampler(options.sampling);
    ChatModel chat_model{runner.model_step, context_limit,
                         [&runner](int n) { runner.keep_positions(n); },
                         runner.can_rewind()};
    ChatSettings chat;
    chat.chat_template = chat_template;
    chat.system_prompt = options.system_prompt;
    chat.styled = isatty(fileno(stdout));
    chat.max_new_tokens = options.n_new;
    chat.echo_input = !isatty(fileno(stdin));  // piped turns appear in the transcript
    chat.more_stats = [&runner](const GenerationStats& stats) { return runner.more_stats(stats); };
    run_chat(chat_model, tokenizer, sampler, chat, std::cin, std::cout, std::cerr);
    runner.print_check_summary();
}

// Generates after the prompt, printing each token's text (or id, with --ids) as it comes, a
// thinking template's reasoning dimmed on a terminal, then the timing line on stderr.
static void run_generation(const Options& options, Runner& runner, const Tokenizer& tokenizer,
                           const ChatTemplate& chat_template, const std::vector<int32_t>& prompt,
                           int context_limit) {
    Sampler sampler = announce_sampler(options.sampling);
    StreamDecoder decoder(tokenizer);
    ReplyPrinter printer(chat_template.kind == TemplateKind::Qwen3Thinking, isatty(fileno(stdout)));
    std::vector<float> prompt_logits;  // (n_vocab) for --dump-logits
    bool first_id = true;
    GenerationStats stats = generate(
        runner.model_step, prompt, options.n_new, context_limit, sampler,  // the caches are empty
        [&](int32_t id) {
            if (tokenizer.is_end_of_generation(id)) return false;
            if (options.print_ids) std::printf(first_id ? "%d" : " %d", id);
            else std::fputs(printer.push(decoder.push(id)).c_str(), stdout);
            std::fflush(stdout);
            first_id = false;
            return true;
        },
        options.dump_logits_path.empty() ? nullptr : &prompt_logits);
    if (!options.print_ids)
        std::fputs((printer.push(decoder.flush()) + printer.finish()).c_str(), stdout);
    if (!first_id) std::printf("\n");
    std::fflush(stdout);  // the text before the timing line, also when stdout is a pipe
    if (!options.dump_logits_path.empty()) write_f32_le(options.dump_logits_path, prompt_logits);

    if (stats.context_full)
        std::fprintf(stderr,
                     "context full: all %d positions of the KV cache are used "
                     "(-c sets how many); generation stopped\n",
                     context_limit);
    // The first token comes from the prompt's pass (prefill); each later one costs a pass
    // over one position (decode), whose attention reads every cached position.
    std::fprintf(stderr, "%s%s\n", format_stats(stats).c_str(), runner.more_stats(stats).c_str());
    const std::string notice = stopped_by_limit_notice(stats);
    if (!notice.empty()) std::fprintf(stderr, "%s\n", notice.c_str());
    runner.print_check_summary();
}

int main(int argc, char** argv) {
    if (argc < 2) {
        print_usage(stderr);
        return 2;
    }
    if (wants_help(argc, argv)) {
        print_usage(stdout);
        return 0;
    }
    Options options;
    try {
        options = parse_options(argc, argv);
    } catch (const Error& error) {
        std::fprintf(stderr, "error: %s (see --help)\n", error.what());
        return 2;
    }

    try {
        if (options.tokenize) {
            print_prompt_ids(options);
            return 0;
        }
        // OpenMP's wait policy stays its default: a thread that finishes its share of a loop
        // spins a while before it sleeps, the faster choice when the machine has nothing else
        // to do. Where other work holds a core, the spinning threads wait for a thread that
        // cannot run, and sleeping at once (OMP_WAIT_POLICY=passive, which OpenMP reads before
        // main() starts) is many times faster: --help tells the user so.
        if (options.threads > 0) omp_set_num_threads(options.threads);
        Timer load_timer;
        GgufFile file = open_gguf(options.model_path);
        ModelConfig config = read_model_config(file.metadata);
        std::string why_no_gpu;
        const Device device = choose_device(options, why_no_gpu);
        Tokenizer tokenizer(read_vocabulary(file.metadata));
        const ChatTemplate chat_template = chat_template_of(options, file.metadata);
        const int context_limit = choose_context_limit(options, config);
        const std::vector<int32_t> prompt =
            encode_prompt(options, tokenizer, chat_template, context_limit);
        Weights weights = load_model_weights(file, config, load_timer);
        if (device == Device::Cpu && !why_no_gpu.empty())
            std::fprintf(stderr, "no CUDA device (%s): running on the CPU\n", why_no_gpu.c_str());
        Runner runner(options, device, config, weights, context_limit);
        if (!options.perplexity_path.empty())
            run_perplexity(options.perplexity_path, context_limit, tokenizer, weights.n_vocab,
                           runner.chunk_logits());
        else if (options.interactive)
            run_chat_mode(options, runner, tokenizer, chat_template, context_limit);
        else run_generation(options, runner, tokenizer, chat_template, prompt, context_limit);
    } catch (const Error& error) {
        std::fprintf(stderr, "error: %s\n", error.what());
        return 1;
    }
    return 0;
}
