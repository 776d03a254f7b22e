"""Regenerate the documentation's pictures (docs/img/) from the real tools; commit what it writes.

    python scripts/make-pictures.py                  # everything (about two minutes)
    python scripts/make-pictures.py graph bench      # only these: graph, draft, studio, bench

- graph:  the page graphs as `python -m engine graph --format dot` draws them, laid out by graphviz `dot` (SVG):
          the small generic test game and Azur Lane.
- draft:  an explorer's draft of the test game (engine.explore on the simulator, a virtual clock, 60 actions) drawn
          the same way, to sit beside the true graph.
- studio: the studio served over an embedded simulator session, the draft above and a schedule database that
          `schedule simulate` filled, photographed panel by panel in headless Chromium (selenium, Debian's
          chromium and chromium-driver): live view, graph (after a goto), draft and schedule (PNG, 256 colours).
- bench:  a bar chart from benchmarks/results/<run>.json (SVG, drawn here: no plotting library): the explorer's
          figures per generated game (pages, links, gotos arriving) from the newest run of
          benchmarks/test_bench_explore_generated.py when there is one, else the absolute millisecond figures of the
          newest run's benchmark that has the most of them.

Everything runs on loopback; nothing is fetched. Needs the test extra (selenium) and scripts/install-system-deps.sh
(chromium, chromium-driver, graphviz).
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from contextlib import contextmanager
from html import escape
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "docs" / "img"
GOOD = ROOT / "tests" / "data" / "graphs" / "good"
sys.path.insert(0, str(ROOT))


def engine(*argv: str, env: dict[str, str] | None = None) -> str:
    """stdout of `python -m engine ARGV` (it must succeed)."""
    done = subprocess.run([sys.executable, "-m", "engine", *argv], cwd=ROOT, capture_output=True, text=True,
                          timeout=600, env={**os.environ, **(env or {})})
    if done.returncode != 0:
        raise SystemExit(f"python -m engine {' '.join(argv)} failed:\n{done.stderr[-2000:]}")
    return done.stdout


def dot_svg(dot_source: str, target: Path) -> None:
    done = subprocess.run(["dot", "-Tsvg"], input=dot_source, capture_output=True, text=True, timeout=60)
    if done.returncode != 0:
        raise SystemExit(f"dot failed: {done.stderr[-500:]}")
    target.write_text(done.stdout)
    print(f"wrote {target.relative_to(ROOT)}")


# ------------------------------------------------------------------------------------------------------ graphs


def graphs() -> None:
    dot_svg(engine("graph", str(GOOD), "--format", "dot"), OUT / "graph-good.svg")
    dot_svg(engine("graph", "--format", "dot"), OUT / "graph-azurlane.svg")


def make_draft(folder: Path, taps: int = 60) -> Path:
    """An explorer's draft of the test game, made on the simulator against a virtual clock (seconds, not minutes)."""
    sys.path.insert(0, str(ROOT / "tests" / "engine" / "studio"))
    from draftkit import explored_draft  # the studio tests' own: the explorer over a simulated phone

    return explored_draft(folder, taps=taps)


def draft(folder: Path | None = None) -> Path:
    folder = folder or Path(tempfile.mkdtemp(prefix="pictures-draft-"))
    if not (folder / "draft.yaml").exists():
        make_draft(folder)
    dot_svg(engine("graph", str(folder), "--format", "dot"), OUT / "draft-good.svg")
    return folder


# ------------------------------------------------------------------------------------------------------ studio


@contextmanager
def serve(app):
    import uvicorn

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off", timeout_graceful_shutdown=2))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        if time.monotonic() > deadline:
            raise SystemExit("uvicorn did not start")
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        app.state.studio.close()
        server.should_exit = True
        thread.join(10)
        sock.close()


def shrink(source: Path, target: Path, width: int = 1000) -> None:
    """`source` at `width` pixels and 256 colours, so a committed picture stays small."""
    from PIL import Image

    with Image.open(source) as shot:
        rgb = shot.convert("RGB")
    if rgb.width > width:
        rgb = rgb.resize((width, round(rgb.height * width / rgb.width)), Image.Resampling.LANCZOS)
    rgb.quantize(colors=256, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE).save(target, optimize=True)
    print(f"wrote {target.relative_to(ROOT)}")


def schedule_database(home: Path) -> Path:
    """A schedule database with runs in it: `schedule simulate` for an hour of simulated time, kept."""
    report = json.loads(engine("schedule", "simulate", "--days", "0.05", "--keep", "--json",
                               env={"ENGINE_HOME": str(home)}))
    return Path(report["kept"]) / "schedule.sqlite3"


def studio(draft_folder: Path | None = None) -> None:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    from engine.faces.studio.app import create_app
    from engine.runtime.session import open_session

    work = Path(tempfile.mkdtemp(prefix="pictures-studio-"))
    draft_folder = draft_folder or draft()
    os.environ["ENGINE_SCHEDULE_DB"] = str(schedule_database(work / "home"))
    os.environ["ENGINE_SERIAL"] = "sim"
    session = open_session(transcript_dir=work / "transcript")
    app = create_app(session, transcript_dir=work / "transcript", captures_dir=work / "captures",
                     draft_dir=draft_folder)
    options = webdriver.ChromeOptions()
    options.binary_location = os.environ.get("STUDIO_CHROMIUM", "/usr/bin/chromium")
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                "--window-size=1600,1300", "--hide-scrollbars", "--force-device-scale-factor=1"):
        options.add_argument(arg)
    driver = webdriver.Chrome(service=Service(os.environ.get("STUDIO_CHROMEDRIVER", "/usr/bin/chromedriver")),
                              options=options)
    wait = WebDriverWait(driver, 30, poll_frequency=0.1)
    try:
        with serve(app) as base:
            driver.get(base + "/")
            wait.until(lambda d: d.execute_script(
                "const i = document.getElementById('frame'); return i.complete && i.naturalWidth > 0"))
            wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "#overlay rect.hit"))
            node = wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, '#graph g.node[data-page="page_reward"]'))[0]
            driver.execute_script("arguments[0].scrollIntoView({block: 'center'})", node)
            node.find_element(By.CSS_SELECTOR, "text").click()
            wait.until(lambda d: "ok" in d.find_element(By.ID, "goto-result").get_attribute("class").split())
            wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "#draft-panel:not([hidden]) img"))
            wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "#schedule-panel table, #schedule-panel tr"))
            time.sleep(1.0)  # the live view's next look, the draft's frames
            for panel, name in (("live-panel", "studio-live"), ("graph-panel", "studio-graph"),
                                ("draft-panel", "studio-draft"), ("schedule-panel", "studio-schedule")):
                element = driver.find_element(By.ID, panel)
                driver.execute_script("arguments[0].scrollIntoView({block: 'start'})", element)
                raw = work / f"{name}.png"
                raw.write_bytes(element.screenshot_as_png)
                shrink(raw, OUT / f"{name}.png")
    finally:
        driver.quit()
        session.close()
        shutil.rmtree(work, ignore_errors=True)


# ------------------------------------------------------------------------------------------------------ bench


EXPLORE_GENERATED = "benchmarks/test_bench_explore_generated.py"
EXPLORE_METRICS = (("page_recall", "pages found", "#3f6fb5"), ("link_recall", "links found", "#7aa35a"),
                   ("goto_arrival", "gotos arriving", "#d08a2e"))


def bench(results: Path = ROOT / "benchmarks" / "results") -> None:
    """docs/img/bench-latest.svg: the explorer's figures per generated game when a run has them (the issue's
    example), else the absolute millisecond figures of the newest run's benchmark that has the most."""
    runs = sorted(results.glob("*.json"), reverse=True) if results.is_dir() else []
    target = OUT / "bench-latest.svg"  # one name the docs can show, whichever benchmark it is
    for path in runs:
        run = json.loads(path.read_text())
        games: dict[str, dict[str, float]] = {}
        for node, values in (run.get("figures") or {}).items():
            if node.split("::")[0] != EXPLORE_GENERATED:
                continue
            for name, figure in values.items():
                for metric, _, _ in EXPLORE_METRICS:
                    if name.endswith("_" + metric):
                        games.setdefault(name[: -len(metric) - 1], {})[metric] = float(figure["value"])
        if games:
            title = "The explorer per generated game: share of the true graph found, of gotos arriving"
            source = f"{EXPLORE_GENERATED}, run {run.get('run')}, commit {run.get('commit')}"
            target.write_text(grouped_chart(title, source, games))
            print(f"wrote {target.relative_to(ROOT)} from {path.relative_to(ROOT)}")
            return
    for path in runs:
        run = json.loads(path.read_text())
        per_file: dict[str, list[tuple[str, float]]] = {}
        for node, values in (run.get("figures") or {}).items():
            for name, figure in values.items():
                if figure.get("kind") == "absolute" and figure.get("unit") == "ms" and figure.get("value"):
                    per_file.setdefault(node.split("::")[0], []).append((name, float(figure["value"])))
        if per_file:
            test_file, bars = max(per_file.items(), key=lambda item: len(item[1]))
            title = f"{test_file}, run {run.get('run')} (commit {run.get('commit')}): absolute figures, ms"
            target.write_text(bar_chart(title, sorted(bars)))
            print(f"wrote {target.relative_to(ROOT)} from {path.relative_to(ROOT)}")
            return
    print("bench: no run in benchmarks/results has absolute millisecond figures; run a benchmark first "
          "(python -m pytest benchmarks/test_bench_capture.py -s) and this again")


def bar_chart(title: str, bars: list[tuple[str, float]], width: int = 900, row: int = 22) -> str:
    """A horizontal bar chart as SVG text: one bar a figure, its value at the end."""
    left, right, top = 330, 90, 40
    top_value = max(value for _, value in bars) or 1.0
    height = top + row * len(bars) + 20
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
             f'font-family="sans-serif" font-size="12">',
             f'<text x="10" y="20" font-size="13" font-weight="bold">{escape(title)}</text>']
    for i, (name, value) in enumerate(bars):
        y = top + i * row
        length = (width - left - right) * value / top_value
        parts += [f'<text x="{left - 8}" y="{y + 14}" text-anchor="end">{escape(name)}</text>',
                  f'<rect x="{left}" y="{y + 3}" width="{length:.1f}" height="{row - 8}" fill="#3f6fb5"/>',
                  f'<text x="{left + length + 6:.1f}" y="{y + 14}">{value:.4g}</text>']
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


def grouped_chart(title: str, source: str, games: dict[str, dict[str, float]], width: int = 900) -> str:
    """One group of bars a game (seed and mode), one bar a metric, each 0..100 %."""
    left, right, top, bar = 170, 70, 66, 12
    group = bar * len(EXPLORE_METRICS) + 10
    height = top + group * len(games) + 20
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
             f'font-family="sans-serif" font-size="12">',
             f'<text x="10" y="20" font-size="13" font-weight="bold">{escape(title)}</text>',
             f'<text x="10" y="36" font-size="11">{escape(source)}</text>']
    for k, (_, label, colour) in enumerate(EXPLORE_METRICS):
        parts += [f'<rect x="{left + 150 * k}" y="46" width="10" height="10" fill="{colour}"/>',
                  f'<text x="{left + 150 * k + 14}" y="55">{label}</text>']
    for i, (game, metrics) in enumerate(sorted(games.items())):
        y = top + i * group
        parts.append(f'<text x="{left - 8}" y="{y + group / 2 + 2:.0f}" text-anchor="end">{escape(game)}</text>')
        for k, (metric, _, colour) in enumerate(EXPLORE_METRICS):
            if metric not in metrics:
                continue
            share = max(0.0, min(1.0, metrics[metric]))
            length = (width - left - right) * share
            parts += [f'<rect x="{left}" y="{y + k * bar}" width="{length:.1f}" height="{bar - 2}" fill="{colour}"/>',
                      f'<text x="{left + length + 6:.1f}" y="{y + k * bar + bar - 3}" font-size="10">'
                      f'{share:.0%}</text>']
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


STEPS = {"graph": graphs, "draft": draft, "studio": studio, "bench": bench}

if __name__ == "__main__":
    OUT.mkdir(parents=True, exist_ok=True)
    wanted = sys.argv[1:] or list(STEPS)
    unknown = [name for name in wanted if name not in STEPS]
    if unknown:
        raise SystemExit(f"unknown step(s) {unknown}; the steps are {', '.join(STEPS)}")
    folder = None
    for name in wanted:
        if name == "draft":
            folder = draft()
        elif name == "studio":
            studio(folder)
        else:
            STEPS[name]()
