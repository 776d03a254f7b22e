"""The shipped Azur Lane graph (pages/azurlane) against ALAS's own facts (../shared/alas/graph.json).

Every page, check button and link of ALAS's page.py must be in the YAML with the same areas, colours, assets and
click areas, for both servers graph.json knows (en, cn); popups must be dismissable; every asset named must exist
in ALAS's asset tree for every declared server (jp and tw too: tests/engine/test_servers.py checks their values).
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
import yaml

from engine.config.schema import Graph, GraphFile, TapAction, TemplateSignature

ROOT = Path(__file__).resolve().parents[2]
GRAPH_DIR = ROOT / "pages" / "azurlane"
SERVERS = ("en", "cn")
"""The servers graph.json has facts for."""
ALL_SERVERS = ("en", "cn", "jp", "tw")
WIDTH, HEIGHT = 1280, 720


def _merge(folder: Path) -> Graph:
    """Stand-in for engine.config.loader.load_graph while it does not exist: merge the GraphFiles of a folder."""
    fields: dict = {}
    lists: dict[str, list] = {"buttons": [], "pages": [], "popups": []}
    for path in sorted(folder.glob("*.yaml")):
        part = GraphFile.model_validate(yaml.safe_load(path.read_text()))
        for key, value in part:
            if key in lists:
                lists[key].extend(value)
            elif value is not None:
                assert key not in fields, f"{key} set twice ({path.name})"
                fields[key] = value
    return Graph(**fields, **lists)


@pytest.fixture(scope="module")
def graph() -> Graph:
    try:
        from engine.config.loader import load_graph
    except ImportError:
        return _merge(GRAPH_DIR)
    return load_graph(GRAPH_DIR)


@pytest.fixture(scope="module", params=SERVERS)
def server_graph(request, graph: Graph) -> Graph:
    return graph.for_server(request.param)


def _alas_pages(alas: dict) -> dict[str, dict]:
    return {page["name"]: page for page in alas["pages"]}


def _check_signature(graph: Graph, page_name: str) -> TemplateSignature:
    signatures = graph.page(page_name).signatures
    assert len(signatures) == 1 and isinstance(signatures[0], TemplateSignature), page_name
    return signatures[0]


def _asset_name(alas_file: str) -> str:
    """`./assets/<server>/<module>/NAME.png` -> `module/NAME`."""
    module, filename = alas_file.split("/")[-2:]
    return f"{module}/{filename.split('.')[0]}"


def test_graph_wide_settings(graph: Graph) -> None:
    assert graph.game == "azurlane"
    assert tuple(graph.resolution) == (WIDTH, HEIGHT)
    assert tuple(graph.servers) == ALL_SERVERS
    assert graph.fallback_server == "cn"
    assert graph.unknown_page == "page_unknown"
    assert graph.settings().template_threshold == 0.85
    # The start page is the login screen: one extra page that ALAS handles as a popup (LOGIN_CHECK).
    login = graph.page(graph.start_page)
    assert any(link.to == "page_main" for link in login.links)


def test_every_alas_page_is_present(graph: Graph, alas_graph_json: dict) -> None:
    alas_names = set(_alas_pages(alas_graph_json))
    assert len(alas_names) == 53
    assert alas_names <= set(graph.page_names)
    assert set(graph.page_names) - alas_names == {graph.start_page}
    assert len(graph.page_names) == len(set(graph.page_names))


def test_page_unknown_has_no_signature(graph: Graph) -> None:
    assert graph.page("page_unknown").signatures == []


def test_check_buttons_match_alas(server_graph: Graph, alas_graph_json: dict) -> None:
    server = server_graph.server
    for name, alas_page in _alas_pages(alas_graph_json).items():
        if alas_page["check_button"] is None:
            continue
        signature = _check_signature(server_graph, name)
        assert signature.button == alas_page["check_button"], name
        offset = signature.offset or server_graph.settings(server_graph.page(name)).template_offset
        assert tuple(offset) == tuple(alas_page["alas_detect"]["offset"]), name
        facts = alas_page["servers"][server]
        button = server_graph.button(signature.button)
        assert tuple(button.area) == tuple(facts["area"]), (name, server)
        assert tuple(button.color) == tuple(facts["color"]), (name, server)
        assert tuple(button.click_area) == tuple(facts["button"]), (name, server)
        assert button.asset == _asset_name(facts["file"]), (name, server)


def test_links_match_alas(server_graph: Graph, alas_graph_json: dict) -> None:
    server = server_graph.server
    for name, alas_page in _alas_pages(alas_graph_json).items():
        taps = [link for link in server_graph.page(name).links if isinstance(link.action, TapAction)]
        ours = [(link.to, link.action.button) for link in taps]
        theirs = [(link["destination"], link["button"]) for link in alas_page["links"]]
        assert Counter(ours) == Counter(theirs), name
        for link in alas_page["links"]:
            facts = link[server]
            button = server_graph.button(link["button"])
            assert tuple(button.click_area) == tuple(facts["button"]) or _wider_tap_target(button, facts), (
                name, link["button"], server)
            assert tuple(button.area) == tuple(facts["area"]), (name, link["button"], server)
            assert button.asset == _asset_name(facts["file"]), (name, link["button"], server)


def test_exactly_the_127_tap_links(graph: Graph, alas_graph_json: dict) -> None:
    ours = Counter(
        (page.name, link.to, link.action.button)
        for page in graph.pages
        if page.name != graph.start_page
        for link in page.links
        if isinstance(link.action, TapAction)
    )
    theirs = Counter(
        (page["name"], link["destination"], link["button"]) for page in alas_graph_json["pages"] for link in page["links"]
    )
    assert sum(theirs.values()) == 127
    assert ours == theirs


def test_page_signatures_differ(server_graph: Graph) -> None:
    seen: dict[str, str] = {}
    for page in server_graph.pages:
        if not page.signatures:
            continue
        key = repr([signature.model_dump() for signature in page.signatures])
        assert key not in seen, f"{page.name} and {seen[key]} have the same signatures"
        seen[key] = page.name
    assert _check_signature(server_graph, "page_main") != _check_signature(server_graph, "page_main_white")


def test_references_resolve(graph: Graph) -> None:
    buttons = {button.name for button in graph.buttons}
    pages = set(graph.page_names)
    assert len(buttons) == len(graph.buttons), "a button is declared twice"

    def refs(signatures):
        for signature in signatures:
            if signature.type == "any_of":
                yield from refs(signature.of)
            elif getattr(signature, "button", None) is not None:
                yield signature.button

    for page in graph.pages:
        assert set(refs(page.signatures)) <= buttons, page.name
        for link in page.links:
            assert link.to in pages, (page.name, link.to)
            if isinstance(link.action, TapAction) and link.action.button is not None:
                assert link.action.button in buttons, (page.name, link.action.button)
    for popup in graph.popups:
        assert set(refs(popup.signatures)) <= buttons, popup.name
        assert set(popup.pages or []) <= pages, popup.name
        for action in popup.dismiss:
            if isinstance(action, TapAction) and action.button is not None:
                assert action.button in buttons, (popup.name, action.button)


def test_areas_lie_inside_the_frame(server_graph: Graph) -> None:
    for button in server_graph.buttons:
        for area in (button.area, button.click_area):
            x1, y1, x2, y2 = area
            assert 0 <= x1 < x2 <= WIDTH and 0 <= y1 < y2 <= HEIGHT, (button.name, area)


def test_popups(graph: Graph, alas_graph_json: dict) -> None:
    alas_popups = {popup["name"]: popup for popup in alas_graph_json["popups"]}
    assert len(graph.popups) >= 30
    assert len({popup.name for popup in graph.popups}) == len(graph.popups)
    for popup in graph.popups:
        assert popup.dismiss, popup.name
        assert popup.name in alas_popups or popup.name == "GUILD_POPUP_CANCEL", popup.name
    # Popups that the real labelled screenshots show must be known.
    for name in ("GET_ITEMS_1", "GET_ITEMS_1_RYZA", "GET_MISSION", "GET_SHIP", "BATTLE_STATUS_S", "POPUP_CONFIRM",
                 "MEOWFFICER_BUY", "WITHDRAW"):
        graph.popup(name)


def test_colour_only_popups_have_a_template_too(graph: Graph, alas_graph_json: dict) -> None:
    colour_only = {popup["name"] for popup in alas_graph_json["popups"] if popup["alas_detect"] == "color"}
    for popup in graph.popups:
        if popup.name in colour_only:
            assert any(isinstance(signature, TemplateSignature) for signature in popup.signatures), popup.name


def test_popup_buttons_match_alas(server_graph: Graph, alas_graph_json: dict) -> None:
    server = server_graph.server
    for alas_popup in alas_graph_json["popups"]:
        try:
            button = server_graph.button(alas_popup["name"])
        except KeyError:
            continue
        facts = alas_popup["servers"][server]
        assert tuple(button.area) == tuple(facts["area"]), (button.name, server)
        assert tuple(button.click_area) == tuple(facts["button"]), (button.name, server)
        assert button.asset == _asset_name(facts["file"]), (button.name, server)


@pytest.mark.parametrize("server", ALL_SERVERS)
def test_assets_exist_or_fall_back(graph: Graph, server: str, shared_dir: Path) -> None:
    assets = shared_dir / "alas" / "assets"
    server_graph = graph.for_server(server)
    missing = []
    for button in server_graph.buttons:
        if button.asset is None:
            continue
        candidates = [assets / s / f"{button.asset}.{ext}" for s in (server, graph.fallback_server)
                      for ext in ("png", "gif")]
        if not any(path.exists() for path in candidates):
            missing.append(button.asset)
    assert missing == []


def test_every_file_has_the_schema_modeline() -> None:
    for path in GRAPH_DIR.glob("*.yaml"):
        schema = next((kind for kind in ("tasks", "goals", "sim_state", "schedule") if path.name.startswith(kind)), "graph")
        assert path.read_text().startswith(f"# yaml-language-server: $schema=../{schema}.schema.json"), path.name


# ------------------------------------------------------------------------- the real labelled screenshots


def _labelled_frames() -> list[dict]:
    import json

    labels = ROOT.parent / "shared" / "screens" / "labels.json"
    return json.loads(labels.read_text())["frames"] if labels.exists() else []


@pytest.fixture(scope="module")
def real_observers(graph: Graph, shared_dir: Path) -> dict:
    from engine.config.assetpacks import AlasAssetPack
    from engine.observe.observer import Observer

    return {
        server: Observer(graph.for_server(server),
                         AlasAssetPack(shared_dir / "alas" / "assets", server, fallback=graph.fallback_server), ocr=True)
        for server in SERVERS
    }


@pytest.mark.parametrize("frame", _labelled_frames(), ids=lambda frame: Path(frame["file"]).name)
def test_real_screenshots_are_named_right(frame: dict, real_observers: dict, shared_dir: Path) -> None:
    """labels.json's rule: name the label (or an also_ok), and never anything else; null means name nothing."""
    import cv2

    image = cv2.imread(str(shared_dir / "screens" / frame["file"]))
    observation = real_observers[frame["server"]].observe(image)
    named = set(observation.popups) | ({observation.page} if observation.page else set())
    allowed = {frame["label"], *frame["also_ok"]} - {None}
    assert named <= allowed, f"{frame['what']}: named {sorted(named)}"
    if frame["label"] is not None:
        assert named & allowed, f"{frame['what']}: named nothing"


WIDER_TAP_TARGETS = {"ACADEMY_GOTO_MUNITIONS"}
"""Buttons whose click area is the game's whole tap target, larger than ALAS's (ALAS taps inside its small
template area): the area, colour and asset stay ALAS's, and ALAS's click area is inside ours."""


def _wider_tap_target(button, facts: dict) -> bool:
    x1, y1, x2, y2 = button.click_area
    ax1, ay1, ax2, ay2 = facts["button"]
    return button.name in WIDER_TAP_TARGETS and x1 <= ax1 and y1 <= ay1 and x2 >= ax2 and y2 >= ay2


def test_wider_tap_targets_stay_inside_the_screen(graph: Graph) -> None:
    for server in ALL_SERVERS:
        for name in WIDER_TAP_TARGETS:
            x1, y1, x2, y2 = graph.for_server(server).button(name).click_area
            assert 0 <= x1 < x2 <= WIDTH and 0 <= y1 < y2 <= HEIGHT, (name, server)


def test_every_blocking_popup_drawn_over_a_page_is_named(graph: Graph, shared_dir: Path) -> None:
    """The simulator draws each blocking popup with ALAS's own assets over pages it may cover (a spread of up to
    four): the observer names the popup, never a covered page under it. Two ways this broke: a 27 px icon searched
    at quarter scale (STORY_SKIP_3, never found), and a weak popup (colour and a small template: BATTLE_STATUS_S)
    hidden under a page seen on strong evidence, so every goto from that page stopped at popup_blocking."""
    from engine.config.assetpacks import AlasAssetPack
    from engine.observe.observer import Observer
    from engine.sim.game import SimGame

    en = graph.for_server("en")
    assets = AlasAssetPack(shared_dir / "alas" / "assets", "en", fallback=en.fallback_server)
    observer, game = Observer(en, assets), SimGame(en, assets=assets)
    pages = [p.name for p in en.pages if p.signatures]
    missed = []
    for popup in (p for p in en.popups if p.blocking):
        allowed = [p for p in pages if popup.pages is None or p in popup.pages]
        for page in allowed[:: max(1, len(allowed) // 4)][:4]:
            game.goto(page)
            game.popups = []
            game.show_popup(popup.name)
            seen = observer.observe(game.frame())
            if popup.name not in seen.popups:
                missed.append((popup.name, page, seen.page, seen.popups, seen.cover and seen.cover.reason))
    assert not missed, missed
