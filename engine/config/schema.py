"""The page-graph language: pydantic models of the YAML files in pages/.

A graph is a game's screens (pages), the links between them, the popups that get in the way, and the named
buttons they all refer to. Every model is frozen and forbids unknown fields, so a typo in YAML is an error with a
line number (see engine/config/loader.py), never a silently ignored key.

Per-server values: wherever a value may differ between game servers (areas, colours, asset names), it can be
written either plainly (``area: [10, 10, 50, 30]``) or as a mapping from server to value
(``area: {en: [10, 10, 50, 30], cn: [12, 10, 52, 30]}``). Collections in this language are always lists, so a
mapping in a value position always means "per server". ``Graph.for_server("en")`` collapses every such mapping,
falling back to ``Graph.fallback_server``, and the rest of the engine only sees plain values.

Layered defaults: a value set on a link beats the page's ``defaults``, which beat the graph's ``defaults``, which
beat ``BUILTIN_DEFAULTS``. ``Graph.settings(page, link)`` answers the effective value.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal, TypeVar, Union

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

T = TypeVar("T")

NAME_PATTERN = r"^[A-Za-z_][A-Za-z0-9_.\-]*$"

Area = tuple[int, int, int, int]
"""(x1, y1, x2, y2) in reference-resolution pixels, x2/y2 exclusive, as ALAS writes them."""
Point = tuple[int, int]
Channel = Annotated[int, Field(ge=0, le=255)]
RGB = tuple[Channel, Channel, Channel]
"""A mean colour (r, g, b), each channel 0..255."""

PerServer = Union[T, dict[str, T]]
"""A value, or a mapping ``{server: value}`` for values that differ between servers."""

Name = Annotated[str, Field(pattern=NAME_PATTERN)]


class Model(BaseModel):
    """Base of every YAML node: unknown keys are errors, instances are immutable, numbers are finite (no .nan)."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


# --------------------------------------------------------------------------------------------------- defaults


class Defaults(Model):
    """Values that pages, links and signatures inherit when they do not set their own."""

    template_threshold: float | None = Field(
        None, ge=0, le=1, description="Minimum normalised cross-correlation for a template to hit."
    )
    template_offset: Point | None = Field(
        None, description="How far (x, y) a template may sit from its declared area; ALAS's `offset`."
    )
    color_tolerance: int | None = Field(
        None, ge=0, le=255, description="Largest per-channel difference of mean colours that still hits."
    )
    ocr_threshold: float | None = Field(None, ge=0, le=1, description="Minimum recognition confidence for OCR.")
    link_cost: float | None = Field(None, gt=0, description="Cost of a link for route planning.")
    loading: float | None = Field(
        None, ge=0, description="Seconds a page may take to show after a link was taken (loading screens)."
    )
    policy: str | None = Field(None, description="Name of the policy (policies/*.yaml) that bounds a hop.")


BUILTIN_DEFAULTS = Defaults(
    template_threshold=0.85,
    template_offset=(30, 30),
    color_tolerance=20,
    ocr_threshold=0.5,
    link_cost=1.0,
    loading=0.0,
    policy="goto_hop",
)


# --------------------------------------------------------------------------------------------------- buttons


class Button(Model):
    """A named thing on screen: where it is matched, where it is clicked, how it looks.

    ALAS calls these Buttons (module/*/assets.py). Signatures and tap actions refer to them by name, so an area
    is written once even when many pages share the button (the back arrow, the home button).
    """

    name: Name = Field(description="Unique button name, ALAS's asset name where there is one.")
    area: PerServer[Area] = Field(description="Region that is matched or colour-checked.")
    click: PerServer[Area] | None = Field(
        None, description="Region that is tapped; defaults to `area` (ALAS's NAME.BUTTON.png override)."
    )
    color: PerServer[RGB] | None = Field(None, description="Mean RGB of `area` when the button shows.")
    asset: PerServer[str] | None = Field(
        None, description="Template asset name relative to the asset pack root, e.g. `ui/BACK_ARROW`."
    )
    text: str | None = Field(None, description="Label the simulator draws on the button when it has no asset.")

    @property
    def click_area(self) -> Any:
        return self.click if self.click is not None else self.area


# --------------------------------------------------------------------------------------------------- signatures


class ColorSignature(Model):
    """Hits when the mean colour of an area is within `tolerance` of `rgb` on every channel.

    Cheap but weak on real frames: never the only evidence for a page or popup that has a template.
    """

    type: Literal["color"]
    button: Name | None = Field(None, description="Take `area` and `rgb` from this button.")
    area: PerServer[Area] | None = Field(
        None, description="Region whose mean colour is compared (instead of `button`)."
    )
    rgb: PerServer[RGB] | None = Field(
        None, description="Expected mean colour (r, g, b) of `area` (instead of `button`)."
    )
    tolerance: int | None = Field(
        None, ge=0, le=255, description=(
                    "Largest per-channel difference that still hits; layered default `color_tolerance`.")
    )
    name: str | None = Field(None, description="Name in evidence; defaults to the button name.")

    @model_validator(mode="after")
    def _has_source(self) -> ColorSignature:
        if self.button is None and (self.area is None or self.rgb is None):
            raise ValueError("a color signature needs `button`, or both `area` and `rgb`")
        return self


class TemplateSignature(Model):
    """Hits when the template is found inside its area widened by `offset` with score >= `threshold`."""

    type: Literal["template"]
    button: Name | None = Field(None, description="Take `asset` and `area` from this button.")
    asset: PerServer[str] | None = Field(
        None, description="Template asset name in the asset pack (instead of `button`)."
    )
    area: PerServer[Area] | None = Field(None, description="Where the template is expected (instead of `button`).")
    offset: Point | None = Field(None, description="Search margin (x, y) around `area`.")
    threshold: float | None = Field(
        None, ge=0, le=1, description="Minimum match score; layered default `template_threshold`."
    )
    color: bool = Field(
        False, description="Also require the matched region's mean colour to be near the template's."
    )
    name: str | None = Field(None, description="Name in evidence; defaults to the button or asset name.")

    @model_validator(mode="after")
    def _has_source(self) -> TemplateSignature:
        if self.button is None and (self.asset is None or self.area is None):
            raise ValueError("a template signature needs `button`, or both `asset` and `area`")
        return self


class OcrSignature(Model):
    """Hits when text recognised in `area` matches the regular expression `pattern` (case-insensitive)."""

    type: Literal["ocr"]
    area: PerServer[Area] = Field(description="Region whose text is recognised.")
    pattern: PerServer[str] = Field(description="Regular expression the recognised text must match (case-insensitive).")
    threshold: float | None = Field(
        None, ge=0, le=1, description="Minimum recognition confidence; layered default `ocr_threshold`."
    )
    sample: PerServer[str] | None = Field(
        None, description="Text the simulator draws here; defaults to the pattern with regex syntax stripped."
    )
    name: str | None = Field(None, description="Name in evidence; defaults to the pattern.")

    @field_validator("pattern")
    @classmethod
    def _compiles(cls, value: Any) -> Any:
        for pattern in value.values() if isinstance(value, dict) else [value]:
            try:
                re.compile(pattern)
            except re.error as exc:
                raise ValueError(f"pattern {pattern!r} is not a regular expression: {exc}") from None
        return value


class AnyOfSignature(Model):
    """Hits when at least one of its alternatives hits (for example a page with a 'white' variant)."""

    type: Literal["any_of"]
    of: list[Signature] = Field(min_length=1, description="The alternatives; one hit is enough.")
    name: str | None = Field(None, description="Name in evidence.")


Signature = Annotated[
    Union[ColorSignature, TemplateSignature, OcrSignature, AnyOfSignature], Field(discriminator="type")
]


# --------------------------------------------------------------------------------------------------- actions


class TapAction(Model):
    """Tap a named button's click area, or a fixed point; with `search`, the button is found first."""

    type: Literal["tap"]
    button: Name | None = Field(None, description="The button whose click area is tapped (or `point`).")
    point: Point | None = Field(None, description="[x, y] in reference-resolution pixels (or `button`).")
    search: PerServer[Area] | None = Field(
        None, description="With `button`: find the button's template inside this area (a dialog whose button "
                          "moves) and tap where it is found; where it is not found, its declared click area.")

    @model_validator(mode="after")
    def _one_target(self) -> TapAction:
        if (self.button is None) == (self.point is None):
            raise ValueError("a tap needs exactly one of `button` or `point`")
        if self.search is not None and self.button is None:
            raise ValueError("`search` finds a button: it needs `button`")
        return self


class SwipeAction(Model):
    type: Literal["swipe"]
    start: Point = Field(description="[x, y] where the swipe starts, in reference-resolution pixels.")
    end: Point = Field(description="[x, y] where the swipe ends.")
    duration_ms: int = Field(300, gt=0, le=10_000, description="Length of the gesture in milliseconds.")


class KeyAction(Model):
    """Press a key; `back` is the Android back key (keycode 4)."""

    type: Literal["key"]
    key: Literal["back", "home", "enter", "menu", "app_switch"] = Field(
        description="The key: back, home, enter, menu or app_switch."
    )


class WaitAction(Model):
    type: Literal["wait"]
    seconds: float = Field(gt=0, le=60, description="Seconds to wait (at most 60).")


Action = Annotated[Union[TapAction, SwipeAction, KeyAction, WaitAction], Field(discriminator="type")]


# --------------------------------------------------------------------------------------------------- graph nodes


class Link(Model):
    """A way from one page to another."""

    to: Name = Field(description="Destination page.")
    action: Action = Field(description="What takes the game there: tap, swipe, key or wait.")
    cost: float | None = Field(None, gt=0, description="Route-planning cost; layered default `link_cost`.")
    expect: Name | None = Field(None, description="Page expected after the action; defaults to `to`.")
    policy: str | None = Field(None, description="Policy override for this hop.")
    note: str | None = Field(None, description="Free text for people (where the button is, why the link is odd).")

    @property
    def expected_page(self) -> str:
        return self.expect or self.to


class Control(Model):
    """A button on a page that does something without leaving it (collect, confirm, refresh).

    Tasks tap controls; the simulator models their effect (`shows`: the popup that appears after the tap).
    """

    button: Name = Field(description="The button tapped.")
    shows: Name | None = Field(None, description="Popup that appears after tapping (modelled by the simulator).")
    note: str | None = Field(None, description="Free text for people.")


class TextField(Model):
    """A value a page shows as text, read with OCR by tasks (for example a commission count)."""

    name: Name = Field(description="The field's name, as tasks and goals refer to it.")
    area: PerServer[Area] = Field(description="Region whose text is read.")
    pattern: str = Field(description="Regular expression; its first group (or the whole match) is the value.")
    sample: PerServer[str] = Field(description="Text the simulator draws here.")


class Page(Model):
    name: Name = Field(description="Unique page name; links, tasks and gotos refer to the page by it.")
    description: str = Field("", description="One sentence for people and for the agent's prompt.")
    signatures: list[Signature] = Field(
        default_factory=list, description="All must hit for the page to be observed; use any_of for variants."
    )
    links: list[Link] = Field(default_factory=list, description="The ways from this page to others.")
    loading: float | None = Field(None, ge=0, description="Seconds this page may take to appear.")
    defaults: Defaults | None = Field(
        None, description="Layered defaults for this page's links and signatures (beat the graph's)."
    )
    controls: list[Control] = Field(default_factory=list, description="Buttons that act without leaving.")
    fields: list[TextField] = Field(default_factory=list, description="Text values tasks read with OCR.")


class Popup(Model):
    """Something that covers a page until dismissed (announcements, rewards, confirmations)."""

    name: Name = Field(description="Unique popup name.")
    description: str = Field("", description="One sentence for people and for the agent's prompt.")
    signatures: list[Signature] = Field(min_length=1, description="All must hit for the popup to be observed.")
    dismiss: list[Action] = Field(min_length=1, description="Actions that make the popup go away, in order.")
    priority: int = Field(0, description="Higher is checked and dismissed first.")
    blocking: bool = Field(True, description="Whether it blocks navigation until dismissed.")
    pages: list[Name] | None = Field(None, description="Only on these pages; everywhere when absent.")
    learned: Name | None = Field(None, description="The proposal this popup was learned from "
                                                   "(engine.learning.learner): the engine demotes it when its "
                                                   "dismissal fails or it fires where a known page is.")


class App(Model):
    """The game's Android app: what `am start -n PACKAGE/ACTIVITY` launches and `dumpsys window` reports."""

    package: PerServer[str] = Field(description="Android package name, e.g. com.example.game.")
    activity: PerServer[str] = Field(description="Launcher activity, fully qualified (com.example.MainActivity).")


class GraphFile(Model):
    """One YAML file of a graph folder. Files are merged; graph-wide fields may be set once."""

    game: str | None = Field(None, description="The game's name (one per graph; the folder's files agree).")
    resolution: tuple[int, int] | None = Field(None, description="Reference (width, height), e.g. [1280, 720].")
    servers: list[Name] | None = Field(
        None, description=(
                    "The game servers per-server values may name, e.g. [en, cn, jp, tw]; the first is the default.")
    )
    fallback_server: Name | None = Field(
        None, description="The server whose value or asset is used where another server has none.")
    unknown_page: Name | None = Field(
        None, description="The name of a page standing for an unknown screen, never a navigation target.")
    spending_words: list[str] | None = Field(
        None, description="Words on a button that spends or commits (buy, use...), added to the built-in list "
                          "(engine.config.words.SPENDING): the dismissal search never taps a button that says one.")
    start_page: Name | None = Field(None, description="Page a fresh game session starts on (a login screen).")
    app: App | None = Field(None, description="The game's Android package and activity, per server.")
    defaults: Defaults | None = Field(
        None, description="Layered defaults for every page, link and signature of the graph.")
    loading_signatures: list[Signature] | None = Field(
        None, description="Signatures of the game's loading screen (all must hit); none means no such screen.")
    buttons: list[Button] = Field(
        default_factory=list, description="Named buttons, declared once and referred to by name."
    )
    pages: list[Page] = Field(default_factory=list, description="The game's screens and the links between them.")
    popups: list[Popup] = Field(default_factory=list, description="What covers a page until dismissed.")


class Graph(Model):
    """A whole, merged and cross-checked graph (build it with engine.config.loader.load_graph)."""

    game: str
    resolution: tuple[int, int]
    servers: list[Name] = Field(min_length=1)
    fallback_server: Name
    unknown_page: Name = "page_unknown"
    start_page: Name | None = None
    app: App | None = None
    spending_words: list[str] = Field(default_factory=list)
    defaults: Defaults = Defaults()
    loading_signatures: list[Signature] = Field(default_factory=list)
    buttons: list[Button] = Field(default_factory=list)
    pages: list[Page] = Field(default_factory=list)
    popups: list[Popup] = Field(default_factory=list)
    server: Name | None = Field(None, description="Set when per-server values have been collapsed.")

    # ---- lookups (dict views are rebuilt on demand; graphs are small and frozen)

    def page(self, name: str) -> Page:
        for page in self.pages:
            if page.name == name:
                return page
        raise KeyError(name)

    def button(self, name: str) -> Button:
        for button in self.buttons:
            if button.name == name:
                return button
        raise KeyError(name)

    def popup(self, name: str) -> Popup:
        for popup in self.popups:
            if popup.name == name:
                return popup
        raise KeyError(name)

    @property
    def page_names(self) -> list[str]:
        return [page.name for page in self.pages]

    def settings(self, page: Page | None = None, link: Link | None = None) -> Defaults:
        """Effective defaults for a page and link: link beats page beats graph beats built-in."""
        layers: list[dict[str, Any]] = [
            BUILTIN_DEFAULTS.model_dump(exclude_none=True),
            self.defaults.model_dump(exclude_none=True),
        ]
        if page is not None and page.defaults is not None:
            layers.append(page.defaults.model_dump(exclude_none=True))
        if page is not None and page.loading is not None:
            layers.append({"loading": page.loading})
        if link is not None:
            layers.append({k: v for k, v in {"link_cost": link.cost, "policy": link.policy}.items() if v is not None})
        merged: dict[str, Any] = {}
        for layer in layers:
            merged.update(layer)
        return Defaults(**merged)

    def resolve(self, server: str | None = None) -> Graph:
        """This graph for `server`, or for its first declared server when None: done once, as a session opens.

        Raises:
            ConfigError: the graph does not declare `server` (or is already resolved for another one).
        """
        from engine.core.errors import ConfigError

        if self.server is not None:
            if server not in (None, self.server):
                raise ConfigError(f"the graph is already resolved for server {self.server!r}, not {server!r}")
            return self
        if server is not None and server not in self.servers:
            raise ConfigError(f"unknown server {server!r}; this graph declares {', '.join(self.servers)}")
        return self.for_server(server or self.servers[0])

    def require_resolved(self) -> Graph:
        """This graph, which must already be resolved for one server (Graph.resolve)."""
        if self.server is None:
            raise ValueError("the graph is not resolved for a server: call graph.resolve(server) first")
        return self

    def for_server(self, server: str) -> Graph:
        """This graph with every per-server mapping collapsed to `server`'s value (or the fallback's)."""
        if server not in self.servers:
            raise ValueError(f"unknown server {server!r}; this graph has {', '.join(self.servers)}")
        resolved = _collapse(self, server, self.fallback_server)
        return resolved.model_copy(update={"server": server})


def _collapse(value: Any, server: str, fallback: str) -> Any:
    if isinstance(value, BaseModel):
        updates = {name: _collapse(getattr(value, name), server, fallback) for name in type(value).model_fields}
        return value.model_copy(update=updates)
    if isinstance(value, dict):
        return value[server] if server in value else value.get(fallback)
    if isinstance(value, list):
        return [_collapse(item, server, fallback) for item in value]
    return value


AnyOfSignature.model_rebuild()
