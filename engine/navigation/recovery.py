"""The recovery ladder of the navigator (engine.navigation.navigator), for a screen it cannot place, a page
something no popup names covers, or a page that ignores it.

An unknown screen or a covered page climbs the rungs in order, one per look: the back key, a visible home button,
the dismissal search (engine.navigation.search: no model), the vision model when a key is set (``escalate``), then
restarting the game (to the graph's start page, as ALAS does when stuck; MAX_RESTARTS per goto). Each rung is
bounded (the search by its tries, the model by MAX_ESCALATIONS questions a run, a covered page by MAX_UNCOVER
reactions a showing) and the whole by the goto's deadline. The rung that closed the dialog, and the taps it took,
are a ``dialog_closed`` step (the goto's ``data.dialogs_closed`` and its transcript). A known page that swallows the
navigator's taps (two hops in a row that change nothing on the screen: something the graph does not know covers it)
goes to the model at once. A page the graph knows no way out of toward the target (a draft's dead end) restarts the
game when a route leads from the start page (``first_link``); a link that twice led to a screen the graph cannot
name is avoided while another route exists (``landed``), and one that landed on another known page is avoided for
the rest of the goto (``came_back``). A dialog that comes back after the model's answer closed it is escalated
again, up to MAX_ESCALATIONS model questions per run.

The model's answer is acted on only when it is safe: a popup the graph knows (dismissed by its own declared
action), a page the graph knows (the belief is relocalised to it, and on an unknown screen the back key, which
every page tolerates, is pressed), or, with a learner (engine.learning.learner), the point it names to close what covers
the screen, which becomes a lesson the next look judges (as the search's closing tap does). The observer only ever
names declared pages and popups.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from engine.config.schema import KeyAction, Link, TapAction
from engine.core.errors import DeviceError, NavigationError, NoRoute, PopupBlocking, Stuck, UnknownScreen
from engine.navigation.routes import Route, plan_route
from engine.navigation.search import lesson_label, search, swallowing, unblocked

if TYPE_CHECKING:
    from engine.core.context import RunContext
    from engine.core.results import Observation

RUNGS = ("back", "home", "search", "vision", "restart")
MAX_ESCALATIONS = 4
"""Questions to the vision model in one run (a goto): each answer acted on may be followed by the dialog's return."""
MAX_UNCOVER = len(RUNGS) + MAX_ESCALATIONS
"""Reactions to one showing of a covered page (a dialog no popup names over it) before it counts as blocking."""
MAX_RESTARTS = 2
"""Restarts of the game in one goto (a goto under chaos may meet a second dialog nothing else closes)."""
BLACK_PROBES = 2
"""Health probes in a row that saw a black screen before the game is restarted (``revive``): one black frame is a
passing fault (the chaos scenario draws one in twenty)."""
MISLED = 2
"""Hops through one link that showed a screen the graph cannot name before routes avoid that link (``landed``)."""


def recover(nav: Any, ctx: RunContext, obs: Observation, ladder: int, settle_s: float) -> tuple[Observation, int]:
    """One rung of the ladder for an unknown screen: the next observation and the rungs tried; raises
    UnknownScreen when the ladder is exhausted."""
    while ladder < len(RUNGS):
        rung = RUNGS[ladder]
        ladder += 1
        after = climb(nav, ctx, obs, rung, settle_s, None)
        if after is None:
            continue
        if rung == "vision" and _unknown(after):
            ladder -= 1  # unknown again after the answer was acted on (the dialog came back): ask again, bounded
        return after, ladder
    raise UnknownScreen()


def climb(nav: Any, ctx: RunContext, obs: Observation, rung: str, settle_s: float, expected: str | None
          ) -> Observation | None:
    """Try `rung` on the screen `obs` shows; the observation after, or None when the rung had nothing to do (no
    home button, no search left, no model or no question left, no app or no restart left)."""
    ctx.record("recover", rung=rung, page=obs.page)
    taps: list[dict[str, Any]] = []
    if rung == "back":
        label = lesson_label(obs)
        # A lesson over a covered page or on a screen nobody named (a dialog over most of a page hides the page):
        # the next look judges it, as the model's tap (engine.learning.learner).
        nav.dialogs.backed = nav.last_frame  # (what the back key was pressed on: engine.navigation.search)
        if not (obs.covered or obs.page is None) or nav.learner is None or \
                not nav.learner.keyed(nav, ctx, "back", label):
            nav.act(ctx, KeyAction(type="key", key="back"), obs)
        taps.append({"type": "key", "key": "back"})
    elif rung == "home":
        button = visible_home_button(nav)
        if button is None:
            return None
        nav.act(ctx, TapAction(type="tap", button=button), obs)
        taps.append({"type": "tap", "button": button})
    elif rung == "search":
        after, found = search(nav, ctx, obs, settle_s, expected)
        if found is not None:
            closed(ctx, "search", found, obs)
        return None if after is obs else after
    elif rung == "vision":
        since = len(ctx.steps)
        if not escalate(nav, ctx, unknown=not obs.covered):
            return None
        taps += _model_taps(ctx, since)
    elif not restart(nav, ctx):
        return None
    ctx.wait(settle_s)
    after = nav.look(ctx, expected=expected)
    if unblocked(after):
        closed(ctx, rung, taps, obs)
    return after


def closed(ctx: RunContext, rung: str, taps: list[dict[str, Any]], before: Observation) -> None:
    """The dialog is gone: which rung closed it and the taps it took (the goto's ``data.dialogs_closed``)."""
    ctx.record("dialog_closed", rung=rung, taps=len(taps), actions=taps, over=before.page)


def _model_taps(ctx: RunContext, since: int) -> list[dict[str, Any]]:
    """What acting on the model's answer tapped (its lesson's point), else the question itself."""
    return [{"type": "tap", "point": s["point"], "by": "model"} for s in ctx.steps[since:]
            if s["kind"] == "lesson_tap"] or [{"type": "model", "question": ctx.vision_calls}]


def dialogs_closed(ctx: RunContext) -> list[dict[str, Any]]:
    """The dialogs nobody named that this run closed: each one's rung and taps (a goto's ``data.dialogs_closed``)."""
    return [{k: v for k, v in s.items() if k != "kind"} for s in ctx.steps if s["kind"] == "dialog_closed"]


def restart(nav: Any, ctx: RunContext) -> bool:
    """Restart the game (force-stop, launch: it comes back on the graph's start page), at most MAX_RESTARTS times
    a goto. False when the graph declares no app, the restarts are spent, or the device refused."""
    app = nav.graph.app
    if app is None or _restarts(ctx) >= MAX_RESTARTS:
        return False
    ctx.record("restart", package=app.package, start_page=nav.graph.start_page)
    try:
        ctx.device_call(lambda: nav.device.restart_app(app.package, app.activity))
    except DeviceError as exc:
        ctx.record("restart_failed", error=str(exc)[:300])
        return False
    nav.machine.relocalise(nav.graph.start_page, 0.0)
    ctx.detectors.repeats.forgive()
    return True


def revive(nav: Any, ctx: RunContext, health: Any, in_a_row: int) -> bool:
    """A game that stopped drawing (the probe says ``black_screen`` BLACK_PROBES times in a row: the app crashed, or
    a restart's launch failed after its force-stop) is restarted, as ALAS restarts a game that is not running; False
    when the probe says otherwise or no restart is left. Without this, one failed launch left every later goto
    ``black_screen`` (benchmarks/test_bench_no_key.py's long form: 308 of 400 gotos)."""
    if in_a_row < BLACK_PROBES or getattr(health, "status", None) != "black_screen":
        return False
    ctx.record("revive", health="black_screen")
    return restart(nav, ctx)


def first_link(nav: Any, ctx: RunContext, page: str, target: str) -> Link | None:
    """The first link of the route from `page` to `target`, avoiding links that misled (`landed`) while another
    route exists. From a page the graph knows no way out of toward it (a draft's dead end, a link its author left
    out) the game is restarted to its start page, as the ladder's last rung (MAX_RESTARTS a goto), when a route leads
    from there: None, look again. Raises NoRoute when none does or no restart is left."""
    came_back(nav, ctx, page)
    try:
        hops = _plan(nav, ctx, page, target).hops
    except NoRoute:
        start = nav.graph.start_page
        if not start or start == page or not _routed(nav, start, target) or not restart(nav, ctx):
            raise
        ctx.record("dead_end", page=page, to=target, start_page=start)
        return None
    if not hops:
        raise NavigationError(f"no hop from {page} to {target}", page=page)
    return hops[0].link


def landed(nav: Any, ctx: RunContext, source: str, link: Link, obs: Observation) -> bool:
    """After a hop settled: one that showed a screen the graph cannot name (nothing loading, no popup) counts
    against its link in ``nav.misled`` (a draft's link that leads to a page the explorer never drew, or one the
    author left out) and answers True; one that arrived clears its count. From MISLED counts on, routes avoid the link
    while another route exists (generated game 1's draft: the ladder's back key returned to the link's page and the
    same tap was planned again, goto after goto). A hop that lands on another known page does not count: counting
    those (a tap the game took late, a tab swipe drafted the wrong way round) sent seed 1's draft round through its
    misleading corners, 118 gotos of 200 arriving against 186."""
    key = _link_key(source, link)
    if obs.page == link.to:
        nav.misled.pop(key, None)
    elif _unknown(obs):
        nav.misled[key] = nav.misled.get(key, 0) + 1
        ctx.record("misled", source=source, to=link.to, times=nav.misled[key])
        return True
    return False


def came_back(nav: Any, ctx: RunContext, page: str) -> None:
    """Where the last hop ended, judged on the next page it is planned from. Back on the page it left after a dialog
    came between (dismissed, or closed by the search): that hop's link counts against it in ``nav.misled`` as one
    that showed a screen nobody names does (`landed`). A draft's link whose tap opens a dialog over its page and not
    the page it names (generated game 8: a button that opens a chain of three dialogs, drafted as a link to a page
    the chain's last close was seen on): once the search closes the dialog, the same tap was planned again, five
    times, and the goto ended `stuck`. A link whose page shows a dialog on arrival is not counted: the dialog closes
    on the page it leads to.

    On another page the graph knows, neither the one it left nor the one it names: the goto goes round that link for
    the rest of its course while another route exists (a ``misled`` step, by="elsewhere", read by `_plan`).
    Generated game 9's draft named a button's page after the page under the dialog it opens; the dialog closed onto
    the other page, whose way back led to the button again: four rounds a goto, then `stuck`, 11 gotos of 200. Only
    this goto: a landing elsewhere is often a late tap or a crash, not a wrong link (`landed`)."""
    hop = next((i for i in range(len(ctx.steps) - 1, -1, -1) if ctx.steps[i]["kind"] == "action"), None)
    if hop is None or not ctx.steps[hop].get("source"):
        return
    step, after = ctx.steps[hop], [s["kind"] for s in ctx.steps[hop + 1:]]
    if "misled" in after or "restart" in after:
        return
    source = step["source"]
    link = next((link for link in nav.graph.page(source).links if link.to == step["to"] and
                 link.action.model_dump() == step["action"]), None)
    if link is None:
        return
    if source == page and {"dismiss", "dialog_closed"} & set(after):
        key = _link_key(page, link)
        nav.misled[key] = nav.misled.get(key, 0) + 1
        ctx.record("misled", source=page, to=link.to, times=nav.misled[key], by="dialog")
    elif page not in (source, link.to, link.expected_page):
        ctx.record("misled", source=source, to=link.to, landed=page, by="elsewhere", link=_link_key(source, link))


def misled_before(nav: Any, source: str, link: Link) -> bool:
    """Whether a hop through `link` from `source` already showed a screen the graph cannot name (``landed``)."""
    return _link_key(source, link) in nav.misled


def _link_key(source: str, link: Link) -> tuple[str, str, str]:
    return source, link.to, repr(link.action)


def _plan(nav: Any, ctx: RunContext, page: str, target: str) -> Route:
    """The route `first_link` takes: around the links that misled MISLED times and those this goto saw land
    elsewhere (`came_back`); when none leads round from `page` but one does from the start page and a restart is
    left, NoRoute (first_link restarts the game: from a page whose only way out misled, generated game 1's draft
    waited 15 s on a page it never drew, goto after goto); else through them."""
    misled = {key for key, times in nav.misled.items() if times >= MISLED}
    misled |= {s["link"] for s in ctx.steps if s["kind"] == "misled" and s.get("by") == "elsewhere"}
    if misled:
        def avoid(hop: Any) -> bool:
            return _link_key(hop.from_page, hop.link) in misled

        try:
            return plan_route(nav.graph, page, target, avoid=avoid)
        except NoRoute:
            start = nav.graph.start_page
            if start and start != page and nav.graph.app is not None and _restarts(ctx) < MAX_RESTARTS and \
                    _routed(nav, start, target, avoid):
                raise
    return plan_route(nav.graph, page, target)


def _restarts(ctx: RunContext) -> int:
    return sum(1 for s in ctx.steps if s["kind"] == "restart")


def _routed(nav: Any, src: str, dst: str, avoid: Any = None) -> bool:
    try:
        plan_route(nav.graph, src, dst, avoid=avoid)
    except NoRoute:
        return False
    return True


def popup_stuck(nav: Any, ctx: RunContext, obs: Observation, popup: str, count: int, settle_s: float) -> None:
    """A popup of the graph still there after its own dismissals (a draft's popup may be two dialogs that look one,
    or a game update moved its button): the dismissal search on it, once a goto, as on a dialog nobody named (the
    back key, its regions, a tap outside, a grid; bounded by the goto's search tries); when that leaves it showing,
    or it comes back stuck, the game is restarted, as the ladder's last rung (`restart`, bounded a goto), and the
    popup may be dismissed again later; when no restart is left, PopupBlocking."""
    searched = any(s["kind"] == "popup_stuck" and s["popup"] == popup for s in ctx.steps)
    ctx.record("popup_stuck", popup=popup, dismissals=count)
    if not searched:
        after, found = search(nav, ctx, obs, settle_s, None, stuck=popup)
        if found is not None:
            ctx.record("dialog_closed", rung="search", taps=len(found), actions=found, over=popup)
            ctx.detectors.dismissed.pop(popup, None)
            return
        if popup not in after.popups:  # another popup (a chain), a page: the navigator judges it
            return
    if not restart(nav, ctx):
        raise PopupBlocking(popup, count)
    ctx.record("dialog_closed", rung="restart", taps=0, actions=[], over=popup)
    ctx.detectors.dismissed.pop(popup, None)


def _unknown(obs: Observation) -> bool:
    return obs.page is None and not obs.popups and not obs.loading and not obs.black_frame


def escalate(nav: Any, ctx: RunContext, *, unknown: bool = True) -> bool:
    """Ask the observer's slow channels (the vision model) about the last frame; act only on a safe answer.
    `unknown`: the frame is an unknown screen (False: a known page that swallows taps, where a page answer
    changes nothing). True when something was done."""
    if getattr(nav.observer, "vision", None) is None or nav.last_frame is None:
        return False
    if ctx.vision_calls >= MAX_ESCALATIONS:
        ctx.record("vision_spent", asked=ctx.vision_calls)
        return False
    ctx.vision_calls += 1
    answer = nav.observer.escalate(nav.last_frame)
    ctx.record("vision", page=answer.page, popups=list(answer.popups), confidence=round(answer.confidence, 3),
               evidence=[e.to_dict() for e in answer.evidence if e.channel == "vision"])
    if answer.popups:
        for action in nav.graph.popup(answer.popups[0]).dismiss:
            nav.act(ctx, action, nav.last_observation)
        return True
    if answer.page is not None:
        if not unknown:
            return False
        nav.machine.relocalise(answer.page, answer.confidence)
        nav.act(ctx, KeyAction(type="key", key="back"), nav.last_observation)
        return True
    return nav.learner is not None and nav.learner.try_unnamed(nav, ctx)


def swallowed(nav: Any, ctx: RunContext, course: Any, obs: Observation, source: str, settle_s: float) -> Observation:
    """Two hops in a row that left the page as it was: something the graph does not know may cover it and
    swallow the taps; where a dialog shows (its outline, or a region unlike the page's clean reference), the
    dismissal search tries it, else (or when it fails) the model is asked (`escalate`); once it was asked in this
    run, one such hop asks again (the dialog came back), up to the run's bound on questions; with no model (or no
    question left) the game is restarted (MAX_RESTARTS a goto); then Stuck. Returns the next observation."""
    if obs.page != source or obs.popups:
        course.swallowed = 0
        return obs
    course.swallowed += 1
    if course.swallowed < (1 if ctx.vision_calls else 2):
        return obs
    course.swallowed = 0
    panel, outline = swallowing(nav, obs.page)
    after, found = search(nav, ctx, obs, settle_s, None, panel=panel, outline=outline) if panel else (obs, None)
    if found is not None:  # a dialog over the page, closed by the search: no question
        closed(ctx, "search", found, obs)
        ctx.detectors.repeats.forgive()
        course.expected = None
        return after
    rung, since = "vision", len(ctx.steps)
    if not escalate(nav, ctx, unknown=False):
        hopeless = getattr(nav.observer, "vision", None) is None or ctx.vision_calls >= MAX_ESCALATIONS
        if not (hopeless and restart(nav, ctx)):  # (no model, or its questions spent: restarted, bounded a goto)
            if ctx.vision_calls >= MAX_ESCALATIONS:
                raise Stuck(f"{source} still swallows the taps after {ctx.vision_calls} answer(s) of the vision "
                            "model", page=source)
            return obs
        rung = "restart"
    ctx.detectors.repeats.forgive()  # those hops were swallowed, not going round in circles
    ctx.wait(settle_s)
    course.expected = None
    after = nav.look(ctx, expected=None)
    if unblocked(after):
        closed(ctx, rung, _model_taps(ctx, since) if rung == "vision" else [], obs)
    return after


def uncover(nav: Any, ctx: RunContext, obs: Observation, course: Any, settle_s: float) -> Observation:
    """A known page with something over it that no popup names (``Observation.cover``): the next rung of the
    ladder (`course.cover_rung`; the model's rung is climbed again while the dialog comes back, within its
    questions). Raises PopupBlocking when the rungs are spent or after MAX_UNCOVER reactions to this showing
    (`course.covered` counts them). Returns the next observation."""
    course.covered += 1
    if course.covered > MAX_UNCOVER:
        raise PopupBlocking(f"(a dialog no popup names, over {obs.page})", course.covered - 1)
    ctx.record("covered", page=obs.page, cover=obs.cover.to_dict() if hasattr(obs.cover, "to_dict") else None)
    while course.cover_rung < len(RUNGS):
        rung = RUNGS[course.cover_rung]
        course.cover_rung += 1
        after = climb(nav, ctx, obs, rung, settle_s, course.expected)
        if after is None:
            continue
        if rung == "vision" and after.covered:
            course.cover_rung -= 1  # the dialog came back after the answer: ask again, bounded
        ctx.detectors.repeats.forgive()
        return after
    raise PopupBlocking(f"(a dialog no popup names, over {obs.page})", course.covered - 1)


def visible_home_button(nav: Any) -> str | None:
    if nav.last_frame is None:
        return None
    for name in nav.home_buttons:
        evidence = nav.observer.find_button(nav.last_frame, name)
        if evidence is not None and evidence.hit:
            return name
    return None


def explain(nav: Any, ctx: RunContext, exc: Exception, extra: dict[str, Any]) -> str:
    """The text of a run that ended in `exc`; a navigation error after the vision model was asked also says
    that an unknown dialog kept appearing (`unknown_dialog`, added to `extra` too)."""
    dialog = unknown_dialog(nav, ctx) if isinstance(exc, NavigationError) else None
    if dialog is None:
        return str(exc)
    extra["unknown_dialog"] = dialog
    return f"{exc}; {dialog['text']}"


def unknown_dialog(nav: Any, ctx: RunContext) -> dict[str, Any] | None:
    """What to say when a run that asked the vision model ends in a navigation error: an unknown dialog kept
    appearing, and the proposal it is (the learner's, when one names the last frame or the last lesson's). None
    when the model was not asked."""
    if ctx.vision_calls == 0:
        return None
    taps = sum(1 for step in ctx.steps if step["kind"] == "lesson_tap")
    text = (f"an unknown dialog kept appearing (the vision model was asked {ctx.vision_calls} time(s), its tap "
            f"was tried {taps} time(s))")
    proposal = nav.learner.proposal_of(nav.last_frame) if nav.learner is not None else None
    if proposal is not None:
        text += (f"; it is proposal {proposal['name']} ({proposal.get('sightings', 1)} sighting(s)): "
                 f"python -m engine proposals show {proposal['name']}")
    elif nav.learner is not None:
        text += "; no proposal names it yet"
    return {"text": text, "vision_calls": ctx.vision_calls, "taps": taps,
            "proposal": proposal["name"] if proposal is not None else None}
