"""Content-addressed frame store under the data directory.

A frame is JPEG-encoded once; its uri is `frames/<2 hex>/<sha256 of the bytes>.jpg`, relative to the
data directory, so identical frames are stored once, a dataset can be moved, and a crash can at worst
leave an unreferenced file (writes go to a temp name and are renamed into place)."""
from __future__ import annotations

import hashlib
import io
import os
from pathlib import Path

import numpy as np

from mvp_core.atomic import atomic_path, atomic_write_bytes

JPEG_QUALITY = 90
THUMB_SIDE = 240  # longest side of the thumbnails the web app shows; synthesis writes them with the frames


def encode_jpeg(img: np.ndarray, quality: int = JPEG_QUALITY) -> bytes:
    from PIL import Image
    buf = io.BytesIO()
    Image.fromarray(img).save(buf, format="JPEG", quality=quality, optimize=False)
    return buf.getvalue()


def uri_for(data: bytes) -> str:
    h = hashlib.sha256(data).hexdigest()
    return f"frames/{h[:2]}/{h}.jpg"


class NotAnImage(ValueError):
    """A file in the frame store that PIL cannot read as an image (or refuses as a decompression bomb)."""


class FrameStore:
    def __init__(self, data_dir: str | os.PathLike):
        self.root = Path(data_dir).resolve()

    def put_bytes(self, data: bytes) -> str:
        uri = uri_for(data)
        path = self.root / uri
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            # not flushed to disk, as before: one fsync per frame is unmeasured on synthesis's hot path
            atomic_write_bytes(path, data, durable=False)
        return uri

    def put(self, img: np.ndarray) -> str:
        return self.put_bytes(encode_jpeg(img))

    def path(self, uri: str) -> Path:
        """The file behind a uri; refuses anything that resolves outside the store."""
        if not uri or os.path.isabs(uri) or "\\" in uri:
            raise ValueError(f"bad frame uri: {uri!r}")
        p = (self.root / uri).resolve()
        frames_root = (self.root / "frames").resolve()
        if frames_root not in p.parents:
            raise ValueError(f"frame uri outside the frame store: {uri!r}")
        return p

    def load(self, uri: str) -> np.ndarray:
        from PIL import Image
        try:
            with Image.open(self.path(uri)) as im:
                return np.array(im.convert("RGB"))  # writable: torch warns on read-only arrays
        except Image.DecompressionBombError as e:   # not an OSError: callers catch ValueError for bad uris/files
            raise NotAnImage(f"frame {uri!r}: {e}") from None

    def thumbnail(self, uri: str, max_side: int = THUMB_SIDE) -> Path:
        """A cached smaller JPEG for filmstrips; stored beside the frame store."""
        from PIL import Image
        src = self.path(uri)
        dst = self.root / "thumbs" / str(max_side) / src.name
        if not dst.exists():
            dst.parent.mkdir(parents=True, exist_ok=True)
            try:
                with atomic_path(dst, durable=False) as tmp, Image.open(src) as im:   # a cache, made again on demand
                    im.thumbnail((max_side, max_side))
                    im.convert("RGB").save(tmp, format="JPEG", quality=85)
            except FileNotFoundError:
                raise
            except (OSError, Image.DecompressionBombError) as e:   # a file in frames/ that is no image
                raise NotAnImage(f"frame {uri!r} is not a readable image ({str(e).splitlines()[0]})") from None
        return dst
