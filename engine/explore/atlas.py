"""What exploring has learnt so far: pages as clusters of frames, popups over them, loading screens, and what each
action taken from a page led to.

The atlas is a function of the recording: ``absorb(action, frame)`` is all that changes it, live or when a recording
is replayed to resume. A frame joins the page whose members it matches best (engine.explore.sketch.SAME_PAGE of its
cells at least, and at most STABLE_SLACK cells different outside those seen moving by themselves, while they keep
their colours, and outside drawings that only moved a few pixels: engine.explore.sketch.page_difference; pages on
one backdrop may differ only by their title, whose words tell them apart: engine.explore.words); a frame that is
a known page under a compact changed box is a popup over it (undimmed, only over the page the action was taken on);
a frame that changed by itself, without input, is a loading screen; anything else is a new page.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable
from typing import Any

import cv2
import numpy as np

from engine.explore.folding import closed_onto, opened_onto
from engine.explore.nodes import (NOWHERE, Area, Here, Led, PageNode, PopupNode, best_of, pressed_with,  # noqa: F401
                                  recount)
from engine.explore.sketch import (DIM_BELOW, SAME_PAGE, Cover, Members, Sketch, cover, dimmed_under,
                                  page_difference, same_dialog, similarity)
from engine.explore.words import Words
from engine.navigation.dismissal import SAME_BOX, action_key, box_match, key_action  # noqa: F401 - re-exported

KEEP_SKETCHES = 8  # sketches kept per page to match frames against (the first, then each that matched less well)
LOADING_LOOKS = 2  # looks in a row at a loading screen that stays before it counts as a page (Atlas._stays)
KEEP_MEMBERS = 6  # member frames kept per page as evidence
COVER_SKETCHES = 3  # a page's sketches a frame is compared with to tell whether it is that page under a popup
POPUP_LIKE = 0.8  # share of a popup's box cells alike from which a screen shows a known popup (Atlas._popup_for)
DROPS_SEEN = 0.03
"""Share of known links taken again that left the screen as it was (a dropped tap) from which, seen at least twice,
an action that did nothing once may have been dropped too, and is worth a second try."""
STABLE_SLACK = 1
"""Cells a frame of a page may differ in from one of its members, outside the cells seen moving by themselves (a
badge lit, a digit of a counter that an action changed). Pages drawn on one shared backdrop differ in as few as 3
cells of 144 (two pages whose only drawing is a title: issue 45, generated game 1), a short title in 2, while their
swaying art and sparks change 16; so share alone (SAME_PAGE) called them one page, and the explorer found 6 pages of
31. A counter that changes in more cells splits its page in two (a duplicate in the draft, named in its review)."""
FROZEN_AFTER = 3
"""Known links in a row that left the screen as it was, nothing changing in between: the game has stopped taking
input (an idle screen only a small spot wakes, a dialog drawn too faintly to tell). Those tries are not held against
the links, and the explorer restarts the game."""


class Atlas:
    def __init__(self, words: Words | None = None) -> None:
        self.words = words or Words()  # pages whose cells match but whose words differ (no reader: none)
        self.pages: list[PageNode] = []
        self.popups: list[PopupNode] = []
        self.here: Here = NOWHERE
        self.stood: int | None = None
        """The last page the explorer stood on with nothing over it (None after a restart)."""
        self.start: int | None = None
        self._start_by_restart = False
        self._last: tuple[int, str] | None = None
        """The page and action that led to the current screen (moved on when a loading screen resolves)."""
        self._looks = 0
        """Looks in a row at one loading screen that stayed."""
        self.changes = 0
        """How often something new was learnt (a page, a popup, a link outcome not seen before)."""
        self.link_retries = 0
        self.link_stays = 0
        """Links taken again, and how often the screen stayed as it was instead (a dropped tap)."""
        self._stays_in_a_row: list[tuple[int, str]] = []
        self.frozen = False
        """FROZEN_AFTER links in a row left the screen as it was (cleared by a restart)."""
        self._members: dict[int, tuple[int, Members]] = {}  # page -> its sketches stacked (sketch.Members)
        self.unfolded: list[tuple[int, str | None]] = []
        """Pages that popups turned out to be (Atlas.unfold) and a frame of each, for the explorer to offer their
        actions (it takes them from here)."""
        self.chain: list[int] = []  # the popups shown one after another since the last page
        self.arrived: set[tuple[int, str, int]] = set()  # (page, action, page it showed with nothing over it)
        self.swallowed: dict[tuple, list[str]] = {}
        """(kind, page, popup) -> actions given up there by the anti-repeat rule (engine.explore.repeats)."""
        self.siblings: Callable[[int, str], Iterable[str]] = lambda page, key: ()
        """(page, action key) -> keys of the page's other taps on the same button (the explorer sets the plates)."""

    # ------------------------------------------------------------------ classifying a frame

    def best_page(self, sk: Sketch, moving: Any = None, led: Led = Led(), path: str | None = None
                  ) -> tuple[int | None, float]:
        """The page `sk` (file `path`) shows and the share of cells matching its closest member, or (None, 0.0):
        SAME_PAGE of the cells at least, and at most STABLE_SLACK others outside the cells seen moving (on the page,
        or now), and no other words where their fine drawings differ (engine.explore.words); for `led`, the page
        the same action from the same page led to before, SAME_PAGE alone, and its words only when that action showed
        it, another page, with nothing over it before (a page whose content changed since, reached again by the same
        button: a list page drafted six times once its words counted there; but a button that "led" to a look-alike
        under a dialog placed over it, or that did nothing, is no reason to merge them: generated seeds 12 and 8
        under chaos). Never the start page, which a crash shows after any action (seed 9 under chaos)."""
        near = []  # (share, page, member): the members that share SAME_PAGE of the cells, the most alike first
        for page in self.pages:
            if page.folded is not None or not page.sketches:
                continue
            if self._members.get(page.id, (0,))[0] != len(page.sketches):  # its members stacked, once per change
                self._members[page.id] = (len(page.sketches), Members(page.sketches))
            shares = self._members[page.id][1].shares(sk)
            near += [(-float(v), page.id, i) for i, v in enumerate(shares) if v >= SAME_PAGE - 0.01]  # (rounding)
        best, key = None, (STABLE_SLACK + 1, 0.0)
        for _, page_id, i in sorted(near):
            if key[0] == 0:
                break  # none after it shares more cells: none can do better than no cell differing for good
            page = self.pages[page_id]
            excused = page.moving if moving is None else moving if page.moving is None else page.moving | moving
            member, file = page.sketches[i], (page.sketch_files[i] if i < len(page.sketch_files) else None)
            share, stable = page_difference(sk, member, excused)
            if share < SAME_PAGE:
                continue
            stable = min(stable, STABLE_SLACK) if page.id == led.page else stable
            if stable <= STABLE_SLACK and (stable, -share) < (key[0], -key[1]) and (
                    led.clean and led.page == page.id or not self.words.apart(sk, member, excused, path, file)):
                best, key = page.id, (stable, share)
        return best, (key[1] if best is not None else 0.0)

    def classify(self, sk: Sketch, moving: Any = None, on: int | None = None, led: Led = Led(),
                 path: str | None = None) -> tuple[str, int | None, Cover | None]:
        """('page' | 'loading', page id, None), ('popup', over page id, cover) or ('new', None, None). `on`: the
        page the action was taken on (the only one an undimmed box counts as a popup over: elsewhere it is as
        likely another page that differs in a title); `led`: where the same action led before (best_page)."""
        best, score = self.best_page(sk, moving, led, path)
        if best is not None and score >= SAME_PAGE:
            return ("loading" if self.pages[best].loading else "page"), best, None
        covers = []
        for page in self.pages:
            if page.loading or not page.sketches:
                continue
            # Its first sketches (the first may hold a counter or a dot that changed since).
            found = next(filter(None, (cover(sk, member) for member in page.sketches[:COVER_SKETCHES])), None)
            if found is not None and (found.gain <= DIM_BELOW or page.id == on):
                covers.append((found.rest, -(found.box[2] - found.box[0]) * (found.box[3] - found.box[1]), page.id,
                               found))
        if covers:
            covers.sort(reverse=True)
            return "popup", covers[0][2], covers[0][3]
        return "new", None, None

    def _popup_for(self, sk: Sketch, over: int, found: Cover, frame_path: str | None) -> PopupNode:
        for popup in self.popups:
            if box_match(popup.box, found.box) >= SAME_BOX and any(  # an undimmed one's words too (Words.apart_in)
                    same_dialog(sk, m, found.box, POPUP_LIKE) and (popup.dimmed or not self.words.apart_in(
                        sk, m, found.box, frame_path, file)) for m, file in zip(popup.sketches, popup.sketch_files)):
                break
        else:
            popup = PopupNode(len(self.popups), found.box, dimmed=found.gain <= DIM_BELOW)
            self.popups.append(popup)
            self.changes += 1
        popup.over.add(over)
        if len(popup.sketches) < KEEP_SKETCHES:
            popup.sketches.append(sk)
            popup.sketch_files.append(frame_path)
        if frame_path and len(popup.members) < KEEP_MEMBERS and frame_path not in popup.members:
            popup.members.append(frame_path)
        return popup

    def _page_for(self, sk: Sketch, kind: str, page_id: int | None, frame_path: str | None,
                  moving: Any = None) -> PageNode:
        if kind == "new":
            page = PageNode(len(self.pages))
            self.pages.append(page)
            self.changes += 1
        else:
            page = self.pages[page_id]
        if moving is not None and (page.moving is None or page.moving.shape == moving.shape):
            # With the cells beside them: a figure that sways is seen for a second or so, and reaches further.
            near = cv2.dilate(moving.astype(np.uint8), np.ones((3, 3), np.uint8)).astype(bool)
            page.moving = near if page.moving is None else page.moving | near
        if len(page.sketches) < KEEP_SKETCHES and (
                not page.sketches or max(similarity(sk, m) for m in page.sketches) < 0.97):
            page.sketches.append(sk)
            page.sketch_files.append(frame_path)
        if frame_path and len(page.members) < KEEP_MEMBERS and frame_path not in page.members:
            page.members.append(frame_path)
        return page

    # ------------------------------------------------------------------ learning from one step

    def led_to(self, action: dict[str, Any]) -> Led:
        """The page `action`, taken where the explorer stands, led to most often before, or, never taken here, where
        the other pieces of its button led (Led(): neither), and whether it showed it with nothing over it."""
        here = self.here
        if here.kind != "page":
            return Led()
        page, key = self.pages[here.page], action_key(action)
        same = pressed_with(page, action) | set(self.siblings(here.page, key))  # (a page's content may have changed)
        before = page.results.get(key) or sum((page.results.get(k, Counter()) for k in same), Counter())
        best = best_of(before) if before else None  # ("same",): the page it was taken on
        led = (best[1] if best[0] == "page" else here.page) if best else None
        led = None if led == self.start != here.page else led  # (a crash shows the start page after any action)
        return Led(led, led not in (None, here.page) and any((here.page, k, led) in self.arrived for k in same | {key}))

    def absorb(self, action: dict[str, Any], sk: Sketch, frame_path: str | None = None,
               transients: list[tuple[Sketch, str | None]] = (), moving: Any = None,
               elapsed: float | None = None) -> Here:
        """Learn from `action` having led to the frame `sk` (after `transients`, screens that came and went by
        themselves: loading screens; `moving`: the cells seen changing by themselves on it; `elapsed`: the seconds
        from the action to `sk` settled); returns where the explorer is now."""
        for t_sk, t_path in transients:
            self.loading_screen(t_sk, t_path)
        prev, led = self.here, self.led_to(action)
        # The page an undimmed box may be a popup over: the one the explorer stands on, or the one under the popup
        # it stands on if it stood on that page before the popup came. A dimmed dialog that came with a tap on
        # another page is placed over the page its dimmed rest looks most like, a guess: a tab never seen without
        # that dialog looked like its sister tab, and once the dialog closed every clean frame of it was taken for
        # a popup over the sister (issue 45, seed 3: two tabs of four never drafted).
        on = prev.page if prev.kind == "page" or prev.kind == "popup" and prev.page == self.stood else None
        kind, page_id, found = self.classify(sk, moving, on=on, led=led, path=frame_path)
        if kind == "popup":
            popup = self._popup_for(sk, page_id, found, frame_path)
            now = Here("popup", page_id, popup.id)
        else:
            page = self._page_for(sk, kind, page_id, frame_path, moving)
            now = Here("loading" if page.loading else "page", page.id)
            if kind == "new":
                self._fold_over(page.id, skip=prev.page if prev.kind == "page" else None)
        kind_of = action.get("type")
        if now.kind == "page" and (self.start is None or kind_of == "restart" and not self._start_by_restart):
            # Where the game starts: the first page after a restart, else the first page seen.
            self.start = now.page
            self._start_by_restart = kind_of == "restart"
        if kind_of == "restart":
            self._last = None
        elif kind_of == "screenshot":
            if prev.kind == "page" and now != prev and now.kind == "page" and self.pages[prev.page].visits <= 1:
                self._became_loading(prev.page, now.page)
            now = self._stays(prev, now)
        elif prev.kind == "page":
            key = action_key(action)
            node = self.pages[prev.page]
            node.tried[key] += 1
            node.taken.setdefault(key, dict(action))
            outcome = ("same",) if now.outcome() == prev.outcome() else now.outcome()
            seen = node.results.setdefault(key, Counter())
            if outcome not in seen:
                self.changes += 1
            if seen and best_of(seen)[0] == "page" and best_of(seen)[1] != prev.page:
                self.link_retries += 1
                self.link_stays += outcome == ("same",)
            if outcome == ("same",) and now == prev and any(o[0] == "page" and o[1] != prev.page for o in seen):
                self._stays_in_a_row.append((prev.page, key))
            seen[outcome] += 1
            if now.kind == "page":
                self.arrived.add((prev.page, key, now.page))
            if now.kind == "popup":
                self.popups[now.popup].opened_by.add((prev.page, key))
            self._last = (prev.page, key)
            self._moves_by_itself(node)
            if now.kind == "page" and now.page != prev.page:  # a sister left before its page's way back was known
                for popup in [p for p in self.popups if p.left_for is not None and p.over and not p.dimmed]:
                    if self._opened_from(popup, popup.left_for):
                        self.unfold(popup, {"type": "key", "key": "back"}, popup.left_for, 1)
            if now.kind == "page" and now.page != prev.page and prev.page != self.start and not node.loading:
                found = self.under_popup(prev.page, now.page)
                if found is not None:  # it was `now` under a popup, `key` closed it
                    self.fold(prev.page, now.page, found)
        elif prev.kind == "popup":
            popup = self.popups[prev.popup]
            popup.tried[action_key(action)] += 1
            # Closed: the page under it shows, or another popup over that page (a chain: under chaos three in ten)
            if now.kind == "page" and (now.page in popup.over or closed_onto(self, popup, now.page)) or \
                    now.kind == "popup" and now.popup != prev.popup and now.page == prev.page:
                popup.closed[action_key(action)] += 1
                opened_onto(self, action, prev.page, now.page) if now.kind == "page" else None
                if popup.dismiss is None:
                    popup.dismiss = dict(action)
                    self.changes += 1
            if kind_of == "key" and now.kind == "page" and not popup.dimmed:
                popup.left_for = now.page if now.page not in popup.over else popup.left_for
                if self._opened_from(popup, now.page):
                    self.unfold(popup, action, now.page, popup.closed[action_key(action)] or 1)
        if kind_of == "restart" or now != prev:
            self._stays_in_a_row.clear()
            self.frozen = self.frozen and kind_of != "restart"
        elif len(self._stays_in_a_row) >= FROZEN_AFTER:
            self._thaw()
        if now.kind == "page" and (prev.kind != "page" or prev.page != now.page):
            self.pages[now.page].visits += 1
            if transients:
                self.pages[now.page].slow = True
                if elapsed:
                    self.pages[now.page].slow_s = max(self.pages[now.page].slow_s, elapsed)
        self.here, self.chain = now, (self.chain + [now.popup] if now.kind == "popup" else [])
        if now.kind == "page" or kind_of == "restart":
            self.stood = now.page if now.kind == "page" else None
        return now

    def _thaw(self) -> None:
        """The game stopped taking input (FROZEN_AFTER): the stays seen since are taken back."""
        for page_id, key in self._stays_in_a_row:
            node = self.pages[page_id]
            node.tried[key] -= 1
            node.results[key][("same",)] -= 1
            node.results[key] += Counter()  # drops the zero count
        self._stays_in_a_row.clear()
        self.frozen = True

    def loading_screen(self, sk: Sketch, frame_path: str | None) -> None:
        """A screen seen changing by itself: a loading screen (a new one, or a page now known to be one)."""
        kind, page_id, _ = self.classify(sk, path=frame_path)
        if kind == "popup":
            return
        page = self._page_for(sk, "new" if kind == "new" else "page", page_id, frame_path)
        if not page.loading and page.visits <= 1:
            page.loading = True

    def _stays(self, prev: Here, now: Here) -> Here:
        """A loading screen looked at LOADING_LOOKS times in a row (each look waits for it to go) that is still
        there goes nowhere by itself: it is a page after all (one whose clock ticks, taken for one that loads)."""
        if prev.kind == "loading" and now == prev:
            self._looks += 1
            if self._looks >= LOADING_LOOKS:
                self.pages[now.page].loading = False
                self.changes += 1
                self._looks = 0
                return Here("page", now.page)
        else:
            self._looks = 0
        return now

    def _moves_by_itself(self, node: PageNode) -> None:
        """A screen every different action (four at least, a swipe among them: swipes rarely leave a page) left for
        the same page changes by itself: a loading screen that outlasted the settling wait, not a page."""
        outcomes = {o for c in node.results.values() for o in c}
        if len(node.results) >= 4 and len(outcomes) == 1 and any(k.startswith("swipe:") for k in node.results):
            (only,) = outcomes
            if only[0] == "page" and only[1] != node.id and node.id != self.start:
                node.loading = True
                self.pages[only[1]].slow = True
                for page in self.pages:  # what led to the loading screen led to where it goes
                    for counter in page.results.values():
                        moved = counter.pop(("page", node.id), 0)
                        if moved:
                            counter[only] += moved

    def _became_loading(self, page_id: int, now: int) -> None:
        """The page the explorer stood on changed without input: it was a loading screen, and the action that led
        to it led to where it went."""
        node = self.pages[page_id]
        node.loading = True
        self.pages[now].slow = True
        if self._last is not None:
            recount(self.pages[self._last[0]].results, self._last[1], ("page", page_id), ("page", now))

    def _fold_over(self, new: int, skip: int | None) -> None:
        """Pages seen before under a popup over page `new`, first seen now, become that popup (what led to them led
        to `new`: a route through them is a route to it). The page just left is folded by the action that left it."""
        for page in self.pages:
            if page.id not in (new, skip, self.start) and not page.loading and page.folded is None:
                found = self.under_popup(page.id, new)
                if found is not None:
                    self.fold(page.id, new, found)

    def under_popup(self, page_id: int, under: int) -> Cover | None:
        """How page `page_id` is page `under` under a popup (a changed box over it dimmed), or None: their first
        sketches compared (sketch.dimmed_under)."""
        return dimmed_under(self.pages[page_id].sketches, self.pages[under].sketches)

    def fold(self, page_id: int, under: int, found: Cover) -> PopupNode:
        """Page `page_id` is page `under` under a popup (seen before `under` was known): it becomes that popup. What
        led to it led to `under`, and the action that went from it to `under` most often is the popup's dismissal
        (under faults the same tap may have had other effects on other tries)."""
        node = self.pages[page_id]
        popup = PopupNode(len(self.popups), found.box, over={under}, sketches=list(node.sketches),
                          members=list(node.members))
        tries = [(counter[("page", under)], key) for key, counter in node.results.items() if counter[("page", under)]]
        popup.closed.update({key: n for n, key in tries})
        if tries:
            popup.dismiss = dict(node.taken[max(tries, key=lambda t: t[0])[1]])
        self.popups.append(popup)
        node.loading, node.folded = True, popup.id  # no longer a page
        for other in self.pages:
            for counter in other.results.values():
                moved = counter.pop(("page", page_id), 0)
                if moved:
                    counter[("page", under)] += moved
        self.changes += 1
        return popup

    def _opened_from(self, popup: PopupNode, now: int) -> bool:
        """Whether the back key, having left `popup` for page `now`, shows it a page opened from the page it covers:
        back to that page (its child), or to where that page's own back key leads or where it is opened from (its
        sister: a tab)."""
        return any(src in popup.over and (src == now or self.outcome(src, "key:back") == ("page", now)
                                          or src in self.exits(now)) for src, _ in popup.opened_by)

    def unfold(self, popup: PopupNode, key_action: dict[str, Any], to: int, seen: int) -> PageNode:
        """An undimmed box that an action on the page it covers opened, and that the back key left for that page (or
        for where that page's back key leads), is a page opened from it (a list's row, an item, a sister tab) drawn
        on the backdrop they share, not a popup: a modal dialog dims what it covers (every one the generated games
        and the simulator's hand-drawn graphs draw) and is closed, not left, by the back key, while a page whose drawing
        differs from another's in a box looks like one over it (issue 45: generated seed 10's ESTATE and EPOCH, seed
        4's EMPIRE and GROVE, seed 3's CARGO and seed 6's LEGEND tabs, never explored). What opened it leads to the
        new page; the back key (`seen` times), to `to`."""
        page = PageNode(len(self.pages), sketches=list(popup.sketches), sketch_files=list(popup.sketch_files),
                        members=list(popup.members), visits=1)
        key = action_key(key_action)
        page.tried[key], page.taken[key] = popup.tried[key], dict(key_action)
        page.results[key] = Counter({("page", to): seen})
        for src, opener in popup.opened_by:  # an action that opened a popup over its own page counted as "same"
            counter = self.pages[src].results.get(opener) if src in popup.over else None
            moved = counter.pop(("same",), 0) if counter is not None else 0
            if moved:
                counter[("page", page.id)] += moved
        self.pages.append(page)
        popup.became, popup.over, popup.sketches, popup.closed, popup.dismiss = page.id, set(), [], Counter(), None
        self.unfolded.append((page.id, page.members[0] if page.members else None))
        self.changes += 1
        return page

    # ------------------------------------------------------------------ reading what was learnt

    def outcome(self, page_id: int, key: str) -> tuple | None:
        """The most frequent outcome of `key` from page `page_id` (None if never tried)."""
        counter = self.pages[page_id].results.get(key)
        return best_of(counter) if counter else None

    def drops_taps(self) -> bool:
        """Whether the game was seen dropping taps (DROPS_SEEN)."""
        return self.link_stays >= 2 and self.link_stays >= DROPS_SEEN * self.link_retries

    def links(self) -> list[tuple[int, dict[str, Any], int, int, int]]:
        """(from, action, to, seen, tried) for every action whose most frequent outcome is another page."""
        out = []
        for page in self.pages:
            if page.loading:
                continue
            for key, counter in page.results.items():
                best = best_of(counter)
                if best[0] == "page" and best[1] != page.id and not self.pages[best[1]].loading:
                    out.append((page.id, page.taken[key], best[1], counter[best], page.tried[key]))
        return out

    def exits(self, page_id: int) -> set[int]:
        """The other pages some action taken on the page led to."""
        return {o[1] for c in self.pages[page_id].results.values() for o in c if o[0] == "page" and o[1] != page_id}

    def leaves(self, page_id: int) -> bool:
        """Whether some action taken on the page led to another page."""
        return bool(self.exits(page_id))

    def live_pages(self) -> list[PageNode]:
        return [p for p in self.pages if not p.loading]

