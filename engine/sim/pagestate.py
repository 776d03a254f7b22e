"""The simulator's live page state (engine.config.simstate declares it): counters, dots, item lists with timers.

``SimState`` is one game's state built from a ``StateSpec``: ``SimGame`` draws it over each page, hands it taps
before the graph's own controls, and exposes ``truth()`` so tests compare what a task reported with what changed.
"""

from __future__ import annotations

import cv2
import numpy as np

from engine.config.schema import Graph
from engine.config.simstate import Condition, Effect, ItemList, StateSpec
from engine.sim.render import paste

RED_BGR = (36, 28, 237)


def clock_text(seconds: float) -> str:
    s = max(0, int(np.ceil(seconds)))
    return f"{s // 3600:02d}:{s % 3600 // 60:02d}:{s % 60:02d}"


class SimState:
    """One game's live state from a spec. Not thread-safe by itself: SimGame calls it under its lock."""

    def __init__(self, spec: StateSpec, graph: Graph, now: float) -> None:
        self.spec = spec
        graph = graph.require_resolved()
        self._click = {b.name: tuple(b.click_area) for b in graph.buttons}
        self._assets = {b.name: (b.asset, tuple(b.area)) for b in graph.buttons if b.asset}
        fields = {(p.name, f.name): tuple(f.area) for p in graph.pages for f in p.fields}
        self._counter_area = {c.name: tuple(c.area) if c.area else fields[(c.page, c.field)] for c in spec.counters}
        self.values = {c.name: c.value for c in spec.counters}
        self.items: dict[str, list[dict]] = {
            x.name: [{"name": it.name, "state": it.state, "ends": now + it.seconds} for it in x.items]
            for x in spec.lists
        }
        self._lists = {x.name: x for x in spec.lists}
        self.removed: list[dict] = []
        """Every item taken off a list: its list, name and state, when its timer ended (``ends``) and ``at`` (when it
        was taken): what a scheduler's harness measures collect delays with."""
        self._refills = 0
        self.acted: dict[str, int] = {}
        """Taps that changed the state, per page."""
        self.taken: dict[str, int] = {}
        """Things those taps took, per page: the list items each removed or changed, or one for a tap that moved
        only counters. What chores that claim N collected on a page must have done there."""

    # ---- reading

    def count(self, cond: Condition) -> int:
        if cond.counter is not None:
            return self.value(cond.counter)
        return sum(1 for it in self.items[cond.list] if cond.state is None or it["state"] == cond.state)

    def holds(self, cond: Condition | None) -> bool:
        if cond is None:
            return True
        v = self.count(cond)
        if cond.above is None and cond.below is None:
            return v > 0
        return (cond.above is None or v > cond.above) and (cond.below is None or v < cond.below)

    def value(self, name: str) -> int:
        counter = next(c for c in self.spec.counters if c.name == name)
        return self.count(counter.of) if counter.of is not None else self.values[name]

    def tick(self, now: float) -> None:
        """Timers: items whose time is up move to their list's timer state."""
        for x in self.spec.lists:
            if x.timer is not None:
                for it in self.items[x.name]:
                    if it["state"] == x.timer.from_ and now >= it["ends"]:
                        it["state"] = x.timer.to

    def truth(self, now: float) -> dict:
        self.tick(now)
        return {
            "counters": {c.name: self.value(c.name) for c in self.spec.counters},
            "dots": {d.name: self.holds(d.when) for d in self.spec.dots},
            "acted": dict(self.acted),
            "taken": dict(self.taken),
            "actionable": {p: n for p in sorted({e.page for e in [*self.spec.lists, *self.spec.taps]})
                           if (n := self.actionable(p))},
            "lists": {name: [{"name": it["name"], "state": it["state"], "left": round(max(0.0, it["ends"] - now), 3)}
                             for it in items] for name, items in self.items.items()},
        }

    def actionable(self, page: str) -> int:
        """How many taps on `page` would still change the state: rows whose button acts now, and conditional
        taps whose condition holds (a chore that claims its page is done leaves none)."""
        changes = lambda do: any(e.show is None for e in do)  # noqa: E731 - a popup alone changes nothing
        rows = sum(1 for x in self.spec.lists if x.page == page for it, _ in self._rows(x)
                   if (b := x.buttons.get(it["state"])) is not None and changes(b.do) and self.holds(b.when))
        taps = sum(1 for t in self.spec.taps if t.page == page and t.when is not None and changes(t.do)
                   and self.holds(t.when))
        return rows + taps

    def _rows(self, x: ItemList):
        """(item, row box) for the rows of list `x` that fit in its area."""
        x1, y1, x2, y2 = x.area
        for i, it in enumerate(self.items[x.name]):
            top = y1 + i * x.row_height
            if top + x.row_height > y2:
                return
            yield it, (x1, top, x2, top + x.row_height)

    # ---- drawing

    def draw(self, renderer, page: str, frame: np.ndarray, now: float) -> np.ndarray:
        """`frame` (the page as the graph draws it) with this page's state on top; a new array when it changed."""
        spec = self.spec
        if not any(e.page == page for e in [*spec.counters, *spec.dots, *spec.lists, *spec.taps]):
            return frame
        self.tick(now)
        out = frame.copy()
        for x in (x for x in spec.lists if x.page == page):
            x1, y1, x2, y2 = x.area
            out[y1:y2, x1:x2] = (out[y1:y2, x1:x2] // 3).astype(np.uint8)
            for it, (rx1, ry1, rx2, ry2) in self._rows(x):
                cv2.rectangle(out, (rx1, ry1), (rx2 - 1, ry2 - 1), (200, 200, 200), 1)
                h = ry2 - ry1
                renderer.draw_text(out, (rx1 + 8, ry1 + h // 4, rx1 + (rx2 - rx1) * 2 // 5, ry2 - h // 4), it["name"])
                if x.timer is not None and it["state"] == x.timer.from_:
                    renderer.draw_text(out, (rx1 + (rx2 - rx1) // 2, ry1 + h // 4, rx1 + (rx2 - rx1) * 3 // 4,
                                             ry2 - h // 4), clock_text(it["ends"] - now))
                button = x.buttons.get(it["state"])
                if button is not None:
                    bx1, by1, bx2, by2 = button.area
                    box = (rx1 + bx1, ry1 + by1, rx1 + bx2, ry1 + by2)
                    if button.button is not None:
                        self._paste(renderer, out, button.button, box)
                    else:
                        renderer.draw_text(out, box, button.text)
        for t in (t for t in spec.taps if t.page == page):
            if t.area is not None and t.text:
                renderer.draw_text(out, tuple(t.area), t.text)
            elif t.draw and self.holds(t.when):
                self._paste(renderer, out, t.button)
        for c in (c for c in spec.counters if c.page == page):
            v = self.value(c.name)
            renderer.draw_text(out, self._counter_area[c.name], f"{v}/{c.max}" if c.max is not None else str(v))
        for d in (d for d in spec.dots if d.page == page and self.holds(d.when)):
            if d.button is not None:
                self._paste(renderer, out, d.button)
            else:
                cv2.circle(out, tuple(d.at), d.radius, RED_BGR, -1, cv2.LINE_AA)
        return out

    def _paste(self, renderer, frame: np.ndarray, button: str, box: tuple | None = None) -> None:
        """A graph button's template (the pack's pixels, else the simulator's stand-in) at `box`'s top-left
        corner, or where the button is declared."""
        asset, area = self._assets[button]
        paste(frame, renderer.template_crop(asset, area), box or renderer.template_area(asset, area))

    # ---- input

    def tap(self, page: str, x: int, y: int, now: float) -> list[str] | None:
        """Apply what a tap at (x, y) on `page` does: the popups to show, or None when the state has no tap there."""
        self.tick(now)

        def inside(box) -> bool:
            return box[0] <= x < box[2] and box[1] <= y < box[3]

        for lst in (lst for lst in self.spec.lists if lst.page == page):
            for it, (rx1, ry1, _, _) in list(self._rows(lst)):
                button = lst.buttons.get(it["state"])
                if button is not None and inside((rx1 + button.area[0], ry1 + button.area[1],
                                                  rx1 + button.area[2], ry1 + button.area[3])):
                    return self._apply(button.do, now, lst, it, page) if self.holds(button.when) else []
        for t in (t for t in self.spec.taps if t.page == page):
            box = self._click.get(t.button) if t.button is not None else t.area
            if box is not None and inside(box):
                return self._apply(t.do, now, page=page) if self.holds(t.when) else []
        return None

    def _apply(self, do: list[Effect], now: float, row_list: ItemList | None = None, row: dict | None = None,
               page: str | None = None):
        shows, things = [], 0
        for e in do:
            if e.show is not None:
                shows.append(e.show)
            elif e.add is not None:
                counter = next(c for c in self.spec.counters if c.name == e.add)
                value = max(0, self.values[e.add] + e.by)
                self.values[e.add] = min(value, counter.max) if counter.max is not None else value
            else:
                target = e.remove or e.change
                lst = row_list if target == "row" else self._lists[target]
                chosen = [row] if target == "row" else [it for it in self.items[lst.name]
                                                        if e.where is None or it["state"] == e.where]
                things += len(chosen)
                for it in chosen:
                    if e.remove is not None:
                        self.items[lst.name].remove(it)
                        self.removed.append({"list": lst.name, "name": it["name"], "state": it["state"],
                                             "ends": it["ends"], "at": now})
                        if lst.refill is not None:
                            self._refills += 1
                            self.items[lst.name].append({"name": f"{lst.name} {self._refills}",
                                                         "state": lst.refill, "ends": now})
                    else:
                        it["state"] = e.to
                        if e.seconds is not None:
                            it["ends"] = now + e.seconds
        if page is not None:
            self.acted[page] = self.acted.get(page, 0) + 1
            self.taken[page] = self.taken.get(page, 0) + max(1, things)
        return shows

