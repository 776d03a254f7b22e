"""The recovery ladder of the navigator (engine.navigation.navigator), for a screen it cannot place or a page that
ignores it.

An unknown screen climbs the rungs in order, one per look: the back key, a visible home button, then the vision
model (``escalate``). A known page that swallows the navigator's taps (two hops in a row that change nothing on
the screen: something the graph does not know covers it) goes to the model at once. A dialog that comes back after
the model's answer closed it (another unknown screen, or the page swallowing taps again) is escalated again: up
to MAX_ESCALATIONS model questions per run, so one escalation is never the last word within the run's budget.

The model's answer is acted on only when it is safe: a popup the graph knows (dismissed by its own declared
action), a page the graph knows (the belief is relocalised to it, and on an unknown screen the back key, which
every page tolerates, is pressed), or, with a learner (engine.learning.learner), the point it names to close what covers
the screen, which becomes a lesson the next look judges. The observer only ever names declared pages and popups.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from engine.config.schema import KeyAction, TapAction
from engine.core.errors import NavigationError, PopupBlocking, Stuck, UnknownScreen

if TYPE_CHECKING:
    from engine.core.context import RunContext
    from engine.core.results import Observation

RUNGS = ("back", "home", "vision")
MAX_UNCOVER = 6
"""Reactions to a covered page (a dialog no popup names over it) in one navigation before it counts as blocking."""
MAX_ESCALATIONS = 4
"""Questions to the vision model in one run (a goto): each answer acted on may be followed by the dialog's return."""


def recover(nav: Any, ctx: RunContext, obs: Observation, ladder: int, settle_s: float) -> tuple[Observation, int]:
    """One rung of the ladder for an unknown screen: the next observation and the rungs tried; raises
    UnknownScreen when the ladder is exhausted."""
    while ladder < len(RUNGS):
        rung = RUNGS[ladder]
        ladder += 1
        ctx.record("recover", rung=rung)
        if rung == "back":
            nav.act(ctx, KeyAction(type="key", key="back"), obs)
        elif rung == "home":
            button = visible_home_button(nav)
            if button is None:
                continue
            nav.act(ctx, TapAction(type="tap", button=button), obs)
        elif not escalate(nav, ctx):
            continue
        ctx.wait(settle_s)
        obs = nav.look(ctx, expected=None)
        if rung == "vision" and _unknown(obs):
            ladder -= 1  # unknown again after the answer was acted on (the dialog came back): ask again, bounded
        return obs, ladder
    raise UnknownScreen()


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
    swallow the taps, so the model is asked (`escalate`); once it was asked in this run, one such hop asks again
    (the dialog came back), up to the run's bound on questions; then Stuck. Returns the next observation."""
    if obs.page != source or obs.popups:
        course.swallowed = 0
        return obs
    course.swallowed += 1
    if course.swallowed < (1 if ctx.vision_calls else 2):
        return obs
    course.swallowed = 0
    if not escalate(nav, ctx, unknown=False):
        if ctx.vision_calls >= MAX_ESCALATIONS:
            raise Stuck(f"{source} still swallows the taps after {ctx.vision_calls} answer(s) of the vision "
                        "model", page=source)
        return obs
    ctx.detectors.repeats.forgive()  # those hops were swallowed, not going round in circles
    ctx.wait(settle_s)
    course.expected = None
    return nav.look(ctx, expected=None)


def uncover(nav: Any, ctx: RunContext, obs: Observation, course: Any, settle_s: float) -> Observation:
    """A known page with something over it that no popup names (``Observation.cover``): the model is asked for the
    point that closes it (with a learner, a lesson: engine.learning.learner); when it names none (or the run's
    questions are spent), the back key, which closes many dialogs (a lesson too). Raises PopupBlocking after
    MAX_UNCOVER tries in one navigation (`course.covered` counts them). Returns the next observation."""
    course.covered += 1
    if course.covered > MAX_UNCOVER:
        raise PopupBlocking(f"(a dialog no popup names, over {obs.page})", course.covered - 1)
    ctx.record("covered", page=obs.page, cover=obs.cover.to_dict() if hasattr(obs.cover, "to_dict") else None)
    if not escalate(nav, ctx, unknown=False):
        answer = getattr(nav.observer, "last_vision", None)
        label = (getattr(answer, "blocking_element", None) or "dialog") if ctx.vision_calls else "dialog"
        if nav.learner is None or not nav.learner.keyed(nav, ctx, "back", label):
            nav.act(ctx, KeyAction(type="key", key="back"), obs)
    ctx.detectors.repeats.forgive()
    ctx.wait(settle_s)
    return nav.look(ctx, expected=course.expected)


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
