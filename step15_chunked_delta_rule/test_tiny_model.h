// test_tiny_model.h - the built-in tiny model, opened once by each check file that runs it.
// The weights point into the file's mapping, so the file stays open with them.
#pragma once

#include "gguf_tensors.h"
#include "model_config.h"
#include "weights.h"

struct LoadedModel {
    GgufFile file;
    ModelConfig config;
    Weights weights;
};

inline const LoadedModel& tiny_model() {
    static const LoadedModel model = [] {
        LoadedModel m;
        m.file = open_gguf("models/tiny-qwen2.gguf");
        m.config = read_model_config(m.file.metadata);
        m.weights = load_weights(m.file, m.config);
        return m;
    }();
    return model;
}
