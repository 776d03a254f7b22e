"""The explore scorer on drafts made from the ground truth itself: a perfect one scores 100 %, and each known flaw
(two pages merged, a page split, a tap outside the button, a reversed swipe, a popup missed, a wrong graph) costs
exactly what the scorer's rules say."""

from __future__ import annotations

import copy
import shutil
from pathlib import Path

import cv2
import numpy as np
import pytest
import yaml

from benchmarks.explore_gotos import run_gotos, strongly_connected
from benchmarks.explore_score import assign, load_truth, score_draft, tap_area
from engine.config.assetpacks import new_index, save_index, write_template
from engine.config.schema import KeyAction, SwipeAction, TapAction
from engine.sim import Scenario, SimGame

ROOT = Path(__file__).resolve().parents[2]
GOOD = ROOT / "tests" / "data" / "graphs" / "good"
CHAOS = ROOT / "tests" / "data" / "scenarios" / "chaos.yaml"


@pytest.fixture(scope="module")
def truth():
    return load_truth("good", GOOD, "en")


def contract_action(truth, action) -> dict:
    """A true link's action as the explorer writes it (/work/draft-spec.md): a tap at the centre of its area."""
    if isinstance(action, TapAction):
        x1, y1, x2, y2 = tap_area(truth, action)
        return {"type": "tap", "point": [(x1 + x2) // 2, (y1 + y2) // 2], "area": [x1, y1, x2, y2]}
    if isinstance(action, SwipeAction):
        return {"type": "swipe", "start": list(action.start), "end": list(action.end)}
    assert isinstance(action, KeyAction)
    return {"type": "key", "key": action.key}


def save(frame: np.ndarray, folder: Path, rel: str) -> str:
    (folder / rel).parent.mkdir(parents=True, exist_ok=True)
    assert cv2.imwrite(str(folder / rel), frame)
    return rel


@pytest.fixture(scope="module")
def perfect(truth, tmp_path_factory) -> tuple[Path, dict]:
    """The draft an ideal explorer would write: two frames per reachable page rendered by the simulator, every
    honoured link, both popups over a page they show on; its graph is the truth's own, its pack the truth's."""
    folder = tmp_path_factory.mktemp("perfect")
    game = SimGame(truth.graph, assets=truth.assets)
    pages = []
    for name in sorted(truth.reachable):
        game.goto(name)
        members = [save(game.frame(), folder, f"evidence/{name}/{i:04d}.png") for i in (1, 2)]
        pages.append({"name": name, "title": None, "members": members, "signatures": [], "visits": 2,
                      "loading": False})
    links = [{"from": src, "to": link.to, "action": contract_action(truth, link.action), "seen": 2, "tried": 2}
             for src, link in truth.links()]
    popups = []
    for popup, over in (("popup_announcement", "page_main"), ("popup_reward", "page_mail")):
        game.goto(over)
        game.show_popup(popup)
        dismiss = contract_action(truth, truth.graph.popup(popup).dismiss[0])
        popups.append({"name": popup, "over": [over], "box": [0, 0, 1, 1], "signatures": [], "dismiss": dismiss,
                       "members": [save(game.frame(), folder, f"evidence/{popup}/0001.png")]})
    draft = {"format": "engine-draft/1", "game": "draft_good", "resolution": [1280, 720], "server": "en",
             "made": {"serial": "sim-0", "minutes": 2.5, "taps": 50, "started": None, "finished": None,
                      "from_graph": None},
             "pages": pages, "links": links, "popups": popups, "loading": [], "review": []}
    for path in GOOD.glob("*.yaml"):
        shutil.copy(path, folder / path.name)
    index = new_index("en")
    for name in truth.assets.names():
        write_template(folder / "assets", truth.assets.get(name), index)
    save_index(folder / "assets", index)
    return folder, draft


def variant(perfect, tmp_path, change) -> Path:
    """A copy of the perfect draft whose draft.yaml `change` edited (frames and graph shared by symlink)."""
    source, draft = perfect
    draft = copy.deepcopy(draft)
    change(draft)
    tmp_path.mkdir(parents=True, exist_ok=True)
    for entry in source.iterdir():
        (tmp_path / entry.name).symlink_to(entry)
    (tmp_path / "draft.yaml").write_text(yaml.safe_dump(draft, sort_keys=False))
    return tmp_path


def test_assign_is_the_best_one_to_one_matching_not_the_greedy_one():
    assert assign([[3, 2], [2, 0]]) == [(0, 1), (1, 0)]  # greedy takes the 3 and ends with 3, not 4
    assert assign([[0, 5, 1]]) == [(0, 1)]
    assert assign([[1], [4], [2]]) == [(1, 0)]
    assert assign([[0, 0], [0, 0]]) == []


def test_the_truth_counts_what_the_simulator_can_show(truth):
    assert truth.reachable == {"page_login", "page_main", "page_shop", "page_mail", "page_settings"}
    assert len(truth.links()) == 9
    assert truth.possible_popups() == {"popup_reward"}  # quiet: only the mail page's collect shows one
    assert truth.possible_popups(Scenario.from_file(CHAOS)) == {"popup_reward", "popup_announcement"}


def test_a_perfect_draft_scores_everything(perfect, tmp_path, truth):
    score = score_draft(variant(perfect, tmp_path, lambda d: None), truth)
    assert (score.pages["recall"], score.pages["precision"], score.pages["f1"]) == (1.0, 1.0, 1.0)
    assert (score.links["recall"], score.links["precision"]) == (1.0, 1.0)
    assert (score.popups["recall"], score.popups["precision"], score.popups["dismiss_right"]) == (1.0, 1.0, 2)
    assert score.cost == {"taps": 50, "minutes": 2.5, "taps_per_page": 10.0, "minutes_per_page": 0.5}
    assert score.page_of == {p: p for p in truth.reachable}


def rename(draft, old: str, new: str) -> None:
    for link in draft["links"]:
        link["from"] = new if link["from"] == old else link["from"]
        link["to"] = new if link["to"] == old else link["to"]


def test_two_pages_merged_lose_one_page_of_recall_and_the_links_only_the_lost_page_had(perfect, tmp_path, truth):
    def merge(draft):
        pages = {p["name"]: p for p in draft["pages"]}
        shop, mail = pages.pop("page_shop"), pages.pop("page_mail")
        # Two shop frames, one mail frame: the shop holds the majority, so the merged page is the shop.
        merged = dict(shop, name="page_shop_mail", members=shop["members"] + mail["members"][:1])
        draft["pages"] = [*pages.values(), merged]
        rename(draft, "page_shop", "page_shop_mail")
        rename(draft, "page_mail", "page_shop_mail")

    score = score_draft(variant(perfect, tmp_path, merge), truth)
    assert (score.pages["matched"], score.pages["recall"], score.pages["precision"]) == (4, 0.8, 1.0)
    assert score.pages["f1"] == pytest.approx(2 * 0.8 / 1.8)
    assert score.pages["missed"] == ["page_mail"]
    # main -> mail now ends on the shop, through a tap the shop's link does not take: wrong. mail's back arrow is
    # where the shop's is: right, but it finds no new true link. So 8 of 9 right and 7 of 9 found.
    assert (score.links["right"], score.links["found"]) == (8, 7)
    assert score.links["precision"] == pytest.approx(8 / 9) and score.links["recall"] == pytest.approx(7 / 9)


def test_a_page_split_in_two_loses_one_page_of_precision(perfect, tmp_path, truth):
    def split(draft):
        shop = next(p for p in draft["pages"] if p["name"] == "page_shop")
        shop["members"], rest = shop["members"][:1], shop["members"][1:]
        draft["pages"].append(dict(shop, name="page_shop_2", members=rest))
        back = next(link for link in draft["links"] if link["from"] == "page_shop")
        draft["links"].append(dict(back, **{"from": "page_shop_2"}))  # the twin's link: its source has no match

    score = score_draft(variant(perfect, tmp_path, split), truth)
    assert (score.pages["draft"], score.pages["matched"], score.pages["recall"]) == (6, 5, 1.0)
    assert score.pages["precision"] == pytest.approx(5 / 6)
    assert score.pages["unmatched"] == {"page_shop_2": {"page_shop": 1}}
    assert (score.links["recall"], score.links["precision"]) == (1.0, pytest.approx(9 / 10))
    assert score.page_of["page_shop_2"] == "page_shop"  # a goto there still means the shop


def test_a_tap_counts_inside_the_true_click_area_only(perfect, tmp_path, truth):
    x1, y1, x2, y2 = tap_area(truth, TapAction(type="tap", button="MAIN_SHOP"))

    def shift(draft, x):
        link = next(link for link in draft["links"] if link["to"] == "page_shop" and link["from"] == "page_main")
        link["action"] = {"type": "tap", "point": [x, (y1 + y2) // 2], "area": [x - 5, y1, x + 5, y2]}

    inside = score_draft(variant(perfect, tmp_path / "in", lambda d: shift(d, x2 - 1)), truth)
    outside = score_draft(variant(perfect, tmp_path / "out", lambda d: shift(d, x2)), truth)
    assert inside.links["precision"] == 1.0
    assert (outside.links["right"], outside.links["found"]) == (8, 8)
    assert outside.links["missed"] == ["page_main -> page_shop"]


def test_swipes_count_by_direction_and_keys_by_name(perfect, tmp_path, truth):
    def reverse(draft):
        for link in draft["links"]:
            if link["action"]["type"] == "swipe":
                a = link["action"]
                a["start"], a["end"] = a["end"], a["start"]
            elif link["action"]["type"] == "key":
                link["action"] = {"type": "key", "key": "home"}

    score = score_draft(variant(perfect, tmp_path, reverse), truth)
    assert (score.links["right"], score.links["found"]) == (7, 7)
    assert sorted(score.links["missed"]) == ["page_settings -> page_main", "page_settings -> page_shop"]

    def nudge(draft):  # 30 degrees off is still the same swipe (the simulator's cosine is 0.7)
        for link in draft["links"]:
            if link["action"]["type"] == "swipe":
                link["action"]["end"] = [link["action"]["start"][0] - 400, link["action"]["start"][1] + 230]

    assert score_draft(variant(perfect, tmp_path / "nudge", nudge), truth).links["precision"] == 1.0


def test_popup_recall_counts_the_popups_the_run_could_show(perfect, tmp_path, truth):
    def drop_reward(draft):
        draft["popups"] = [p for p in draft["popups"] if p["name"] != "popup_reward"]

    folder = variant(perfect, tmp_path, drop_reward)
    quiet, chaos = score_draft(folder, truth), score_draft(folder, truth, scenario=Scenario.from_file(CHAOS))
    assert (quiet.popups["recall"], quiet.popups["missed"]) == (0.0, ["popup_reward"])
    assert (chaos.popups["recall"], chaos.popups["precision"]) == (0.5, 1.0)


def test_a_page_of_mostly_unknown_frames_matches_nothing(perfect, tmp_path, truth):
    def noise(draft):
        page = next(p for p in draft["pages"] if p["name"] == "page_settings")
        rng = np.random.default_rng(1)
        page["members"] = page["members"][:1] + [
            save(rng.integers(0, 256, (720, 1280, 3), dtype=np.uint8), tmp_path, f"noise/{i}.png") for i in range(2)]

    folder = variant(perfect, tmp_path / "d", noise)
    for rel in ("noise/0.png", "noise/1.png"):
        (folder / "noise").mkdir(exist_ok=True)
        shutil.copy(tmp_path / rel, folder / rel)
    score = score_draft(folder, truth)
    assert score.pages["missed"] == ["page_settings"] and score.page_of["page_settings"] is None
    assert score.pages["unmatched"] == {"page_settings": {"page_settings": 1, None: 2}}


def test_a_draft_page_the_truth_cannot_name_is_no_goto_target(perfect, tmp_path, truth):
    """A page drafted from screens the truth's graph does not have (as the chaos scenario's unknown screens) has no
    true page to judge an arrival by: the gotos leave it out and say so, and still judge every other page."""
    folder, _ = perfect
    page_of = {p: p for p in truth.reachable} | {"page_settings": None}
    result = run_gotos(folder, truth, page_of, n=12, seed=3)
    assert result["unjudged"] == ["page_settings"] and result["targets"] == 3
    assert (result["arrived"], result["false_successes"]) == (12, 0)


def test_a_dialog_drafted_as_a_page_is_no_goto_target(perfect, tmp_path, truth):
    """A draft page whose frames the truth sees under a popup is a dialog taken for a page: it shows over whatever
    page it came on, so no one true page judges a goto to it (seed 302684 under chaos: a dialog over the page
    under it was the draft's page, and a goto that met the dialog over another page was called a false success)."""
    def dialog_as_page(draft):
        page = next(p for p in draft["pages"] if p["name"] == "page_mail")
        page["members"] = ["evidence/popup_reward/0001.png"] * 2 + page["members"][:1]

    score = score_draft(variant(perfect, tmp_path, dialog_as_page), truth)
    assert score.page_of["page_mail"] is None
    assert {p: score.page_of[p] for p in truth.reachable - {"page_mail"}} == {p: p for p in truth.reachable
                                                                              - {"page_mail"}}


def test_gotos_with_the_perfect_draft_all_arrive(perfect, truth):
    folder, _ = perfect
    page_of = {p: p for p in truth.reachable}
    assert strongly_connected(truth.graph) == ["page_mail", "page_main", "page_settings", "page_shop"]
    result = run_gotos(folder, truth, page_of, n=12, seed=3)
    assert (result["arrived"], result["false_successes"], result["targets"]) == (12, 0, 4)


def test_a_draft_that_confuses_two_pages_makes_false_successes(perfect, tmp_path, truth):
    """The draft's graph reaches its shop through the mail button and knows the shop only by the back arrow the
    mail page shows too: its gotos to the shop end on the mail page and call it verified."""
    folder, _ = perfect
    graph = tmp_path / "graph"
    shutil.copytree(folder, graph, ignore=shutil.ignore_patterns("evidence", "draft.yaml"))
    pages = yaml.safe_load((graph / "pages.yaml").read_text())
    for page in pages["pages"]:
        if page["name"] == "page_main":
            page["links"][0]["action"]["button"] = "MAIN_MAIL"
        if page["name"] == "page_shop":
            page["signatures"] = [{"type": "template", "button": "BACK"}]
    (graph / "pages.yaml").write_text(yaml.safe_dump(pages, sort_keys=False))
    page_of = {p: p for p in truth.reachable}
    result = run_gotos(folder, truth, page_of, n=12, seed=3, graph_dir=graph, assets_dir=graph / "assets")
    assert result["verified"] == 12 and result["false_successes"] >= 1
    assert result["arrived"] + result["false_successes"] == 12  # every miss was called verified
    assert {example for example in result["false_success_examples"]} == {("page_shop", "page_shop", "page_mail")}


def test_a_draft_drawn_at_the_reference_size_is_scored_in_the_games_pixels(perfect, tmp_path, truth):
    """The explorer drafts a device bigger than 1280 on its long side at a reference size; its taps are scaled to
    the game's pixels before they are judged (a 1080x2340 game's links scored 25 of 136 right unscaled: every tap
    was compared with click areas twice its scale)."""
    def halved(draft):
        draft["resolution"] = [640, 360]
        for link in draft["links"]:
            action = link["action"]
            for key in ("point", "start", "end"):
                if key in action:
                    action[key] = [action[key][0] // 2, action[key][1] // 2]
            if "area" in action:
                action["area"] = [v // 2 for v in action["area"]]
        for popup in draft["popups"]:
            popup["dismiss"]["point"] = [v // 2 for v in popup["dismiss"]["point"]]

    score = score_draft(variant(perfect, tmp_path, halved), truth)
    assert (score.links["recall"], score.links["precision"]) == (1.0, 1.0)
    assert score.popups["dismiss_right"] == 2
