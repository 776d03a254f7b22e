"""A small explorer's draft for the review tests, made the way the explorer makes one: frames rendered by the
simulator of tests/data/graphs/good, grouped into draft pages, signed with engine.explore.signatures and saved with
engine.explore.draft (the format of /work/draft-spec.md), the graph YAML beside it from engine.explore.write.

The grouping has the two mistakes a review fixes: page_shop's frames came out as two draft pages (page_1 and
page_2, to merge) and page_mail's and page_settings' frames as one (page_3, to split); popup_1 is the graph's
announcement over page_main, closed by its X.
"""

from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np

ROOT = Path(__file__).resolve().parents[3]
GOOD = ROOT / "tests" / "data" / "graphs" / "good"
PER_PAGE = 2
TRUTH = {"page_main": ["page_main"], "page_1": ["page_shop"], "page_2": ["page_shop"],
         "page_3": ["page_mail", "page_settings"]}
"""Draft page -> the true pages whose frames it holds."""
TITLES = {"page_main": "DEMO QUEST"}


def frames_of(page: str, count: int, start: int = 0, popup: str | None = None) -> list:
    from engine.config.loader import load_graph
    from engine.sim.game import SimGame

    game = SimGame(load_graph(GOOD, server="en"), seed=start)
    game.goto(page)
    if popup is not None:
        game.show_popup(popup)
    return [game.frame() for _ in range(start + count)][start:]


def make_draft(folder: Path) -> Path:
    """The draft folder (draft.yaml, evidence/, graph YAML, assets/) written into `folder`; returns it."""
    from engine.explore.draft import Draft, DraftLink, DraftPage, DraftPopup, KeyStep, ReviewItem, TapStep, save_draft
    from engine.explore.signatures import stable_signatures
    from engine.explore.write import write_graph

    members: dict[str, list[str]] = {}
    frames: dict[str, list] = {}
    for name, truths in TRUTH.items():
        offset = 1 if name == "page_2" else 0  # page_1 and page_2 hold different frames of page_shop
        for truth in truths:
            for frame in frames_of(truth, PER_PAGE if len(truths) == 1 else 1, offset):
                path = f"evidence/{name}/{len(members.get(name, [])) + 1:04d}.png"
                (folder / path).parent.mkdir(parents=True, exist_ok=True)
                assert cv2.imwrite(str(folder / path), frame)
                members.setdefault(name, []).append(path)
                frames.setdefault(name, []).append(frame)
    pages = []
    for name in TRUTH:
        others = [f for other, group in frames.items() if other not in (name, "page_2" if name == "page_1" else "",
                                                                         "page_1" if name == "page_2" else "")
                  for f in group]
        pages.append(DraftPage(name=name, title=TITLES.get(name), members=members[name], visits=3,
                               signatures=stable_signatures(frames[name], others, prefix=name)))
    tap = {"page_1": (980, 330), "page_2": (990, 335), "page_3": (980, 410)}
    links = [DraftLink(**{"from": "page_main", "to": to, "action": TapStep(type="tap", point=point,
                                                                          area=(900, point[1] - 30, 1060, point[1] + 30)),
                          "seen": 2, "tried": 2}) for to, point in tap.items()]
    links += [DraftLink(**{"from": page, "to": "page_main", "action": KeyStep(type="key", key="back"),
                           "seen": 1, "tried": 1}) for page in ("page_1", "page_2", "page_3")]
    review = [ReviewItem(kind="maybe_same_page", pages=["page_1", "page_2"], note="alike on 92% of cells"),
              ReviewItem(kind="maybe_two_pages", pages=["page_3"], note="its frames fall in two groups"),
              ReviewItem(kind="link_seen_once", pages=["page_3", "page_main"], note="back from page_3 once")]
    cover = frames_of("page_main", 1, popup="popup_announcement")[0]
    path = "evidence/popup_1/0001.png"
    (folder / path).parent.mkdir(parents=True, exist_ok=True)
    assert cv2.imwrite(str(folder / path), cover)
    changed = np.argwhere(cv2.absdiff(cover, frames["page_main"][0]).max(axis=2) > 40)  # the region it covers
    (y1, x1), (y2, x2) = changed.min(axis=0), changed.max(axis=0) + 1
    popup = DraftPopup(name="popup_1", over=["page_main"], box=(int(x1), int(y1), int(x2), int(y2)), members=[path],
                       signatures=stable_signatures([cover], [f for group in frames.values() for f in group],
                                                    prefix="popup_1"),
                       dismiss=TapStep(type="tap", point=(930, 170), area=(900, 140, 960, 200)))
    draft = Draft(game="draft_demo", resolution=(1280, 720), server="en", start_page="page_main", pages=pages,
                  links=links, popups=[popup], review=review)
    save_draft(draft, folder)
    write_graph(draft, folder)
    return folder


class VirtualClock:
    """Time that moves only when someone sleeps: the simulator's transitions and the explorer's waits cost nothing."""

    def __init__(self) -> None:
        self.t = 1000.0

    def now(self) -> float:
        return self.t

    def sleep(self, seconds: float) -> None:
        self.t += max(0.0, seconds)


class SimPhone:
    """The simulated game of tests/data/graphs/good as the explorer's device (screenshot, tap, swipe, key), on a
    virtual clock."""

    serial = "sim-virtual"

    def __init__(self, clock: VirtualClock) -> None:
        from engine.config.loader import load_graph
        from engine.sim import SyntheticAssets
        from engine.sim.game import SimGame

        graph = load_graph(GOOD).resolve("en")
        self.game = SimGame(graph, assets=SyntheticAssets(graph), clock=clock.now)
        self.resolution = tuple(graph.resolution)

    def screenshot(self):
        return self.game.frame()

    def tap(self, x: int, y: int) -> None:
        self.game.tap(x, y)

    def swipe(self, x1: int, y1: int, x2: int, y2: int, *_: object) -> None:
        self.game.swipe(x1, y1, x2, y2)

    def key(self, key: str) -> None:
        self.game.key(key)


def explored_draft(folder: Path, taps: int = 16) -> Path:
    """A draft the explorer itself made (engine.explore.run.explore) on the good graph's simulator, `taps` actions."""
    from engine.explore.run import explore

    clock = VirtualClock()
    explore(SimPhone(clock), folder, taps=taps, minutes=10, game="draft_good", clock=clock.now, sleep=clock.sleep)
    return folder
