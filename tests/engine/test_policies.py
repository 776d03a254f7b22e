"""Policies: the shipped file, compilation into tenacity objects, and bad policy files with their line numbers."""

from __future__ import annotations

import random
import textwrap
from pathlib import Path

import pytest
import tenacity

from engine.config.policies import Policy, load_policies
from engine.config.schema import BUILTIN_DEFAULTS
from engine.core.errors import (
    BadFrame,
    BlackFrame,
    ConfigError,
    ConnectionLost,
    DeviceNotFound,
    DeviceTimeout,
    NavigationError,
)

TOOLS = ("health", "screenshot", "tap", "swipe", "key", "state", "goto", "run", "ocr", "vision")


def _policy(**fields) -> Policy:
    base = {"name": "p", "attempts": 3, "timeout": 100, "wait": {"type": "none"}, "retry_on": ["TransientDeviceError"]}
    return Policy.model_validate({**base, **fields})


class Failer:
    """Raises the given errors in turn, then returns "done"."""

    def __init__(self, *excs: BaseException) -> None:
        self.excs = list(excs)
        self.calls = 0

    def __call__(self) -> str:
        self.calls += 1
        if self.excs:
            raise self.excs.pop(0)
        return "done"


# --------------------------------------------------------------------------------------------------- shipped file


def test_shipped_file_has_every_tool_and_the_default_hop_policy():
    policies = load_policies()
    for name in (*TOOLS, BUILTIN_DEFAULTS.policy, "slow_hop"):
        assert policies.get(name).name == name


@pytest.mark.parametrize(
    "tool, bound", [("health", 2), ("screenshot", 3), ("tap", 1), ("swipe", 1), ("state", 3), ("goto", 30), ("run", 60)]
)
def test_shipped_bounds(tool, bound):
    assert load_policies().get(tool).timeout <= bound


def test_unknown_policy_suggests_the_closest():
    with pytest.raises(ConfigError, match="did you mean 'goto_hop'"):
        load_policies().get("goto_hob")


# --------------------------------------------------------------------------------------------------- compilation


def test_attempt_count_then_reraise_the_last_error():
    sleeps: list[float] = []
    fn = Failer(*(ConnectionLost(f"reset {i}") for i in range(5)))
    with pytest.raises(ConnectionLost, match="reset 2"):
        _policy(attempts=3).retrying(sleep=sleeps.append)(fn)
    assert fn.calls == 3
    assert len(sleeps) == 2


def test_recovers_when_a_retry_succeeds():
    fn = Failer(DeviceTimeout("slow"), BlackFrame("black"))
    assert _policy(attempts=3).retrying(sleep=lambda s: None)(fn) == "done"
    assert fn.calls == 3


def test_errors_not_listed_are_not_retried():
    fn = Failer(DeviceNotFound("gone"), BadFrame("portrait"))
    with pytest.raises(DeviceNotFound):
        _policy(attempts=5).retrying(sleep=lambda s: None)(fn)
    assert fn.calls == 1


def test_listed_class_covers_its_subclasses_only():
    policy = _policy(retry_on=["ConnectionLost"])
    assert policy.retries(ConnectionLost("x"))
    assert not policy.retries(DeviceTimeout("x"))
    assert not policy.retries(ValueError("x"))


def test_empty_retry_list_never_retries():
    fn = Failer(ConnectionLost("x"))
    with pytest.raises(ConnectionLost):
        _policy(attempts=4, retry_on=[]).retrying(sleep=lambda s: None)(fn)
    assert fn.calls == 1


def test_fixed_wait_sequence():
    sleeps: list[float] = []
    fn = Failer(*(ConnectionLost("x") for _ in range(3)))
    _policy(attempts=4, wait={"type": "fixed", "seconds": 0.25}).retrying(sleep=sleeps.append)(fn)
    assert sleeps == [0.25, 0.25, 0.25]


def test_exponential_wait_sequence_is_capped():
    sleeps: list[float] = []
    fn = Failer(*(ConnectionLost("x") for _ in range(5)))
    wait = {"type": "exponential", "initial": 0.1, "max": 0.5, "multiplier": 2, "jitter": 0}
    _policy(attempts=6, wait=wait).retrying(sleep=sleeps.append)(fn)
    assert sleeps == pytest.approx([0.1, 0.2, 0.4, 0.5, 0.5])


def test_exponential_jitter_stays_inside_its_band():
    random.seed(7)
    wait = {"type": "exponential", "initial": 1, "max": 8, "multiplier": 3, "jitter": 0.5}
    strategy = _policy(wait=wait).wait_strategy()
    for attempt, base in [(1, 1), (2, 3), (3, 8), (4, 8)]:
        state = tenacity.RetryCallState(retry_object=None, fn=None, args=(), kwargs={})
        state.attempt_number = attempt
        seconds = strategy(state)
        assert base <= seconds <= min(8, base + 0.5) if base < 8 else seconds == 8


def test_stop_before_delay_never_starts_an_attempt_past_the_bound():
    # The waits (10 s each) are fake, but the stop condition adds the upcoming wait to the elapsed time, so the
    # policy gives up before the first 10 s wait of a 5 s bound.
    sleeps: list[float] = []
    fn = Failer(*(ConnectionLost("x") for _ in range(5)))
    with pytest.raises(ConnectionLost):
        _policy(attempts=5, timeout=5, wait={"type": "fixed", "seconds": 10}).retrying(sleep=sleeps.append)(fn)
    assert fn.calls == 1
    assert sleeps == []


def test_tighter_timeout_argument_wins():
    fn = Failer(*(ConnectionLost("x") for _ in range(5)))
    retrying = _policy(attempts=5, timeout=100, wait={"type": "fixed", "seconds": 1}).retrying(
        sleep=lambda s: None, timeout=0.5
    )
    with pytest.raises(ConnectionLost):
        retrying(fn)
    assert fn.calls == 1


def test_before_sleep_hook_runs_before_each_retry_with_the_failure():
    seen: list[tuple[int, str]] = []

    def hook(state: tenacity.RetryCallState) -> None:
        seen.append((state.attempt_number, type(state.outcome.exception()).__name__))

    fn = Failer(ConnectionLost("a"), DeviceTimeout("b"))
    _policy(attempts=3).retrying(sleep=lambda s: None, before_sleep=hook)(fn)
    assert seen == [(1, "ConnectionLost"), (2, "DeviceTimeout")]


def test_retrying_carries_the_policy_name():
    assert load_policies().get("screenshot").retrying().policy_name == "screenshot"


def test_call_runs_under_the_policy():
    fn = Failer(ConnectionLost("x"))
    assert _policy().call(fn, sleep=lambda s: None) == "done"


# --------------------------------------------------------------------------------------------------- files


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "policies.yaml"
    path.write_text(textwrap.dedent(text).lstrip("\n"))
    return path


def test_a_user_file_overrides_by_name_and_keeps_the_rest(tmp_path):
    path = _write(
        tmp_path,
        """
        policies:
          tap: {attempts: 5, timeout: 0.5, retry_on: [ConnectionLost]}
          my_hop: {attempts: 2, timeout: 4, wait: {type: fixed, seconds: 1}}
        """,
    )
    policies = load_policies(path)
    assert policies.get("tap").attempts == 5
    assert policies.get("my_hop").wait.seconds == 1
    assert policies.get("screenshot") == load_policies().get("screenshot")


@pytest.mark.parametrize(
    "text, line, col, message",
    [
        (
            """
            policies:
              tap:
                attempts: 0
                timeout: 1
            """,
            3, 5, "attempts: must be >= 1, got 0",
        ),
        (
            """
            policies:
              tap:
                attempts: 2
                timeout: 1
                retry_on: [ConnectionLost, DeviceTimout]
            """,
            5, 5, "did you mean 'DeviceTimeout'",
        ),
        (
            """
            policies:
              tap:
                attempts: 2
                timeout: 1
                wait: {type: fixed, secs: 1}
            """,
            5, 5, "5:25: unknown field 'secs' (did you mean 'seconds'?)",
        ),
        (
            """
            policies:
              tap:
                attempts: 2
                timeout: 1
                wait: {type: linear}
            """,
            5, 5, "unknown wait type 'linear' (expected none, fixed, exponential)",
        ),
        (
            """
            policies:
              tap:
                attempts: 2
                timout: 1
            """,
            2, 3, "4:5: unknown field 'timout' (did you mean 'timeout'?)",
        ),
        (
            """
            policies:
              tap: {attempts: 2, timeout: [1
            """,
            3, 1, "YAML syntax error",
        ),
        (
            """
            polices:
              tap: {attempts: 2, timeout: 1}
            """,
            1, 1, "unknown field 'polices' (did you mean 'policies'?)",
        ),
    ],
)
def test_bad_policy_files_point_at_the_line(tmp_path, text, line, col, message):
    path = _write(tmp_path, text)
    with pytest.raises(ConfigError) as info:
        load_policies(path)
    err = info.value
    assert (err.file, err.line) == (str(path), line)
    assert err.col == col
    assert message in str(err)
    assert str(err).startswith(f"{path}:{line}:")


def test_every_problem_of_a_file_is_reported(tmp_path):
    path = _write(
        tmp_path,
        """
        policies:
          tap: {attempts: 0, timeout: 1}
          key: {attempts: 1, timeout: -1}
        """,
    )
    with pytest.raises(ConfigError) as info:
        load_policies(path)
    assert len(info.value.context["problems"]) == 2
    assert f"{path}:3:" in str(info.value)


def test_missing_file_is_a_config_error(tmp_path):
    with pytest.raises(ConfigError, match="cannot read"):
        load_policies(tmp_path / "nope.yaml")


def test_navigation_errors_may_be_retried_by_a_hop_policy():
    fn = Failer(NavigationError("stuck"))
    assert _policy(retry_on=["NavigationError"]).call(fn, sleep=lambda s: None) == "done"


@pytest.mark.parametrize(
    "data, line, message",
    [
        (b"policies:\n  tap: {attempts: 1, timeout: 1}\n  tap: {attempts: 9, timeout: 1}\n", 3,
         "duplicate key 'tap' (first at line 2, col 3)"),
        (b"policies:\n  tap:\n    attempts: 2\n    timeout: .nan\n", 4, "timeout: expected a finite number, got nan"),
        ("policies:\n  tap:\n    description: r\xe9essayer\n".encode("latin-1"), 3, "not UTF-8: byte 0xe9"),
        (b"policies:\n  tap: {attempts: 2, timeout: 1}\x00\n", 2, "NUL byte (0x00)"),
        (b"policies:\n  tap: !retry {attempts: 2, timeout: 1}\n", 2, "unknown YAML tag '!retry'"),
        (b"policies:\n  tap: {tries: 2, timeout: 1}\n", 2, "unknown field 'tries' (did you mean 'attempts'?)"),
    ],
    ids=["duplicate_policy", "nan", "latin1", "nul", "tag", "synonym"],
)
def test_policy_files_are_read_by_the_one_yaml_reader(tmp_path, data, line, message):
    path = tmp_path / "policies.yaml"
    path.write_bytes(data)
    with pytest.raises(ConfigError) as info:
        load_policies(path)
    assert (info.value.file, info.value.line) == (str(path), line)
    assert message in str(info.value)


def test_read_policy_file_returns_every_problem_without_raising(tmp_path):
    from engine.config.policies import read_policy_file

    path = _write(tmp_path, "policies:\n  tap: {attempts: 0, timeout: 1}\n  key: {attempts: 1, timeout: .inf}\n")
    policies, problems = read_policy_file(path)
    assert policies is None
    assert [(p.line, p.message) for p in problems] == [
        (2, "attempts: must be >= 1, got 0"),
        (3, "timeout: expected a finite number, got inf"),
    ]
    good, none = read_policy_file(_write(tmp_path, "policies:\n  tap: {attempts: 1, timeout: 1}\n"))
    assert none == [] and good.get("tap").attempts == 1


def test_the_agent_policy_carries_its_repeat_limits_and_they_must_be_ordered(tmp_path):
    from engine.core.errors import ConfigError

    repeat = load_policies().get("agent").repeat
    assert (repeat.window, repeat.warn, repeat.refuse, repeat.stop) == (8, 3, 5, 8)
    bad = tmp_path / "p.yaml"
    bad.write_text("policies:\n  agent:\n    attempts: 1\n    timeout: 60\n"
                   "    repeat: {window: 8, warn: 5, refuse: 3, stop: 8}\n")
    with pytest.raises(ConfigError) as info:
        load_policies(bad)
    assert "warn <= refuse <= stop <= window" in str(info.value) and ":5:" in str(info.value)


def test_learning_trust_is_read_from_a_policy_file_and_kept_unless_a_file_sets_it(tmp_path):
    assert load_policies().learning.mode == "propose"  # nothing is accepted by itself unless you say so
    short = tmp_path / "short.yaml"
    short.write_text("learning: auto\n")  # (no policies: the shipped ones stay)
    loaded = load_policies(short)
    assert (loaded.learning.mode, loaded.learning.min_sightings) == ("auto", 3) and "goto" in loaded.names
    full = tmp_path / "full.yaml"
    full.write_text("learning: {mode: auto, min_sightings: 5}\npolicies: {goto: {attempts: 1, timeout: 9}}\n")
    assert load_policies(full).learning.min_sightings == 5
    only = tmp_path / "only.yaml"
    only.write_text("policies: {goto: {attempts: 1, timeout: 9}}\n")
    assert load_policies(only).learning.mode == "propose"


@pytest.mark.parametrize("text, line, col, message", [
    ("learning: always\n", 1, 1, "expected one of 'off', 'propose' or 'auto'"),
    ("policies: {}\nlearning: {mode: auto, min_sightings: 0}\n", 2, 24, "must be >= 1"),
    ("learning: {mode: auto, after: 3}\n", 1, 24, "after"),
])
def test_a_bad_learning_setting_points_at_its_line(tmp_path, text, line, col, message):
    path = tmp_path / "p.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError) as caught:
        load_policies(path)
    assert (caught.value.line, caught.value.col) == (line, col) and message in str(caught.value), str(caught.value)
