"""The explorer's draft: what exploring a game found (pages, links, popups, loading screens, what to review), as
``draft.yaml`` in the draft folder, the record the studio edits and the benchmark scores.

Every model is frozen and forbids unknown fields, like the graph language; every path is relative to the draft
folder. The graph YAML beside it is generated from this record (engine.explore.write), never the other way round.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal, Union

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from engine.core.errors import ConfigError

FORMAT = "engine-draft/1"
DRAFT_FILE = "draft.yaml"

Area = tuple[int, int, int, int]
Point = tuple[int, int]
RGB = tuple[int, int, int]


class Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


class Signature(Model):
    """One region that identifies a page or popup: a template crop (cut into the draft's pack as `asset`), a flat
    colour (`rgb`) or text read there (`pattern`)."""

    type: Literal["template", "color", "ocr"]
    area: Area
    asset: str | None = None
    rgb: RGB | None = None
    pattern: str | None = None


class TapStep(Model):
    type: Literal["tap"]
    point: Point
    area: Area | None = None


class SwipeStep(Model):
    type: Literal["swipe"]
    start: Point
    end: Point


class KeyStep(Model):
    type: Literal["key"]
    key: Literal["back", "home"]


Step = Union[TapStep, SwipeStep, KeyStep]


class Made(Model):
    """How the draft was made."""

    serial: str | None = None
    minutes: float = 0.0
    taps: int = 0
    started: str | None = None
    finished: str | None = None
    from_graph: str | None = None


class DraftPage(Model):
    name: str
    title: str | None = None
    members: list[str] = Field(default_factory=list)
    signatures: list[Signature] = Field(default_factory=list)
    visits: int = 0
    loading: bool = False
    """Reached through a loading screen at least once (the written page gets a loading allowance); loading screens
    themselves are not pages but ``Draft.loading``."""
    loading_s: float | None = None
    """That allowance, made from the longest arrival measured (engine.explore.write.allowance); None: not measured."""


class DraftLink(Model):
    from_: str = Field(alias="from")
    to: str
    action: Step = Field(discriminator="type")
    seen: int = 0
    tried: int = 0

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)


class DraftPopup(Model):
    name: str
    over: list[str] = Field(default_factory=list)
    box: Area
    members: list[str] = Field(default_factory=list)
    signatures: list[Signature] = Field(default_factory=list)
    dismiss: Step | None = Field(None, discriminator="type")


class LoadingScreen(Model):
    members: list[str] = Field(default_factory=list)
    signatures: list[Signature] = Field(default_factory=list)


ReviewKind = Literal["maybe_same_page", "maybe_two_pages", "link_seen_once", "unclear_tap", "unreached",
                     "dead_end", "weak_signature", "swallows_input"]


class ReviewItem(Model):
    kind: ReviewKind
    pages: list[str] = Field(default_factory=list)
    note: str = ""


class Draft(Model):
    format: Literal["engine-draft/1"] = FORMAT
    game: str
    resolution: tuple[int, int]
    server: str = "en"
    start_page: str | None = None
    app: dict[str, str] | None = None
    """The game's Android app ({package, activity}) when it was known, so the written graph can restart it."""
    made: Made = Made()
    pages: list[DraftPage] = Field(default_factory=list)
    links: list[DraftLink] = Field(default_factory=list)
    popups: list[DraftPopup] = Field(default_factory=list)
    loading: list[LoadingScreen] = Field(default_factory=list)
    review: list[ReviewItem] = Field(default_factory=list)

    def page(self, name: str) -> DraftPage:
        for page in self.pages:
            if page.name == name:
                return page
        raise KeyError(name)


def load_draft(folder: str | Path) -> Draft:
    """The draft in `folder` (its draft.yaml).

    Raises:
        ConfigError: no draft.yaml, not YAML, or not a draft (naming the file and what is wrong).
    """
    path = Path(folder) / DRAFT_FILE
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot read the draft: {exc.strerror or exc}", file=str(path)) from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        raise ConfigError(f"not YAML: {getattr(exc, 'problem', exc)}", file=str(path),
                          line=mark.line + 1 if mark else None) from None
    if not isinstance(data, dict):
        raise ConfigError(f"not a draft (a mapping with format: {FORMAT} expected)", file=str(path))
    try:
        return Draft.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise ConfigError(f"{where}: {first['msg']}", file=str(path)) from None


class _Dumper(yaml.SafeDumper):
    """Short lists of numbers (areas, points, colours) on one line, as the graph files write them."""


def _list(dumper: yaml.SafeDumper, value: list) -> yaml.Node:
    flow = len(value) <= 4 and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in value)
    return dumper.represent_sequence("tag:yaml.org,2002:seq", value, flow_style=flow)


_Dumper.add_representer(list, _list)


def dump_yaml(data: object) -> str:
    """YAML text for draft and graph files: keys in order, short number lists inline."""
    return yaml.dump(data, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=120)


def save_draft(draft: Draft, folder: str | Path) -> Path:
    """Write `draft` as folder/draft.yaml (atomically: a reader never sees half a file)."""
    path = Path(folder) / DRAFT_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    data = draft.model_dump(mode="json", by_alias=True, exclude_none=True)
    tmp = path.with_suffix(".yaml.tmp")
    tmp.write_text(dump_yaml(data), encoding="utf-8")
    tmp.replace(path)
    return path
