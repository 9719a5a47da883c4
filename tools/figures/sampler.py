"""sampler.py - step 8's sampler pipeline (sampler_pipeline), computed with the program's own
generator (std::mt19937_64) and filters on a made-up set of logits.
"""
import math

from matplotlib.patches import FancyArrowPatch, Rectangle

from style import BLUE, GREY, INK, LIGHT_BLUE, LIGHT_GREY, RED, plt

# ---- sampler_pipeline ----

SAMPLER_TOKENS = ["mat", "floor", "sofa", "bed", "cat", "chair", "rug", "table", "the", "roof",
                  "grass", "moon"]
SAMPLER_LOGITS = [4.0, 3.5, 3.1, 2.8, 2.6, 2.3, 1.9, 1.5, 1.0, 0.6, 0.2, -0.6]
SAMPLER_RECENT = {"cat", "the", "moon"}  # tokens the sequence already holds
SAMPLER_SETTINGS = {"repeat_penalty": 1.5, "temperature": 0.7, "top_k": 8, "top_p": 0.85,
                    "min_p": 0.2, "seed": 42}


class Mt19937_64:
    """std::mt19937_64, whose output sequence for a seed the C++ standard fixes (the constants
    are the standard's), so the picture's draw is the one sampler.cpp makes with that seed."""
    WORDS, SHIFT = 312, 156
    MASK = (1 << 64) - 1
    LOWER = (1 << 31) - 1
    UPPER = MASK ^ LOWER

    def __init__(self, seed):
        self.state = [seed & self.MASK]
        for i in range(1, self.WORDS):
            previous = self.state[-1]
            self.state.append((6364136223846793005 * (previous ^ (previous >> 62)) + i)
                              & self.MASK)
        self.index = self.WORDS

    def __call__(self):
        if self.index == self.WORDS:
            for i in range(self.WORDS):
                bits = ((self.state[i] & self.UPPER)
                        | (self.state[(i + 1) % self.WORDS] & self.LOWER))
                twisted = (bits >> 1) ^ (0xB5026F5AA96619E9 if bits & 1 else 0)
                self.state[i] = self.state[(i + self.SHIFT) % self.WORDS] ^ twisted
            self.index = 0
        y = self.state[self.index]
        self.index += 1
        y ^= (y >> 29) & 0x5555555555555555
        y ^= (y << 17) & 0x71D67FFFEDA60000
        y ^= (y << 37) & 0xFFF7EEE000000000
        return (y ^ (y >> 43)) & self.MASK


def softmax(logits):
    largest = max(logits)
    weights = [math.exp(x - largest) for x in logits]
    return [w / sum(weights) for w in weights]


def sampler_stages():
    """[(title, {token index: probability}, kept token indices)] for each stage, as sample_token
    runs them; the stages before top-k show the softmax of the logits so far, for comparison."""
    s = SAMPLER_SETTINGS
    everyone = range(len(SAMPLER_TOKENS))

    def as_shown(logits):
        return dict(zip(everyone, softmax(logits)))

    stages = [("1  model logits\n(softmax shown)", as_shown(SAMPLER_LOGITS), set(everyone))]

    penalized = [(x / s["repeat_penalty"] if x > 0 else x * s["repeat_penalty"])
                 if token in SAMPLER_RECENT else x
                 for token, x in zip(SAMPLER_TOKENS, SAMPLER_LOGITS)]
    stages.append((f"2  repetition penalty\n{s['repeat_penalty']} on recent tokens",
                   as_shown(penalized), set(everyone)))
    tempered = [x / s["temperature"] for x in penalized]
    stages.append((f"3  temperature\nlogits / {s['temperature']}", as_shown(tempered),
                   set(everyone)))

    # sorted_candidates: most likely first, ties to the lower id; then softmax over the top k.
    order = sorted(everyone, key=lambda i: (-tempered[i], i))[:s["top_k"]]
    probability = dict(zip(order, softmax([tempered[i] for i in order])))
    stages.append((f"4  top-k {s['top_k']}, then\nsoftmax over them", probability, set(order)))

    mass, kept = 0.0, 0
    while kept < len(order) and mass < s["top_p"]:
        mass += probability[order[kept]]
        kept += 1
    order = order[:max(kept, 1)]
    stages.append((f"5  top-p {s['top_p']}\n(no renormalizing)", probability, set(order)))

    threshold = s["min_p"] * probability[order[0]]
    kept = 1
    while kept < len(order) and probability[order[kept]] >= threshold:
        kept += 1
    order = order[:kept]
    stages.append((f"6  min-p {s['min_p']}\n>= {threshold:.3f} (= {s['min_p']} x best)",
                   probability, set(order)))

    # draw: one uniform number, scaled by what is left, walks the cumulative probabilities.
    uniform = (Mt19937_64(s["seed"])() >> 11) * 2.0 ** -53
    total = sum(probability[i] for i in order)
    cumulative, chosen = 0.0, order[-1]
    for i in order:
        cumulative += probability[i]
        if uniform * total < cumulative:
            chosen = i
            break
    renormalized = {i: probability[i] / total for i in order}
    stages.append((f"7  draw, --seed {s['seed']}\n(shown renormalized)", renormalized,
                   set(order)))
    return stages, chosen, uniform


def sampler_pipeline():
    stages, chosen, uniform = sampler_stages()
    fig, axes = plt.subplots(1, len(stages), figsize=(12, 4.6), sharey=True)
    fig.subplots_adjust(left=0.06, right=0.99, top=0.74, bottom=0.17, wspace=0.16)
    fig.text(0.01, 0.96, "sample_token's stages, in sampler.cpp's order, on twelve made-up "
             "logits", fontsize=12, fontweight="bold", va="center")
    fig.text(0.01, 0.9, f"Tokens already in the sequence (*): "
             f"{', '.join(sorted(SAMPLER_RECENT))}. The settings are exaggerated so that every "
             "stage acts; step 8's defaults are penalty 1.05, temperature 0.7, top-k 20, "
             "top-p 0.8, min-p 0.", fontsize=8.5, va="center")
    rows = range(len(SAMPLER_TOKENS))
    kept_before = set(rows)
    for ax, (title, probability, kept) in zip(axes, stages):
        for row in rows:
            if row in kept:
                face = RED if ax is axes[-1] and row == chosen else BLUE
                ax.barh(row, probability[row], color=face, height=0.72)
                ax.text(probability[row] + 0.03, row, f"{probability[row]:.2f}", va="center",
                        fontsize=7)
            elif row in kept_before:  # this stage removes it
                ax.barh(row, probability.get(row, 0.0), color=LIGHT_GREY, height=0.72)
                ax.text(probability.get(row, 0.0) + 0.03, row, "out", va="center", fontsize=7,
                        color=GREY)
        kept_before = kept
        ax.set_title(title, fontsize=8.5, loc="left", pad=6, linespacing=1.3)
        ax.set_xlim(0, 1.0)
        ax.set_xticks([0, 0.5, 1])
        ax.set_xticklabels(["0", "0.5", "1"], fontsize=7.5)
        ax.tick_params(axis="y", length=0)
        for side in ("top", "right"):
            ax.spines[side].set_visible(False)
    axes[0].set_yticks(list(rows))
    labels = [f"{token} *" if token in SAMPLER_RECENT else token for token in SAMPLER_TOKENS]
    axes[0].set_yticklabels(labels, fontsize=8.5, family="monospace")
    axes[0].invert_yaxis()

    # The draw as the code does it: u against the cumulative probabilities of what is left.
    draw_axes, (_, renormalized, _) = axes[-1], stages[-1]
    strip_top, strip_height, left = 6.0, 0.9, 0.0
    draw_axes.text(0, strip_top - 0.45, "cumulative:", fontsize=7.5, va="center")
    for token, share in renormalized.items():
        draw_axes.add_patch(Rectangle((left, strip_top), share, strip_height,
                                      facecolor=RED if token == chosen else LIGHT_BLUE,
                                      edgecolor="white", linewidth=1.0))
        draw_axes.text(left + share / 2, strip_top + strip_height + 0.45, SAMPLER_TOKENS[token],
                       ha="center", va="center", fontsize=6.5, rotation=90 if share < 0.2 else 0)
        left += share
    draw_axes.plot([uniform, uniform], [strip_top - 0.15, strip_top + strip_height + 0.15],
                   color=INK, linewidth=1.2)
    draw_axes.text(uniform, strip_top + strip_height + 1.45, f"u = {uniform:.3f}\n"
                   f"falls in {SAMPLER_TOKENS[chosen]}", ha="center", va="top", fontsize=7.5,
                   color=RED)

    fig.text(0.06, 0.045, "Bars: probability. In stages 1 to 3 it is the softmax of the logits "
             "so far, for comparison: the code computes probabilities from stage 4 on.\n"
             "Stages 5 and 6 only cut the list; the draw scales u by the sum of what is left, "
             "which is the same as renormalizing.", fontsize=8, va="center", linespacing=1.4)
    for left_axes, right_axes in zip(axes[:-1], axes[1:]):  # from each stage to the next
        start, end = left_axes.get_position(), right_axes.get_position()
        middle = (start.y0 + start.y1) / 2
        fig.patches.append(FancyArrowPatch((start.x1 - 0.006, middle), (end.x0 - 0.002, middle),
                                           transform=fig.transFigure, arrowstyle="-|>",
                                           mutation_scale=9, color=GREY, linewidth=1.0))
    return fig
