"""Retry and time-bound policies: policies/*.yaml compiled into named tenacity.Retrying objects.

A policy says how often a call is tried, how long to wait between tries, which errors deserve another try and the
hard bound (``timeout``, seconds) of the whole call. Tools look theirs up by tool name (``screenshot``, ``tap``,
``goto`` ...); a link's ``policy`` field names the policy of that hop (``goto_hop`` unless set, see
engine.config.schema.BUILTIN_DEFAULTS).

    policies = load_policies()
    retrying = policies.get("screenshot").retrying(sleep=fake_sleep, before_sleep=reconnect)
    frame = retrying(device_call)
"""

from __future__ import annotations

import logging
import time
from dataclasses import replace
from pathlib import Path
from typing import Annotated, Any, Callable, Literal, Union

import tenacity
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from engine.config.yamlmessages import problems_from_validation_error
from engine.config.yamlsrc import Problem, read_yaml
from engine.core import errors
from engine.core.errors import ConfigError
from engine.core.results import closest

log = logging.getLogger(__name__)

Sleep = Callable[[float], None]
Hook = Callable[[tenacity.RetryCallState], None]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


class NoWait(_Model):
    type: Literal["none"]


class FixedWait(_Model):
    type: Literal["fixed"]
    seconds: float = Field(ge=0, le=60, description="Pause between attempts.")


class ExponentialWait(_Model):
    """initial * multiplier**(attempt-1), capped at `max`, plus a random 0..jitter seconds."""

    type: Literal["exponential"]
    initial: float = Field(gt=0, le=60, description="Seconds before the second attempt.")
    max: float = Field(gt=0, le=300, description="The longest pause, in seconds.")
    multiplier: float = Field(2.0, ge=1, le=10, description="Each pause is this many times the one before.")
    jitter: float = Field(0.0, ge=0, le=60, description="Random extra seconds, 0..jitter, added to each pause.")


Wait = Annotated[Union[NoWait, FixedWait, ExponentialWait], Field(discriminator="type")]


def error_class(name: str) -> type[BaseException]:
    """The exception class called `name` in engine.core.errors (ValueError naming the closest when unknown)."""
    candidate = getattr(errors, name, None)
    if isinstance(candidate, type) and issubclass(candidate, BaseException):
        return candidate
    known = [n for n, v in vars(errors).items() if isinstance(v, type) and issubclass(v, BaseException)]
    close = closest(name, known, n=1)
    hint = f"; did you mean {close[0]!r}?" if close else f"; known: {', '.join(sorted(known))}"
    raise ValueError(f"{name!r} is not an error class of engine.core.errors{hint}")


class RepeatLimits(_Model):
    """How often one (action, arguments, result) may repeat among the last `window` before the caller reacts."""

    window: int = Field(8, ge=2, le=100, description="Entries remembered.")
    warn: int = Field(3, ge=2, le=100, description="Repeats that earn a warning.")
    refuse: int = Field(5, ge=2, le=100, description="Repeats at which the action is refused.")
    stop: int = Field(8, ge=2, le=100, description="Repeats at which the run stops.")

    @model_validator(mode="after")
    def _ordered(self) -> RepeatLimits:
        if not self.warn <= self.refuse <= self.stop <= self.window:
            raise ValueError("repeat limits must satisfy warn <= refuse <= stop <= window")
        return self


class Policy(_Model):
    """How one tool or hop is retried and bounded."""

    name: str = Field(description="The policy's name, used in logs.")
    description: str = Field("", description="One sentence for people: what the policy bounds and why so.")
    attempts: int = Field(ge=1, le=100, description="Most tries of the call (1 = no retry).")
    timeout: float = Field(gt=0, le=3600, description="Hard bound in seconds of the whole call, waits included.")
    wait: Wait = Field(default_factory=lambda: NoWait(type="none"), description="Pause between tries.")
    retry_on: tuple[str, ...] = Field(default=(), description="engine.core.errors class names worth another try.")
    reconnect: bool = Field(False, description="Reconnect to the device before the next try.")
    repeat: RepeatLimits | None = Field(None, description="Anti-repeat limits (the agent loop's).")
    control: Literal["adb", "maatouch", "minitouch", "auto"] | None = Field(
        None, description="The tap policy only: what touches go through (input tap, a touch agent, or the fastest "
                          "that starts); --control overrides it.")
    model: str | None = Field(None, min_length=1, description="The model policy only: the Gemini model the agent "
                              "and vision ask (ENGINE_AGENT_MODEL overrides it).")
    invalid_answers: int | None = Field(None, ge=1, le=100, description="The agent policy only: unusable model "
                                        "answers in a row that end an episode (status invalid_answers).")

    @field_validator("retry_on")
    @classmethod
    def _known_errors(cls, names: tuple[str, ...]) -> tuple[str, ...]:
        for name in names:
            error_class(name)
        return names

    @property
    def error_classes(self) -> tuple[type[BaseException], ...]:
        return tuple(error_class(name) for name in self.retry_on)

    def retries(self, exc: BaseException) -> bool:
        """Whether this policy tries again after `exc`."""
        return isinstance(exc, self.error_classes)

    def wait_strategy(self) -> tenacity.wait.wait_base:
        w = self.wait
        if isinstance(w, FixedWait):
            return tenacity.wait_fixed(w.seconds)
        if isinstance(w, ExponentialWait):
            return tenacity.wait_exponential_jitter(initial=w.initial, max=w.max, exp_base=w.multiplier, jitter=w.jitter)
        return tenacity.wait_none()

    def retrying(
        self,
        sleep: Sleep | None = None,
        before_sleep: Hook | None = None,
        *,
        timeout: float | None = None,
    ) -> tenacity.Retrying:
        """A tenacity.Retrying for this policy.

        Args:
            sleep: replaces time.sleep between attempts (tests pass a recorder, so they never wait).
            before_sleep: called with the retry state before each wait, after the log line (the device layer
                reconnects here).
            timeout: a tighter bound than the policy's (what is left of an enclosing call's budget).

        The stop condition is ``stop_after_attempt(attempts) | stop_before_delay(timeout)``: no attempt starts
        when its wait would end past the bound, so retries never stretch a call beyond ``timeout``.
        """
        bound = self.timeout if timeout is None else min(timeout, self.timeout)
        name = self.name

        def _before_sleep(state: tenacity.RetryCallState) -> None:
            exc = state.outcome.exception() if state.outcome is not None else None
            log.info(
                "policy %s: attempt %d failed (%s: %s); next in %.3fs",
                name,
                state.attempt_number,
                type(exc).__name__,
                exc,
                state.upcoming_sleep,
            )
            if before_sleep is not None:
                before_sleep(state)

        retrying = tenacity.Retrying(
            sleep=sleep or time.sleep,
            stop=tenacity.stop_after_attempt(self.attempts) | tenacity.stop_before_delay(bound),
            wait=self.wait_strategy(),
            retry=tenacity.retry_if_exception_type(self.error_classes) if self.retry_on else tenacity.retry_never,
            before_sleep=_before_sleep,
            reraise=True,
        )
        retrying.policy_name = name  # type: ignore[attr-defined]  # for log lines of callers
        return retrying

    def call(self, fn: Callable[..., Any], *args: Any, sleep: Sleep | None = None, before_sleep: Hook | None = None,
             **kwargs: Any) -> Any:
        """Run ``fn(*args, **kwargs)`` under this policy; the last error is re-raised when tries run out."""
        return self.retrying(sleep=sleep, before_sleep=before_sleep)(fn, *args, **kwargs)


class Learning(_Model):
    """How far the engine may trust what it learned (engine.learning.learner): ``propose`` (the default) only writes
    proposals for review; ``auto`` accepts a proposal once it was verified `min_sightings` times (into the
    session's own graph folder and asset pack); ``off`` learns nothing. A learned popup that misfires is demoted
    in every mode."""

    mode: Literal["off", "propose", "auto"] = Field("propose", description="off | propose | auto.")
    min_sightings: int = Field(3, ge=1, le=1000, description="Verified sightings before `auto` accepts.")
    search: int = Field(10, ge=0, le=100, description="Tries of the dismissal search (engine.navigation.dismissal) "
                                                      "on one showing of a dialog the graph does not know, before "
                                                      "the vision model is asked; 0: no search.")

    @model_validator(mode="before")
    @classmethod
    def _shorthand(cls, value: Any) -> Any:
        if value is False:  # YAML 1.1 reads an unquoted `off` as false
            return {"mode": "off"}
        return {"mode": value} if isinstance(value, str) else value  # `learning: auto`


class PolicyFile(_Model):
    """One policy YAML file: ``policies: {name: {attempts, timeout, wait, retry_on, ...}}`` and ``learning``."""

    policies: dict[str, dict[str, Any]] = Field(default_factory=dict, description="Policies by name.")
    learning: Learning | None = Field(None, description="Trust in learned popups (engine.learning.learner).")


class Policies:
    """A set of named policies (tool names and hop policies)."""

    def __init__(self, policies: dict[str, Policy], source: str | None = None,
                 learning: Learning | None = None) -> None:
        self._policies = dict(policies)
        self.source = source
        self._learning = learning  # None: this file does not say (a merge keeps the other's)

    @property
    def learning(self) -> Learning:
        """The trust in learned popups (the default, propose, when no file set it)."""
        return self._learning or Learning()

    @property
    def names(self) -> list[str]:
        return sorted(self._policies)

    def __contains__(self, name: object) -> bool:
        return name in self._policies

    def get(self, name: str) -> Policy:
        """The policy called `name`; ConfigError naming the closest known one when there is none."""
        try:
            return self._policies[name]
        except KeyError:
            close = closest(name, self._policies, n=1)
            hint = f"; did you mean {close[0]!r}?" if close else f"; known: {', '.join(self.names)}"
            raise ConfigError(f"unknown policy {name!r}{hint}", file=self.source) from None

    def merged(self, other: Policies) -> Policies:
        """These policies with `other`'s replacing those of the same name."""
        return Policies({**self._policies, **other._policies}, source=other.source or self.source,
                        learning=other._learning or self._learning)


# --------------------------------------------------------------------------------------------------- loading


def load_policies(path: str | Path | None = None) -> Policies:
    """Load policies; with `path`, that file's policies replace the built-in ones of the same name.

    Raises:
        ConfigError: the file is not valid YAML or a policy is wrong (file, line and col of the first problem;
            every problem in the message).
    """
    from engine.core.paths import builtin_policy_file

    builtin = _load_file(builtin_policy_file())
    if path is None:
        return builtin
    return builtin.merged(_load_file(Path(path)))


def _load_file(path: Path) -> Policies:
    policies, problems = read_policy_file(path)
    if problems:
        raise _config_error(path, problems)
    assert policies is not None
    return policies


def read_policy_file(path: str | Path) -> tuple[Policies | None, list[Problem]]:
    """One policy file's policies, or every problem in it (file:line:col, the field, a hint); never raises.

    The file is read by engine.config.yamlsrc like graph and task files: size, nesting and aliases are bounded, and
    duplicate keys, unknown tags, NUL bytes and non-UTF-8 bytes are problems with their line.
    """
    source = read_yaml(path)
    problems = [replace(p, message=p.message.replace("cannot read the file", "cannot read policy file", 1))
                for p in source.problems]
    if problems:
        return None, problems
    locator = source.locator
    try:
        parsed = PolicyFile.model_validate(source.data if source.data is not None else {})
    except ValidationError as exc:
        return None, problems_from_validation_error(exc, locator.file, locator, model=PolicyFile)
    policies: dict[str, Policy] = {}
    for name, body in parsed.policies.items():
        try:
            policies[name] = Policy.model_validate({**body, "name": name})
        except ValidationError as exc:
            problems += problems_from_validation_error(
                exc, locator.file, locator, base=("policies", name), model=Policy
            )
    problems.sort(key=lambda p: (p.line or 0, p.col or 0))
    if problems:
        return None, problems
    found = Policies(policies, source=str(path), learning=parsed.learning)
    return found, problems


def _config_error(path: Path, problems: list[Problem]) -> ConfigError:
    first = problems[0]
    lines = [str(p) for p in problems]
    message = first.message if len(problems) == 1 else f"{len(problems)} problems:\n" + "\n".join(lines)
    return ConfigError(message, file=str(path), line=first.line, col=first.col, problems=lines)


def jitter_free(policy: Policy) -> Policy:
    """`policy` without random jitter (deterministic waits for tests and benchmarks)."""
    if isinstance(policy.wait, ExponentialWait):
        return policy.model_copy(update={"wait": policy.wait.model_copy(update={"jitter": 0.0})})
    return policy
