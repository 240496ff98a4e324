"""The sampler is the policy: every generate call of training, rollouts and evaluation runs with
settings built here from the run's own config, never with a checkpoint's `generation_config`.

Why: Qwen-VL Instruct checkpoints ship `generation_config.json` with `repetition_penalty` 1.05
and near-greedy `top_k`/`top_p`. transformers fills every setting a caller leaves unset (None)
from the model's `generation_config`, so a trainer that passes only temperature and top_p
silently samples from a different distribution than the one its log-probs describe: the
policy-gradient estimate is biased. Here every logits-changing setting is explicit and the
model's own `generation_config` is swapped for a neutral one (token ids only) for the call, so
nothing can be inherited (docs/grpo.md, "The sampler is the policy")."""
from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass

from mvp_core.errors import UserError

# Defaults shared by `mvp train`, `mvp rollout` and `mvp eval` (TRL's GRPOConfig defaults).
DEFAULT_TEMPERATURE = 1.0
DEFAULT_TOP_P = 1.0
DEFAULT_TOP_K = 0               # 0 = off
DEFAULT_MIN_P = 0.0             # 0 = off
DEFAULT_REPETITION_PENALTY = 1.0


@dataclass(frozen=True)
class Range:
    """An allowed interval: the one definition of a sampler setting's range, read by the training
    configs' fields (`field_bounds`, checked by pydantic) and by SamplerSettings (CLI flags, the UI)."""
    lo: float
    hi: float
    lo_open: bool = False
    hi_open: bool = False
    note: str = ""

    def contains(self, v) -> bool:
        return (self.lo < v if self.lo_open else self.lo <= v) and (v < self.hi if self.hi_open else v <= self.hi)

    def field_bounds(self) -> dict:
        return {("gt" if self.lo_open else "ge"): self.lo, ("lt" if self.hi_open else "le"): self.hi}

    def rule(self) -> str:
        return (f"in {'(' if self.lo_open else '['}{_num(self.lo)}, {_num(self.hi)}{')' if self.hi_open else ']'}"
                + (f" ({self.note})" if self.note else ""))


def _num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else f"{x:g}"


# The sampler's ranges, once. Temperature and repetition penalty: the float32 logits are divided by
# them, so near 0 they overflow to inf and sampling fails mid-run; the upper caps turn a typo into an
# error, far above any useful value.
RANGES = {
    "temperature": Range(1e-3, 10.0),
    "top_p": Range(0.0, 1.0, lo_open=True, note="1: off"),
    "top_k": Range(0, 1_000_000, note="0: off"),
    "min_p": Range(0.0, 1.0, hi_open=True, note="0: off"),
    "repetition_penalty": Range(1e-3, 10.0, note="1: off"),
}


@dataclass(frozen=True)
class SamplerSettings:
    """What shapes the next-token distribution. The training log-probs divide the logits by
    `temperature` and apply nothing else, so exact on-policy training needs top_k=0, top_p=1,
    min_p=0 and repetition_penalty=1 (the defaults); other values are allowed, recorded, and
    flagged in a training run (`off_policy_settings`)."""
    temperature: float = DEFAULT_TEMPERATURE
    top_p: float = DEFAULT_TOP_P
    top_k: int = DEFAULT_TOP_K
    min_p: float = DEFAULT_MIN_P
    repetition_penalty: float = DEFAULT_REPETITION_PENALTY
    do_sample: bool = True
    max_new_tokens: int = 128

    def __post_init__(self):
        # CLI flags and the UI end here (the training configs check the same RANGES through their
        # fields); transformers would otherwise fail mid-run with a traceback, or ignore top_p > 1
        bad = [f"{name} must be {r.rule()}, got {getattr(self, name)!r}" for name, r in RANGES.items()
               if not r.contains(getattr(self, name))]
        if self.max_new_tokens < 1:
            bad.append(f"max_new_tokens must be >= 1, got {self.max_new_tokens!r}")
        if bad:
            raise UserError("; ".join(bad))

    @classmethod
    def from_config(cls, cfg, do_sample: bool = True) -> "SamplerSettings":
        """From a training config (GRPO or SFT): its sampler fields, defaults where it has none."""
        return cls(temperature=float(getattr(cfg, "temperature", DEFAULT_TEMPERATURE)),
                   top_p=float(getattr(cfg, "top_p", DEFAULT_TOP_P)),
                   top_k=int(getattr(cfg, "top_k", DEFAULT_TOP_K) or 0),
                   min_p=float(getattr(cfg, "min_p", DEFAULT_MIN_P) or 0.0),
                   repetition_penalty=float(getattr(cfg, "repetition_penalty", DEFAULT_REPETITION_PENALTY)),
                   do_sample=do_sample, max_new_tokens=int(cfg.max_completion_length))

    def off_policy_settings(self) -> list[str]:
        """The settings (as name=value) that make sampled tokens' probabilities differ from
        softmax(logits / temperature), the policy the training log-probs describe; [] when exact."""
        return [f"{name}={value:g}" for name, value, off in (
            ("top_p", self.top_p, self.top_p < 1.0), ("top_k", self.top_k, self.top_k != 0),
            ("min_p", self.min_p, self.min_p != 0.0),
            ("repetition_penalty", self.repetition_penalty, self.repetition_penalty != 1.0)) if off]

    def is_exact_policy(self) -> bool:
        """True when sampled tokens' probabilities are exactly softmax(logits / temperature)."""
        return not self.off_policy_settings()


def token_ids(model) -> dict:
    """eos / pad / bos ids from the model's generation_config (the only fields taken from it)."""
    gc = model.generation_config
    return {"eos_token_id": gc.eos_token_id, "pad_token_id": gc.pad_token_id, "bos_token_id": gc.bos_token_id}


def generation_config(s: SamplerSettings, model, **token_overrides):
    """A complete GenerationConfig: every setting that changes the logits is set explicitly."""
    from transformers import GenerationConfig
    ids = {**token_ids(model), **{k: v for k, v in token_overrides.items() if v is not None}}
    common = dict(max_new_tokens=s.max_new_tokens, num_beams=1, min_new_tokens=0, no_repeat_ngram_size=0,
                  encoder_repetition_penalty=1.0, repetition_penalty=s.repetition_penalty, **ids)
    if s.do_sample:
        return GenerationConfig(do_sample=True, temperature=s.temperature, top_p=s.top_p, top_k=s.top_k,
                                min_p=s.min_p or None, typical_p=1.0, epsilon_cutoff=0.0, eta_cutoff=0.0,
                                **common)
    # greedy: sampling flags unset (the neutral generation_config has none to fill them from)
    return GenerationConfig(do_sample=False, **common)


@contextmanager
def neutral_generation_config(model):
    """For the duration: the model's generation_config holds token ids only, so a generate call
    cannot fill an unset setting from the checkpoint's file."""
    from transformers import GenerationConfig
    old = model.generation_config
    model.generation_config = GenerationConfig(**{k: v for k, v in token_ids(model).items() if v is not None})
    try:
        yield
    finally:
        model.generation_config = old


def placeholder_token_ids(model) -> list[int]:
    """Vision placeholder tokens a completion must never contain: in the training forward an
    emitted <|image_pad|> would be taken for an image slot (and the forward fails)."""
    cfg = getattr(model, "config", None)
    names = ("image_token_id", "video_token_id", "vision_start_token_id", "vision_end_token_id")
    return [int(getattr(cfg, n)) for n in names if getattr(cfg, n, None) is not None]


def sample(model, inputs: dict, s: SamplerSettings, **kwargs):
    """`model.generate(**inputs)` under `s` and nothing else, the vision placeholders suppressed
    (training, rollouts and evaluation alike). kwargs go to generate (e.g.
    num_return_sequences, output_scores); pad_token_id / eos_token_id replace the model's (training
    stops on model_setup.end_ids, the rule SFT targets end with)."""
    gc = generation_config(s, model, pad_token_id=kwargs.pop("pad_token_id", None),
                           eos_token_id=kwargs.pop("eos_token_id", None))
    gc.suppress_tokens = placeholder_token_ids(model) or None
    for key in ("num_return_sequences", "output_scores", "output_logits",
                "return_dict_in_generate", "use_cache"):
        if key in kwargs:
            setattr(gc, key, kwargs.pop(key))
    with neutral_generation_config(model):
        return model.generate(**inputs, generation_config=gc, **kwargs)
