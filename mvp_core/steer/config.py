"""Settings for energy steering (docs/steer.md): collection, energy models and steering.

Defaults are the published ELS settings where it has them (hidden 2048-1024-1024-512, dropout 0.15,
InfoNCE tau 0.1, Adam 5e-5, batch 64, 120 epochs); the rest are this project's additions (splits,
calibrated threshold, gate, balanced sampling)."""
from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from mvp_core.config import DocumentedConfig


class CollectConfig(DocumentedConfig):
    """How hidden states are read from a decoder."""
    batch_size: int = Field(16, ge=1, le=4096, description="prompts per forward pass (left-padded)")
    max_length: int | None = Field(
        None, ge=1, description="truncate prompts to this many tokens, cutting from the LEFT: the end of the prompt "
                                "(the assistant turn marker, whose last token is the state read) is kept "
                                "(None: keep all)")
    system: str | None = Field(None, description="system message for the chat template (None: the template's default)")
    enable_thinking: bool = Field(False, description="Qwen3-family templates: build prompts with thinking on (off, "
                                                     "as in the published steering code: an empty closed think "
                                                     "block after the assistant marker); other templates ignore it")


class EnergyConfig(DocumentedConfig):
    """One MLP energy per layer, trained with InfoNCE (good states low, bad states high)."""
    hidden: list[int] = Field([2048, 1024, 1024, 512], min_length=1, max_length=8,
                              description="hidden sizes; each is Linear -> LayerNorm -> SiLU -> Dropout")
    dropout: float = Field(0.15, ge=0.0, lt=1.0, description="dropout after each hidden block (training only)")
    tau: float = Field(0.1, gt=0.0, le=10.0, description="InfoNCE temperature: logits are -E / tau")
    lr: float = Field(5e-5, gt=0.0, le=1.0, description="Adam learning rate")
    batch_size: int = Field(64, ge=2, le=65536, description="states per InfoNCE batch (good and bad together)")
    epochs: int = Field(120, ge=1, le=100000, description="passes over the training split; the best epoch by "
                                                          "validation balanced accuracy is kept")
    val_frac: float = Field(0.15, gt=0.0, lt=0.5, description="share of states for validation (threshold, "
                                                               "best epoch, layer ranking)")
    test_frac: float = Field(0.15, gt=0.0, lt=0.5, description="share of states held out for the test report")
    seed: int = Field(0, ge=0, description="seed for splits, initialisation and batch order")


class SteerConfig(DocumentedConfig):
    """Inference-time steering: K normalised gradient steps on the top-k layers' input states."""
    top_k: int = Field(3, ge=1, le=512, description="steer the k layers ranked best by validation balanced "
                                                                "accuracy (ties: validation AUROC)")
    layers: list[int] | None = Field(None, description="explicit layer indices (overrides top_k)")
    eta: float = Field(0.5, gt=0.0, le=100.0, description="step size of h <- h - eta * g / (||g|| + 1e-8)")
    steps: int = Field(5, ge=1, le=1000, description="K: gradient steps per layer per forward call")
    positions: Literal["every", "prompt"] = Field(
        "every", description="every: steer position -1 of every forward call, i.e. the last prompt token "
                             "and each generated token (published); prompt: only forward calls over more "
                             "than one position (the prefill with the KV cache), i.e. only the last prompt "
                             "token, the state the energies were trained on; generated tokens then attend "
                             "to the steered prompt without being moved themselves")
    gate: Literal["off", "entry", "while"] = Field(
        "off", description="off: steer every row (published); entry: steer a row (K steps on every chosen "
                           "layer) only if its state entering the first chosen layer is above that layer's "
                           "calibrated threshold; while: step a row "
                           "only while its energy stays above the threshold")
    force_bank: bool = Field(
        False, description="apply the bank to a model other than the one it was trained on (its fingerprint "
                           "differs, or the bank records none); off: refused with one line. A bank of another "
                           "hidden size or layer count is refused regardless. Never stored in a bank")


def parse_layers(text: str | None) -> list[int] | None:
    """Explicit layers as people type them ("2,3", " 2 3 "); empty means none (rank by top_k).
    The one reading of `mvp steer --layers` and the Rollouts page's layers field."""
    parts = [x for x in re.split(r"[,\s]+", text or "") if x]
    if not parts:
        return None
    try:
        return [int(x) for x in parts]
    except ValueError:
        raise ValueError(f"layers must be whole numbers separated by commas, got {text!r}") from None


class SplitMetrics(BaseModel):
    """How well one layer's energy separates good from bad states. The classes are usually of unequal
    size, so the threshold, the best epoch and the ranking use balanced accuracy (mean recall of the two
    classes) and AUROC; plain accuracy is kept beside them (docs/steer.md)."""
    model_config = ConfigDict(extra="forbid")
    layer: int = Field(..., ge=0, description="decoder layer index (its input state)")
    best_epoch: int = Field(..., ge=0, description="epoch kept (by validation balanced accuracy)")
    threshold: float = Field(..., description="energy above which a state is called bad (calibrated on val "
                                              "for balanced accuracy; the gate uses it)")
    val_bal_acc: float = Field(..., ge=0.0, le=1.0, description="validation balanced accuracy at the threshold "
                                                                "(ranks the layers)")
    val_auroc: float = Field(..., ge=0.0, le=1.0, description="validation AUROC of energy for bad vs good "
                                                              "(breaks ranking ties)")
    test_bal_acc: float = Field(..., ge=0.0, le=1.0, description="test balanced accuracy at the validation "
                                                                 "threshold")
    test_auroc: float = Field(..., ge=0.0, le=1.0, description="test AUROC of energy for bad vs good")
    val_acc: float = Field(..., ge=0.0, le=1.0, description="validation plain accuracy at the threshold")
    test_acc: float = Field(..., ge=0.0, le=1.0, description="test plain accuracy at the validation threshold")
    val_acc_e0: float = Field(..., ge=0.0, le=1.0, description="validation plain accuracy at E = 0 (the "
                                                               "published rule)")
    n_train: int = Field(..., ge=0, description="training states")
    n_val: int = Field(..., ge=0, description="validation states")
    n_test: int = Field(..., ge=0, description="test states")
