"""hybrid.py - step 14's picture: what Qwen3.5's hybrid cache costs against the context length.

hybrid_cache_memory: for the published shapes of Qwen3.5-0.8B, 4B and 9B (their config.json:
layers, attention KV heads of head_dim, Gated DeltaNet key and value heads of 128, conv kernel 4,
every 4th layer attention), the bytes of
  - the KV cache of the attention layers: 2 (K and V) x attention layers x positions x KV heads x
    head_dim x 2 bytes (F16, the GPU cache's default; the CPU's F32 cache is twice that),
  - the Gated DeltaNet layers' states: per layer the conv window, (kernel - 1) x (2 Hk dk + Hv dv)
    floats, and Hv states of dk x dv floats, all fp32, whatever the number of positions,
  - the KV cache the same model would need if every layer were attention (dotted),
as step14_qwen35_hybrid/kv_cache.cpp counts them (kv_cache_bytes, recurrent_state_bytes), on
log-log axes from 1,024 to 262,144 positions. 4B and 9B differ in width and FFN only, so their
caches are the same size: one line for both.
"""
import math

import matplotlib.ticker

from style import BLUE, DARK_ORANGE, GREY, INK, ORANGE, plt, thousands

# name -> layers, attention KV heads, head_dim, DeltaNet key heads, value heads, dk, dv, conv kernel
QWEN35_SHAPES = {
    "0.8B": dict(layers=24, kv_heads=2, head_dim=256, key_heads=16, value_heads=16, dk=128, dv=128,
                 kernel=4),
    "4B and 9B": dict(layers=32, kv_heads=4, head_dim=256, key_heads=16, value_heads=32, dk=128,
                      dv=128, kernel=4),
}
FULL_ATTENTION_INTERVAL = 4
KV_BYTES = 2    # F16
STATE_BYTES = 4  # fp32


def attention_layers(shape):
    return sum(1 for i in range(shape["layers"]) if (i + 1) % FULL_ATTENTION_INTERVAL == 0)


def kv_bytes(shape, positions, n_layers):
    return 2 * n_layers * positions * shape["kv_heads"] * shape["head_dim"] * KV_BYTES


def state_bytes(shape):
    channels = 2 * shape["key_heads"] * shape["dk"] + shape["value_heads"] * shape["dv"]
    per_layer = (shape["kernel"] - 1) * channels + shape["value_heads"] * shape["dk"] * shape["dv"]
    return (shape["layers"] - attention_layers(shape)) * per_layer * STATE_BYTES


def megabytes(n):
    return f"{n / 1e9:.1f} GB" if n >= 1e9 else f"{n / 1e6:.1f} MB"


def axis_bytes(n):
    return f"{n / 1e9:g} GB" if n >= 1e9 else f"{n / 1e6:g} MB"


def hybrid_cache_memory():
    fig, ax = plt.subplots(figsize=(8.2, 4.6))
    fig.subplots_adjust(left=0.10, right=0.80, top=0.86, bottom=0.12)
    positions = [2 ** p for p in range(10, 19)]  # 1,024 .. 262,144
    # Scales and limits first: the labels along the lines take their angle on the screen.
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlim(positions[0], positions[-1])
    ax.set_ylim(8e6, 6e10)
    for (name, shape), color, text_color in zip(QWEN35_SHAPES.items(), (BLUE, ORANGE),
                                                (BLUE, DARK_ORANGE)):
        n_attention = attention_layers(shape)
        kv = [kv_bytes(shape, n, n_attention) for n in positions]
        every_layer = [kv_bytes(shape, n, shape["layers"]) for n in positions]
        state = state_bytes(shape)
        ax.plot(positions, kv, color=color, linewidth=2.0)
        ax.plot(positions, every_layer, color=color, linewidth=1.0, linestyle=":")
        ax.plot(positions, [state] * len(positions), color=color, linewidth=2.0, linestyle="--")
        # Where the KV cache of the attention layers overtakes the states.
        crossing = state / kv_bytes(shape, 1, n_attention)
        ax.plot([crossing], [state], marker="o", color=color, markersize=4)
        ax.annotate(f"KV = state at {thousands(round(crossing))} positions", (crossing, state),
                    xytext=(6, -13), textcoords="offset points", fontsize=8, color=text_color)
        right = positions[-1] * 1.15
        ax.text(right, kv[-1], f"{name}: KV of {n_attention} attention layers\n"
                f"{megabytes(kv[-1])} at {thousands(positions[-1])}", va="center", fontsize=8,
                color=text_color)
        # The dotted line's label along it, above its left end.
        start, end = positions[0] * 1.1, positions[2]
        (x0, y0), (x1, y1) = ax.transData.transform(
            [(start, kv_bytes(shape, start, shape["layers"])),
             (end, kv_bytes(shape, end, shape["layers"]))])
        ax.annotate(f"{name}, if all {shape['layers']} layers were attention: "
                    f"{megabytes(every_layer[-1])} at {thousands(positions[-1])}",
                    (start, kv_bytes(shape, start, shape["layers"])), xytext=(0, 4),
                    textcoords="offset points", rotation=math.degrees(math.atan2(y1 - y0, x1 - x0)),
                    rotation_mode="anchor", fontsize=7.5, color=text_color)
        ax.text(right, state, f"{name}: states of {shape['layers'] - n_attention} DeltaNet\n"
                f"layers, {megabytes(state)}, constant", va="center", fontsize=8, color=text_color)
    ax.xaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(
        lambda x, _: f"{x / 1024:.0f}K" if x >= 1024 else f"{x:.0f}"))
    ax.yaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda y, _: axis_bytes(y)))
    ax.set_xlabel("context (positions)")
    ax.set_ylabel("cache memory (log scale)")
    ax.grid(True, which="major", color=GREY, linewidth=0.3)
    fig.suptitle("Qwen3.5's hybrid cache: the KV cache grows with the context, the state does not",
                 fontsize=10, color=INK)
    ax.set_title("solid: KV (F16) of the attention layers, every 4th; dashed: the Gated DeltaNet "
                 "states (fp32); dotted: KV if every layer were attention", fontsize=7.5, color=INK)
    return fig
