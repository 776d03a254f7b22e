"""A graph's drawing style: how the simulator draws its pages when a ``sim_style.yaml`` lies beside the graph.

A graph says what is on a screen (buttons, their areas, colours and labels; signatures); a style says how it looks:
one shared backdrop or one per area, how each button is drawn (a block with text, bare text, an icon; a border;
faint), the script of its text (Latin, or CJK and Hangul drawn as glyph-like shapes: engine.sim.glyphs), popup
panels, the things that move (swaying art, ticking timers and counters, particles) and how a page change shows
(fade, slide). It also holds the little a style of play needs beyond the graph: a dialog shown on arriving at a page,
a popup that opens the next one of a chain. Graph folders without a style render as they always did
(engine.sim.render); ``engine.sim.styled`` draws those with one.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

STYLE_FILE = "sim_style.yaml"
"""The style's file name in a graph folder (a companion file: the graph loader skips it)."""

Channel = Annotated[int, Field(ge=0, le=255)]
RGB = tuple[Channel, Channel, Channel]
Area = tuple[int, int, int, int]


class Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


class Backdrop(Model):
    """What a page shows behind everything: one of six kinds, from two colours and a seed."""

    kind: Literal["flat", "gradient", "textured", "noise", "dark", "light"]
    colour: RGB = Field(description="Main colour (r, g, b).")
    colour2: RGB = Field((0, 0, 0), description="Second colour: a gradient's end, a texture's pattern.")
    seed: int = Field(0, description="Seed of the texture and noise.")


class ButtonLook(Model):
    """How one button of the graph is drawn; its area, colour and label are the graph's."""

    look: Literal["block", "text", "icon", "plate"] = Field(
        "block", description="block: text on a filled block; text: bare text; icon: a shape, no text; "
                             "plate: a title's plate (text on a band of the fill colour).")
    border: bool = Field(False, description="A 2 px frame around the button.")
    faint: bool = Field(False, description="Drawn at low contrast (half blended into what is under it).")
    fill: RGB | None = Field(None, description="Block colour (default: the graph button's colour, else grey).")
    ink: RGB = Field((245, 245, 245), description="Colour of the text or icon.")
    icon: int = Field(0, description="Seed of the icon's shape (look: icon).")
    inverted: bool = Field(False, description="Ink and fill swapped: a selected tab.")


class Art(Model):
    """A character or emblem drawn in `area`, swaying by `sway` pixels over `period` seconds (0: still)."""

    area: Area
    seed: int = 0
    sway: int = Field(0, ge=0, le=64)
    period: float = Field(3.0, gt=0)


class Ticker(Model):
    """A timer counting down or a counter counting up, drawn as text in `area` and changing every second."""

    area: Area
    kind: Literal["timer", "counter"] = "timer"
    start: int = Field(3600, ge=0)
    ink: RGB = (255, 230, 120)


class Particles(Model):
    """`count` small sparks drifting through `area`."""

    area: Area
    count: int = Field(12, ge=1, le=200)
    size: int = Field(4, ge=1, le=16)
    colour: RGB = (255, 255, 255)
    seed: int = 0


class Scene(Model):
    """The art and moving parts of a page (or of every page: ``Style.everywhere``)."""

    art: list[Art] = Field(default_factory=list)
    tickers: list[Ticker] = Field(default_factory=list)
    particles: list[Particles] = Field(default_factory=list)


class Panel(Model):
    """A popup's window: its box, fill and border."""

    box: Area
    fill: RGB = (40, 44, 60)
    border: RGB | None = (230, 230, 230)


class Arrival(Model):
    """A popup the game shows when the player arrives at `page` (only the first time with `first_only`)."""

    page: str
    popup: str
    first_only: bool = True


class Style(Model):
    """A whole game's look (see the module docstring). Names refer to the graph beside it."""

    seed: int = Field(0, description="The generator's seed (or any number): what the style was drawn from.")
    script: Literal["latin", "cjk", "hangul"] = Field(
        "latin", description="How labels are written: Latin letters, or CJK / Hangul glyph-like shapes.")
    backdrop: Backdrop = Field(description="The backdrop every page shares unless its area has its own.")
    areas: dict[str, Backdrop] = Field(default_factory=dict, description="An area's own backdrop, by area name.")
    page_area: dict[str, str] = Field(default_factory=dict, description="The area of each page, by page name.")
    band: RGB | None = Field(None, description="A top bar drawn across every page (a HUD bar), or none.")
    band_height: int = Field(0, ge=0)
    plate: RGB = Field((235, 235, 235), description="Paper of text that OCR signatures read (a title plate).")
    buttons: dict[str, ButtonLook] = Field(default_factory=dict, description="Looks by button name "
                                           "(a button without one is a block with a border).")
    scenes: dict[str, Scene] = Field(default_factory=dict, description="Art and moving parts by page name.")
    everywhere: Scene = Field(default_factory=Scene, description="Moving parts on every page (a HUD counter).")
    panels: dict[str, Panel] = Field(default_factory=dict, description="Popup windows by popup name.")
    dim: float = Field(0.45, ge=0.1, le=1.0, description="Brightness a blocking popup leaves the page at.")
    loading: Backdrop | None = Field(None, description="The loading screen's backdrop (default: the shared one).")
    loading_bar: Area | None = Field(None, description="Where the loading screen's progress bar runs.")
    transition: Literal["none", "fade", "slide"] = "none"
    transition_s: float = Field(0.0, ge=0, le=5, description="How long a page change takes to show.")
    arrivals: list[Arrival] = Field(default_factory=list)
    chains: dict[str, str] = Field(default_factory=dict, description="Popup -> the popup shown when it closes.")


def load_style(path: str | Path) -> Style:
    """The style in `path` (a sim_style.yaml, or a graph folder holding one).

    Raises:
        YamlError: unreadable YAML or a wrong field (every problem, located).
    """
    from pydantic import ValidationError

    from engine.config.yamlmessages import problems_from_validation_error
    from engine.config.yamlsrc import load_yaml
    from engine.core.errors import YamlError

    path = Path(path)
    if path.is_dir():
        path = path / STYLE_FILE
    data, locator = load_yaml(path)
    try:
        return Style.model_validate(data or {})
    except ValidationError as exc:
        raise YamlError(problems_from_validation_error(exc, str(path), locator)) from None


def style_beside(graph_dir: str | Path | None) -> Style | None:
    """The style beside a graph folder (or file), or None when it has none (it renders as it always did)."""
    if graph_dir is None:
        return None
    folder = Path(graph_dir)
    if folder.is_file():
        folder = folder.parent
    return load_style(folder) if (folder / STYLE_FILE).is_file() else None


def style_json_schema() -> dict:
    """The JSON Schema of a style file, for editors."""
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", "title": "Simulator drawing style",
            **Style.model_json_schema()}
