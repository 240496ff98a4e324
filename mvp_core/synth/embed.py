"""Frame embedders. Every embedder maps RGB uint8 frames to L2-normalised float32 vectors, so the
similarity of two frames is a dot product (cosine) and `kappa` is a cosine threshold.

- "pixel" (default, no weights): a 32x32 colour thumbnail, mean-centred (cosine of two such parts is the
  Pearson correlation of the thumbnails: near-duplicates ~0.95+, scene cuts ~0), weighted by the frame's
  spatial contrast, plus a small mean-colour part. A flat or near-flat frame (black, white, one colour,
  the end of a fade) has no structure to correlate: mean-centring alone maps it to the zero vector,
  whose similarity to everything, itself included, is 0. With the contrast weight its embedding is its
  mean colour, so two flat frames of one colour are duplicates (similarity ~1) and a flat frame is far
  from a textured one. docs/SYNTHESIS.md "Flat frames" has the calibration.
- "clip": transformers' CLIP vision tower from a local path (`--embedder clip:/path/to/clip`).

`spatial_contrast` / `is_flat` are embedder-independent: synthesis drops flat frames before the walk."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

# Calibrated on the sample videos (docs/SYNTHESIS.md): adjacent frames at the native rate score
# >= 0.96 on 95% of pairs of the trailer (median 1.0); frames 1 s apart median 0.90; across a cut ~0.
PIXEL_KAPPA = 0.95


# Spatial contrast (RMS deviation from the per-channel mean of a 32x32 thumbnail, 0-255 scale).
# Measured on the sample videos: textured frames 25-63 (1st percentile of the trailer 6.9, its fades),
# frames of an H.264-coded black or white segment 0-0.5. Below FLAT_STD a frame is flat (no content);
# between FLAT_STD and FULL_STD the structure part fades in linearly.
FLAT_STD = 4.0
FULL_STD = 16.0
COLOUR_WEIGHT = 0.02  # share of the squared norm the mean-colour part has in a fully textured frame


def _colour_part(mean_rgb: np.ndarray) -> np.ndarray:
    """Each channel's mean c in [0, 1] as the point (cos c*pi, sin c*pi): the dot product of two colours
    is the mean over channels of cos(pi * difference), so black . black = 1, black . white = -1, and
    two flat frames are near-duplicates (>= 0.95) when every channel differs by less than ~10%."""
    theta = np.pi * mean_rgb / 255.0
    return np.concatenate([np.cos(theta), np.sin(theta)]) / np.sqrt(3.0)


def _thumbnail(frame: np.ndarray, side: int) -> np.ndarray:
    from PIL import Image
    return np.asarray(Image.fromarray(frame).resize((side, side), Image.BILINEAR), dtype=np.float32)


def spatial_contrast(frame: np.ndarray, side: int = 32) -> float:
    th = _thumbnail(frame, side)
    return float(np.sqrt(((th - th.mean(axis=(0, 1))) ** 2).mean()))


def is_flat(frame: np.ndarray) -> bool:
    return spatial_contrast(frame) < FLAT_STD


class PixelEmbedder:
    name = "pixel"
    default_kappa = PIXEL_KAPPA

    def __init__(self, side: int = 32):
        self.side = side

    @property
    def dim(self) -> int:
        return self.side * self.side * 3 + 6

    def embed(self, frames: list[np.ndarray]) -> np.ndarray:
        out = np.zeros((len(frames), self.dim), np.float32)
        for i, f in enumerate(frames):
            th = _thumbnail(f, self.side)
            contrast = float(np.sqrt(((th - th.mean(axis=(0, 1))) ** 2).mean()))
            w = float(np.clip((contrast - FLAT_STD) / (FULL_STD - FLAT_STD), 0.0, 1.0))
            c = (th - th.mean()).reshape(-1)
            n = float(np.linalg.norm(c))
            if n > 1e-6 and w > 0:
                out[i, :-6] = c / n * w * np.sqrt(1.0 - COLOUR_WEIGHT)
            out[i, -6:] = _colour_part(th.mean(axis=(0, 1))) * np.sqrt(COLOUR_WEIGHT)
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


def decode_jpeg(data: bytes) -> np.ndarray:
    """RGB pixels of stored JPEG bytes, exactly as mvp_core.video.frames.FrameStore.load reads them."""
    import io

    from PIL import Image
    with Image.open(io.BytesIO(data)) as im:
        return np.array(im.convert("RGB"))


def _normalise(x: np.ndarray) -> np.ndarray:
    n = np.linalg.norm(x, axis=1, keepdims=True)
    return (x / np.maximum(n, 1e-8)).astype(np.float32)


@dataclass
class EmbedderSpec:
    """Parsed `--embedder`: "pixel" or "clip:/local/path"."""
    kind: str
    path: str = ""

    @classmethod
    def parse(cls, text: str) -> EmbedderSpec:
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
