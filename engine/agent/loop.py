"""The agent loop: one goal, one action per turn, every budget owned by the runtime, success said by the harness.

An episode runs in three phases:

1. **Look.** One look at the screen: a blocker that holds stops the episode (``blocked``); criteria that already
   hold end it (``goal_met``) before anything is spent.
2. **Deterministic first.** A goal whose criteria name tasks or a page is tried with ``alas_run`` and
   ``alas_goto`` (the engine's verified navigation) before any model call. The model is asked only when that
   fails, or when the goal is free text.
3. **The model.** Each turn builds one prompt (engine.agent.prompt: the goal and its status, working memory most
   urgent first, the graph's episodic memory, the budget left), asks the provider, and parses exactly one action
   (engine.agent.parse). An unusable answer becomes a parser-error percept, counted against the budget; a tool
   call passes the anti-repeat guard and runs through ``Tools`` (the same bounded eight every face uses); its
   result, with the screen after it, becomes a percept for the next turn.

Only the harness says "done", and only against the user's criteria: after a tool whose result shows them, and
after every ``final``, the loop looks at the screen itself and checks every criterion (engine.config.goals.evaluate).
A ``final`` that does not hold is told so and the episode goes on; when the budget ends right after one, the stop
reason is ``false_claim``. A ``final`` for a goal the user gave no criteria ends the episode ``unverified``. Neither
is ever a success. Unusable answers (prose, an invented tool, bad arguments, an unreadable or oversized answer)
are fed back and counted; the agent policy's ``invalid_answers`` in a row end the episode. A service error no
turn can fix (bad request, bad key, model gone) ends it at once, with the service's message and a hint.

The goal's wall budget bounds everything (engine.agent.budget): model calls get the seconds left as their whole
deadline, tools and looks a cancel Event that the budget sets. Every stop (engine.core.results.STOP_REASONS) writes a
checkpoint (engine.agent.checkpoint), appends a summary to the episodic memory, and, when the goal was verified, saves
the calls that reached it as a skill (engine.agent.skills).
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engine.agent import budget as budgets
from engine.agent import prompt as prompts
from engine.agent.budget import BudgetEvent
from engine.agent.checkpoint import EpisodeState, save_checkpoint
from engine.agent.memory import (EpisodicMemory, Percept, WorkingMemory, estimate_tokens, harness_note,
                                 observation_percept, parser_error, percept_from_result, warning)
from engine.agent.models import Message, ModelTurn, Provider
from engine.agent.outcome import episode_result, save_skill
from engine.agent.parse import Action, parse_turn
from engine.agent.repeat import RepeatGuard
from engine.agent.verify import Harness, Look
from engine.config.goals import Criterion, Goal, all_held, describe_criterion
from engine.config.policies import RepeatLimits
from engine.core.errors import EpisodeEnded, ModelError
from engine.core.results import ToolResult
from engine.llm.images import decode_png, model_image

log = logging.getLogger(__name__)

FED_BACK_MODEL_ERRORS = ("malformed", "refused", "oversized")
"""Model failures that become a parser-error percept (the next turn may do better); the rest stop the episode."""
INVALID_ANSWERS = 3
"""Unusable answers in a row that end an episode when the agent policy does not say."""


@dataclass
class AgentConfig:
    """How episodes run beyond the goal's own budget.

    Attributes:
        max_turns, max_seconds: cap the goal's turn and wall budgets (the CLI's --max-turns, --max-seconds).
        memory_percepts: percepts per prompt; episodes: earlier episode summaries per prompt.
        on_event: called with (kind, dict) at each turn, call, verification and stop (CLI progress).
    """

    max_turns: int | None = None
    max_seconds: float | None = None
    memory_percepts: int = 8
    episodes: int = 5
    on_event: Callable[[str, dict[str, Any]], None] | None = None


class Agent:
    """Runs goals on one session's tools with one model provider (or none: deterministic goals only).

    Args:
        tools: engine.runtime.tools.Tools of an open session (its navigator, observer, tasks and transcript are used).
        provider: the model (engine.agent.models.Provider), or None. memory: the graph's episodic memory, or None.
        skills: where verified call sequences are saved (engine.tasks.skills.SkillStore), or None. config: AgentConfig.
        cancel: set it to stop the episode at the next turn (stop reason ``cancelled``).
    """

    def __init__(self, tools: Any, provider: Provider | None = None, *, memory: EpisodicMemory | None = None,
                 skills: Any = None, config: AgentConfig | None = None,
                 cancel: threading.Event | None = None) -> None:
        self.tools, self.provider, self.memory, self.skills = tools, provider, memory, skills
        self.config = config or AgentConfig()
        self.cancel = cancel or threading.Event()
        self.harness = Harness(tools)
        policy = tools.policies.get("agent") if tools.policies is not None else None
        self.repeat_limits = policy.repeat if policy is not None and policy.repeat else None
        self.invalid_answers = (policy.invalid_answers if policy is not None else None) or INVALID_ANSWERS
        self.model_timeout = float(tools.policies.get("model").timeout) if tools.policies is not None else 60.0
        self.turn_overheads_ms: list[float] = []
        """The loop's own time of each model turn, model and tools excluded (for the benchmark)."""

    def run(self, goal: Goal, *, state: EpisodeState | None = None, folder: str | Path | None = None) -> ToolResult:
        """Run (or, with `state`, resume) an episode of `goal`; the result's status is the stop reason.

        `folder` receives the checkpoint at the stop (default: none written).
        """
        state = state or EpisodeState(episode=uuid.uuid4().hex[:12], goal=goal.model_dump(mode="json"))
        return _Episode(self, goal, state, folder).run()


class _Episode:
    """One run of one goal."""

    def __init__(self, agent: Agent, goal: Goal, state: EpisodeState, folder: str | Path | None) -> None:
        self.agent, self.goal, self.state, self.folder = agent, goal, state, folder
        self.tools, self.graph, self.harness = agent.tools, agent.tools.graph, agent.harness
        self.clock = agent.tools.clock  # the tools' time: virtual in soaks, monotonic otherwise
        self.started = self.clock()
        self.budget = goal.budget
        if agent.config.max_turns is not None:
            self.budget = self.budget.model_copy(update={"turns": agent.config.max_turns})
        if agent.config.max_seconds is not None:
            seconds = min(self.budget.seconds, state.spend.seconds + agent.config.max_seconds)
            self.budget = self.budget.model_copy(update={"seconds": seconds})
        self.memory = WorkingMemory(capacity=max(12, agent.config.memory_percepts))
        self.memory.extend(Percept(**p) for p in state.percepts)
        self.repeats = RepeatGuard(agent.repeat_limits or RepeatLimits())
        self.repeats.restore(state.repeats)
        self.tasks = list(self.tools.tasks.names()) if self.tools.tasks is not None else []
        pages = [p for p in self.graph.page_names if p != self.graph.unknown_page]
        self.decls = {d.name: d for d in prompts.tool_declarations(pages, self.tasks)}
        self.system = prompts.system_prompt(self.graph)
        self.look: Look | None = None
        self.now = "not looked yet"  # the newest screen seen (a look or a tool's observation): always in the prompt
        self.screen: tuple[Any, str] | None = None  # (ModelImage, why) handed to the model with the next prompt
        self.calls_cancel = BudgetEvent(agent.cancel, self.started + self._seconds_left(), self.clock)
        """The cancel Event of every tool call and look: set by a cancel or by the end of the wall budget."""

    # ------------------------------------------------------------------------------------------------ flow

    def run(self) -> ToolResult:
        self._record("agent_start", goal=self.goal.name,
                     resumed=self.state.stop_reason is not None, budget=self.budget.model_dump())
        self.state.stop_reason = None
        try:
            self._begin()
            if not self.state.deterministic_done:
                self._deterministic()
            while True:
                self._turn()
        except EpisodeEnded as stop:
            return self._finish(stop)
        except KeyboardInterrupt:
            return self._finish(EpisodeEnded("cancelled", "interrupted"))

    def _begin(self) -> None:
        look = self._look_and_judge(self.goal.success)
        if self.state.start_page is None and look.observation is not None:
            self.state.start_page = look.observation.page
        if look.observation is not None:
            self._percept(observation_percept(look.observation, self.state.spend.turns))
            self._hand_over_unknown(look.observation.to_dict())

    def _deterministic(self) -> None:
        """goto/run the goal's tasks and page before any model call; verify by looking after each."""
        plan = [("alas_run", {"name": c.task}) for c in self.goal.success if c.task]
        page = next((c.page for c in self.goal.success if c.page), None)
        if page is not None:
            plan.append(("alas_goto", {"page": page}))
        ended_on: str | None = None
        for name, arguments in plan:
            if name == "alas_goto" and ended_on == page:
                continue  # the task before it ended there, verified
            self._check_budget(model=False)
            self.state.spend.deterministic_calls += 1
            result = self._execute(name, arguments)
            if not result.ok:
                break
            ended_on = (result.data.get("observation") or {}).get("page")
        self.state.deterministic_done = True
        if plan:
            self._look_and_judge(self.goal.success)

    def _turn(self) -> None:
        self._check_budget(model=True)
        if self.agent.provider is None:
            why = "free text" if self.goal.free_text else "the deterministic path did not reach it"
            raise EpisodeEnded("model_error", f"goal {self.goal.name} needs a model ({why}): set GEMINI_API_KEY",
                               model_error="not_configured")
        spend = self.state.spend
        spend.turns += 1
        began, outside = time.perf_counter(), 0.0
        turn = self._ask()
        outside += turn[1]
        if turn[0] is None:
            self._overhead(began, outside)
            return
        action = parse_turn(turn[0], self.decls)
        self._record("agent_parse", turn=spend.turns, action=action.to_dict(), raw=action.raw)
        self._emit("turn", {"turn": spend.turns, "action": action.to_dict()})
        if action.kind == "error":
            self._invalid(action.error, raw=action.raw)
            self._overhead(began, outside)
            return
        spend.invalid_in_a_row = 0
        if action.kind == "final":
            tick = time.perf_counter()
            self._final(action)
            outside += time.perf_counter() - tick
        elif action.kind == "blocked":
            reasons = [str(r) for r in action.arguments.get("reasons", [])]
            raise EpisodeEnded("blocked", "the model reports the goal blocked: " + "; ".join(reasons), reasons=reasons)
        else:
            tick = time.perf_counter()
            self._tool(action)
            outside += time.perf_counter() - tick
        self._overhead(began, outside)

    def _ask(self) -> tuple[ModelTurn | None, float]:
        """One model call: the turn (None when it failed but the episode goes on) and the seconds it took."""
        spend = self.state.spend
        user = prompts.user_prompt(self._goal_text(), self.now, self.memory.render(self.agent.config.memory_percepts),
                                   self._episodes(), self._budget_left(), self.tasks)
        self._record("agent_request", turn=spend.turns, system=self.system, prompt=user,
                     tools=list(self.decls), chars=len(self.system) + len(user),
                     image_bytes=len(self.screen[0].data) if self.screen else 0)
        timeout = min(self.agent.model_timeout, self._seconds_left())
        tick = time.perf_counter()
        image, self.screen = self.screen, None
        try:
            spend.model_calls += 1
            note = prompts.screen_image_note(image[0], image[1]) if image else ""
            message = Message("user", user + note, image=image[0].data if image else None,
                              image_type=image[0].mime_type if image else "image/jpeg")
            turn = self.agent.provider.generate(self.system, [message], list(self.decls.values()), timeout=timeout)
        except ModelError as exc:
            took = time.perf_counter() - tick
            self._record("agent_response", turn=spend.turns, error={"reason": exc.reason, "message": exc.message,
                                                                     **exc.context})
            spend.tokens += estimate_tokens(self.system + user)
            if exc.reason in FED_BACK_MODEL_ERRORS:
                self._invalid(f"the model's answer was unusable ({exc.reason}): {exc.message}")
                return None, took
            if exc.reason == "timeout" and self._seconds_left() <= 0:
                raise EpisodeEnded("budget_time",
                                   f"the budget of {self.budget.seconds:g} s ran out during a model call",
                                   model_error="timeout") from None
            context = {k: exc.context[k] for k in ("code", "service_status", "service_message", "hint", "model")
                       if k in exc.context}
            hint = f"; {context['hint']}" if "hint" in context else ""
            raise EpisodeEnded("model_error", f"the model failed: {exc.message}{hint}", model_error=exc.reason,
                               **context) from None
        took = time.perf_counter() - tick
        used = turn.usage.total or estimate_tokens(self.system + user) + estimate_tokens(turn.text or "")
        spend.tokens += used
        self._record("agent_response", turn=spend.turns, response=turn.to_dict(), raw=turn.raw, tokens=used)
        return turn, took

    # ------------------------------------------------------------------------------------------------ actions

    def _tool(self, action: Action) -> None:
        turn = self.state.spend.turns
        verdict = self.repeats.check(action.name, action.arguments)
        n = self.repeats.repeats(action.name, action.arguments) + 1
        if verdict == "stop":
            raise EpisodeEnded("repeat", self.repeats.message(action.name, "stop", n), tool=action.name)
        if verdict == "refuse":
            self.repeats.record(action.name, action.arguments, "refused")
            self._percept(warning(self.repeats.message(action.name, "refuse", n), turn))
            return
        if verdict == "warn":
            self._percept(warning(self.repeats.message(action.name, "warn", n), turn))
        self._check_budget(model=False)
        result = self._execute(action.name, action.arguments)
        self.repeats.record(action.name, action.arguments, result.status)
        if self._may_hold(result):
            self._look_and_judge(self.goal.success)

    def _final(self, action: Action) -> None:
        """The model claims the goal is reached: the harness looks and checks the user's criteria."""
        turn = self.state.spend.turns
        if not self.goal.success:
            raise EpisodeEnded("unverified", f"the model says goal {self.goal.name} is reached, but the goal has no "
                               "criteria the engine can check, so it is not verified (give success criteria in a goals "
                               "file, or --until on the command line)",
                               summary=str(action.arguments.get("summary") or ""))
        look = self._look_and_judge(self.goal.success, final=True)
        self.state.spend.false_claims += 1
        self.state.last_claim_false = True
        failed = [r.detail for r in look.results if not r.held]
        self._percept(harness_note("your final was checked and does not hold: " + "; ".join(failed), turn))

    def _execute(self, name: str, arguments: dict[str, Any]) -> ToolResult:
        """Run one tool through Tools; its result becomes a percept and a call of the episode."""
        spend = self.state.spend
        spend.tool_calls += 1
        result = self.tools.call(name, arguments, cancel=self.calls_cancel)
        ok = bool(result.ok)
        self.state.calls.append({"tool": name, "arguments": arguments, "ok": ok, "status": result.status,
                                 "turn": spend.turns})
        if name == "alas_run":
            self.state.tasks[str(arguments.get("name"))] = ok
        self.state.last_claim_false = False
        self._record("agent_call", turn=spend.turns, tool=name, arguments=arguments, ok=ok, status=result.status,
                     text=result.text)
        self._emit("call", {"turn": spend.turns, "tool": name, "arguments": arguments, "status": result.status})
        self._percept(percept_from_result(result, spend.turns, arguments=arguments))
        seen = result.data.get("observation")
        if name == "adb_screenshot" and result.png:
            self._show(decode_png(result.png), " (your adb_screenshot)")
        elif isinstance(seen, dict):
            self.now = prompts.screen_words(seen.get("page"), seen.get("popups") or ())
            self._hand_over_unknown(seen)
        elif result.status == "unknown_screen":
            self._hand_over_unknown({"page": None})
        if self.agent.cancel.is_set():
            raise EpisodeEnded("cancelled", "cancelled while a tool ran")
        if self.calls_cancel.expired:
            raise EpisodeEnded("budget_time", f"the budget of {self.budget.seconds:g} s ran out while {name} ran")
        return result

    # ------------------------------------------------------------------------------------------------ judging

    def _may_hold(self, result: ToolResult) -> bool:
        """Whether the screen a tool reported could satisfy the goal (then the harness looks for itself)."""
        seen = result.data.get("observation")
        checks = [c for c in self.goal.success if c.field is None]
        return isinstance(seen, dict) and bool(checks) and self.harness.quick(seen, checks, self.state.tasks)

    def _look_and_judge(self, criteria: list[Criterion], *, final: bool = False) -> Look:
        """Look at the screen; stop on a blocker (blocked) or on criteria that all hold (goal_met)."""
        self.state.spend.looks += 1
        look = self.harness.look(criteria, self.goal.blockers, self.state.tasks, cancel=self.calls_cancel)
        self.look = look
        if look.observation is not None:
            self.now = prompts.screen_words(look.page, look.popups)
        self._record("agent_verify", turn=self.state.spend.turns, final=final, page=look.page,
                     popups=look.popups, held=[{"criterion": describe_criterion(r.criterion), "held": r.held,
                                                "detail": r.detail} for r in look.results],
                     blocker=look.blocker, error=look.error)
        self._emit("verify", {"held": all_held(look.results), "page": look.page, "final": final})
        if look.blocker is not None:
            raise EpisodeEnded("blocked", f"blocked: {look.blocker}", reasons=[look.blocker], verified_blocker=True)
        if look.results and all_held(look.results) and (criteria or final):
            self.state.verified = True
            raise EpisodeEnded("goal_met", f"goal {self.goal.name} met and verified by looking")
        return look

    def _hand_over_unknown(self, seen: dict[str, Any]) -> None:
        """A screen no page or popup matched goes to the model as an image with the next prompt."""
        if seen.get("page") is None and not seen.get("popups") and not seen.get("loading"):
            image = self.harness.snapshot(cancel=self.calls_cancel)
            if image is not None:
                self.screen = (image, ": it matched no page or popup of the graph; decide from it what to tap")

    def _show(self, frame: Any, why: str) -> None:
        """Hand `frame` to the model with the next prompt, downscaled and bounded (engine.llm.images)."""
        try:
            self.screen = (model_image(frame), why) if frame is not None else None
        except ValueError as exc:
            log.warning("the screenshot cannot be shown to the model: %s", exc)

    def _invalid(self, error: str, raw: str = "") -> None:
        """An unusable answer: fed back as a parser-error percept, and counted; too many in a row end it."""
        spend = self.state.spend
        spend.parser_errors += 1
        spend.invalid_in_a_row += 1
        self._percept(parser_error(error, spend.turns, raw=raw))
        if spend.invalid_in_a_row >= self.agent.invalid_answers:
            raise EpisodeEnded("invalid_answers", f"the model gave {spend.invalid_in_a_row} unusable answers in a row "
                               f"(the last: {error[:200]})")

    def _check_budget(self, *, model: bool) -> None:
        budgets.check(self.state.spend, self.budget, self._seconds_left(), model=model, cancel=self.agent.cancel,
                      after_false_claim=self.state.last_claim_false)

    # ------------------------------------------------------------------------------------------------ the end

    def _finish(self, stop: EpisodeEnded) -> ToolResult:
        state, spend = self.state, self.state.spend
        state.stop_reason = stop.reason
        state.verified = stop.reason == "goal_met" and state.verified
        spend.seconds += self.clock() - self.started
        state.percepts = [p.to_dict() for p in self.memory.percepts()]
        state.repeats = self.repeats.entries()
        checkpoint = str(save_checkpoint(self.folder, state)) if self.folder is not None else None
        skill = save_skill(self.agent.skills, self.tools, self.goal, state)
        if skill is not None:
            self._record("agent_skill", name=skill)
        self._remember(stop)
        result = episode_result(self.goal, state, stop, self.look, checkpoint, skill)
        self._record("agent_stop", result=result.to_dict())
        self._emit("stop", result.data)
        return result

    def _remember(self, stop: EpisodeEnded) -> None:
        if self.agent.memory is not None:
            name = self.goal.description if self.goal.name == "free_text" else self.goal.name
            self.agent.memory.remember(name, stop.reason, stop.text, self.state.verified, self.state.spend.turns,
                                       self.state.calls)

    # ------------------------------------------------------------------------------------------------ helpers

    def _goal_text(self) -> str:
        look = self.look
        status = [(describe_criterion(r.criterion), r.held, r.detail) for r in (look.results if look else [])]
        subgoals = [(g.name, self.harness.quick_goal(g, look, self.state.tasks)) for g in self.goal.subgoals]
        return prompts.goal_lines(self.goal, status, subgoals)

    def _episodes(self) -> str:
        memory = self.agent.memory
        return memory.render(self.agent.config.episodes) if memory is not None else ""

    def _budget_left(self) -> str:
        return budgets.left_words(self.state.spend, self.budget, self._seconds_left())

    def _seconds_left(self) -> float:
        return self.budget.seconds - self.state.spend.seconds - (self.clock() - self.started)

    def _percept(self, percept: Percept) -> None:
        self.memory.add(percept)
        self._record("agent_percept", **percept.to_dict())

    def _overhead(self, began: float, outside: float) -> None:
        self.agent.turn_overheads_ms.append((time.perf_counter() - began - outside) * 1000.0)

    def _record(self, kind: str, **fields: Any) -> None:
        transcript = self.tools.transcript
        if transcript is not None:
            try:
                transcript.record(kind, episode=self.state.episode, **fields)
            except (OSError, ValueError) as exc:
                log.warning("transcript: %s not recorded: %s", kind, exc)

    def _emit(self, kind: str, data: dict[str, Any]) -> None:
        if self.agent.config.on_event is not None:
            self.agent.config.on_event(kind, data)
