"""A reviewer's edits to an explorer's draft (engine.explore.review): each is a pure function that changes only
what it says or refuses with a reason; the folder is edited only on the revision read; accepting writes a graph
`python -m engine validate` takes and never replaces a file unasked."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from engine.core.errors import DraftEditRefused
from engine.explore import review
from engine.explore.draft import load_draft
from engine.faces.studio.authoring import read_frame
from tests.engine.studio.draftkit import ROOT, make_draft


@pytest.fixture(scope="module")
def made(tmp_path_factory) -> Path:
    return make_draft(tmp_path_factory.mktemp("made"))


@pytest.fixture
def folder(made, tmp_path) -> Path:
    copy = tmp_path / "draft"
    shutil.copytree(made, copy)
    return copy


def signer(folder: Path):
    return review.frame_signer(folder, read_frame)


def refused(reason: str, call, *args, **kwargs) -> DraftEditRefused:
    with pytest.raises(DraftEditRefused) as caught:
        call(*args, **kwargs)
    assert caught.value.reason == reason, caught.value
    return caught.value


def test_rename_follows_the_page_everywhere_and_refuses_bad_or_taken_names(folder):
    draft = load_draft(folder)
    renamed = review.rename(draft, "page_1", "page_shop")
    assert [p.name for p in renamed.pages] == ["page_main", "page_shop", "page_2", "page_3"]
    assert {(link.from_, link.to) for link in renamed.links} >= {("page_main", "page_shop"), ("page_shop", "page_main")}
    assert "page_1" not in {n for link in renamed.links for n in (link.from_, link.to)}
    assert renamed.review[0].pages == ["page_shop", "page_2"]
    assert renamed.pages[1].members == draft.pages[1].members  # the frames stay where they are
    assert draft.pages[1].name == "page_1"  # the draft it was given is unchanged
    assert renamed.popups == draft.popups
    popup = review.rename(renamed, "popup_1", "popup_news")
    assert [p.name for p in popup.popups] == ["popup_news"] and popup.pages == renamed.pages
    home = review.rename(draft, "page_main", "page_home")
    assert home.popups[0].over == ["page_home"] and home.start_page == "page_home"
    refused("taken", review.rename, draft, "page_1", "popup_1")  # one namespace for pages and popups
    refused("taken", review.rename, draft, "page_1", "page_2")
    for bad in ("", "1abc", "a/b", "../x", "x" * 101, None):
        refused("invalid", review.rename, draft, "page_1", bad)
    refused("unknown", review.rename, draft, "page_9", "page_nine")


def test_merge_folds_frames_links_and_the_question_into_one_page_signed_again(folder):
    draft = load_draft(folder)
    merged = review.merge(draft, "page_1", "page_2", signer(folder))
    names = [p.name for p in merged.pages]
    assert names == ["page_main", "page_1", "page_3"]
    page = merged.pages[1]
    assert page.members == [*draft.pages[1].members, *draft.pages[2].members]
    assert page.visits == draft.pages[1].visits + draft.pages[2].visits
    assert page.signatures and all(s.asset is None or s.asset.startswith("draft/page_1_") for s in page.signatures)
    back = [link for link in merged.links if link.from_ == "page_1" and link.to == "page_main"]
    assert len(back) == 1 and back[0].seen == 2  # the two back links were one action: counted together
    assert [link.to for link in merged.links if link.from_ == "page_main"].count("page_1") == 2  # two taps lead there
    assert not any(r.kind == "maybe_same_page" for r in merged.review)  # answered
    refused("invalid", review.merge, draft, "page_1", "page_1", signer(folder))
    refused("unknown", review.merge, draft, "page_1", "page_x", signer(folder))


def test_a_merge_whose_frames_share_no_region_is_refused(folder):
    draft = load_draft(folder)
    error = refused("invalid", review.merge, draft, "page_main", "page_3", lambda *a: [])
    assert "page_main" in str(error)


def test_split_takes_chosen_frames_into_a_new_page_and_signs_both(folder):
    draft = load_draft(folder)
    frames = draft.pages[3].members
    split = review.split(draft, "page_3", frames[1:], "page_settings", signer(folder))
    assert [p.name for p in split.pages] == ["page_main", "page_1", "page_2", "page_3", "page_settings"]
    kept, made = split.pages[3], split.pages[4]
    assert kept.members == frames[:1] and made.members == frames[1:]
    assert kept.signatures and made.signatures  # one frame each of two different pages: each tells itself apart
    assets = [s.asset for p in split.pages for s in p.signatures if s.asset]
    assert len(assets) == len(set(assets))
    assert split.review[-1].kind == "unreached" and split.review[-1].pages == ["page_settings"]
    assert not any(r.kind == "maybe_two_pages" for r in split.review)  # answered
    refused("invalid", review.split, draft, "page_3", frames, "page_x", signer(folder))  # nothing would be left
    refused("invalid", review.split, draft, "page_3", [], "page_x", signer(folder))
    refused("unknown", review.split, draft, "page_3", ["evidence/page_1/0001.png"], "page_x", signer(folder))
    refused("taken", review.split, draft, "page_3", frames[1:], "page_main", signer(folder))


def test_drop_link_removes_the_one_named_and_refuses_a_stale_index(folder):
    draft = load_draft(folder)
    index = next(i for i, link in enumerate(draft.links) if (link.from_, link.to) == ("page_3", "page_main"))
    dropped = review.drop_link(draft, index, "page_3", "page_main")
    assert len(dropped.links) == len(draft.links) - 1
    assert not any((link.from_, link.to) == ("page_3", "page_main") for link in dropped.links)
    assert not any(r.kind == "link_seen_once" for r in dropped.review)
    refused("stale", review.drop_link, draft, index, "page_main", "page_1")
    for bad in (-1, len(draft.links), "0", True, None):
        refused("unknown", review.drop_link, draft, bad, "page_3", "page_main")


def test_the_folder_is_edited_only_on_the_revision_read_and_keeps_the_original(folder):
    before = (folder / "draft.yaml").read_bytes()
    rev = review.revision(folder)
    draft, now = review.edit_folder(folder, rev, lambda d: review.rename(d, "page_3", "page_other"))
    assert now != rev and now == review.revision(folder)
    assert load_draft(folder).pages[3].name == "page_other"
    assert (folder / review.ORIGINAL).read_bytes() == before
    refused("stale", review.edit_folder, folder, rev, lambda d: review.rename(d, "page_1", "page_a"))
    review.edit_folder(folder, now, lambda d: review.rename(d, "page_1", "page_a"))
    assert (folder / review.ORIGINAL).read_bytes() == before  # kept once, never replaced
    assert not [p for p in folder.iterdir() if p.name.endswith(".tmp")]


def test_accept_asks_before_replacing_and_writes_a_graph_that_validates(folder):
    done = review.accept(folder)  # unedited: the explorer wrote the same files
    assert not done.written and not done.replaced and "pages.yaml" in done.unchanged
    rev = review.revision(folder)
    review.edit_folder(folder, rev, lambda d: review.merge(d, "page_1", "page_2", signer(folder)))
    old_pages = (folder / "pages.yaml").read_bytes()
    error = refused("exists", review.accept, folder)
    assert "pages.yaml" in error.exists
    assert (folder / "pages.yaml").read_bytes() == old_pages  # nothing written
    done = review.accept(folder, overwrite=True)
    assert "pages.yaml" in done.written
    backups = dict(done.replaced)
    assert (folder / backups["pages.yaml"]).read_bytes() == old_pages
    assert "page_2" not in (folder / "pages.yaml").read_text()
    out = review.accept(folder, "reviewed")
    assert out.folder == (folder / "reviewed").resolve() and (out.folder / "assets" / "index.json").is_file()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    for graph in (folder, out.folder):
        result = subprocess.run([sys.executable, "-m", "engine", "validate", str(graph)], capture_output=True,
                                text=True, timeout=60, env=env, cwd=ROOT)
        assert result.returncode == 0, result.stdout + result.stderr
    assert not [p for p in folder.iterdir() if p.name.startswith(".accept-")]


def test_accept_refuses_output_folders_outside_or_of_the_draft_itself(folder, tmp_path):
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (folder / "out_link").symlink_to(outside)
    for bad in ("../x", "/tmp/x", "evidence", "assets/x", "frames", "out_link", "a/../../x", "C:/x"):
        refused("invalid", review.accept, folder, bad)
    assert not any(outside.iterdir())
    (folder / "mine").mkdir()
    (folder / "mine" / "popups.yaml").symlink_to(outside / "popups.yaml")  # a file of the graph, linked out
    refused("invalid", review.accept, folder, "mine")
    assert not any(outside.iterdir()) and sorted(p.name for p in (folder / "mine").iterdir()) == ["popups.yaml"]


def test_a_draft_whose_members_lead_out_is_not_written(folder):
    text = (folder / "draft.yaml").read_text().replace("evidence/page_main/0001.png", "../../etc/passwd.png")
    (folder / "draft.yaml").write_text(text)
    refused("invalid", review.accept, folder, "out")
    assert not (folder / "out").exists()


def test_a_signer_reads_a_bounded_number_of_frames(folder, monkeypatch):
    """However many frames the pages have, finding a page's signatures again reads at most SIGN_MEMBERS of it and
    SIGN_OTHERS_TOTAL of the others, its first member always among them (write_graph cuts templates from it)."""
    import engine.explore.signatures as signatures

    read: list[str] = []
    seen: dict = {}
    monkeypatch.setattr(signatures, "stable_signatures", lambda members, others, **kw: seen.update(
        members=members, others=others) or ["sig"])
    sign = review.frame_signer(folder, lambda path: read.append(path.name) or path.name)
    members = [f"evidence/big/{i:04d}.png" for i in range(500)]
    others = [[f"evidence/p{p}/{i:04d}.png" for i in range(40)] for p in range(300)]
    assert sign(members, others, "page_big", None) == ["sig"]
    assert len(seen["members"]) <= review.SIGN_MEMBERS and seen["members"][0] == "0000.png"
    assert len(seen["others"]) <= review.SIGN_OTHERS_TOTAL
    assert len(read) <= review.SIGN_MEMBERS + review.SIGN_OTHERS_TOTAL
