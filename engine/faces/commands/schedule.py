"""``schedule``: the graph's tasks around the clock (engine.runtime.scheduler), and its controls.

    python -m engine schedule [--db PATH|URL | --db-file FILE] [run] [--device SERIAL ...] [--devices FILE]
    python -m engine schedule status [--json]
    python -m engine schedule pause [--device SERIAL | --host HOST] | resume [--device SERIAL | --host HOST]
    python -m engine schedule run-now TASK [--device SERIAL | --host HOST]
    python -m engine schedule [--db URL | --db-file FILE] simulate --days N --seed S [--scenario FILE] [--kills K]
                                                             [--devices D] [--hosts H] --json

The database is a SQLite file (the default, one host) or a PostgreSQL URL shared by a fleet of hosts
(engine.schedule.store.database_url). The controls never create a database: they act on the one that is there.

Progress goes to stderr; `status --json` and `simulate --json` print JSON on stdout.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

from engine.core.errors import ConfigError

log = logging.getLogger(__name__)


def _url(args: argparse.Namespace) -> str:
    from engine.schedule.store import database_url

    return database_url(getattr(args, "db", None), getattr(args, "db_file", None))


def _store(args: argparse.Namespace, create: bool = False) -> Any:
    from engine.schedule.store import Store

    return Store(_url(args), create=create)


def _devices(args: argparse.Namespace) -> tuple[list[str | None], dict[str, list[str]]]:
    """The serials from --device (repeated) and --devices FILE (engine.config.devicefile: one serial a line, or a
    .yaml naming each device's restart commands), and the restart commands by serial; [None] when none is named
    (then --serial picks)."""
    from engine.config.devicefile import load_devices

    serials: list[str | None] = list(args.device or [])
    restart: dict[str, list[str]] = {}
    if args.devices:
        for entry in load_devices(args.devices):
            serials.append(entry.serial)
            restart[entry.serial] = list(entry.restart)
    if len(set(serials)) != len(serials):
        raise ConfigError(f"a device is named twice: {', '.join(sorted({s for s in serials if serials.count(s) > 1}))}")
    return serials or [None], restart


def _run(args: argparse.Namespace) -> int:
    from engine.config.schedule import load_schedule
    from engine.faces.cli import check_session_arguments
    from engine.runtime.schedsim import virtual_time_from_env
    from engine.runtime.scheduler import RealTime, Scheduler, Worker
    from engine.runtime.session import open_session
    from engine.schedule.notify import Notifier, load_notify

    serials, restart = _devices(args)
    if serials != [None]:
        args.serial = serials[0]  # the session options are checked as for one of the devices
    check_session_arguments(args)  # with no device named: --serial (auto by default) picks one
    if serials == [None]:
        serials = [args.serial]
    progress = logging.getLogger("engine.runtime.scheduler")
    if progress.getEffectiveLevel() > logging.INFO:
        progress.setLevel(logging.INFO)  # each run and its outcome is the progress on stderr
    store = _store(args, create=True)
    from engine.core.paths import agent_home

    notify_file = args.notify or os.environ.get("ENGINE_NOTIFY") or str(
        (store.path.parent if store.path is not None else agent_home()) / "notify.yaml")
    notifier = Notifier(load_notify(notify_file))
    clock = virtual_time_from_env() or RealTime()  # virtual only under `schedule simulate`
    timing = {"clock": clock.now, "sleep": clock.sleep} if not isinstance(clock, RealTime) else {}
    workers = []
    for serial in serials:
        def opener(serial: str | None = serial) -> Any:
            return open_session(serial, graph_dir=args.graph, server=args.server, assets=args.assets,
                                scenario=args.scenario, seed=args.seed, transcript_dir=args.transcript,
                                policies_file=args.policies, adb_host=args.adb_host, adb_port=args.adb_port,
                                control=args.control, **timing)

        session = opener()  # checks the graph, tasks and schedule before anything runs
        schedule = load_schedule(args.graph, session.graph, set(session.tasks.names() if session.tasks else ()))
        if schedule is None or not schedule.entries:
            session.close()
            raise ConfigError("the graph has no schedule.yaml with tasks: nothing to schedule",
                              file=str(Path(args.graph or ".") / "schedule.yaml") if args.graph else None)
        worker = Worker(session.device.serial, opener, store, schedule, time=clock, notifier=notifier,
                        session=session, restart_emulator=restart.get(serial or "", []))
        workers.append(worker)
    scheduler = Scheduler(workers, notifier)

    def stop(signum: int, frame: Any) -> None:
        print(f"schedule: stopping ({signal.Signals(signum).name})", file=sys.stderr)
        scheduler.stop.set()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    print(f"schedule: {len(workers)} device(s) ({', '.join(w.device for w in workers)}), database {store.where}",
          file=sys.stderr)
    return scheduler.run()


def _status(args: argparse.Namespace) -> int:
    from engine.schedule.store import database_exists, open_backend

    url = _url(args)
    if not database_exists(url) and not Path(url).is_dir():  # (a folder: Store says what is wrong)
        status = {"database": open_backend(url).where, "devices": [], "note": "no scheduler has run here yet"}
    else:
        status = _store(args).status(time.time())
    if args.json:
        print(json.dumps(status, default=str))
        return 0
    print(f"database: {status['database']}" + (f" ({status['note']})" if status.get("note") else ""))
    host = object()
    for dev in sorted(status["devices"], key=lambda d: (d.get("host") or "", d["device"])):
        if dev.get("host") != host:
            host = dev.get("host")
            print(f"host {host or '(none yet)'}:")
        flags = " (paused)" if dev["paused"] else ""
        beat = f", last heartbeat {dev['lease_age_s']:.0f} s ago" if dev.get("lease_age_s") is not None else ""
        print(f"{dev['device']}{flags}: {dev['state'] or 'no scheduler'}"
              + (f", running {dev['running']}" if dev["running"] else "") + beat)
        for task in dev["tasks"]:
            when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(task["next_run"]))
            tail = f"  [{task['reason']}]" if task["reason"] else ""
            print(f"  {task['task']:<20} next {when} ({task['due_in_s']:+.0f} s)  last {task['last_status'] or '-'}"
                  f"  failures {task['failures']}{tail}")
        for failure in dev["recent_failures"][:5]:
            print(f"  failed: {failure['task']} {failure['status']}: {str(failure['text'])[:100]}")
    return 0


def _known_device(store: Any, device: str | None, host: str | None = None) -> None:
    """A device or host named on the command line must be one the schedule knows (ConfigError naming those it
    knows)."""
    devices = store.status(time.time())["devices"]
    if device is not None and device not in (known := [d["device"] for d in devices]):
        raise ConfigError(f"unknown device {device[:80]!r}; the schedule knows "
                          f"{', '.join(known) if known else 'no device yet (start `schedule` first)'}")
    if host is not None and host not in (hosts := sorted({d["host"] for d in devices if d.get("host")})):
        raise ConfigError(f"unknown host {host[:80]!r}; the schedule knows "
                          f"{', '.join(hosts) if hosts else 'no host yet (start `schedule` first)'}")
    if device is not None and host is not None:
        raise ConfigError("name a device or a host, not both")


def _pause(args: argparse.Namespace, paused: bool) -> int:
    store = _store(args)
    _known_device(store, args.device_one, args.host)
    changed = store.set_paused(args.device_one, paused, host=args.host)
    print(f"{'paused' if paused else 'resumed'}: {', '.join(changed) or 'no device known yet'}")
    return 0


def _run_now(args: argparse.Namespace) -> int:
    store = _store(args)
    _known_device(store, args.device_one, args.host)
    known = {row["task"] for dev in store.status(time.time())["devices"] for row in dev["tasks"]}
    if args.task not in known:
        raise ConfigError(f"unknown task {args.task[:80]!r} in the schedule; scheduled: "
                          f"{', '.join(sorted(known)) if known else 'none yet (start `schedule` first)'}")
    asked = store.request_run(args.device_one, args.task, time.time(), host=args.host)
    print(f"{args.task} runs on {', '.join(asked) or 'no device known yet'} at the next look at the database "
          "(within 30 s)")
    return 0


def _simulate(args: argparse.Namespace) -> int:
    from engine.runtime.schedsim import simulate
    from engine.schedule.store import read_url_file

    # only a database named here: the simulation never writes into the schedule ENGINE_DB_URL names
    db = args.db or (read_url_file(args.db_file) if args.db_file else None)
    report = simulate(days=args.days, seed=args.seed, scenario=args.scenario, kills=args.kills,
                      devices=args.devices_n, hosts=args.hosts, db=db, graph=args.graph, server=args.server,
                      keep=args.keep)
    if args.json:
        print(json.dumps(report))
    else:
        for key, value in report.items():
            print(f"{key}: {value}")
    return 0 if report["ok"] else 1


def register(sub: argparse._SubParsersAction) -> None:
    from engine.faces.cli import add_session_arguments

    parser = sub.add_parser("schedule", help="run the graph's scheduled tasks around the clock (see subcommands)")
    parser.add_argument("--db", metavar="PATH|URL",
                        help="the schedule's database: a SQLite file or sqlite:///PATH, or postgresql://USER@HOST/DB "
                             "for a fleet (default: $ENGINE_DB_URL, $ENGINE_DB_URL_FILE, $ENGINE_SCHEDULE_DB, else "
                             "$ENGINE_HOME/schedule.sqlite3)")
    parser.add_argument("--db-file", metavar="FILE", help="a file (mode 600) whose first line is the database URL: "
                                                          "keeps its password off the command line")
    actions = parser.add_subparsers(dest="action", metavar="ACTION")
    db_help = "the schedule's database (as `schedule --db`)"

    def run_options(p: argparse.ArgumentParser) -> None:
        p.add_argument("--device", action="append", metavar="SERIAL", help="a device to drive (repeat for more)")
        p.add_argument("--devices", metavar="FILE", help="a file of device serials, one a line, or a .yaml naming "
                                                         "each device's emulator restart commands")
        p.add_argument("--notify", metavar="FILE", help="Apprise URLs per channel (default: $ENGINE_NOTIFY, else "
                                                        "notify.yaml beside the database)")
        add_session_arguments(p, results=False)
        p.set_defaults(handler=_run)

    run_options(parser)
    run_options(actions.add_parser("run", help="run in the foreground until stopped (the default)"))
    status = actions.add_parser("status", help="next runs, what runs, recent failures, per device")
    status.add_argument("--db", default=argparse.SUPPRESS, help=db_help)
    status.add_argument("--json", action="store_true", help="print the status as JSON")
    status.set_defaults(handler=_status)
    for name, paused in (("pause", True), ("resume", False)):
        p = actions.add_parser(name, help=f"{name} one device (--device), a host's devices (--host) or all")
        p.add_argument("--device", dest="device_one", metavar="SERIAL", help="this device only")
        p.add_argument("--host", metavar="HOST", help="the devices last driven from this host (its ENGINE_HOST_ID)")
        p.add_argument("--db", default=argparse.SUPPRESS, help=db_help)
        p.set_defaults(handler=lambda a, paused=paused: _pause(a, paused))
    now = actions.add_parser("run-now", help="run a scheduled task at once")
    now.add_argument("task", help="the scheduled task to run, by name")
    now.add_argument("--device", dest="device_one", metavar="SERIAL", help="on this device only")
    now.add_argument("--host", metavar="HOST", help="on the devices last driven from this host")
    now.add_argument("--db", default=argparse.SUPPRESS, help=db_help)
    now.set_defaults(handler=_run_now)
    sim = actions.add_parser("simulate", help="the real scheduler against the simulator in simulated time")
    sim.add_argument("--days", type=float, default=2.0, help="simulated days to run (default 2)")
    sim.add_argument("--seed", type=int, default=0, help="seed of the kills, the faults and the game (default 0)")
    sim.add_argument("--scenario", help="simulator fault scenario YAML")
    sim.add_argument("--kills", type=int, default=0, help="kill the scheduler process this many times")
    sim.add_argument("--devices", dest="devices_n", type=int, default=1, help="simulated devices")
    sim.add_argument("--hosts", type=int, default=1, help="scheduler processes, each a host of its own with its "
                                                          "share of the devices, on one database")
    sim.add_argument("--db", default=argparse.SUPPRESS, metavar="PATH|URL",
                     help="the database to simulate on (a new, empty one; default: a SQLite file of its own)")
    sim.add_argument("--graph", help="page graph folder (default: the shipped graph)")
    sim.add_argument("--server", help="game server")
    sim.add_argument("--keep", action="store_true", help="keep the work folder (database, clock) and name it")
    sim.add_argument("--json", action="store_true", help="print the figures as JSON")
    sim.set_defaults(handler=_simulate)
