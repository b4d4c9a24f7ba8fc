"""A local synthetic JPEG dataset shaped like ImageNet's, so that an input pipeline can be measured
without a network or a licence.

Why synthetic but not trivial: JPEG decoding costs in proportion to the pixels and to the entropy-coded
data, so flat colours or pure noise would decode faster or slower than photographs. Each image mixes
smooth gradients, low- and mid-frequency texture, shapes with soft edges and fine grain, saved at
quality 90 at ImageNet's common sizes (500×375 and its neighbours), which gives about 4 bits per pixel,
roughly 95 KB a file (ImageNet-1k's training JPEGs average about 110 KB: 138 GB over 1.28 M files).

Images depend only on their index and GENERATOR_VERSION (Python's seeded Mersenne Twister and Pillow's
drawing), so a cache is reproducible. The cache lives outside the results (default
`$XDG_CACHE_HOME/gpuplan/jpeg-<count>-v<version>`); it is built in a temporary sibling folder and
renamed into place only once complete, with a marker file, so a half-written cache is never used.
Needs Pillow, imported only when images are made or read.
"""

from __future__ import annotations

import io
import json
import os
import random
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass
from multiprocessing import get_context
from pathlib import Path

GENERATOR_VERSION = "1"
QUALITY = 90
MARKER = "complete.json"
# (width, height, weight): ImageNet's photos are mostly 500 pixels on the long side, landscape 4:3 first.
SIZES = ((500, 375, 40), (375, 500, 20), (500, 333, 15), (333, 500, 5), (500, 500, 10), (640, 480, 5),
         (400, 300, 5))


class DatasetUnavailable(RuntimeError):
    """Pillow is missing or the cache folder cannot be written; the message says which."""


@dataclass(frozen=True)
class ImageFolder:
    folder: Path
    files: list[Path]
    mean_bytes: float
    mean_pixels: float
    generated_s: float | None   # None when the images came from the cache


def default_cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "gpuplan"


def cache_folder(root: Path, count: int) -> Path:
    return Path(root) / f"jpeg-{count}-v{GENERATOR_VERSION}"


NEEDS_PILLOW = "needs Pillow (pip install Pillow)"


def require_pillow() -> None:
    """Pillow's modules this dataset and its decoding use, or DatasetUnavailable saying how to get them:
    a bare GPU host has torch and the standard library, and its collection goes on without this one."""
    try:
        from PIL import Image, ImageDraw, ImageFilter  # noqa: F401
    except ImportError:
        raise DatasetUnavailable(NEEDS_PILLOW) from None


def image_size(index: int) -> tuple[int, int]:
    rng = random.Random(f"gpuplan-size-{GENERATOR_VERSION}-{index}")
    width, height, _ = rng.choices(SIZES, weights=[s[2] for s in SIZES])[0]
    return width, height


def _gradient_rgb(rng: random.Random, width: int, height: int):  # noqa: ANN202 - a PIL image
    from PIL import Image

    channels = []
    for _ in range(3):
        base = Image.linear_gradient("L") if rng.random() < 0.6 else Image.radial_gradient("L")
        base = base.rotate(rng.uniform(0, 360)).resize((width, height), Image.BILINEAR)
        low, high = sorted((rng.randrange(256), rng.randrange(256)))
        channels.append(base.point(lambda v, lo=low, hi=high: lo + (hi - lo) * v // 255))
    return Image.merge("RGB", channels)


def _noise(rng: random.Random, mode: str, size: tuple[int, int], out: tuple[int, int]):  # noqa: ANN202
    from PIL import Image

    bands = len(mode)
    return Image.frombytes(mode, size, rng.randbytes(size[0] * size[1] * bands)).resize(out, Image.BICUBIC)


def _shapes(rng: random.Random, image, width: int, height: int) -> None:  # noqa: ANN001 - a PIL image
    from PIL import ImageDraw

    draw = ImageDraw.Draw(image)
    for _ in range(rng.randint(8, 30)):
        x0, y0 = rng.randrange(width), rng.randrange(height)
        box = (x0, y0, x0 + rng.randint(5, width // 2), y0 + rng.randint(5, height // 2))
        colour = tuple(rng.randrange(256) for _ in range(3))
        kind = rng.random()
        if kind < 0.35:
            draw.ellipse(box, fill=colour)
        elif kind < 0.6:
            draw.rectangle(box, fill=colour)
        elif kind < 0.85:
            draw.polygon([(rng.randrange(width), rng.randrange(height)) for _ in range(rng.randint(3, 6))],
                         fill=colour)
        else:
            draw.line(box, fill=colour, width=rng.randint(1, 8))


def make_jpeg(index: int) -> bytes:
    """The JPEG bytes of image `index`: gradients, blotches, shapes, a slight blur, texture and grain."""
    from PIL import Image, ImageFilter

    width, height = image_size(index)
    rng = random.Random(f"gpuplan-image-{GENERATOR_VERSION}-{index}")
    image = _gradient_rgb(rng, width, height)
    blotches = (max(2, width // rng.randint(6, 24)), max(2, height // rng.randint(6, 24)))
    image = Image.blend(image, _noise(rng, "RGB", blotches, (width, height)), rng.uniform(0.2, 0.5))
    _shapes(rng, image, width, height)
    image = image.filter(ImageFilter.GaussianBlur(rng.uniform(0.3, 1.5)))
    image = Image.blend(image, _noise(rng, "RGB", (width // 3, height // 3), (width, height)), 0.3)
    grain = _noise(rng, "L", (width, height), (width, height)).convert("RGB")
    image = Image.blend(image, grain, 32 / 255)
    out = io.BytesIO()
    image.save(out, "JPEG", quality=QUALITY)
    return out.getvalue()


def file_name(index: int) -> str:
    return f"img-{index:06d}.jpg"


def _write_one(job: tuple[Path, int]) -> int:
    folder, index = job
    data = make_jpeg(index)
    (folder / file_name(index)).write_bytes(data)
    return len(data)


def read_marker(folder: Path, count: int) -> dict | None:
    """The marker of a complete cache of `count` images of this generator version, else None."""
    try:
        marker = json.loads((folder / MARKER).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    ok = (isinstance(marker, dict) and marker.get("count") == count and marker.get("version") == GENERATOR_VERSION
          and all((folder / file_name(i)).is_file() for i in range(count)))
    return marker if ok else None


def build_images(folder: Path, count: int, processes: int, on_progress: Callable[[str], None]) -> dict:
    """Write `count` images into a temporary sibling of `folder`, then the marker, then rename it into place."""
    folder.parent.mkdir(parents=True, exist_ok=True)
    partial = folder.parent / f".{folder.name}.partial-{os.getpid()}"
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir()
    jobs = [(partial, i) for i in range(count)]
    sizes = []
    # fork: the children only run Pillow; chunks keep the pool's messaging cheap.
    with get_context("fork").Pool(max(1, processes)) as pool:
        for n, size in enumerate(pool.imap_unordered(_write_one, jobs, chunksize=8), 1):
            sizes.append(size)
            if n % 64 == 0 or n == count:
                on_progress(f"synthetic JPEGs {n}/{count}")
    pixels = sum(w * h for w, h in map(image_size, range(count)))
    marker = {"count": count, "version": GENERATOR_VERSION, "quality": QUALITY, "bytes": sum(sizes),
              "pixels": pixels}
    (partial / MARKER).write_text(json.dumps(marker), encoding="utf-8")
    shutil.rmtree(folder, ignore_errors=True)   # an incomplete or older cache under our own name
    os.replace(partial, folder)
    return marker


def ensure_images(root: Path, count: int, processes: int | None = None,
                  on_progress: Callable[[str], None] = lambda _: None) -> ImageFolder:
    """The cached images, made first when the cache is absent, incomplete or of another version."""
    require_pillow()
    folder = cache_folder(root, count)
    marker = read_marker(folder, count)
    generated = None
    if marker is None:
        started = time.perf_counter()
        try:
            marker = build_images(folder, count, processes or os.cpu_count() or 1, on_progress)
        except OSError as e:
            raise DatasetUnavailable(f"cannot write the synthetic images under {root}: {e}") from None
        generated = time.perf_counter() - started
    files = [folder / file_name(i) for i in range(count)]
    return ImageFolder(folder, files, marker["bytes"] / count, marker["pixels"] / count, generated)
