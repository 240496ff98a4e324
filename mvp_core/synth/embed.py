"""Frame embedders. Every embedder maps RGB uint8 frames to L2-normalised float32 vectors, so the
similarity of two frames is a dot product (cosine) and `kappa` is a cosine threshold.

- "pixel" (default, no weights): a 32x32 colour thumbnail, mean-centred; cosine of these is the
  Pearson correlation of the thumbnails. Near-duplicates score ~0.95+, scene cuts ~0.
- "clip": transformers' CLIP vision tower from a local path (`--embedder clip:/path/to/clip`)."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

# Calibrated on the sample videos (docs/SYNTHESIS.md): adjacent frames at the native rate score
# >= 0.96 on 95% of pairs of the trailer (median 1.0); frames 1 s apart median 0.90; across a cut ~0.
PIXEL_KAPPA = 0.95


class PixelEmbedder:
    name = "pixel"
    default_kappa = PIXEL_KAPPA

    def __init__(self, side: int = 32):
        self.side = side

    def embed(self, frames: list[np.ndarray]) -> np.ndarray:
        from PIL import Image
        if not frames:
            return np.zeros((0, self.side * self.side * 3), np.float32)
        out = np.empty((len(frames), self.side * self.side * 3), np.float32)
        for i, f in enumerate(frames):
            small = np.asarray(Image.fromarray(f).resize((self.side, self.side), Image.BILINEAR),
                               dtype=np.float32).reshape(-1)
            out[i] = small - small.mean()
        return _normalise(out)


class ClipEmbedder:
    """CLIP image features from a local checkpoint directory (no hub access)."""
    name = "clip"
    default_kappa = 0.95

    def __init__(self, path: str, device: str = "cpu", batch_size: int = 32):
        import torch
        from transformers import CLIPImageProcessor, CLIPModel

        from mvp_core.errors import UserError
        try:
            self.model = CLIPModel.from_pretrained(path, local_files_only=True).to(device).eval()
            self.processor = CLIPImageProcessor.from_pretrained(path, local_files_only=True)
        except (OSError, ValueError) as e:
            raise UserError(f"not a CLIP checkpoint directory: {path} ({str(e).splitlines()[0][:120]})") from None
        self.device, self.batch_size, self.torch = device, batch_size, torch
        self.path = path

    def embed(self, frames: list[np.ndarray]) -> np.ndarray:
        torch = self.torch
        outs = []
        with torch.inference_mode():
            for i in range(0, len(frames), self.batch_size):
                batch = self.processor(images=list(frames[i:i + self.batch_size]), return_tensors="pt")
                feats = self.model.get_image_features(pixel_values=batch["pixel_values"].to(self.device))
                if not isinstance(feats, torch.Tensor):  # some versions wrap the output
                    feats = feats.pooler_output
                outs.append(feats.float().cpu().numpy())
        if not outs:
            return np.zeros((0, 1), np.float32)
        return _normalise(np.concatenate(outs))


def _normalise(x: np.ndarray) -> np.ndarray:
    n = np.linalg.norm(x, axis=1, keepdims=True)
    return (x / np.maximum(n, 1e-8)).astype(np.float32)


@dataclass
class EmbedderSpec:
    """Parsed `--embedder`: "pixel" or "clip:/local/path"."""
    kind: str
    path: str = ""

    @classmethod
    def parse(cls, text: str) -> "EmbedderSpec":
        from mvp_core.errors import UserError
        kind, _, path = text.partition(":")
        if kind == "pixel" and not path:
            return cls("pixel")
        if kind == "clip" and path:
            return cls("clip", path)
        raise UserError(f"--embedder must be 'pixel' or 'clip:/path/to/clip', got {text!r}")

    def build(self):
        return PixelEmbedder() if self.kind == "pixel" else ClipEmbedder(self.path)

    def __str__(self) -> str:
        return self.kind if self.kind == "pixel" else f"clip:{self.path}"
