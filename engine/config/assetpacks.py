"""Directory asset packs: ALAS's own layout and the project's layout, both behind engine.config.assets.AssetPack.

ALAS layout (``AlasAssetPack``)::

    <root>/assets/<server>/<module>/NAME.png        a full 1280x720 frame, black outside the button
    <root>/assets/<server>/<module>/NAME.gif        several such frames (any may match)
    <root>/assets/<server>/<module>/NAME.BUTTON.png the click area, when it differs from the matched area

``root`` may also point at ``.../assets`` itself. The template is the bounding box of the non-black pixels, which
is exactly how ALAS computes a Button's area, so the crop and ``Template.area`` agree with ALAS. A server without
its own file falls back to ``fallback``: callers pass the graph's ``fallback_server`` (ALAS's en, jp and tw
assets lean on cn's this way); without one, a missing file is simply missing.

Project layout (``DirectoryAssetPack``), what ``python -m engine assets import-alas`` writes::

    <root>/index.json            {"format": "alas-engine-assets/1", "server": "en",
                                  "templates": {"ui/BACK_ARROW": {"area": [x1, y1, x2, y2],
                                                                  "click": [x1, y1, x2, y2] | null,
                                                                  "frames": 1}}}
    <root>/<module>/NAME.png     the crop itself (first frame)
    <root>/<module>/NAME@1.png   further frames of an animated template, numbered from 1

A png without an index entry is still a template (its area is then unknown). Names are ``module/NAME``; a bare
``NAME`` is accepted when only one module has it.
"""

from __future__ import annotations

import json
import logging
import threading
from pathlib import Path
from typing import Any, Iterable, Iterator

import cv2
import numpy as np

from engine.config.assets import Area, AssetPack, Template
from engine.core.errors import ConfigError

log = logging.getLogger(__name__)

INDEX_FORMAT = "alas-engine-assets/1"
INDEX_FILE = "index.json"


def _check_name(name: str) -> None:
    if not name or name.startswith("/") or ".." in name.split("/") or "\\" in name:
        raise ValueError(f"bad asset name {name!r}: names are module/NAME, relative, without '..'")


def read_frames(path: Path) -> tuple[np.ndarray, ...]:
    """Every frame of an image file as BGR uint8 (a .gif may hold several)."""
    if path.suffix.lower() == ".gif":
        ok, frames = cv2.imreadmulti(str(path), flags=cv2.IMREAD_COLOR)
        if not ok or not frames:
            raise ConfigError(f"cannot decode {path}", file=str(path))
        return tuple(np.ascontiguousarray(f) for f in frames)
    image = cv2.imread(str(path), cv2.IMREAD_COLOR)
    if image is None:
        raise ConfigError(f"cannot decode {path}", file=str(path))
    return (image,)


def nonblack_bbox(image: np.ndarray) -> Area | None:
    """Bounding box (x1, y1, x2, y2, exclusive) of the pixels that are not pure black; None for an all-black image."""
    # Reduce over contiguous memory: a max over the channel axis of a full frame costs 25 ms, these cost ~1 ms.
    ys = np.flatnonzero(image.reshape(image.shape[0], -1).any(axis=1))
    columns = image.any(axis=0)
    xs = np.flatnonzero(columns.any(axis=-1) if columns.ndim == 2 else columns)
    if ys.size == 0:
        return None
    return (int(xs[0]), int(ys[0]), int(xs[-1]) + 1, int(ys[-1]) + 1)


def crop(image: np.ndarray, area: Area) -> np.ndarray:
    x1, y1, x2, y2 = area
    return np.ascontiguousarray(image[y1:y2, x1:x2])


# --------------------------------------------------------------------------------------------------- ALAS


class _CachedPack:
    """Loads each template once, on first use (answers, including "not there", are cached)."""

    def _load(self, name: str) -> Template | None:  # pragma: no cover - each pack defines it
        raise NotImplementedError

    def get(self, name: str) -> Template | None:
        cache = self.__dict__.setdefault("_cache", {})
        lock = self.__dict__.setdefault("_lock", threading.Lock())
        with lock:
            if name in cache:
                return cache[name]
        template = self._load(name)
        with lock:
            cache[name] = template
        return template


class AlasAssetPack(_CachedPack):
    """Templates read straight from an ALAS checkout (see the module docstring for the layout)."""

    def __init__(self, root: str | Path, server: str, *, fallback: str | None = None) -> None:
        root = Path(root)
        self.assets_dir = root if (root.name == "assets" or not (root / "assets").is_dir()) else root / "assets"
        if not self.assets_dir.is_dir():
            raise ConfigError(f"no ALAS assets folder at {root}", file=str(root))
        if not (self.assets_dir / server).is_dir():
            found = sorted(p.name for p in self.assets_dir.iterdir() if p.is_dir())
            raise ConfigError(f"no assets for server {server!r} (this ALAS folder has {', '.join(found) or 'none'})",
                              file=str(self.assets_dir))
        self.server = server
        self.fallback = fallback if fallback != server else None
        self._bare: dict[str, list[str]] | None = None

    def _servers(self) -> list[str]:
        return [s for s in (self.server, self.fallback) if s]

    def source(self, name: str) -> tuple[Path, str] | None:
        """The file that answers `name` and the server it came from (the fallback's when the server has none)."""
        _check_name(name)
        for server in self._servers():
            for suffix in (".png", ".gif"):
                path = self.assets_dir / server / f"{name}{suffix}"
                if path.is_file():
                    return path, server
        return None

    def _resolve_bare(self, name: str) -> str | None:
        if self._bare is None:
            bare: dict[str, list[str]] = {}
            for full in self.names():
                bare.setdefault(full.rsplit("/", 1)[-1], []).append(full)
            self._bare = bare
        found = self._bare.get(name, [])
        return found[0] if len(found) == 1 else None

    def _load(self, name: str) -> Template | None:
        if "/" not in name:
            full = self._resolve_bare(name)
            return None if full is None else self.get(full)
        found = self.source(name)
        if found is None:
            return None
        path, server = found
        frames = read_frames(path)
        area = nonblack_bbox(frames[0])
        if area is None:
            log.warning("asset %s (%s) is all black; ignored", name, path)
            return None
        crops = tuple(crop(f, area) for f in frames)
        click = None
        button = path.with_name(f"{path.name.rsplit('.', 1)[0]}.BUTTON.png")
        if button.is_file():
            click = nonblack_bbox(read_frames(button)[0])
        log.debug("asset %s from %s (server %s)", name, path, server)
        return Template(name=name, frames=crops, area=area, click=click)

    def names(self) -> Iterable[str]:
        seen: set[str] = set()
        for server in self._servers():
            base = self.assets_dir / server
            if not base.is_dir():
                continue
            for path in sorted(base.glob("*/*")):
                if path.suffix.lower() not in (".png", ".gif") or path.name.count(".") != 1:
                    continue
                name = f"{path.parent.name}/{path.stem}"
                if name not in seen:
                    seen.add(name)
                    yield name


# --------------------------------------------------------------------------------------------------- ours


class DirectoryAssetPack(_CachedPack):
    """Templates in the project's own layout (see the module docstring); written by ``write_template``."""

    def __init__(self, root: str | Path, server: str | None = None) -> None:
        self.root = Path(root)
        if not self.root.is_dir():
            raise ConfigError(f"no asset folder at {self.root}", file=str(self.root))
        index_path = self.root / INDEX_FILE
        self.index: dict = {"format": INDEX_FORMAT, "templates": {}}
        if index_path.is_file():
            try:
                self.index = json.loads(index_path.read_text())
            except json.JSONDecodeError as exc:
                raise ConfigError(f"bad asset index: {exc.msg}", file=str(index_path), line=exc.lineno) from None
            if self.index.get("format") != INDEX_FORMAT:
                raise ConfigError(f"asset index format is not {INDEX_FORMAT}", file=str(index_path))
        self.server = server or self.index.get("server") or "default"

    def _load(self, name: str) -> Template | None:
        _check_name(name)
        if "/" not in name:
            matches = [n for n in self.names() if n.rsplit("/", 1)[-1] == name]
            return self.get(matches[0]) if len(matches) == 1 else None
        first = self.root / f"{name}.png"
        if not first.is_file():
            return None
        frames = [read_frames(first)[0]]
        i = 1
        while (extra := self.root / f"{name}@{i}.png").is_file() and i < 64:
            frames.append(read_frames(extra)[0])
            i += 1
        entry = self.index.get("templates", {}).get(name, {})
        area = tuple(entry["area"]) if entry.get("area") else None
        click = tuple(entry["click"]) if entry.get("click") else None
        return Template(name=name, frames=tuple(frames), area=area, click=click)

    def names(self) -> Iterator[str]:
        for path in sorted(self.root.glob("*/*.png")):
            if "@" not in path.stem:
                yield f"{path.parent.name}/{path.stem}"


def write_template(root: str | Path, template: Template, index: dict | None = None) -> list[Path]:
    """Write `template` into a project-layout folder; records its areas in `index` (a loaded index.json dict).

    Returns the files written. The caller saves the index with ``save_index`` once all templates are in.
    """
    _check_name(template.name)
    root = Path(root)
    written = []
    for i, frame in enumerate(template.frames):
        path = root / (f"{template.name}.png" if i == 0 else f"{template.name}@{i}.png")
        path.parent.mkdir(parents=True, exist_ok=True)
        if not cv2.imwrite(str(path), frame):
            raise OSError(f"cannot write {path}")
        written.append(path)
    if index is not None:
        index.setdefault("templates", {})[template.name] = {
            "area": list(template.area) if template.area else None,
            "click": list(template.click) if template.click else None,
            "frames": len(template.frames),
        }
    return written


def new_index(server: str | None) -> dict:
    return {"format": INDEX_FORMAT, "server": server, "templates": {}}


def save_index(root: str | Path, index: dict) -> Path:
    path = Path(root) / INDEX_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    index = {**index, "templates": dict(sorted(index.get("templates", {}).items()))}
    path.write_text(json.dumps(index, indent=1) + "\n")
    return path


def load_pack(spec: str | Path, server: str | None = None, *, fallback: str | None = None) -> AssetPack:
    """An asset pack for a folder, choosing the layout by what is in it.

    A folder with ``index.json`` is ours; a folder with ``assets/<server>/`` (or that is such an ``assets``
    folder) is ALAS's and needs `server` (and takes `fallback`, the graph's ``fallback_server``, for files the
    server lacks); any other folder is read as ours without an index.
    """
    root = Path(spec)
    if (root / INDEX_FILE).is_file():
        return DirectoryAssetPack(root, server)
    alas_dir = root / "assets" if (root / "assets").is_dir() else root
    # ALAS nests one level deeper than ours: <server>/<module>/NAME.png against <module>/NAME.png.
    if any(next(alas_dir.glob(f"*/*/*.{ext}"), None) for ext in ("png", "gif")):
        if not server:
            raise ConfigError(f"{root} is an ALAS asset folder: say which server (--server)", file=str(root))
        return AlasAssetPack(alas_dir, server, fallback=fallback)
    return DirectoryAssetPack(root, server)


class LayeredPack:
    """Templates from the first pack that has them (a user's pack over a session's, for example)."""

    def __init__(self, packs: list[Any], server: str) -> None:
        self.packs, self.server = packs, server

    def get(self, name: str) -> Template | None:
        for pack in self.packs:
            try:
                found = pack.get(name)
            except (ValueError, ConfigError):
                found = None
            if found is not None:
                return found
        return None

    def names(self) -> Iterable[str]:
        seen: set[str] = set()
        for pack in self.packs:
            for name in pack.names():
                if name not in seen:
                    seen.add(name)
                    yield name
