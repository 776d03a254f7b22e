"""From what exploring learnt (engine.explore.atlas) to a draft (engine.explore.draft): names, evidence files,
signatures from stable regions, links, popups, loading screens and the review list.

A page seen once, through an action that led elsewhere every other time it was taken (a crash, a glitch screen), is
left out of the draft and named in the review instead. Names come from a title read on the page (the largest text
line in the top quarter, when a text reader is given), else ``page_<n>``; a name the known graph's observer gives
(``--from``) wins over both.
"""

from __future__ import annotations

import re
import shutil
from collections import Counter
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from engine.explore.atlas import Atlas, PageNode, action_key
from engine.explore.draft import (
    Draft,
    DraftLink,
    DraftPage,
    DraftPopup,
    KeyStep,
    LoadingScreen,
    Made,
    ReviewItem,
    SwipeStep,
    TapStep,
)
from engine.explore.recording import Recording
from engine.explore.repeats import REPEAT_LIMIT
from engine.explore.signatures import stable_signatures, unexplained
from engine.explore.sketch import SAME_PAGE, similarity
from engine.explore.words import Reader, TextBox
from engine.explore.write import allowance

Area = tuple[int, int, int, int]
Namer = Callable[[np.ndarray], str | None]
"""A frame -> the name a known graph gives it (--from), or None."""
OTHERS_PER_PAGE = 2
"""Frames of each other page a page's signatures must miss (kept in memory while drafting)."""
OWN_FRAMES = 4
"""Member frames a page's signatures must hit."""
MAYBE_SAME = 0.6


def step(action: dict[str, Any]) -> TapStep | SwipeStep | KeyStep:
    if action["type"] == "tap":
        area = action.get("area")
        return TapStep(type="tap", point=tuple(action["point"]), area=tuple(area) if area else None)
    if action["type"] == "swipe":
        return SwipeStep(type="swipe", start=tuple(action["start"]), end=tuple(action["end"]))
    return KeyStep(type="key", key=action["key"])


def slug(text: str) -> str:
    words = re.findall(r"[a-z0-9]+", text.casefold())
    return "_".join(words)[:40]


def title_of(frame: np.ndarray, reader: Reader | None) -> tuple[Area, str] | None:
    """The title of a frame: the tallest confidently read line in its top quarter (with letters in it)."""
    if reader is None:
        return None
    h = frame.shape[0]
    lines = [(box[3] - box[1], text, box) for text, conf, box in reader(frame)
             if conf >= 0.8 and box[1] < h // 4 and re.search(r"[^\W\d_]", text) and len(text.strip()) >= 2]
    if not lines:
        return None
    _, text, box = max(lines, key=lambda line: line[0])
    pad = 4
    area = (max(0, box[0] - pad), max(0, box[1] - pad), min(frame.shape[1], box[2] + pad), min(h, box[3] + pad))
    return area, text.strip()


def covered_pages(atlas: Atlas) -> dict[int, tuple[int, Any]]:
    """Pages that are another page under a popup, seen before that page was known (the popup came first): page id
    -> (the page it covers, the cover). The page covered must be where some action on it went at least once (the
    dismissal that worked; under faults the same tap may have other effects on other tries): under a dark backdrop,
    unlike pages look alike."""
    out: dict[int, tuple[int, Any]] = {}
    live = [p for p in atlas.live_pages() if p.sketches]  # folded pages are not live
    for page in live:
        if page.id == atlas.start:
            continue
        went = {outcome for c in page.results.values() for outcome in c}
        for other in live:
            if other.id != page.id and other.id not in out and ("page", other.id) in went:
                found = atlas.under_popup(page.id, other.id)
                if found is not None:
                    out[page.id] = (other.id, found)
                    break
    return out


def fold_covered(atlas: Atlas, covered: dict[int, tuple[int, Any]]) -> None:
    """Turn each covered page into a popup over the page it covers (engine.explore.atlas.Atlas.fold; exploring folds
    most of them as it goes, when the dismissal leads to the page under)."""
    for page_id, (under, found) in covered.items():
        atlas.fold(page_id, under, found)


def transient_pages(atlas: Atlas) -> set[int]:
    """Pages seen once through an action that otherwise led elsewhere (or to the same page): a glitch, a crash."""
    out = set()
    arrivals: Counter = Counter()
    disproved: Counter = Counter()
    for page in atlas.pages:
        for key, counter in page.results.items():
            total = sum(counter.values())
            for outcome, count in counter.items():
                if outcome[0] == "page":
                    arrivals[outcome[1]] += count
                    if total >= 2 and count <= total / 2:
                        disproved[outcome[1]] += count
    for page in atlas.pages:
        if page.id == atlas.start or page.loading:
            continue
        if page.visits <= 1 and arrivals[page.id] >= 1 and disproved[page.id] >= arrivals[page.id]:
            out.add(page.id)
    return out


class Drafter:
    """Turns an atlas and its recording folder into a Draft, copying evidence into the same folder."""

    def __init__(self, atlas: Atlas, folder: str | Path, *, resolution: tuple[int, int], game: str = "draft_game",
                 server: str = "en", reader: Reader | None = None, namer: Namer | None = None,
                 app: dict[str, str] | None = None) -> None:
        self.atlas, self.folder = atlas, Path(folder)
        self.resolution, self.game, self.server = resolution, game, server
        self.reader, self.namer, self.app = reader, namer, app
        self.recording_frames: dict[str, np.ndarray] = {}
        self.sketches: dict[int, Any] = {}
        """Sketches of the cached frames by id (the frames stay alive in recording_frames)."""

    def _frame(self, rel: str) -> np.ndarray | None:
        if rel not in self.recording_frames:  # the first frames of each page: read again and again
            self.recording_frames[rel] = Recording.read_from(self.folder, rel)
        return self.recording_frames[rel]

    def _frames(self, rels: Sequence[str]) -> list[np.ndarray]:
        return [f for f in (self._frame(r) for r in rels) if f is not None]

    def _names(self, pages: list[PageNode]) -> dict[int, str]:
        names: dict[int, str] = {}
        used: set[str] = set()
        for number, page in enumerate(pages, 1):
            first = self._frame(page.members[0]) if page.members else None
            name = self.namer(first) if self.namer is not None and first is not None else None
            if first is not None:
                page.title = title_of(first, self.reader)
            if name is None and page.title is not None:
                text = slug(page.title[1])
                name = text if text.startswith("page_") else f"page_{text}" if text else None
            name = name or f"page_{number}"
            base, n = name, 2
            while name in used:
                name, n = f"{base}_{n}", n + 1
            used.add(name)
            names[page.id] = name
        return names

    def _evidence(self, name: str, members: Sequence[str]) -> list[str]:
        out = []
        folder = self.folder / "evidence" / name
        if folder.exists():
            shutil.rmtree(folder)
        folder.mkdir(parents=True, exist_ok=True)
        for i, rel in enumerate(members, 1):
            source = self.folder / rel
            if source.is_file():
                target = folder / f"{i:04d}.png"
                shutil.copyfile(source, target)
                out.append(f"evidence/{name}/{i:04d}.png")
        return out

    def build(self, made: Made) -> Draft:
        atlas = self.atlas
        covered = covered_pages(atlas)
        fold_covered(atlas, covered)
        dropped = transient_pages(atlas)
        pages = [p for p in atlas.live_pages() if p.id not in dropped and p.members]
        names = self._names(pages)
        review: list[ReviewItem] = []
        frames = {p.id: self._frames(p.members[:OTHERS_PER_PAGE]) for p in pages}
        popups = [pp for pp in atlas.popups if pp.over & set(names)]
        popup_frames = {pp.id: self._frames(pp.members[:OWN_FRAMES]) for pp in popups}
        loading_pages = [p for p in atlas.pages if p.loading and p.members and p.folded is None]
        loading_frames = [f for p in loading_pages for f in self._frames(p.members[:2])]
        draft_pages = []
        for page in pages:
            own = frames[page.id] + [f for f in (Recording.read_from(self.folder, r)
                                                 for r in page.members[OTHERS_PER_PAGE:OWN_FRAMES]) if f is not None]
            others = [f for q in pages if q.id != page.id for f in frames[q.id][:OTHERS_PER_PAGE]] + loading_frames
            sigs = stable_signatures(own, others, prefix=names[page.id], title=page.title, sketches=self.sketches,
                                     moving=page.moving)
            if not sigs or unexplained(sigs, own, others) and not any(s.type == "ocr" for s in sigs):
                review.append(ReviewItem(kind="weak_signature", pages=[names[page.id]],
                                         note="no region found that tells this page apart from every other"))
            draft_pages.append(DraftPage(name=names[page.id], title=page.title[1] if page.title else None,
                                         members=self._evidence(names[page.id], page.members), signatures=sigs,
                                         visits=page.visits, loading=page.slow,
                                         loading_s=allowance(page.slow_s) if page.slow else None))
        links = []
        for src, action, dst, seen, tried in atlas.links():
            if src in names and dst in names:
                links.append(DraftLink(**{"from": names[src], "to": names[dst], "action": step(action),
                                          "seen": seen, "tried": tried}))
                if seen < 2:
                    review.append(ReviewItem(kind="link_seen_once", pages=[names[src], names[dst]],
                                             note=f"{action_key(action)} seen once in {tried} tries"))
        draft_popups = []
        all_page_frames = [f for p in pages for f in frames[p.id][:OTHERS_PER_PAGE]]
        for number, popup in enumerate(popups, 1):
            name = f"popup_{number}"
            own = popup_frames[popup.id]
            others = all_page_frames + [f for q in popups if q.id != popup.id for f in popup_frames[q.id][:2]]
            sigs = stable_signatures(own, others, prefix=name, sketches=self.sketches) if own else []
            draft_popups.append(DraftPopup(name=name, over=sorted(names[i] for i in popup.over if i in names),
                                           box=popup.box, members=self._evidence(name, popup.members),
                                           signatures=sigs, dismiss=step(popup.dismiss) if popup.dismiss else None))
            if popup.dismiss is None:
                review.append(ReviewItem(kind="unclear_tap", pages=sorted(names[i] for i in popup.over if i in names),
                                         note=f"{name}: no way found to dismiss it"))
        loading = []
        for number, page in enumerate(loading_pages, 1):
            own = self._frames(page.members[:OWN_FRAMES])
            sigs = stable_signatures(own, all_page_frames, prefix=f"loading_{number}",
                                     sketches=self.sketches) if own else []
            loading.append(LoadingScreen(members=self._evidence(f"loading_{number}", page.members), signatures=sigs))
        review += self._review(pages, names, dropped)
        start = names.get(atlas.start) if atlas.start is not None else None
        return Draft(game=self.game, resolution=self.resolution, server=self.server, start_page=start, app=self.app,
                     made=made, pages=draft_pages, links=links, popups=draft_popups, loading=loading, review=review)

    def _review(self, pages: list[PageNode], names: dict[int, str], dropped: set[int]) -> list[ReviewItem]:
        out = []
        for i, a in enumerate(pages):
            for b in pages[i + 1:]:
                score = max((similarity(x, y) for x in a.sketches[:2] for y in b.sketches[:2]), default=0.0)
                if MAYBE_SAME <= score < SAME_PAGE:
                    out.append(ReviewItem(kind="maybe_same_page", pages=[names[a.id], names[b.id]],
                                          note=f"{score:.0%} of their cells match"))
        for page in pages:
            untried = [action_key(a) for a in page.actions if page.tried[action_key(a)] == 0]
            if untried:
                out.append(ReviewItem(kind="unreached", pages=[names[page.id]],
                                      note=f"{len(untried)} action(s) not tried: {', '.join(untried[:6])}"))
            mixed = [k for k, c in page.results.items() if len(c) > 1 and c.most_common(1)[0][1] < 0.75 * sum(
                c.values())]
            if mixed:
                out.append(ReviewItem(kind="unclear_tap", pages=[names[page.id]],
                                      note=f"different effects each time: {', '.join(mixed[:6])}"))
            leaves = [r for c in page.results.values() for r in c if r[0] == "page" and r[1] != page.id]
            if page.results and not leaves:
                out.append(ReviewItem(kind="dead_end", pages=[names[page.id]],
                                      note="no action led away from it (left by restarting the game)"))
        for (kind, page_id, popup_id), keys in sorted(self.atlas.swallowed.items(), key=str):
            where = names.get(page_id, f"screen {page_id}") if page_id is not None else "an unplaced screen"
            out.append(ReviewItem(kind="swallows_input", pages=[names[page_id]] if page_id in names else [],
                                  note=f"on {where} ({kind}{'' if popup_id is None else f', popup {popup_id}'}) "
                                       f"{len(keys)} action(s) left the screen as it was {REPEAT_LIMIT} times in a row "
                                       f"and were given up: {', '.join(keys[:6])}"))
        for page_id in sorted(dropped):
            out.append(ReviewItem(kind="maybe_two_pages", pages=[],
                                  note=f"a screen seen once and never again (frames: "
                                       f"{', '.join(self.atlas.pages[page_id].members[:2])}); left out"))
        return out

