"""Telling pages apart on one shared backdrop (issue 45): the cells that move by themselves on a page are learnt
while it settles, and a frame is a page's only when it differs from it in at most STABLE_SLACK other cells.

Generated game 1 (portrait, one dark backdrop, titles on a plain band) showed it: two of its pages differ in 3 cells
of 144 (their titles), while one page's swaying figure and sparks change 16 from look to look; by share of cells
alone the explorer merged six pages into one and found 6 of 31."""

from __future__ import annotations

import cv2
import numpy as np

from engine.explore.atlas import NOWHERE, STABLE_SLACK, Atlas, Here
from engine.explore.regions import page_actions
from engine.explore.sketch import SAME_PAGE, cell_match, similarity, sketch

W, H = 720, 1280


def drawn(title: str, phase: float, icons: int = 2, figure: bool = True, tint: tuple[int, int, int] = (0, 0, 0)
          ) -> np.ndarray:
    """A page of a plainly drawn game: a shared dark backdrop, a title band, a swaying figure (its body's colour
    moved by `tint`), a few icons."""
    frame = np.full((H, W, 3), (30, 18, 22), np.uint8)
    cv2.rectangle(frame, (170, 16), (550, 68), (235, 240, 240), -1)
    cv2.putText(frame, title, (230, 62), cv2.FONT_HERSHEY_SIMPLEX, 2.0, (20, 20, 20), 5)  # as bold as game 1 draws it
    dx = int(60 * np.sin(phase))  # the figure sways left and right
    if figure:
        body = tuple(int(c + t) for c, t in zip((200, 90, 40), tint))
        cv2.ellipse(frame, (360 + dx, 360), (210, 80), 0, 0, 360, body, -1)
        cv2.rectangle(frame, (300 + dx, 310), (420 + dx, 420), (60, 200, 120), -1)
    for i in range(icons):
        cv2.circle(frame, (76 + 320 * (i % 2), 508 + 80 * (i // 2)), 30, (180, 160, 220), -1)
    return frame


def swaying(title: str, looks: int = 12, tint: tuple[int, int, int] = (0, 0, 0)):
    """Looks at one page over time, and the cells seen moving between them."""
    sks = [sketch(drawn(title, 0.7 * i, tint=tint)) for i in range(looks)]
    moving = np.zeros(sks[0].colour.shape[:2], bool)
    for a, b in zip(sks, sks[1:]):
        moving |= ~cell_match(a, b)
    return sks, moving


def test_two_pages_that_differ_by_their_title_only_stay_two_while_each_sways_as_one():
    plaza, plaza_moving = swaying("PLAZA")
    ridge, ridge_moving = swaying("RIDGE")
    assert similarity(plaza[0], ridge[0]) >= SAME_PAGE  # share alone calls them one page
    assert (~cell_match(plaza[0], plaza[3])).sum() > STABLE_SLACK  # and the sway changes more cells than a title
    atlas = Atlas()
    first = atlas.absorb({"type": "screenshot"}, plaza[0], "p0.png", moving=plaza_moving)
    for sk in plaza[1:]:  # the same page in every phase of its sway
        assert atlas.absorb({"type": "tap", "point": [600, 900]}, sk, "p.png").page == first.page
    other = atlas.absorb({"type": "tap", "point": [76, 508]}, ridge[0], "r0.png", moving=ridge_moving)
    assert other.kind == "page" and other.page != first.page  # another page, not a popup over the first
    for sk in ridge[1:]:
        assert atlas.absorb({"type": "tap", "point": [600, 900]}, sk, "r.png").page == other.page
    assert len(atlas.pages) == 2


def test_without_the_moving_cells_a_swaying_page_is_still_one_page_within_share():
    """Before its moving cells are known (a replay of an old recording), share still holds a page together: its
    looks differ from its first in more than STABLE_SLACK cells, and they are the same page by their best member."""
    plaza, _ = swaying("PLAZA", looks=4)
    atlas = Atlas()
    atlas.absorb({"type": "screenshot"}, plaza[0], "p0.png")
    pages = {atlas.absorb({"type": "tap", "point": [600, 900]}, sk, "p.png").page for sk in plaza[1:]}
    assert len(atlas.pages) >= 1 and all(p is not None for p in pages)


def test_regions_that_move_by_themselves_are_tried_after_the_still_ones_the_back_key_and_the_swipes():
    frame = drawn("PLAZA", 0.0, icons=4)
    _, moving = swaying("PLAZA")
    actions = page_actions(frame, moving)
    kinds = [a["type"] for a in actions]
    back = kinds.index("key")
    icons = [i for i, a in enumerate(actions) if a["type"] == "tap" and a["point"][1] > 470]
    figure = [i for i, a in enumerate(actions) if a["type"] == "tap" and 300 < a["point"][1] < 440]
    assert icons and figure
    assert max(icons) < back < min(figure)  # the icons first, the swaying figure last
    def where(acts):  # nothing dropped, only ordered (the kind says whether a tap lies on the moving cells)
        return {str({k: v for k, v in a.items() if k != "kind"}) for a in acts}

    assert where(actions) == where(page_actions(frame))
    assert {a["kind"].endswith("/moving") for i, a in enumerate(actions) if i in figure} == {True}


def test_a_dialog_over_a_page_on_a_dark_backdrop_is_a_popup_over_it():
    """Generated game 7: its pages sit on a backdrop of mean gray 22; a dialog dims them to 0.42, and with only cells
    over gray 24 counted the dimming was never seen: each dialog became a page of its own (two duplicates)."""
    from engine.explore.sketch import cover

    page = drawn("MEDAL", 0.0)
    dialog = (page * 0.42).astype(np.uint8)
    cv2.rectangle(dialog, (120, 400), (600, 800), (60, 70, 90), -1)
    found = cover(sketch(dialog), sketch(page))
    assert found is not None and found.gain < 0.6
    assert found.box[0] <= 120 and found.box[2] >= 560 and found.box[1] <= 400 and found.box[3] >= 760
    assert cover(sketch(drawn("VAULT", 0.0, icons=4)), sketch(page)) is None  # another dark page is no dialog


def test_an_area_on_a_darker_backdrop_of_another_hue_is_a_page_not_the_hub_dimmed_under_a_dialog(tmp_path):
    """Generated game 8 (1080x2340, explored at 591x1280): the hub on dark green, its areas on dark gray, every page's
    drawing in the top third. By gray alone an area was the hub dimmed to 0.71 with a box over its top: the explorer
    took the area for a popup over the hub and found 2 pages of 8. A dimming scales every channel alike (DIM_TINT);
    the game's own dialog over the hub is still one."""
    from engine.config.loader import load_graph
    from engine.explore.sketch import DIM_BELOW, cover
    from engine.sim.generate import generate
    from engine.sim.style import load_style
    from engine.sim.styledgame import StyledGame

    folder = generate(8, tmp_path / "game8")
    game = StyledGame(load_graph(folder).resolve(), load_style(folder), clock=lambda: 0.0)

    def look() -> object:
        return sketch(cv2.resize(game.frame(), (591, 1280), interpolation=cv2.INTER_AREA))

    game.goto("page_main")
    hub = look()
    game.show_popup("popup_1_cross")
    dialog = cover(look(), hub)
    assert dialog is not None and dialog.gain <= DIM_BELOW
    game.goto("page_palace")
    assert cover(look(), hub) is None


def test_a_dialog_over_a_dark_page_is_dimmed_by_the_gain_most_cells_share_and_leaves_the_top_alike(tmp_path):
    """Generated game 36: a bright panel over a third of a dark page's lit cells pulled the median ratio to 0.76 for
    a dimming of 0.52; the title's cells then counted as changed and the box reached the top row, where a dimmed box
    counts as another page (DIMMED_TOP). The gain is the ratio most cells share."""
    from engine.config.loader import load_graph
    from engine.explore.sketch import cover
    from engine.sim.generate import generate
    from engine.sim.style import load_style
    from engine.sim.styled import StyledRenderer

    folder = generate(36, tmp_path / "game36")
    graph, style = load_graph(folder).resolve("en"), load_style(folder)
    renderer = StyledRenderer(graph, style)
    page = renderer.page("page_dragon")
    popup = next(p for p in graph.popups if p.name == "popup_2_ok")
    found = cover(sketch(renderer.with_popups(page, [popup])), sketch(page))
    assert found is not None and abs(found.gain - style.dim) < 0.03 and found.box[1] > 0


def test_a_darker_gray_page_drawn_differently_up_to_its_top_is_another_page_not_a_dialog():
    """Gray on gray no colour tells from a dimming (DIM_TINT): the box reaching the top row does (DIMMED_TOP)."""
    from engine.explore import sketch as sk

    hub = np.full((H, W, 3), 60, np.uint8)
    cv2.putText(hub, "HUB", (280, 60), cv2.FONT_HERSHEY_SIMPLEX, 2.0, (230, 230, 230), 5)
    cv2.rectangle(hub, (100, 200), (620, 420), (90, 140, 200), -1)
    area = np.full((H, W, 3), 30, np.uint8)
    cv2.putText(area, "CAVE", (250, 60), cv2.FONT_HERSHEY_SIMPLEX, 2.0, (230, 230, 230), 5)
    cv2.rectangle(area, (160, 260), (560, 480), (200, 120, 60), -1)
    assert sk.cover(sketch(area), sketch(hub)) is None
    sk.DIMMED_TOP = True
    try:  # the same pair with the rule off: a dialog over the hub
        assert sk.cover(sketch(area), sketch(hub)) is not None
    finally:
        sk.DIMMED_TOP = False


def test_a_page_whose_content_changed_is_still_the_page_the_same_action_led_to():
    """Azur Lane's simulator: the mail list emptied, a commission started; reached again by the same button from the
    same page, the page differs in 6 to 18 cells and was drafted twice (6 pages split, gotos 185 of 200)."""
    main, mail = drawn("MAIN", 0.0, icons=4), drawn("MAIL", 0.0)
    emptied = mail.copy()
    emptied[720:880, 160:560] = (200, 200, 60)  # a block of its content drawn otherwise now
    atlas = Atlas()
    home = atlas.absorb({"type": "screenshot"}, sketch(main), "m.png").page
    button = {"type": "tap", "point": [396, 508]}
    first = atlas.absorb(button, sketch(mail), "a.png").page
    assert atlas.absorb({"type": "key", "key": "back"}, sketch(main), "m.png").page == home
    assert atlas.absorb(button, sketch(emptied), "b.png").page == first  # the same button, the same page
    atlas.absorb({"type": "key", "key": "back"}, sketch(main), "m.png")
    changed = mail.copy()
    changed[960:1120, 160:560] = (60, 200, 200)  # changed elsewhere, and reached by another button
    assert (~cell_match(sketch(mail), sketch(changed))).sum() > STABLE_SLACK
    assert atlas.absorb({"type": "tap", "point": [76, 588]}, sketch(changed), "c.png").page != first


def test_a_cycle_of_actions_that_each_change_the_screen_is_given_up_when_nothing_is_learnt():
    """Generated game 1: a tap believed to lead to the hub (a darker page taken for a dialog over it) and the back
    key alternated 100 times in 351 actions; each changed the screen, so the unchanged-screen rule never fired."""
    from engine.explore.atlas import Here
    from engine.explore.repeats import CYCLE_LIMIT, RepeatGuard

    guard, page, popup = RepeatGuard(), Here("page", 3), Here("popup", 2, 0)
    tap, back = {"type": "tap", "point": [398, 588]}, {"type": "key", "key": "back"}
    given = []
    for _ in range(CYCLE_LIMIT + 1):
        given.append(guard.saw(page, tap, popup, progress=40))
        guard.saw(popup, back, page, progress=40)
    assert given[-1] and not any(given[:-1]) and not guard.allowed(page, tap)
    guard = RepeatGuard()  # the same pair while something is learnt each time: no loop
    assert not any(guard.saw(page, tap, popup, progress=n) for n in range(3 * CYCLE_LIMIT))


def test_a_popup_closed_the_same_way_on_every_showing_is_never_given_up():
    """Under chaos a popup shows on three arrivals in ten, over the same pages again and again, and its cross closes
    it each time with nothing new learnt. Generated game 6: counted by the cycle rule, the cross was given up after the
    sixth showing over the main page and every showing after ended in a restart. The loop the rule is for is broken
    at the page's own action (above); a popup's closing is not one."""
    from engine.explore.atlas import Here
    from engine.explore.repeats import CYCLE_LIMIT, RepeatGuard

    guard, main, popup = RepeatGuard(), Here("page", 1), Here("popup", 1, 4)
    cross, onward = {"type": "tap", "point": [85, 827]}, {"type": "tap", "point": [75, 666]}
    for n in range(3 * CYCLE_LIMIT):
        assert not guard.saw(popup, cross, main, progress=40)
        guard.saw(main, onward, Here("page", 2 + n % 2), progress=40)  # off somewhere, and the popup comes back
        guard.saw(Here("page", 2 + n % 2), {"type": "key", "key": "back"}, main, progress=40)
    assert guard.allowed(popup, cross)


def test_a_page_without_the_figure_another_sways_in_is_another_page():
    """Generated game 782102: a page with a swaying figure and one without it, whose titles differ more finely than a
    cell, differed only in the first one's moving cells, and were drafted as one page (a goto to it arrived on
    either: 2 false successes in 10). Moving cells excuse a figure that moves, not one that is gone."""
    from engine.explore.sketch import MOVED_COLOUR

    plaza, moving = swaying("PLAZA")
    bare = drawn("PLAZA", 0.0, figure=False)
    cv2.putText(bare, ".", (520, 60), cv2.FONT_HERSHEY_SIMPLEX, 1.0, (20, 20, 20), 2)  # a title as fine as a dot
    atlas = Atlas()
    first = atlas.absorb({"type": "screenshot"}, plaza[0], "p0.png", moving=moving).page
    learnt = atlas.pages[first].moving
    differ = ~cell_match(sketch(bare), plaza[0])
    assert differ.any() and (differ & ~learnt).sum() <= STABLE_SLACK  # moving cells alone would call it the page
    assert np.abs(sketch(bare).colour[learnt].mean(0) - plaza[0].colour[learnt].mean(0)).max() > MOVED_COLOUR
    assert atlas.absorb({"type": "tap", "point": [76, 508]}, sketch(bare), "b.png").page != first
    assert all(atlas.best_page(sk)[0] == first for sk in plaza[1:])  # the page with the figure, in every phase


def test_a_page_whose_figure_sways_in_other_colours_is_another_page():
    """Generated game 2: two pages whose figures sway in one place, drawn from other seeds in near colours, and whose
    titles differ more finely than a cell, were drafted as one page (their moving cells' mean colour 10.8 apart, under
    the 16 allowed then). Over generated games 1-40, one page against itself at another moment of its sway moved that
    mean by at most 3.6; two pages the excuse alone would merge, by 4.3 or more (45 of 366 such pairs under 16, 3
    under 6); games 41-80, never looked at before the bound was chosen: 2.1 against 2.0 or more, 30 of 407 under
    16, 3 under 6 (docs/benchmarks/generated-long-form-first-cases.md)."""
    plaza, moving = swaying("PLAZA")
    other = drawn("PLAZA", 0.0, tint=(-60, 55, 60))
    cv2.putText(other, ".", (520, 60), cv2.FONT_HERSHEY_SIMPLEX, 1.0, (20, 20, 20), 2)  # a title as fine as a dot
    atlas = Atlas()
    first = atlas.absorb({"type": "screenshot"}, plaza[0], "p0.png", moving=moving).page
    learnt = atlas.pages[first].moving
    apart = np.abs(sketch(other).colour[learnt].mean(0) - plaza[0].colour[learnt].mean(0)).max()
    assert 6.0 < apart < 16.0, apart  # between the worst same page measured and the old bound
    assert (~cell_match(sketch(other), plaza[0]) & ~learnt).sum() <= STABLE_SLACK  # moving cells alone would merge
    assert atlas.absorb({"type": "tap", "point": [76, 508]}, sketch(other), "o.png").page != first
    assert all(atlas.best_page(sk)[0] == first for sk in plaza[1:])  # the page itself, in every phase


def test_a_figure_that_moved_a_little_without_being_seen_moving_is_the_same_page():
    """Generated game 782102: a figure sways more slowly than settling looks, so none of its cells was seen moving;
    the page came back with its figure 12 pixels aside (16 here, on a
    frame drawn larger), 6 cells of its edges different, and was drafted twice."""
    first, aside = sketch(drawn("PLAZA", 0.0)), sketch(drawn("PLAZA", np.arcsin(16 / 60)))
    assert (~cell_match(aside, first)).sum() > STABLE_SLACK  # cell by cell it is another page
    atlas = Atlas()
    page = atlas.absorb({"type": "screenshot"}, first, "p0.png").page
    assert atlas.absorb({"type": "tap", "point": [600, 1000]}, aside, "p1.png").page == page
    assert len(atlas.pages) == 1


def test_a_page_signed_where_it_shares_a_tinted_figure_with_another_is_signed_again_until_told_apart(tmp_path):
    """Generated game 398351 (portrait; hub and areas show one figure, tinted per page): the draft's first two
    templates for an area were cut from the figure's hat and face, which the hub shows too, and with two templates
    the explorer stopped; its gotos to the area verified on the hub (3 false successes in the CI form). A third
    template is taken while some other page's frame is still unexplained, and the set misses the hub."""
    from engine.config.loader import load_graph
    from engine.explore.signatures import stable_signatures, template_check
    from engine.sim.generate import generate
    from engine.sim.style import load_style
    from engine.sim.styledgame import StyledGame

    folder = generate(398351, tmp_path / "g")
    game = StyledGame(load_graph(folder).resolve(), load_style(folder), clock=lambda: 0.0)
    frames = {}
    for page in ("page_main", "page_epoch", "page_title"):
        game.goto(page)
        frames[page] = game.frame()
    area, others = frames.pop("page_epoch"), list(frames.values())
    signatures = stable_signatures([area], others, prefix="page_epoch")
    checks = [template_check(area, s.area) for s in signatures if s.type == "template"]
    assert all(c.verify(area).hit for c in checks)
    for other in others:
        assert not all(c.verify(other).hit for c in checks), [s.area for s in signatures]


def test_a_cell_seen_moving_by_itself_is_never_signed_while_a_still_one_tells_the_page_apart():
    """A ticking timer is as textured and as unlike other pages as a title, and sketches alike from one second to
    the next (its digits are finer than a cell): the signer took one for seed 509657's area page. A cell the atlas
    saw moving on the page is left out; the page is signed by what stays."""
    from engine.explore.signatures import stable_signatures

    rng = np.random.default_rng(5)
    backdrop = np.full((H, W, 3), (40, 30, 60), np.uint8)
    page = backdrop.copy()
    page[880:960, 560:720] = rng.integers(0, 256, (80, 160, 3), dtype=np.uint8)  # the timer, bottom right
    page[160:240, 80:240] = rng.integers(0, 256, (80, 160, 3), dtype=np.uint8)  # the title, top left
    other = backdrop.copy()
    sk = sketch(page)
    moving = np.zeros(sk.colour.shape[:2], bool)
    timer = [(r, c) for r in range(moving.shape[0]) for c in range(moving.shape[1])
             if sk.cell_area(c, r)[1] >= 880 and sk.cell_area(c, r)[0] >= 560]
    for r, c in timer:
        moving[r, c] = True

    def signed_on_timer(signatures):
        return [s.area for s in signatures if s.area[1] >= 870 and s.area[0] >= 550]

    assert signed_on_timer(stable_signatures([page], [other]))  # the timer is a candidate like any other
    still = stable_signatures([page], [other], moving=moving)
    assert still and not signed_on_timer(still)


def test_a_tab_first_seen_under_a_dialog_is_its_own_page_once_the_dialog_closes(tmp_path):
    """Generated game 3 (1080x2340, tabs by tap): SPIRE's tab shows a dialog the first time it is opened. The dimmed
    rest of the screen looks most like its sister tab WARDEN, so the dialog is placed over WARDEN, a guess; once it
    closed, the clean SPIRE differs from WARDEN by a box (its lit tab and its own button) and was taken for another
    popup over WARDEN, every time: two tabs of four never drafted. An undimmed box is a popup only over a page the
    explorer stood on."""
    import cv2

    from engine.config.loader import load_graph
    from engine.explore.sketch import sketch
    from engine.faces.commands.explore import REFERENCE_LONG_SIDE
    from engine.sim.generate import generate
    from engine.sim.style import style_beside
    from engine.sim.styled import StyledRenderer

    folder = generate(3, tmp_path / "game3")
    graph = load_graph(folder).resolve()
    renderer = StyledRenderer(graph, style_beside(folder))
    width, height = graph.resolution
    scale = min(1.0, REFERENCE_LONG_SIDE / max(width, height))

    def seen(frame):
        return sketch(cv2.resize(frame, (round(width * scale), round(height * scale)), interpolation=cv2.INTER_AREA))

    dialog = next(p for p in graph.popups if "page_supply_spire" in (p.pages or ()))
    atlas = Atlas()
    warden = atlas.absorb({"type": "screenshot"}, seen(renderer.page("page_supply_warden")), "w.png")
    atlas.here = NOWHERE  # FABLE seen apart (as the explorer found it: its figure appearing is no popup)
    fable = atlas.absorb({"type": "screenshot"}, seen(renderer.page("page_supply_fable")), "f.png")
    assert fable.kind == "page" and fable.page != warden.page
    spire_page = renderer.page("page_supply_spire")
    covered = atlas.absorb({"type": "tap", "point": [500, 462]}, seen(renderer.with_popups(spire_page, [dialog])),
                           "d.png")
    assert covered.kind == "popup"
    spire = atlas.absorb({"type": "key", "key": "back"}, seen(spire_page), "s.png")
    assert spire.kind == "page" and spire.page not in (warden.page, fable.page)


def test_an_undimmed_box_a_tap_opened_and_the_back_key_closed_is_a_page_opened_from_the_one_it_covered(tmp_path):
    """Generated game 10 (1280x720, one striped backdrop): TRIBE lists ESTATE and ATLAS, and ESTATE's page shows one
    block where TRIBE's three were, nothing dimmed. It differs from TRIBE in a box, so it was taken for a popup over
    TRIBE, closed by the back key, and never explored (its page and what lay behind it missing from the draft). A
    modal dialog dims the page it covers; an undimmed box that the back key closes onto the page a tap opened it
    from is that page's child: a page, with the tap as its link and the back key as its way back, its actions
    offered. A dimmed dialog closed the same way stays a popup."""
    from engine.config.loader import load_graph
    from engine.explore.explorer import Explorer
    from engine.explore.sketch import sketch
    from engine.sim.generate import generate
    from engine.sim.style import style_beside
    from engine.sim.styled import StyledRenderer

    folder = generate(10, tmp_path / "game10")
    graph = load_graph(folder).resolve()
    renderer = StyledRenderer(graph, style_beside(folder))
    frames = {"tribe.png": renderer.page("page_tribe"), "estate.png": renderer.page("page_estate")}
    dialog = graph.popups[0]
    frames["dialog.png"] = renderer.with_popups(frames["tribe.png"], [dialog])

    class Frames:
        def read(self, rel):
            return frames.get(rel)

    tap, back = {"type": "tap", "point": [902, 132]}, {"type": "key", "key": "back"}

    def explorer():
        made = Explorer(device=None, folder=tmp_path / "unused")
        made.recording = Frames()
        return made

    def step(explorer, action, rel):
        return explorer._absorb(action, sketch(frames[rel]), rel, [], None, None)

    child = explorer()
    tribe = step(child, {"type": "screenshot"}, "tribe.png")
    assert step(child, tap, "estate.png").kind == "popup"  # at first sight, a box over the page
    assert step(child, back, "tribe.png") == tribe
    atlas = child.atlas
    estate = atlas.outcome(tribe.page, "tap:902,132")
    assert estate[0] == "page" and estate[1] != tribe.page
    page = atlas.pages[estate[1]]
    assert atlas.outcome(page.id, "key:back") == ("page", tribe.page) and page.actions
    assert not any(p.over for p in atlas.popups)  # no popup left in the draft
    assert step(child, tap, "estate.png") == Here("page", page.id)  # seen again: that page

    modal = explorer()
    tribe = step(modal, {"type": "screenshot"}, "tribe.png")
    assert step(modal, tap, "dialog.png").kind == "popup"
    assert step(modal, back, "tribe.png") == tribe
    assert modal.atlas.outcome(tribe.page, "tap:902,132") == ("same",) and len(modal.atlas.live_pages()) == 1


def test_an_undimmed_box_the_back_key_left_for_where_its_page_goes_back_is_a_sister_tab(tmp_path):
    """Generated game 6 (720x1280): MEDAL's two tabs, QUEST and LEGEND, differ in their tab row alone, nothing dimmed,
    so LEGEND was a popup over QUEST, and the back key, which took it where QUEST's back key goes (PRISM), never
    closed it: the tab and what lay behind it were never explored. A dialog is closed by the back key, not left
    for the page its page goes back to: that box is a sister page."""
    from engine.config.loader import load_graph
    from engine.explore.explorer import Explorer
    from engine.explore.sketch import sketch
    from engine.sim.generate import generate
    from engine.sim.style import style_beside
    from engine.sim.styled import StyledRenderer

    folder = generate(6, tmp_path / "game6")
    graph = load_graph(folder).resolve()
    renderer = StyledRenderer(graph, style_beside(folder))
    frames = {name: renderer.page(name) for name in ("page_prism", "page_medal_quest", "page_medal_legend")}

    class Frames:
        def read(self, rel):
            return frames.get(rel)

    explorer = Explorer(device=None, folder=tmp_path / "unused")
    explorer.recording = Frames()

    def step(action, name):
        return explorer._absorb(action, sketch(frames[name]), name, [], None, None)

    back, legend_tab = {"type": "key", "key": "back"}, {"type": "tap", "point": [526, 501]}
    prism = step({"type": "screenshot"}, "page_prism")
    quest = step({"type": "tap", "point": [1, 1]}, "page_medal_quest")  # (where PRISM's link is does not matter)
    assert step(back, "page_prism") == prism
    step({"type": "tap", "point": [1, 1]}, "page_medal_quest")
    assert step(legend_tab, "page_medal_legend").kind == "popup"  # at first sight, a box over QUEST
    assert step(back, "page_prism") == prism
    atlas = explorer.atlas
    legend = atlas.outcome(quest.page, "tap:526,501")
    assert legend[0] == "page" and legend[1] not in (quest.page, prism.page)
    assert atlas.outcome(legend[1], "key:back") == ("page", prism.page) and atlas.pages[legend[1]].actions
    assert not any(p.over for p in atlas.popups)


def test_a_sister_tab_left_by_the_back_key_before_its_way_back_was_known_becomes_a_page_once_it_is(tmp_path):
    """The same two tabs, the game started on QUEST: LEGEND's box is left by the back key for PRISM before anything
    says PRISM is where QUEST is opened from or goes back to. Where the box was left for is kept, and once PRISM is
    seen to open QUEST, the box is a sister page."""
    from engine.config.loader import load_graph
    from engine.explore.explorer import Explorer
    from engine.explore.sketch import sketch
    from engine.sim.generate import generate
    from engine.sim.style import style_beside
    from engine.sim.styled import StyledRenderer

    folder = generate(6, tmp_path / "game6")
    graph = load_graph(folder).resolve()
    renderer = StyledRenderer(graph, style_beside(folder))
    frames = {name: renderer.page(name) for name in ("page_prism", "page_medal_quest", "page_medal_legend")}
    explorer = Explorer(device=None, folder=tmp_path / "unused")

    def step(action, name):
        return explorer._absorb(action, sketch(frames[name]), name, [], None, None)

    back, legend_tab = {"type": "key", "key": "back"}, {"type": "tap", "point": [526, 501]}
    quest = step({"type": "screenshot"}, "page_medal_quest")
    assert step(legend_tab, "page_medal_legend").kind == "popup"
    prism = step(back, "page_prism")
    assert prism.kind == "page" and any(p.over for p in explorer.atlas.popups)  # nothing says it is a sister yet
    assert step({"type": "tap", "point": [1, 1]}, "page_medal_quest") == quest
    legend = explorer.atlas.outcome(quest.page, "tap:526,501")
    assert legend[0] == "page" and legend[1] not in (quest.page, prism.page)
    assert explorer.atlas.outcome(legend[1], "key:back") == ("page", prism.page)
    assert not any(p.over for p in explorer.atlas.popups)
