"""The simulator in a process of its own, as a phone is a machine of its own.

In-process, the simulator's server threads compete with the engine for Python's GIL, which more than tripled
the engine's measured CPU time per observation (3 ms alone, 11 ms beside one busy thread). Benchmarks that
report the engine's own CPU therefore run the simulator here. The clock can be a shared virtual clock
(`SharedClock`), so loading screens and retry waits still cost no wall time.
"""

from __future__ import annotations

import multiprocessing
import time
from dataclasses import dataclass
from typing import Any


class SharedClock:
    """A virtual monotonic clock in shared memory: moves only when someone sleeps, in any process."""

    def __init__(self, start: float = 1000.0, context: Any = None) -> None:
        ctx = context or multiprocessing.get_context("spawn")
        self._value = ctx.Value("d", start)

    def now(self) -> float:
        return self._value.value

    def sleep(self, seconds: float) -> None:
        with self._value.get_lock():
            self._value.value += max(0.0, seconds)

    def __getstate__(self) -> dict:
        return {"_value": self._value}


def _serve(conn: Any, graph_dir: Any, server: str | None, scenario: Any, seed: int, clock: SharedClock | None) -> None:
    from engine.config.loader import load_graph
    from engine.sim import SyntheticAssets, start_embedded, style_beside

    graph = load_graph(graph_dir).resolve(server)
    style = style_beside(graph_dir)
    sim = start_embedded(graph, assets=None if style is not None else SyntheticAssets(graph), scenario=scenario,
                         seed=seed, style=style,
                         clock=clock.now if clock is not None else time.monotonic)
    conn.send((sim.host, sim.port, sim.serial))
    try:
        while conn.poll(3600):
            command = conn.recv()
            if command == "truth":
                conn.send(sim.game.truth())
            elif command == "stop":
                break
    except (EOFError, OSError):
        pass
    finally:
        sim.stop()


@dataclass
class SimProcess:
    """A simulator served from a child process; `truth()` asks it what really shows."""

    host: str
    port: int
    serial: str
    _process: Any
    _conn: Any

    @classmethod
    def start(cls, graph_dir: Any = None, *, server: str | None = None, scenario: Any = None, seed: int = 0,
              clock: SharedClock | None = None, timeout: float = 60.0) -> SimProcess:
        ctx = multiprocessing.get_context("spawn")
        parent, child = ctx.Pipe()
        process = ctx.Process(target=_serve, args=(child, graph_dir, server, scenario, seed, clock), daemon=True)
        process.start()
        if not parent.poll(timeout):
            process.kill()
            raise TimeoutError(f"the simulator process did not start within {timeout:.0f} s")
        host, port, serial = parent.recv()
        return cls(host, port, serial, process, parent)

    def truth(self, timeout: float = 10.0) -> dict:
        self._conn.send("truth")
        if not self._conn.poll(timeout):
            raise TimeoutError("the simulator process did not answer")
        return self._conn.recv()

    def stop(self) -> None:
        try:
            self._conn.send("stop")
        except (OSError, EOFError):
            pass
        self._process.join(5)
        if self._process.is_alive():
            self._process.kill()
            self._process.join(5)
        self._conn.close()

    def __enter__(self) -> SimProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
