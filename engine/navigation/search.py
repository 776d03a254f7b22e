"""The dismissal search as a rung of the navigator's ladder (engine.navigation.recovery): a dialog nobody named,
closed with no model.

While a cover or an unknown screen is seen, the next try of the search (engine.navigation.dismissal, with the
never-buy guard of engine.observe.guard) is performed and the screen looked at: a page named with nothing over it
means it closed (the try that did is remembered for the next showing of a like dialog, and, with a learner, is a
lesson judged by that look exactly as the model's tap is: engine.learning.learner, ``found_by: search``); anything
else that is neither a cover nor an unknown screen (a known popup, a loading screen) ends the search for the
navigator to judge. Bounded per showing (the policy's ``learning.search`` tries, at most the search's own budget)
and per goto (GOTO_TRIES).
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Any, Callable

from engine.config.schema import KeyAction, TapAction
from engine.config.words import says, spending
from engine.core.stuck import changed_share
from engine.navigation.dismissal import (
    CHAIN_MAX,
    CHAIN_SHARE,
    DISMISS_TRIES,
    SAME_BOX,
    LOOK_LEVELS,
    LOOK_SHARE,
    LOOK_STEP,
    OWN_CLOSERS,
    SHOWING_TRIES,
    Dialog,
    action_key,
    another,
    box_match,
    key_action,
    moved,
    next_try,
)
from engine.navigation.dismissal import plain as plain_of
from engine.observe.cover import Thumb, changed_box, covered, thumb
from engine.observe.guard import Guard
from engine.observe.spots import panel_box

if TYPE_CHECKING:
    from engine.core.context import RunContext
    from engine.core.results import Observation

GOTO_TRIES = 30
"""Tries of the search in one goto (a run), however many dialogs show."""
KEPT_DIALOGS = 32
"""Dialogs remembered per session (what closed them, where the grid left off); the one seen longest ago goes."""
KNOWN_SPENDERS = 8
"""Buttons of the graph whose name says they spend, looked for on a dialog at most."""


class Dialogs:
    """What the search learnt in one session: the dialogs seen and how each closed (engine.navigation.dismissal),
    and each page's frame on arrival."""

    def __init__(self, tries: int = SHOWING_TRIES) -> None:
        self.tries = max(0, int(tries))
        self.known: list[Dialog] = []
        self.guard: Guard | None = None
        self._ids = 0
        self.backed: Any = None
        """The frame the ladder's back key was last pressed on (engine.navigation.recovery): the search tries the
        back key again on a dialog that is not the one it was pressed on (a back key that led from one screen nobody
        names to another: 12 searches of a no-key long form spent that way in 200 gotos)."""
        self.arrivals: dict[str, Thumb] = {}
        """Each page's first frame after the belief came to it, plain (no popup, cover or loading named): where a
        page has no clean reference yet (the observer keeps one only once a tap left the page), the frame a dialog
        that showed over the page since is found against (its box, not whether the page is covered: a frame cut
        from a cross-fade only makes the box larger)."""

    def arrived(self, before: Observation | None, obs: Observation, prepared: Callable[[], Any]) -> None:
        """A look: the page's arrival frame when the belief came to it from another page or screen."""
        if obs.page is not None and (before is None or before.page != obs.page) and \
                not (obs.popups or obs.covered or obs.loading or obs.ambiguous):
            self.arrivals[obs.page] = thumb(prepared())

    def of(self, box: tuple[int, int, int, int], frame: Any = None) -> Dialog:
        """The dialog remembered with a like box that looks as `frame` shows it (`alike`), else a new one; the one
        seen longest ago goes when KEPT_DIALOGS are kept (dialogs that look new at every showing: a chaos screen)."""
        for dialog in self.known:
            if box_match(dialog.box, box) >= SAME_BOX and alike(dialog, frame):
                self.known = [d for d in self.known if d is not dialog] + [dialog]
                return dialog
        dialog, self._ids = Dialog(id=self._ids, box=box, look=_look(frame, box)), self._ids + 1
        self.known = [*self.known, dialog][-KEPT_DIALOGS:]
        return dialog


def _look(frame: Any, box: tuple[int, int, int, int]) -> Any:
    if frame is None:
        return None
    x1, y1, x2, y2 = (max(0, int(v)) for v in box)
    return frame[y1:y2:LOOK_STEP, x1:x2:LOOK_STEP].copy()


def alike(dialog: Dialog, frame: Any) -> bool:
    """Whether `frame` shows what `dialog` looked like in its box (LOOK_SHARE). A game draws many dialogs on one panel
    (generated game 8: a CONFIRM dialog on the panel of its crosses); taken for one, a spot that failed on one was
    left out on the other, and the CONFIRM was never tapped. Unknown (no look kept, no frame): alike."""
    now = _look(frame, dialog.box)
    if dialog.look is None or now is None or now.shape != dialog.look.shape:
        return dialog.look is None or now is None
    return changed_share(now, dialog.look, 1, LOOK_LEVELS) <= LOOK_SHARE


def lesson_label(obs: Observation) -> str:
    """What a lesson taken on this screen is called: the dialog over the page seen, else an unknown dialog."""
    return f"dialog over {obs.page}" if obs.page else "unknown dialog"


def unblocked(obs: Observation) -> bool:
    """A page named with nothing over it: the dialog is gone."""
    return obs.page is not None and not obs.covered and not obs.popups and not obs.loading


def blocked(obs: Observation) -> bool:
    """What the search acts on: a cover over a page, or an unknown screen."""
    return obs.covered or (obs.page is None and not obs.popups and not obs.loading and not obs.black_frame)


def dialog_box(nav: Any, obs: Observation) -> tuple[int, int, int, int]:
    """The dialog's box: the cover's, else a panel's outline on the frame (engine.observe.spots.panel_box), else
    where the frame differs from the reference of the page seen under it (else of the believed page): the cover's
    region, else the region unlike it once its dimming is allowed for (a small dialog over a page dimmed whole);
    else the screen less a tenth on each side."""
    box = getattr(obs.cover, "box", None)
    if box:
        return tuple(int(v) for v in box)
    width, height = nav.graph.resolution
    frame = nav.observer.prepare(nav.last_frame) if nav.last_frame is not None else None
    found = panel_box(frame) if frame is not None else None
    if found is not None:
        return found
    reference = _reference(nav, obs.page or nav.machine.page)
    if reference is not None and frame is not None:
        try:
            found = covered(frame, reference).box or changed_box(frame, reference)
        except Exception:  # noqa: BLE001 - a frame the cover check cannot read: the default box
            found = None
        if found:
            return tuple(int(v) for v in found)
    return width // 10, height // 10, width - width // 10, height - height // 10


def guard_of(nav: Any) -> Guard:
    """The session's guard: the graph's spending words, and its buttons whose name says they spend."""
    dialogs: Dialogs = nav.dialogs
    if dialogs.guard is None or getattr(dialogs, "_graph", None) is not nav.graph:
        words = spending(nav.graph.spending_words)
        spenders = [b.name for b in nav.graph.buttons if says(b.name.replace("_", " "), words)][:KNOWN_SPENDERS]

        def known(frame: Any) -> list[tuple[int, int, int, int]]:
            found = []
            for name in spenders:
                evidence = nav.observer.find_button(frame, name)
                if evidence is not None and evidence.hit and evidence.box:
                    found.append(tuple(int(v) for v in evidence.box))
            return found

        dialogs.guard, dialogs._graph = Guard(nav.graph.spending_words, known=known), nav.graph  # type: ignore
    return dialogs.guard


def swallowing(nav: Any, page: str | None) -> tuple[tuple[int, int, int, int] | None, bool]:
    """Where to look for what swallows the taps on `page`, recognised: (a dialog's outline, True), else (the region
    unlike the page's clean reference, False: engine.observe.cover.changed_box), else (None, False)."""
    if nav.last_frame is None:
        return None, False
    outline = panel_box(nav.observer.prepare(nav.last_frame))
    return (outline, True) if outline is not None else (_unlike_clean(nav, page), False)


def _unlike_clean(nav: Any, page: str | None) -> tuple[int, int, int, int] | None:
    """The region of the last frame unlike `page`'s clean reference (None: none, or no reference kept)."""
    reference = _reference(nav, page)
    if reference is None or nav.last_frame is None:
        return None
    return changed_box(nav.observer.prepare(nav.last_frame), reference)


def _reference(nav: Any, page: str | None) -> Thumb | None:
    """What `page` looks like with nothing over it: its clean reference (the observer's), else its arrival frame."""
    if page is None:
        return None
    return getattr(nav.observer, "references", {}).get(page) or nav.dialogs.arrivals.get(page)


def search(nav: Any, ctx: RunContext, obs: Observation, settle_s: float, expected: str | None, *,
           panel: tuple[int, int, int, int] | None = None, outline: bool = True, stuck: str | None = None
           ) -> tuple[Observation, list[dict[str, Any]] | None]:
    """Search for what closes the dialog shown now: the observation after, and the tries it took when it closed
    (None when it did not: spent, nothing to act on, or the screen became something else). `panel`: where a dialog
    over a page that stays recognised and swallows the taps shows (`swallowing`): its outline (`outline`), else
    the region unlike the page's clean reference; it closed when that is gone too. `stuck`: a popup of the graph
    that its own dismissals left showing (engine.navigation.recovery.popup_stuck): searched while it is named."""
    dialogs: Dialogs = nav.dialogs
    used = sum(1 for s in ctx.steps if s["kind"] == "search_try")

    def blocking(seen: Observation) -> bool:
        return blocked(seen) or stuck in seen.popups

    if dialogs.tries == 0 or nav.last_frame is None or not (panel or blocking(obs)) or used >= GOTO_TRIES:
        return obs, None
    box = panel or dialog_box(nav, obs)
    shown = nav.observer.prepare(nav.last_frame)
    backed, dialogs.backed = dialogs.backed, None
    pressed = panel is None and stuck is None and (
        backed is None or not another(nav.observer.prepare(backed), shown, box))
    dialog, tries, taken = dialogs.of(box, shown), Counter({"key:back": int(pressed)}), []  # (back: the ladder's)
    label = lesson_label(obs)
    guard = guard_of(nav)
    ctx.record("search", box=list(box), dialog=dialog.id, over=obs.page)
    chained, changed, back_due = 0, None, False
    known = OWN_CLOSERS + DISMISS_TRIES + 1  # (tries beside the search's own; +1: QUIET_CHAIN's back key)
    for _ in range(min(dialogs.tries, SHOWING_TRIES) + known):
        if used + len(taken) >= GOTO_TRIES or sum(tries.values()) >= dialogs.tries + known:
            break
        ctx.checkpoint()
        action = next_try(dialogs.known, dialog, tries, lambda: nav.last_frame,
                          lambda p: box if p is dialog else p.box, guard=guard,  # (this showing's box, not the first's)
                          kin=lambda p: alike(p, shown)) if not back_due else {"type": "key", "key": "back"}
        back_due = False
        if action is None:
            break
        key = action_key(action)
        tries[key] += 1
        dialog.tried[key] += 1
        plain = plain_of(action)
        taken.append(plain)
        ctx.record("search_try", action=plain, dialog=dialog.id)
        before = nav.last_frame
        _perform(nav, ctx, plain, label)
        ctx.wait(settle_s)
        obs = nav.look(ctx, expected=expected)
        if unblocked(obs) and not (panel and _shows(nav, panel, outline, obs.page)):
            dialog.closed[key] += 1
            dialog.dismiss = plain
            if changed is not None and changed != key:  # (a chain after all: what changed it closes it first)
                dialog.closed[changed] += 1
                dialog.dismiss = key_action(changed) or plain
            return obs, taken
        if not blocking(obs) and not (panel and unblocked(obs)):
            return obs, None  # a known popup, a loading screen: the navigator judges it
        pair = [nav.observer.prepare(f) if f is not None else None for f in (before, nav.last_frame)]
        changed_by = moved(*pair, box) if panel is None else 0.0
        if chained < CHAIN_MAX and changed_by > CHAIN_SHARE:
            chained += 1  # it closed, and the next of a chain came in its place: that one is searched afresh
            dialog.closed[key] += 1
            dialog.dismiss = plain
            ctx.record("search_next", dialog=dialog.id, closed_by=plain)
            shown, box = nav.observer.prepare(nav.last_frame), dialog_box(nav, obs)  # (it may stand elsewhere)
            label = lesson_label(obs)
            dialog, tries = dialogs.of(box, shown), Counter()  # (the ladder's back key was tried on the one before)
            changed = None
            ctx.record("search", box=list(box), dialog=dialog.id, over=obs.page)
        elif changed is None and changed_by > LOOK_SHARE:
            changed, back_due = key, key != "key:back"  # (QUIET_CHAIN: the back key on what came in its place)
            ctx.record(QUIET_CHAIN, dialog=dialog.id, by=plain)
    dialog.failures += 1
    ctx.record("search_spent", dialog=dialog.id, tries=len(taken))
    return obs, None


QUIET_CHAIN = "search_changed"
"""A try after which the dialog no longer looks as it did (more than LOOK_SHARE of its box changed), short of a chain:
the next dialog of a chain on a panel nearly the colour of the first (generated game 7: a cross, then a dialog only
the back key closes; 21 of 400 no-key gotos failed at d787796, the cross counted as failed and the back key never
tried again), or the dialog's own art moving. Nothing is reset: the back key is pressed next, once a showing, and
the try is credited only if the showing then closes (a chain after all: the next showing starts with it)."""


def _shows(nav: Any, panel: tuple[int, int, int, int], outline: bool, page: str | None) -> bool:
    """Whether the last frame still shows the dialog where `panel` was: its outline, or (not `outline`) a region
    unlike the page's clean reference that overlaps it."""
    if outline:
        found = panel_box(nav.observer.prepare(nav.last_frame)) if nav.last_frame is not None else None
        return found is not None and box_match(found, panel) >= SAME_BOX
    found = _unlike_clean(nav, page)
    return found is not None and box_match(found, panel) > 0.0


def _perform(nav: Any, ctx: RunContext, action: dict[str, Any], label: str) -> None:
    """One try; with a learner, as a lesson the next look judges (as the model's tap is)."""
    learner = nav.learner
    if action["type"] == "key":
        if learner is None or not learner.keyed(nav, ctx, action["key"], label, found_by="search"):
            nav.act(ctx, KeyAction(type="key", key=action["key"]), nav.last_observation)
        return
    point = (int(action["point"][0]), int(action["point"][1]))
    if learner is None or not learner.tapped(nav, ctx, point, label, act=True, found_by="search"):
        nav.act(ctx, TapAction(type="tap", point=point), nav.last_observation)
