"""A reviewer's edits to an explorer's draft (engine.explore.draft): rename, merge two pages, split one, drop a link,
and accept the draft as ordinary graph YAML.

Each edit is a pure function from a Draft to a new Draft that refuses with DraftEditRefused (nothing changed) when
it cannot be made as asked; ``edit_folder`` applies one to a draft folder (the revision read must still be the one
on disk, and the explorer's own draft.yaml is kept once as draft.yaml.orig); ``accept`` writes the graph through
engine.explore.write.write_graph and never replaces a file unless told to, keeping the old one as a .bak.
Merging and splitting change which frames a page has, so its signatures are found again from its frames
(engine.explore.signatures.stable_signatures, through a ``Signer``).
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

from engine.config.schema import NAME_PATTERN
from engine.core.errors import DraftEditRefused

log = logging.getLogger(__name__)

DRAFT_FILE = "draft.yaml"
ORIGINAL = "draft.yaml.orig"
"""The explorer's draft.yaml as it was before the first edit (written once, never replaced)."""
MAX_DRAFT_BYTES = 8 << 20
"""A draft.yaml larger than this is refused before it is parsed."""
MAX_NAME = 100
SIGN_MEMBERS = 16
"""Frames of the page itself a Signer reads at most (spread over its members, the first always among them)."""
SIGN_OTHERS = 4
"""Frames of each other page a Signer reads at most..."""
SIGN_OTHERS_TOTAL = 64
"""...and of all other pages together (a frame is 2.7 MB at 1280x720: the memory of one edit stays bounded)."""
RESERVED = frozenset({"evidence", "frames", "assets"})
"""The draft's own folders: no graph is accepted into them."""

Signer = Callable[[Sequence[str], Sequence[Sequence[str]], str, Any], list]
"""(the page's member frames, each other page's member frames, the prefix of its template names, its title as
(area, text) or None) -> the page's signatures; paths relative to the draft folder. An empty list: no region is
the same on every member and unlike every other page."""


def _refuse(message: str, reason: str, **extra: Any) -> DraftEditRefused:
    return DraftEditRefused(message, reason, **extra)


def _shown(value: Any) -> str:
    """A name from a request as a message shows it: quoted, and cut short (a body may hold a megabyte of it)."""
    text = repr(value)
    return text if len(text) <= 120 else text[:117] + "..."


# --------------------------------------------------------------------------------------------------- looking up


def page_of(draft: Any, name: str) -> Any:
    for page in draft.pages:
        if page.name == name:
            return page
    raise _refuse(f"the draft has no page {_shown(name)}", "unknown")


def taken(draft: Any) -> set[str]:
    """Every name of the draft's pages and popups (one namespace in the written graph)."""
    return {p.name for p in draft.pages} | {p.name for p in draft.popups}


def check_name(draft: Any, name: Any) -> str:
    """`name` as a new page or popup name, or DraftEditRefused (invalid: not the graph's name rule; taken)."""
    if not isinstance(name, str) or not name or len(name) > MAX_NAME or not re.match(NAME_PATTERN, name):
        raise _refuse(f"{_shown(name)} is not a name the graph takes (a letter or _, then letters, digits, "
                      f"_ . -; at most {MAX_NAME})", "invalid")
    if name in taken(draft):
        raise _refuse(f"{name!r} is already a page or popup of the draft", "taken")
    return name


def _renamed(names: Sequence[str], old: str, new: str) -> list[str]:
    out: list[str] = []
    for name in names:
        name = new if name == old else name
        if name not in out:
            out.append(name)
    return out


# --------------------------------------------------------------------------------------------------- edits


def rename(draft: Any, old: str, new: str) -> Any:
    """Page or popup `old` called `new`, everywhere the draft names it (links, popups' pages, the review list)."""
    new = check_name(draft, new)
    if old in {p.name for p in draft.popups}:
        popups = [p.model_copy(update={"name": new}) if p.name == old else p for p in draft.popups]
        review = [r.model_copy(update={"pages": _renamed(r.pages, old, new)}) for r in draft.review]
        return draft.model_copy(update={"popups": popups, "review": review})
    page_of(draft, old)
    return _relabel(draft, old, new, pages=[p.model_copy(update={"name": new}) if p.name == old else p
                                            for p in draft.pages])


def _relabel(draft: Any, old: str, new: str, *, pages: list) -> Any:
    """`pages`, and every mention of page `old` made `new`: the start page, links (a link that now leads from a
    page to itself is dropped, two that became the same are one, their counts added), popups' pages and the
    review list."""
    links: list = []
    for link in draft.links:
        src, dst = (new if link.from_ == old else link.from_), (new if link.to == old else link.to)
        if src == dst and old in (link.from_, link.to) and new != old:
            continue  # it led between the two pages now one
        same = next((i for i, kept in enumerate(links) if kept.from_ == src and kept.to == dst
                     and kept.action == link.action), None)
        if same is None:
            links.append(link.model_copy(update={"from_": src, "to": dst}))
        else:
            kept = links[same]
            links[same] = kept.model_copy(update={"seen": kept.seen + link.seen, "tried": kept.tried + link.tried})
    popups = [p.model_copy(update={"over": _renamed(p.over, old, new)}) for p in draft.popups]
    review = []
    for item in draft.review:
        names = _renamed(item.pages, old, new)
        if len(names) < len(item.pages) and len(names) <= 1 and item.kind in ("maybe_same_page", "maybe_two_pages"):
            continue  # the question it asked is answered
        review.append(item.model_copy(update={"pages": names}))
    start = new if draft.start_page == old else draft.start_page
    return draft.model_copy(update={"pages": pages, "links": links, "popups": popups, "review": review,
                                    "start_page": start})


def _others(draft: Any, skip: set[str]) -> list[list[str]]:
    return [list(p.members) for p in draft.pages if p.name not in skip]


def _prefix(draft: Any, name: str, skip: set[str]) -> str:
    """The prefix of page `name`'s template names: its name, unless another page's templates use it already (a
    page renamed away keeps the templates named after it)."""
    used = {str(s.asset) for p in [*draft.pages, *draft.popups] if p.name not in skip for s in p.signatures
            if s.asset}
    prefix, number = name, 1
    while any(re.fullmatch(rf"draft/{re.escape(prefix)}_\d+", asset) for asset in used):
        number += 1
        prefix = f"{name}_{number}"
    return prefix


def _title(page: Any) -> Any:
    """(area, text) of the page's OCR title signature, so a page found again from its frames keeps it."""
    area = next((s.area for s in page.signatures if s.type == "ocr"), None)
    return (area, page.title) if area is not None and page.title else None


def _sign(signer: Signer, draft: Any, name: str, members: Sequence[str], others: list[list[str]],
          skip: set[str], title: Any) -> list:
    found = list(signer(list(members), others, _prefix(draft, name, skip), title))
    if not found:
        raise _refuse(f"no region stays the same on every frame of {name!r} and tells it from the other pages: "
                      f"its frames are probably not one page", "invalid")
    return found


def merge(draft: Any, keep: str, other: str, signer: Signer) -> Any:
    """Page `other` folded into page `keep`: its frames, visits and links become `keep`'s, and `keep`'s signatures
    are found again from all the frames (refused when none stays the same on all of them)."""
    if keep == other:
        raise _refuse(f"{keep!r} cannot be merged with itself", "invalid")
    first, second = page_of(draft, keep), page_of(draft, other)
    members = list(dict.fromkeys([*first.members, *second.members]))
    signatures = _sign(signer, draft, keep, members, _others(draft, {keep, other}), {keep, other},
                       _title(first) or _title(second))
    merged = first.model_copy(update={"members": members, "signatures": signatures,
                                      "title": first.title or second.title,
                                      "visits": first.visits + second.visits,
                                      "loading": first.loading and second.loading})
    pages = [merged if p.name == keep else p for p in draft.pages if p.name != other]
    return _relabel(draft, other, keep, pages=pages)


def split(draft: Any, name: str, frames: Sequence[str], new: str, signer: Signer) -> Any:
    """The member `frames` of page `name` taken out into a new page `new`; both pages' signatures are found again
    (refused when either has none). The links stay with `name`: the review list says the new page has none."""
    page = page_of(draft, name)
    new = check_name(draft, new)
    chosen = list(dict.fromkeys(frames))
    unknown = [f for f in chosen if f not in page.members]
    if unknown:
        raise _refuse(f"{_shown(unknown[0])} is not a frame of {name!r}", "unknown")
    rest = [m for m in page.members if m not in chosen]
    if not chosen or not rest:
        raise _refuse(f"a split needs some of {name!r}'s frames on each side ({len(chosen)} of "
                      f"{len(page.members)} chosen)", "invalid")
    others = _others(draft, {name})
    kept = page.model_copy(update={"members": rest, "visits": max(1, page.visits - len(chosen)),
                                   "signatures": _sign(signer, draft, name, rest, [*others, chosen], {name},
                                                       _title(page))})
    with_kept = draft.model_copy(update={"pages": [kept if p.name == name else p for p in draft.pages]})
    made = page.model_copy(update={"name": new, "title": None, "members": chosen, "visits": len(chosen),
                                   "signatures": _sign(signer, with_kept, new, chosen, [*others, rest], set(),
                                                       None)})
    pages: list = []
    for p in draft.pages:
        pages += [kept, made] if p.name == name else [p]
    note = f"split from {name}: its links stayed with {name}; explore again or add them by hand"
    review = [r for r in draft.review if not (r.kind == "maybe_two_pages" and list(r.pages) == [name])]  # answered
    return draft.model_copy(update={"pages": pages, "review": [*review, _review_item("unreached", [new], note)]})


def _review_item(kind: str, pages: list[str], note: str) -> Any:
    from engine.explore.draft import ReviewItem

    return ReviewItem(kind=kind, pages=pages, note=note)


def drop_link(draft: Any, index: int, src: str, dst: str) -> Any:
    """Link number `index` (which must still lead from `src` to `dst`) removed."""
    if not isinstance(index, int) or isinstance(index, bool) or not 0 <= index < len(draft.links):
        raise _refuse(f"the draft has no link number {_shown(index)} ({len(draft.links)} links)", "unknown")
    link = draft.links[index]
    if (link.from_, link.to) != (src, dst):
        raise _refuse(f"link {index} leads from {link.from_} to {link.to}, not from {_shown(src)} to {_shown(dst)}: "
                      f"reload the draft", "stale")
    links = [kept for i, kept in enumerate(draft.links) if i != index]
    still = any(k.from_ == src and k.to == dst for k in links)
    review = [r for r in draft.review if still or not (r.kind == "link_seen_once" and list(r.pages) == [src, dst])]
    return draft.model_copy(update={"links": links, "review": review})


# --------------------------------------------------------------------------------------------------- the folder


def inside(folder: Path, relative: str) -> Path:
    """`relative` (from the draft or a request) below `folder`, or DraftEditRefused: absolute, ``..``, or a
    symlink that leads out."""
    text = str(relative).replace("\\", "/")
    parts = [p for p in text.split("/") if p not in ("", ".")]
    if text.startswith("/") or re.match(r"^[A-Za-z]:", text) or "\x00" in text or ".." in parts:
        raise _refuse(f"{_shown(text)} is not a path inside the draft folder", "invalid")
    base = folder.resolve()
    target = base.joinpath(*parts).resolve()
    if target != base and not target.is_relative_to(base):
        raise _refuse(f"{_shown(text)} leads outside the draft folder", "invalid")
    return target


def revision(folder: Path) -> str:
    """A short hash of the draft.yaml on disk: an edit names the revision it was made on."""
    return hashlib.sha256(_read(folder)).hexdigest()[:16]


def _read(folder: Path) -> bytes:
    path = folder / DRAFT_FILE
    if not path.is_file():
        raise _refuse(f"{folder} has no {DRAFT_FILE}: not an explorer's draft", "unknown", file=str(path))
    if path.stat().st_size > MAX_DRAFT_BYTES:
        raise _refuse(f"{path} is over {MAX_DRAFT_BYTES >> 20} MiB", "invalid", file=str(path))
    return path.read_bytes()


def read(folder: Path) -> tuple[Any, str]:
    """The draft in `folder` and its revision."""
    from engine.explore.draft import load_draft

    rev = revision(folder)
    return load_draft(folder), rev


def edit_folder(folder: Path, rev: str, edit: Callable[[Any], Any]) -> tuple[Any, str]:
    """`edit` applied to the draft in `folder` when its revision is still `rev`; the new draft saved (atomically)
    and returned with its revision. The first edit keeps the explorer's draft.yaml as draft.yaml.orig."""
    from engine.explore.draft import save_draft

    folder = Path(folder)
    draft, now = read(folder)
    if rev != now:
        raise _refuse("the draft changed since it was read (another tab or program edited it): reload it", "stale")
    changed = edit(draft)
    if not (folder / ORIGINAL).exists():
        shutil.copy2(folder / DRAFT_FILE, folder / ORIGINAL)
    save_draft(changed, folder)  # atomically: a reader never sees half a file
    return changed, revision(folder)


def frame_signer(folder: Path, read_frame: Callable[[Path], Any]) -> Signer:
    """A Signer over the frames of the draft in `folder` (`read_frame`: a path -> a BGR frame), reading at most
    SIGN_MEMBERS of the page and SIGN_OTHERS of every other page, SIGN_OTHERS_TOTAL in all."""
    from engine.explore.signatures import stable_signatures

    def frames(paths: Sequence[str], most: int) -> list:
        step = max(1, -(-len(paths) // most))
        return [read_frame(inside(folder, p)) for p in list(paths)[::step][:most]]

    def sign(members: Sequence[str], others: Sequence[Sequence[str]], prefix: str, title: Any) -> list:
        each = max(1, min(SIGN_OTHERS, SIGN_OTHERS_TOTAL // max(1, len(others))))
        rest = [frame for group in others[:SIGN_OTHERS_TOTAL] for frame in frames(group, each)]
        return list(stable_signatures(frames(members, SIGN_MEMBERS), rest, prefix=prefix, title=title))

    return sign


# --------------------------------------------------------------------------------------------------- accept


@dataclass(frozen=True)
class Accepted:
    """What ``accept`` wrote: the files (relative to `folder`), the ones replaced with their backups, the files it
    found unchanged."""

    folder: Path
    written: list[str]
    replaced: list[tuple[str, str]]
    unchanged: list[str]


def output_folder(folder: Path, out: str) -> Path:
    """Where a graph is accepted: the draft folder itself ("") or a folder below it, not one of its own."""
    target = inside(folder, out)
    relative = target.relative_to(folder.resolve()).parts
    if relative and relative[0] in RESERVED:
        raise _refuse(f"{_shown(out)} is the draft's own {relative[0]}/ folder: choose another", "invalid")
    if target.exists() and not target.is_dir():
        raise _refuse(f"{_shown(out)} is a file, not a folder", "invalid")
    return target


def backup(path: Path) -> Path:
    """`path` moved aside to ``NAME.<time>[-N].bak`` beside it (no graph or pack reads a .bak)."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    kept, number = path.with_name(f"{path.name}.{stamp}.bak"), 1
    while kept.exists():
        number += 1
        kept = path.with_name(f"{path.name}.{stamp}-{number}.bak")
    path.rename(kept)
    return kept


def _files(root: Path) -> list[Path]:
    found = []
    for where, _, names in os.walk(root, followlinks=False):
        found += [Path(where) / n for n in names if not (Path(where) / n).is_symlink()]
    return sorted(found)


def _frames_beside(draft: Any, folder: Path, staging: Path) -> list[Path]:
    """Links in `staging` to the draft's folders of member frames (write_graph cuts templates from the frames
    below the folder it writes), after every member path is checked to stay inside the draft folder."""
    tops: set[str] = set()
    for owner in [*draft.pages, *draft.popups, *draft.loading]:
        for member in owner.members:
            path = inside(folder, member)
            tops.add(path.relative_to(folder).parts[0])
    links = []
    for top in sorted(tops - {"assets"}):
        link = staging / top
        link.symlink_to(folder / top, target_is_directory=(folder / top).is_dir())
        links.append(link)
    return links


def accept(folder: Path, out: str = "", *, overwrite: bool = False) -> Accepted:
    """The draft in `folder` written as graph YAML (and its asset pack) into `out` below it. The graph is written
    to a staging folder first; a file that would replace a different one is refused (reason ``exists``, listing
    them) unless `overwrite`, and then the old one is kept as a .bak beside it."""
    from engine.explore.write import write_graph

    folder = Path(folder).resolve()
    draft, _ = read(folder)
    target = output_folder(folder, out)
    with tempfile.TemporaryDirectory(dir=folder, prefix=".accept-") as staging:
        links = _frames_beside(draft, folder, Path(staging))
        write_graph(draft, Path(staging))
        for link in links:
            link.unlink()
        staged = {p.relative_to(staging).as_posix(): p for p in _files(Path(staging))}
        dests = {rel: inside(target, rel) for rel in staged}  # every one checked before anything moves
        differ = [rel for rel, p in staged.items() if dests[rel].exists()
                  and (dests[rel].is_dir() or dests[rel].read_bytes() != p.read_bytes())]
        if differ and not overwrite:
            raise _refuse(f"accepting would replace {len(differ)} file(s) in {target}: {', '.join(differ[:5])}"
                          f"{' ...' if len(differ) > 5 else ''}", "exists", exists=differ)
        target.mkdir(parents=True, exist_ok=True)
        written, replaced, unchanged = [], [], []
        for rel, source in staged.items():
            dest = dests[rel]
            if rel not in differ and dest.exists():
                unchanged.append(rel)
                continue
            if dest.exists():
                replaced.append((rel, backup(dest).relative_to(target).as_posix()))
            dest.parent.mkdir(parents=True, exist_ok=True)
            os.replace(source, dest)
            written.append(rel)
    log.info("draft %s accepted into %s: %d written, %d replaced", folder, target, len(written), len(replaced))
    return Accepted(folder=target, written=written, replaced=replaced, unchanged=unchanged)
