"""One exception tree for the engine, grouped by how we recover. Every exception class of the engine lives here.

    EngineError
    ├── ConfigError            fail fast: a graph, policy or task file is wrong (carries file, line, col)
    │   ├── GraphError         one or more problems in a graph folder (carries the list of Problems)
    │   ├── YamlError          a YAML file could not be read cleanly (carries the list of Problems)
    │   ├── ProposalRefused    a learned popup's signature fires on frames of known pages (carries the frames)
    │   ├── DraftEditRefused   an edit of an explorer's draft cannot be made as asked (carries reason, exists)
    │   └── ScheduleError      the schedule's database cannot be used (corrupt, locked, newer), or a device is
    │       │                  already driven by another scheduler (carries path, device)
    │       └── ScheduleUnreachable  the schedule's database server does not answer (workers wait and retry)
    ├── DeviceError            the device or ADB misbehaved (carries serial)
    │   ├── TransientDeviceError   worth a retry after a reconnect
    │   │   ├── DeviceTimeout          a call did not answer inside its bound
    │   │   ├── ConnectionLost         socket reset or closed mid-call
    │   │   ├── DeviceOffline          the device is listed but offline (often recovers)
    │   │   └── BlackFrame             the screen came back black or one flat colour
    │   └── PersistentDeviceError  retrying will not help; run the health probe and report
    │       ├── AdbServerDown          nothing listens at the ADB server address
    │       ├── DeviceNotFound         the serial is not among the server's devices
    │       ├── BadFrame               the frame cannot be used (portrait, wrong shape, undecodable)
    │       └── AgentUnavailable       a touch agent cannot run here (taps fall back to adb input)
    ├── VerificationError      the screen could not be checked
    │   ├── MissingAsset           the asset pack has no template for a signature
    │   └── VisionError            the vision model could not be asked, or its answer cannot be trusted
    ├── ModelError             a language model could not be asked, or its answer cannot be used (carries reason)
    ├── NavigationError        a goto or run could not finish
    │   ├── UnknownPage            a page name the graph does not have (carries suggestions)
    │   ├── NoRoute                no chain of links leads from one page to the other
    │   ├── Stuck                  a click loop, a repeated hop, or no progress
    │   ├── PopupBlocking          a popup is still there after its dismissals
    │   ├── UnknownScreen          no page or popup matched, and the recovery ladder did not help
    │   └── Interrupted            the run was stopped from outside; it ends at its next checkpoint
    │       ├── Cancelled              the caller cancelled it
    │       └── DeadlineExceeded       its time bound passed
    ├── ResponseTooLarge       a model's answer passed the size bound in the HTTP transport (becomes a ModelError)
    ├── EpisodeEnded           an agent's episode ends with a stop reason (the loop turns it into its result)
    ├── PathRefused            a request names a file outside its root, or none (the studio; carries an HTTP status)
    └── StreamClosed           the simulator's fake device closes an ADB stream (the client went, or on purpose)

A miss (a signature that does not hit, a page that is not the expected one) is a result, not an exception.
Every class carries ``status``: the machine word a ToolResult reports for it.
"""

from __future__ import annotations


class EngineError(Exception):
    """Root of every error the engine raises on purpose."""

    status = "error"

    def __init__(self, message: str, **context: object) -> None:
        super().__init__(message)
        self.message = message
        self.context = {k: v for k, v in context.items() if v is not None}

    def to_dict(self) -> dict[str, object]:
        return {"error": type(self).__name__, "status": self.status, "message": self.message, **self.context}


class ConfigError(EngineError):
    status = "config_error"

    def __init__(
        self, message: str, *, file: str | None = None, line: int | None = None, col: int | None = None, **context
    ) -> None:
        super().__init__(message, file=file, line=line, col=col, **context)
        self.file, self.line, self.col = file, line, col

    def __str__(self) -> str:
        where = ":".join(str(p) for p in (self.file, self.line, self.col) if p is not None)
        return f"{where}: {self.message}" if where else self.message


class ProbeTimeout(ConfigError):
    """An outside interpreter (ALAS's Python) did not answer its probe within the bound: no verdict, a slow machine
    rather than a wrong Python (alas_wrapped.interpreter)."""


class _ProblemsError(ConfigError):
    """Several located problems at once; the first one gives the error its file, line and column."""

    def __init__(self, problems: list, message: str | None = None) -> None:
        first = problems[0] if problems else None
        super().__init__(
            message or getattr(first, "message", None) or f"{len(problems)} problem(s)",
            file=getattr(first, "file", None),
            line=getattr(first, "line", None),
            col=getattr(first, "col", None),
        )
        self.problems = problems

    def __str__(self) -> str:
        return "\n".join(str(p) for p in self.problems) or self.message


class GraphError(_ProblemsError):
    """All problems found in a graph folder at once (``problems`` holds engine.config.loader.Problem records)."""

    def __init__(self, problems: list, message: str | None = None) -> None:
        super().__init__(problems, message or f"{len(problems)} problem(s) in the graph")


class YamlError(_ProblemsError):
    """A YAML file could not be read cleanly; ``problems`` lists every Problem found in it."""


class DeviceError(EngineError):
    status = "device_error"
    transient = False

    def __init__(self, message: str, *, serial: str | None = None, **context) -> None:
        super().__init__(message, serial=serial, **context)
        self.serial = serial
        self.health = None
        """The health probe's record when one was taken after this fault (engine.device.health.Health)."""


class TransientDeviceError(DeviceError):
    transient = True


class DeviceTimeout(TransientDeviceError):
    status = "timeout"


class ConnectionLost(TransientDeviceError):
    status = "connection_lost"


class DeviceOffline(TransientDeviceError):
    status = "device_offline"


class BlackFrame(TransientDeviceError):
    status = "black_frame"


class PersistentDeviceError(DeviceError):
    pass


class AdbServerDown(PersistentDeviceError):
    status = "adb_server_down"


class DeviceNotFound(PersistentDeviceError):
    status = "device_not_found"


class BadFrame(PersistentDeviceError):
    status = "bad_frame"


class VerificationError(EngineError):
    status = "verification_error"


class MissingAsset(VerificationError):
    """The asset pack has no template for a signature, so that signature cannot be checked."""


class VisionError(VerificationError):
    """The vision model could not be asked, or its answer cannot be trusted (see `reason`)."""

    def __init__(self, message: str, *, reason: str, **context: object) -> None:
        super().__init__(message, reason=reason, **context)
        self.reason = reason


class ModelError(EngineError):
    """The agent's model could not be asked (no key, timeout, 429/5xx after retries) or answered unusably."""

    status = "model_error"

    def __init__(self, message: str, *, reason: str, **context: object) -> None:
        super().__init__(message, reason=reason, **context)
        self.reason = reason


class NavigationError(EngineError):
    status = "navigation_error"


class UnknownPage(NavigationError):
    """A page name that is not in the graph; ``suggestions`` holds the closest real names."""

    status = "unknown_page"

    def __init__(self, page: str, suggestions: list[str]) -> None:
        hint = f"; did you mean {', '.join(suggestions)}?" if suggestions else ""
        super().__init__(f"unknown page {page!r}{hint}", page=page, suggestions=suggestions or None)
        self.page = page
        self.suggestions = suggestions


class NoRoute(NavigationError):
    """Both pages exist, but no chain of links leads from `src` to `dst`."""

    status = "no_route"

    def __init__(self, src: str, dst: str) -> None:
        super().__init__(f"no route from {src!r} to {dst!r}", src=src, dst=dst)
        self.src = src
        self.dst = dst


class Stuck(NavigationError):
    """The navigation goes round in circles: a click loop, a repeated hop, or no new page for too long."""

    status = "stuck"

    def __init__(self, reason: str, **context: object) -> None:
        super().__init__(f"stuck: {reason}", **context)


class PopupBlocking(NavigationError):
    status = "popup_blocking"

    def __init__(self, popup: str, count: int) -> None:
        super().__init__(f"popup {popup} is still there after {count} dismissals", popup=popup)


class UnknownScreen(NavigationError):
    status = "unknown_screen"

    def __init__(self) -> None:
        super().__init__("the screen matches no known page or popup and recovery did not help")


class Interrupted(NavigationError):
    """Stopped from outside (cancel or deadline): the work ends at its next checkpoint."""


class Cancelled(Interrupted):
    status = "cancelled"


class DeadlineExceeded(Interrupted):
    status = "timeout"


class ProposalRefused(ConfigError):
    """The proposal's signature fires on frames of known pages (``fired``: their paths); nothing was written."""

    status = "refused"

    def __init__(self, message: str, fired: list) -> None:
        super().__init__(message)
        self.fired = fired


class DraftEditRefused(ConfigError):
    """An edit of an explorer's draft (engine.explore.review) cannot be made as asked; nothing was changed.

    ``reason`` says why, in a word a caller can map: ``unknown`` (no such page, link or frame), ``invalid`` (a bad
    name or request), ``taken`` (the name is in use), ``stale`` (the draft changed since it was read), ``exists``
    (accepting would replace files: ``exists`` lists them, relative to the output folder).
    """

    status = "refused"

    def __init__(self, message: str, reason: str, *, exists: list | None = None, **context: object) -> None:
        super().__init__(message, **context)
        self.reason = reason
        self.exists = list(exists or [])


class AgentUnavailable(PersistentDeviceError):
    """A touch agent cannot run here (package missing, no binary for the ABI, it did not start)."""


class ResponseTooLarge(EngineError):
    """Raised inside the HTTP transport when a response passes the size bound (the client makes it a ModelError)."""

    def __init__(self, size: int, limit: int, *, declared: bool) -> None:
        how = "declares" if declared else "passed"
        super().__init__(f"the response {how} {size} bytes, over the bound of {limit}")
        self.size, self.limit = size, limit


class EpisodeEnded(EngineError):
    """Ends an agent's episode with a stop reason (internal to the agent loop, which reports it)."""

    def __init__(self, reason: str, text: str, **data: object) -> None:
        super().__init__(text)
        self.reason, self.text, self.data = reason, text, data


class PathRefused(EngineError):
    """A name from a request that would leave its root (``..``, absolute, a symlink out) or does not exist."""

    status = "refused"

    def __init__(self, message: str, status: int = 404) -> None:
        super().__init__(message)
        self.http_status = status


class StreamClosed(EngineError):
    """The simulator's fake device ends an ADB stream: the client went away, or it drops it on purpose."""

    def __init__(self, message: str = "the ADB stream is closed") -> None:
        super().__init__(message)


class ScheduleError(ConfigError):
    """The schedule's database cannot be used as it is (corrupt, locked too long, written by a newer version), or
    a device is already driven by another scheduler. Nothing is overwritten: the message says what to do."""

    status = "config_error"


class ScheduleUnreachable(ScheduleError):
    """The schedule's database server cannot be reached (down, network, refused login): a scheduler's workers wait
    with backoff and go on when it answers again; a command reports it and exits 2."""

    status = "config_error"
