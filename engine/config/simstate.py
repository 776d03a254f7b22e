"""Page state for the simulator, declared in YAML beside the graph (``sim_state.yaml``): what chores change.

A graph says where things are; this file says what the game holds and what taps do to it, for any game:

- ``counters``: numbers drawn into an area (or a page's text field) as ``N`` or ``N/M`` so OCR reads them back; a
  counter may be derived (``of: {list: commissions, state: running}`` counts those items).
- ``dots``: a small red circle at a point of a page, shown while a condition holds.
- ``lists``: items with states (ready, running, done...) drawn as rows in an area, each row with its state's
  button; a ``timer`` moves an item from one state to another when its ``seconds`` have passed on the simulator's
  clock (virtual in tests), and running rows show the time left as ``HH:MM:SS``.
- ``taps``: what tapping a graph button (or an area the state draws itself) does on a page, while a condition holds:
  effects ``show`` a popup, ``add`` to a counter, ``remove`` items of a list, ``change`` their state. A list row's
  button has effects of its own, which may name the tapped ``row``.
- ``closed_by_any_tap``: popups the game closes on a tap anywhere (a "tap to continue" screen). The graph's dismissal
  names the one spot a bot should tap (ALAS's, clear of what a tap might open); the game itself takes any tap.

``load_state`` validates the file (pydantic, then every name against the graph) and raises ``YamlError`` with
file:line:col problems. ``engine.sim.pagestate.SimState`` is one game's live state: ``SimGame`` draws it over each page,
gives it taps first, and exposes ``truth()`` so tests compare what a task reported with what really changed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pydantic
from pydantic import BaseModel, ConfigDict, Field, model_validator

from engine.config.schema import Graph

Area = tuple[int, int, int, int]
Point = tuple[int, int]
STATE_FILE = "sim_state.yaml"
STATE_GLOB = "sim_state*.yaml"
"""State files inside a graph folder (engine.config.graphfiles skips them; names are shared across them)."""


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Condition(_Model):
    """Compares a counter, or the number of items of a list (in `state`, if given), with `above` and `below`
    (without either: holds while the value is above 0)."""

    counter: str | None = Field(None, description="The counter compared (or `list`).")
    list: str | None = Field(None, description="The list whose items are counted (or `counter`).")
    state: str | None = Field(None, description="Count only the list's items in this state.")
    above: int | None = Field(None, description="Holds only while the value is above this.")
    below: int | None = Field(None, description="Holds only while the value is below this.")

    @model_validator(mode="after")
    def _one_source(self) -> Condition:
        if (self.counter is None) == (self.list is None):
            raise ValueError("a condition names exactly one of counter or list")
        if self.state is not None and self.list is None:
            raise ValueError("state only applies to a list")
        return self


class Effect(_Model):
    """One thing a tap does. Exactly one of show, add, remove, change."""

    show: str | None = Field(None, description="A popup that appears.")
    add: str | None = Field(None, description="A counter that moves by `by`.")
    by: int = Field(1, description="With add: how much the counter moves.")
    remove: str | None = Field(None, description="A list (items in state `where`, else all), or `row`: the tapped row.")
    change: str | None = Field(None, description="A list (items in state `where`) or `row`: their state becomes `to`.")
    where: str | None = Field(None, description="With remove or change: only the items in this state.")
    to: str | None = Field(None, description="With change: the items' new state.")
    seconds: float | None = Field(None, ge=0, description="With change: the timer restarts with this many seconds.")

    @model_validator(mode="after")
    def _one_op(self) -> Effect:
        ops = [k for k in ("show", "add", "remove", "change") if getattr(self, k) is not None]
        if len(ops) != 1:
            raise ValueError("an effect is exactly one of show, add, remove, change")
        if self.change is not None and self.to is None:
            raise ValueError("change needs `to` (the new state)")
        return self


class Counter(_Model):
    name: str = Field(description="The counter's name, as conditions and effects refer to it.")
    page: str = Field(description="The page that shows it.")
    area: Area | None = Field(None, description="Where the value is drawn; or `field`, a text field of the page.")
    field: str | None = Field(None, description="A text field of the page that shows the value (or `area`).")
    value: int = Field(0, description="The value at the start.")
    max: int | None = Field(None, ge=0, description="Drawn as value/max when given.")
    of: Condition | None = Field(None, description="A derived counter: the number of items of a list.")

    @model_validator(mode="after")
    def _where(self) -> Counter:
        if (self.area is None) == (self.field is None):
            raise ValueError("a counter has exactly one of area or field")
        if self.of is not None and self.of.list is None:
            raise ValueError("`of` counts a list")
        return self


class Dot(_Model):
    """A red dot at `at` (a circle the state draws), or a graph `button`'s template at its area (ALAS's red-dot
    assets), shown while `when` holds."""

    name: str = Field(description="The dot's name.")
    page: str = Field(description="The page it is drawn on.")
    at: Point | None = Field(None, description="[x, y] of the circle's centre (or `button`).")
    button: str | None = Field(None, description="A graph button whose template (asset) is the dot.")
    radius: int = Field(8, ge=2, le=40, description="The circle's radius in pixels.")
    when: Condition = Field(description="The dot shows while this holds.")

    @model_validator(mode="after")
    def _where(self) -> Dot:
        if (self.at is None) == (self.button is None):
            raise ValueError("a dot has exactly one of at or button")
        return self


class Item(_Model):
    name: str = Field(description="The item's name, drawn on its row.")
    state: str = Field(description="Its state, one of the list's `states`.")
    seconds: float = Field(0, ge=0, description="Time left on the list's timer (for items in its `from` state).")


class Timer(_Model):
    from_: str = Field(alias="from", description="Items in this state count down their `seconds`...")
    to: str = Field(description="...and move to this state when they reach 0.")


class RowButton(_Model):
    """The button a row shows in one state: `text` drawn in `area`, or a graph `button`'s template pasted with its
    top-left corner at `area`'s (so template matching finds it on every row); `area` is relative to the row."""

    text: str | None = Field(None, description="Text drawn as the button (or `button`).")
    button: str | None = Field(None, description="A graph button with a template (asset), drawn on each row.")
    area: Area = Field(description="[x1, y1, x2, y2] relative to the row.")
    when: Condition | None = Field(None, description="While false, the row's button does nothing.")
    do: list[Effect] = Field(default_factory=list, description="What tapping it does.")

    @model_validator(mode="after")
    def _look(self) -> RowButton:
        if (self.text is None) == (self.button is None):
            raise ValueError("a row button has exactly one of text or button")
        return self


class ItemList(_Model):
    name: str = Field(description="The list's name, as conditions and effects refer to it.")
    page: str = Field(description="The page that shows it.")
    area: Area = Field(description="Rows are stacked from the top of this area; those that do not fit are not shown.")
    row_height: int = Field(gt=8, description="Height of one row in pixels.")
    states: list[str] = Field(
        default_factory=lambda: ["ready", "running", "done"], min_length=1, description="The states an item can be in."
    )
    timer: Timer | None = Field(None, description="A countdown moving items from one state to another.")
    buttons: dict[str, RowButton] = Field(default_factory=dict, description="State -> the button its rows show.")
    items: list[Item] = Field(default_factory=list, description="The items at the start.")
    refill: str | None = Field(None, description="A removed item is replaced by a new one in this state at the end of "
                                                 "the list (a game that offers new work as old work is collected).")


class Tap(_Model):
    """What tapping `button` (a graph button) or `area` (drawn by the state with `text`) does on `page`."""

    page: str = Field(description="The page where the tap acts.")
    button: str | None = Field(None, description="A graph button tapped (or `area`).")
    area: Area | None = Field(None, description="A region tapped (or `button`), drawn with `text`.")
    text: str | None = Field(None, description="Text drawn in `area`.")
    draw: bool = Field(False, description="Draw `button` (its template) on the page while `when` holds.")
    when: Condition | None = Field(None, description="Without it the tap always acts; while false it does nothing.")
    do: list[Effect] = Field(min_length=1, description="What the tap does.")

    @model_validator(mode="after")
    def _target(self) -> Tap:
        if (self.button is None) == (self.area is None):
            raise ValueError("a tap has exactly one of button or area")
        return self


class StateSpec(_Model):
    """A state file: counters, dots, lists and taps (see the module docstring)."""

    description: str = Field("", description="One sentence for people.")
    counters: list[Counter] = Field(default_factory=list, description="Numbers the game shows (coins, a daily count).")
    dots: list[Dot] = Field(default_factory=list, description="Red dots and what makes them show.")
    lists: list[ItemList] = Field(
        default_factory=list, description="Lists of rows with states and timers (commissions, research)."
    )
    taps: list[Tap] = Field(default_factory=list, description="What tapping a button or region does to the state.")
    closed_by_any_tap: list[str] = Field(
        default_factory=list, description="Popups the game closes on a tap anywhere ('tap to continue' screens), "
                                          "whatever spot the graph's dismissal names.")

    def with_overrides(self, overrides: dict[str, Any] | None) -> StateSpec:
        """This spec with initial values replaced: {counter: int, list: [items]} (a scenario's `state:`).

        Raises:
            ValueError: an unknown name or a value of the wrong kind.
        """
        if not overrides:
            return self
        data = self.model_dump(by_alias=True)
        counters = {c["name"]: c for c in data["counters"]}
        lists = {x["name"]: x for x in data["lists"]}
        for name, value in overrides.items():
            if name in counters and isinstance(value, int) and not isinstance(value, bool):
                counters[name]["value"] = value
            elif name in lists and isinstance(value, list):
                lists[name]["items"] = value
            else:
                raise ValueError(f"state override {name!r}: not a counter (int) or a list (items) of this state")
        return StateSpec.model_validate(data)


def state_json_schema() -> dict[str, Any]:
    """The JSON Schema of a state file (pages/sim_state.schema.json), for editors."""
    body = StateSpec.model_json_schema(by_alias=True)
    body.pop("title", None)
    return {"$schema": "https://json-schema.org/draft/2020-12/schema",
            "title": "Simulator state file (engine.config.simstate.StateSpec)", **body}


# --------------------------------------------------------------------------------------------------- loading


class _Names:
    """What a state file may name: the graph's popups, the file's counters and lists; `out` collects problems."""

    def __init__(self, spec: StateSpec, graph: Graph) -> None:
        self.popups = {p.name for p in graph.popups}
        self.counters = {c.name: c for c in spec.counters}
        self.lists = {x.name: x for x in spec.lists}
        self.out: list[tuple[tuple, str]] = []

    def condition(self, cond: Condition | None, path: tuple) -> None:
        if cond is None:
            return
        if cond.counter is not None and cond.counter not in self.counters:
            self.out.append((path + ("counter",), f"unknown counter {cond.counter!r}"))
        if cond.list is not None and cond.list not in self.lists:
            self.out.append((path + ("list",), f"unknown list {cond.list!r}"))
        elif cond.list is not None and cond.state is not None and cond.state not in self.lists[cond.list].states:
            self.out.append((path + ("state",), f"list {cond.list!r} has no state {cond.state!r}"))

    def effects(self, do: list[Effect], path: tuple, row_list: ItemList | None) -> None:
        for i, e in enumerate(do):
            self.effect(e, path + (i,), row_list)

    def effect(self, e: Effect, p: tuple, row_list: ItemList | None) -> None:
        out = self.out
        if e.show is not None and e.show not in self.popups:
            out.append((p + ("show",), f"unknown popup {e.show!r}"))
        if e.add is not None:
            if e.add not in self.counters:
                out.append((p + ("add",), f"unknown counter {e.add!r}"))
            elif self.counters[e.add].of is not None:
                out.append((p + ("add",), f"counter {e.add!r} is derived from a list; change the list instead"))
        target = e.remove or e.change
        if target is None:
            return
        key = "remove" if e.remove is not None else "change"
        the_list = row_list if target == "row" else self.lists.get(target)
        if target == "row" and row_list is None:
            out.append((p + (key,), "`row` only means something in a list row's button"))
        elif the_list is None:
            out.append((p + (key,), f"unknown list {target!r}"))
        else:
            for k in ("where", "to"):
                v = getattr(e, k)
                if v is not None and v not in the_list.states:
                    out.append((p + (k,), f"list {the_list.name!r} has no state {v!r}"))


def _cross_problems(spec: StateSpec, graph: Graph, merged: StateSpec | None = None) -> list[tuple[tuple, str]]:
    """(path in the file, message) for every name that the graph or the state (`merged`: all files) does not
    know."""
    pages = {p.name: p for p in graph.pages}
    buttons = {b.name for b in graph.buttons}
    templated = {b.name for b in graph.buttons if b.asset}
    names = _Names(merged or spec, graph)
    counters, out, condition, effects = names.counters, names.out, names.condition, names.effects

    for kind in ("counters", "dots", "lists"):
        seen: set[str] = set()
        for i, item in enumerate(getattr(spec, kind)):
            if item.page not in pages:
                out.append(((kind, i, "page"), f"unknown page {item.page!r}"))
            if item.name in seen or (kind == "lists" and item.name in counters):
                out.append(((kind, i, "name"), f"{item.name!r} is declared twice"))
            seen.add(item.name)
    for i, c in enumerate(spec.counters):
        page = pages.get(c.page)
        if c.field is not None and page is not None and c.field not in {f.name for f in page.fields}:
            out.append((("counters", i, "field"), f"page {c.page!r} has no text field {c.field!r}"))
        condition(c.of, ("counters", i, "of"))
    for i, d in enumerate(spec.dots):
        condition(d.when, ("dots", i, "when"))
        if d.button is not None and d.button not in templated:
            out.append((("dots", i, "button"), f"{d.button!r} is not a button with a template (asset)"))
    for i, x in enumerate(spec.lists):
        if x.refill is not None and x.refill not in x.states:
            out.append((("lists", i, "refill"), f"no state {x.refill!r} in this list"))
        for k in ("from_", "to"):
            v = getattr(x.timer, k) if x.timer else None
            if v is not None and v not in x.states:
                out.append((("lists", i, "timer", k.rstrip("_")), f"no state {v!r} in this list"))
        for state, button in x.buttons.items():
            if state not in x.states:
                out.append((("lists", i, "buttons", state), f"no state {state!r} in this list"))
            condition(button.when, ("lists", i, "buttons", state, "when"))
            if button.button is not None and button.button not in templated:
                why = f"{button.button!r} is not a button with a template (asset)"
                out.append((("lists", i, "buttons", state, "button"), why))
            effects(button.do, ("lists", i, "buttons", state, "do"), x)
        for j, item in enumerate(x.items):
            if item.state not in x.states:
                out.append((("lists", i, "items", j, "state"), f"no state {item.state!r} in this list"))
    for i, t in enumerate(spec.taps):
        if t.page not in pages:
            out.append((("taps", i, "page"), f"unknown page {t.page!r}"))
        if t.button is not None and t.button not in buttons:
            out.append((("taps", i, "button"), f"unknown button {t.button!r}"))
        if t.draw and t.button not in templated:
            out.append((("taps", i, "draw"), "draw needs a button with a template (asset)"))
        condition(t.when, ("taps", i, "when"))
        effects(t.do, ("taps", i, "do"), None)
    popups = {p.name for p in graph.popups}
    for i, name in enumerate(spec.closed_by_any_tap):
        if name not in popups:
            out.append((("closed_by_any_tap", i), f"unknown popup {name!r}"))
    return out


def state_files(path: str | Path) -> list[Path]:
    """The state files at `path`: the file itself, or a folder's sim_state*.yaml in name order."""
    path = Path(path)
    return sorted(path.glob(STATE_GLOB)) if path.is_dir() else [path]


def read_state(files: list[Path], graph: Graph | None = None) -> tuple[StateSpec | None, list]:
    """The files merged into one spec (None when any is broken), and every problem with file:line:col.

    Names (counters, lists) are shared across the files; each file is checked against the graph and the merged
    names. Never raises for a bad file (``validate`` lists the problems with the graph's own)."""
    from engine.config.yamlmessages import problems_from_validation_error
    from engine.config.yamlsrc import read_yaml

    parsed: list[tuple[StateSpec, Any]] = []
    problems: list = []
    for file in files:
        source = read_yaml(file)
        problems.extend(source.problems)
        if source.problems:
            continue
        try:
            parsed.append((StateSpec.model_validate(source.data or {}), source.locator))
        except pydantic.ValidationError as exc:
            problems.extend(problems_from_validation_error(exc, source.locator.file, source.locator))
    merged = StateSpec(description=" ".join(s.description for s, _ in parsed if s.description),
                       **{k: [x for s, _ in parsed for x in getattr(s, k)]
                          for k in ("counters", "dots", "lists", "taps", "closed_by_any_tap")})
    if graph is not None:
        seen: dict[str, str] = {}
        for spec, locator in parsed:
            problems += [locator.problem(p, message) for p, message in _cross_problems(spec, graph, merged)]
            for kind in ("counters", "dots", "lists"):
                for i, item in enumerate(getattr(spec, kind)):
                    first = seen.setdefault(item.name, locator.file)
                    if first != locator.file:
                        problems.append(locator.problem((kind, i, "name"), f"{item.name!r} is also declared in {first}"))
    return (None if problems else merged), problems


def load_state(path: str | Path, graph: Graph | None = None, overrides: dict[str, Any] | None = None) -> StateSpec:
    """Read the state files at `path` (a file, or a graph folder's sim_state*.yaml) and check them against `graph`.

    Raises:
        YamlError: unreadable YAML, a wrong field or an unknown name; every problem with file:line:col.
    """
    from engine.core.errors import YamlError

    spec, problems = read_state(state_files(path), graph)
    if spec is None:
        raise YamlError(problems)
    return spec.with_overrides(overrides)


def state_beside(graph_dir: str | Path | None, graph: Graph) -> StateSpec | None:
    """The state declared beside a graph folder (default: the shipped graph's); None when it declares none.

    Raises:
        YamlError: as ``load_state``.
    """
    from engine.core.paths import builtin_graph_dir

    folder = Path(graph_dir) if graph_dir is not None else builtin_graph_dir()
    if folder.is_file():
        folder = folder.parent
    return load_state(folder, graph) if any(folder.glob(STATE_GLOB)) else None
