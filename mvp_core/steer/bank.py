"""A trained set of per-layer energy models with its calibration, saved as one file.

The file (torch.save, loaded with weights_only=True: tensors and plain values only) carries the
model name, the decoder's hidden size and layer count, the model's fingerprint (steer/fingerprint.py),
the layer indices, each layer's metrics and threshold, and the settings used. A bank is applied only
to the model it was trained on: another shape is always refused, another fingerprint unless the
steering settings say force_bank."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import torch

from mvp_core.errors import UserError
from mvp_core.steer.config import EnergyConfig, SplitMetrics, SteerConfig
from mvp_core.steer.energy import EnergyMLP
from mvp_core.steer.tensor_file import load_tensor_file, save_tensor_file

FORMAT = "mvp-steer-energy/1"


@dataclass
class EnergyBank:
    models: dict[int, EnergyMLP]
    metrics: dict[int, SplitMetrics]
    model_name: str
    hidden_size: int
    num_layers: int
    energy_config: EnergyConfig
    steer_config: SteerConfig = field(default_factory=SteerConfig)
    extra: dict = field(default_factory=dict)
    fingerprint: dict | None = None     # model_fingerprint() of the model the states came from

    def ranking(self) -> list[int]:
        """Layers, best first: validation balanced accuracy, then validation AUROC, then the lower layer
        index. Validation, not test: choosing layers on the test split would bias the test numbers
        reported for them; balanced, not plain: with unequal classes a constant rule scores the
        majority's share (docs/steer.md)."""
        return sorted(self.metrics, key=lambda li: (-self.metrics[li].val_bal_acc, -self.metrics[li].val_auroc, li))

    def chosen_layers(self, cfg: SteerConfig | None = None) -> list[int]:
        """The layers to steer, in layer order: cfg.layers if given, else the top-k by ranking."""
        cfg = cfg or self.steer_config
        if cfg.layers is not None:
            missing = [li for li in cfg.layers if li not in self.models]
            if missing:
                raise UserError(f"no energy model for layer(s) {missing} (have {sorted(self.models)})")
            return sorted(cfg.layers)
        return sorted(self.ranking()[:cfg.top_k])

    def energy(self, layer: int, x: torch.Tensor) -> torch.Tensor:
        m = self.models[layer].eval()
        with torch.no_grad():
            return m(x.float())

    def check_model(self, model, force: bool = False) -> None:
        """UserError (one line) unless `model` is the one the bank was trained on. `force` lets a bank
        of the right shape steer another model (or one whose bank records no fingerprint)."""
        from mvp_core.steer.fingerprint import fingerprint_differences, model_fingerprint
        from mvp_core.steer.layers import decoder_layers, hidden_size, model_name
        h, n = hidden_size(model), len(decoder_layers(model))
        if h != self.hidden_size or n != self.num_layers:
            raise UserError(f"energy bank is for hidden size {self.hidden_size} x {self.num_layers} layers "
                            f"({self.model_name}); this model has {h} x {n}")
        diff = fingerprint_differences(self.fingerprint, model_fingerprint(model))
        if diff and not force:
            why = (f"its model {self.model_name or '(unnamed)'} has no fingerprint recorded" if self.fingerprint is None
                   else f"it was trained on {self.model_name or 'an unnamed model'} ({', '.join(diff)} differ)")
            raise UserError(f"energy bank refused for {model_name(model)}: {why}; to apply it anyway set "
                            "force_bank (mvp steer: --force-bank)")

    def save(self, path) -> Path:
        blob = {"format": FORMAT, "model_name": self.model_name, "hidden_size": self.hidden_size,
                "num_layers": self.num_layers, "layers": sorted(self.models),
                "energy_config": self.energy_config.model_dump(),
                "steer_config": self.steer_config.model_dump(exclude={"force_bank"}),
                "metrics": {li: m.model_dump() for li, m in self.metrics.items()},
                "state_dicts": {li: m.state_dict() for li, m in self.models.items()}, "extra": self.extra,
                "fingerprint": self.fingerprint}
        return save_tensor_file(path, blob)

    @classmethod
    def load(cls, path) -> EnergyBank:
        blob = load_tensor_file(path, FORMAT, "energy bank", "(not written by `mvp steer train`)")
        ecfg = EnergyConfig(**blob["energy_config"])
        models = {}
        for li in blob["layers"]:
            m = EnergyMLP(blob["hidden_size"], ecfg.hidden, ecfg.dropout)
            m.load_state_dict(blob["state_dicts"][li])
            models[int(li)] = m.eval()
        try:
            metrics = {int(k): SplitMetrics(**v) for k, v in blob["metrics"].items()}
        except ValueError:   # pydantic: a bank from before balanced accuracy and AUROC were recorded
            raise UserError(f"{path} was written by an older `mvp steer train` (no balanced accuracy per "
                            "layer): train the bank again") from None
        steer = {k: v for k, v in blob["steer_config"].items() if k != "force_bank"}   # never stored as on
        return cls(models=models, metrics=metrics, model_name=blob["model_name"], hidden_size=blob["hidden_size"],
                   num_layers=blob["num_layers"], energy_config=ecfg, steer_config=SteerConfig(**steer),
                   extra=blob.get("extra", {}), fingerprint=blob.get("fingerprint"))
