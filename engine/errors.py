"""One exception tree for the engine, grouped by how we recover.

    EngineError
    ├── ConfigError            fail fast: a graph, policy or task file is wrong (carries file, line, col)
    │   └── GraphError         one or more problems in a graph folder (carries the list of Problems)
    ├── DeviceError            the device or ADB misbehaved (carries serial)
    │   ├── TransientDeviceError   worth a retry after a reconnect
    │   │   ├── DeviceTimeout          a call did not answer inside its bound
    │   │   ├── ConnectionLost         socket reset or closed mid-call
    │   │   ├── DeviceOffline          the device is listed but offline (often recovers)
    │   │   └── BlackFrame             the screen came back black or one flat colour
    │   └── PersistentDeviceError  retrying will not help; run the health probe and report
    │       ├── AdbServerDown          nothing listens at the ADB server address
    │       ├── DeviceNotFound         the serial is not among the server's devices
    │       └── BadFrame               the frame cannot be used (portrait, wrong shape, undecodable)
    ├── VerificationError      the screen could not be checked (a verifier failed, vision answered garbage)
    └── NavigationError        a goto or run could not finish (unknown page name, no route, stuck)

A miss (a signature that does not hit, a page that is not the expected one) is a result, not an exception.
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


class GraphError(ConfigError):
    """All problems found in a graph folder at once (``problems`` holds engine.loader.Problem records)."""

    def __init__(self, problems: list, message: str | None = None) -> None:
        first = problems[0] if problems else None
        super().__init__(
            message or f"{len(problems)} problem(s) in the graph",
            file=getattr(first, "file", None),
            line=getattr(first, "line", None),
            col=getattr(first, "col", None),
        )
        self.problems = problems

    def __str__(self) -> str:
        return "\n".join(str(p) for p in self.problems) or self.message


class DeviceError(EngineError):
    status = "device_error"
    transient = False

    def __init__(self, message: str, *, serial: str | None = None, **context) -> None:
        super().__init__(message, serial=serial, **context)
        self.serial = serial


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


class NavigationError(EngineError):
    status = "navigation_error"
