"""Steer a decoder at inference: forward pre-hooks that move the state at position -1 down the energy.

On each chosen layer (in layer order, so a later layer sees the already steered state) and at
position -1 of every forward call (the last prompt token at prefill, each new token while decoding
with the KV cache), K steps of h <- h - eta * g / (||g|| + 1e-8), g = dE/dh, with the energy model
in eval mode (no dropout noise; the published code steers in train mode). The norm is per row, so a
left-padded batch steers each row as if it were alone. With a gate, only rows whose energy is above
the layer's calibrated threshold move (SteerConfig.gate); positions="prompt" steers the prefill call
only (SteerConfig.positions). Hooks are removed on exit and on error."""
from __future__ import annotations

import torch

from mvp_core.errors import UserError
from mvp_core.steer.bank import EnergyBank
from mvp_core.steer.config import SteerConfig
from mvp_core.steer.energy import EnergyMLP
from mvp_core.steer.energy_grad import EnergyGrad
from mvp_core.steer.layers import decoder_layers, hidden_from_call, replace_hidden


def descend(energy, x: torch.Tensor, eta: float, steps: int, threshold: float | None = None,
            gate: str = "off", rows: torch.Tensor | None = None, energy_after: bool = True):
    """(x after K normalised gradient steps, energy before [B], energy after [B], steps taken [B]).
    `rows`: a [B] bool mask of the rows allowed to move (None: all);
    gate "while": a row steps only while its current energy is above `threshold`."""
    x = x.detach()
    taken = torch.zeros(x.shape[0], dtype=torch.long, device=x.device)
    e0 = None
    active = rows                       # None: every row moves (no mask to apply)
    grad = _energy_and_grad(energy)
    for _ in range(steps):
        e, g = grad(x)
        if e0 is None:
            e0 = e
        if gate == "while":
            active = e > threshold
        if active is not None and not bool(active.any()):
            break
        step = eta * g / (g.norm(dim=-1, keepdim=True) + 1e-8)
        if active is None:
            x, taken = x - step, taken + 1
        else:
            x, taken = torch.where(active[:, None], x - step, x), taken + active.long()
    e1 = None
    if energy_after:   # one more forward, only when someone reads it (record=True)
        with torch.no_grad():
            e1 = energy(x)
    return x.detach(), e0, e1, taken


def _energy_and_grad(energy):
    """x -> (E(x), dE/dx), both detached: by hand for an EnergyMLP in eval mode (energy_grad.py: the
    steps' cost is mostly autograd's own), by autograd for any other energy."""
    if isinstance(energy, EnergyMLP) and not energy.training:
        return EnergyGrad(energy)

    def by_autograd(x: torch.Tensor):
        x = x.detach().requires_grad_(True)
        e = energy(x)
        (g,) = torch.autograd.grad(e.sum(), x)
        return e.detach(), g
    return by_autograd


class Steering:
    """Context manager: `with Steering(model, bank, cfg): model.generate(...)`.

    enabled=False registers nothing (the plain model). record=True keeps, per forward call and layer,
    the energies before and after the steps (`self.records`: dicts with call, layer, before, after,
    steps; lists over the batch rows)."""

    def __init__(self, model, bank: EnergyBank, cfg: SteerConfig | None = None, enabled: bool = True,
                 record: bool = False, gate_bank: EnergyBank | None = None):
        self.model, self.bank = model, bank
        # gate "entry" may judge rows by a second bank (e.g. one trained on all four classes) while
        # this bank gives the direction (e.g. one trained on harmless prompts only)
        self.gate_bank = gate_bank or bank
        self.cfg = cfg or bank.steer_config
        self.enabled, self.record = enabled, record
        self.layers = bank.chosen_layers(self.cfg)
        self.records: list[dict] = []
        self._handles: list = []
        self._calls: dict[int, int] = {}
        self._rows = None   # gate "entry": rows to steer in the current forward call
        self._prefill: bool | None = None   # positions "prompt": is the current call a prefill (None: unknown)
        self._cache = None                  # weak reference to the last generate() cache seen

    def _hook(self, layer: int):
        energy = self.bank.models[layer]
        thr = self.bank.metrics[layer].threshold

        def hook(_mod, args, kwargs):
            h = hidden_from_call(args, kwargs)
            if self.cfg.positions == "prompt" and not self._is_prefill(h):
                return None   # a decoding call: its token's state is not one the energies learned
            rows = None
            if self.cfg.gate == "entry":
                if layer == self.layers[0]:   # judged once per forward call, on entering the stack
                    gm = self.gate_bank.models[layer].to(h.device).eval()
                    with torch.no_grad():
                        self._rows = gm(h[:, -1, :].float()) > self.gate_bank.metrics[layer].threshold
                rows = self._rows
                if not self.record and not bool(rows.any()):
                    return None   # no row to steer: the layer runs on the untouched state, at no cost
            # generate() runs under no_grad / inference_mode; the steps need a graph on a fresh tensor.
            with torch.inference_mode(False), torch.enable_grad():
                x0 = h[:, -1, :].clone().float()
                rows = None if rows is None else rows.clone()   # the gate's mask may be an inference tensor
                x, e0, e1, taken = descend(energy, x0, self.cfg.eta, self.cfg.steps, thr, self.cfg.gate, rows,
                                           energy_after=self.record)
                new = h.clone()
                new[:, -1, :] = x.to(h.dtype)
            if self.record:
                call = self._calls.get(layer, 0)
                self._calls[layer] = call + 1
                self.records.append({"call": call, "layer": layer, "before": e0.cpu().tolist(),
                                     "after": e1.cpu().tolist(), "steps": taken.cpu().tolist()})
            return replace_hidden(args, kwargs, new)
        return hook

    def _call_hook(self, _mod, _args, kwargs):
        """positions "prompt": tell the prefill from the decoding calls. Shape alone cannot (a one-token
        prompt's prefill is [B, 1] like a decoding step); generate() passes a fresh cache object to its
        prefill call and the same one to every decoding call (transformers 5 names it `cache`, earlier
        `past_key_values`; Mamba `cache_params`). Without a cache every call is a full pass."""
        import weakref
        cache = next((kwargs[k] for k in ("cache", "past_key_values", "cache_params") if kwargs.get(k) is not None),
                     None)
        if cache is None:
            self._prefill = None
            return None
        seen = self._cache() if self._cache is not None else None
        self._prefill = seen is not cache
        if self._prefill:
            try:      # weak: the finished generate's KV cache is not kept alive (and ids can be reused)
                self._cache = weakref.ref(cache)
            except TypeError:
                self._cache = lambda c=cache: c
        return None

    def _is_prefill(self, h: torch.Tensor) -> bool:
        return self._prefill if self._prefill is not None else h.shape[1] > 1

    def __enter__(self) -> Steering:
        if not self.enabled:
            return self
        self.bank.check_model(self.model, force=self.cfg.force_bank)
        self.gate_bank.check_model(self.model, force=self.cfg.force_bank)
        if self.cfg.gate == "entry" and self.layers[0] not in self.gate_bank.models:
            raise UserError(f"the gate bank has no energy for layer {self.layers[0]}")
        mods = decoder_layers(self.model)
        device = next(self.model.parameters()).device
        try:
            if self.cfg.positions == "prompt":
                self._handles.append(self.model.register_forward_pre_hook(self._call_hook, with_kwargs=True))
            for li in self.layers:
                self.bank.models[li].to(device=device, dtype=torch.float32).eval()
                self._handles.append(mods[li].register_forward_pre_hook(self._hook(li), with_kwargs=True))
        except BaseException:
            self.remove()
            raise
        return self

    def remove(self) -> None:
        for h in self._handles:
            h.remove()
        self._handles = []
        self._prefill, self._cache = None, None

    def __exit__(self, *exc) -> bool:
        self.remove()
        return False

    def prefill_energies(self) -> dict[int, dict]:
        """Per layer, the first call's energies (the prompt's last token): {layer: {before, after, steps}}."""
        return {r["layer"]: r for r in self.records if r["call"] == 0}
