"""The independent oracle for step05: a Hugging Face Qwen2ForCausalLM (fp32, eager attention)
holding the weights of a GGUF file.

Used by tools/make_logit_fixtures.py and tools/compare_logits.py. Nothing here reads our C++
code: the config comes from the GGUF metadata through gguf-py, every tensor is dequantized by
gguf-py, and transformers does the arithmetic.

    from transformers_reference import load_reference_model
    model = load_reference_model("models/tiny-qwen2.gguf")
"""

import numpy as np
import torch
from gguf import GGUFReader
from gguf.quants import dequantize
from transformers import Qwen2Config, Qwen2ForCausalLM

# GGUF tensor name (after "blk.N.") -> HF parameter name (after "model.layers.N.").
LAYER_TENSORS = {
    "attn_norm.weight": "input_layernorm.weight",
    "attn_q.weight": "self_attn.q_proj.weight",
    "attn_q.bias": "self_attn.q_proj.bias",
    "attn_k.weight": "self_attn.k_proj.weight",
    "attn_k.bias": "self_attn.k_proj.bias",
    "attn_v.weight": "self_attn.v_proj.weight",
    "attn_v.bias": "self_attn.v_proj.bias",
    "attn_output.weight": "self_attn.o_proj.weight",
    "ffn_norm.weight": "post_attention_layernorm.weight",
    "ffn_gate.weight": "mlp.gate_proj.weight",
    "ffn_up.weight": "mlp.up_proj.weight",
    "ffn_down.weight": "mlp.down_proj.weight",
}
GLOBAL_TENSORS = {
    "token_embd.weight": "model.embed_tokens.weight",
    "output_norm.weight": "model.norm.weight",
    "output.weight": "lm_head.weight",
}


def metadata_value(reader, key, default=None):
    field = reader.fields.get(key)
    if field is None:
        if default is None:
            raise KeyError(f"metadata key '{key}' is missing")
        return default
    return field.contents()


def hf_name(gguf_name):
    if gguf_name in GLOBAL_TENSORS:
        return GLOBAL_TENSORS[gguf_name]
    _, layer, rest = gguf_name.split(".", 2)  # "blk", "N", "attn_q.weight"
    return f"model.layers.{layer}.{LAYER_TENSORS[rest]}"


def read_config(reader):
    """A Qwen2Config built only from the GGUF metadata (and the embedding's row count)."""
    arch = metadata_value(reader, "general.architecture")
    if arch != "qwen2":
        raise ValueError(f"architecture {arch!r} is not qwen2")
    tensors = {t.name: t for t in reader.tensors}
    n_vocab = int(tensors["token_embd.weight"].shape[1])  # GGUF shape is [d_model, n_vocab]
    n_heads = metadata_value(reader, "qwen2.attention.head_count")
    return Qwen2Config(
        vocab_size=n_vocab,
        hidden_size=metadata_value(reader, "qwen2.embedding_length"),
        intermediate_size=metadata_value(reader, "qwen2.feed_forward_length"),
        num_hidden_layers=metadata_value(reader, "qwen2.block_count"),
        num_attention_heads=n_heads,
        num_key_value_heads=metadata_value(reader, "qwen2.attention.head_count_kv", n_heads),
        max_position_embeddings=metadata_value(reader, "qwen2.context_length"),
        rope_theta=float(metadata_value(reader, "qwen2.rope.freq_base", 10000.0)),
        rms_norm_eps=float(metadata_value(reader, "qwen2.attention.layer_norm_rms_epsilon")),
        tie_word_embeddings="output.weight" not in tensors,
        hidden_act="silu",
        use_sliding_window=False,
        attn_implementation="eager",
        torch_dtype=torch.float32,
    )


def load_reference_model(gguf_path):
    """Qwen2ForCausalLM in fp32 with the GGUF's weights, dequantized by gguf-py.

    The model is built on the meta device and each tensor is assigned as it is dequantized, so
    peak memory is about the fp32 model itself (4 bytes per weight)."""
    reader = GGUFReader(gguf_path)
    config = read_config(reader)
    with torch.device("meta"):
        model = Qwen2ForCausalLM(config)
    state = {}
    for tensor in reader.tensors:
        # gguf-py returns the PyTorch shape: ne reversed, e.g. [out, in] for a Linear weight.
        # A writable float32 copy: F32 tensors would otherwise be views of the read-only map.
        values = np.array(dequantize(tensor.data, tensor.tensor_type), dtype=np.float32)
        state[hf_name(tensor.name)] = torch.from_numpy(values)
    if config.tie_word_embeddings:
        state["lm_head.weight"] = state["model.embed_tokens.weight"]
    missing, unexpected = model.load_state_dict(state, strict=False, assign=True)
    missing = [name for name in missing if "rotary_emb" not in name]
    if missing or unexpected:
        raise ValueError(f"weights do not match the model: missing {missing}, unexpected {unexpected}")
    if config.tie_word_embeddings:
        model.tie_weights()
    # The rotary embedding's inv_freq buffer was created on the meta device and is not in the
    # file: build that module again, for real, from the same config.
    for parent in list(model.modules()):
        for child_name, child in parent.named_children():
            if type(child).__name__.endswith("RotaryEmbedding"):
                setattr(parent, child_name, type(child)(config))
    model.eval()
    return model


@torch.no_grad()
def all_logits(model, ids):
    """(len(ids), n_vocab) float32 logits for every position."""
    return model(torch.tensor([ids], dtype=torch.long)).logits[0].float().numpy()


@torch.no_grad()
def greedy(model, ids, n_new):
    """n_new greedy tokens, re-running the whole sequence each time and never stopping at an
    end-of-generation token. Also returns, per step, the gap between the best and second-best
    logit, so a caller can refuse a fixture whose choice hinges on rounding."""
    sequence = list(ids)
    chosen, gaps = [], []
    for _ in range(n_new):
        logits = model(torch.tensor([sequence], dtype=torch.long)).logits[0, -1]
        top2 = torch.topk(logits, 2)
        next_id = int(torch.argmax(logits))
        sequence.append(next_id)
        chosen.append(next_id)
        gaps.append(float(top2.values[0] - top2.values[1]))
    return chosen, gaps
