"""Why the observer said what it said about one frame: every page and popup candidate with each signature's score,
threshold and area, and a sentence for why the winner won or why nothing did (the studio's recognition view).

The answer is the observer's own (``Observer.observe``); the candidates are its compiled checks, every one run
(``score_all``) so that a miss shows its score even where ``observe`` stopped at an earlier miss. Nothing
here recognises anything the observer does not.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from engine.core.results import Evidence, Observation
from engine.observe.checks import WEAK_CONFIDENCE, CombinedCheck, Target
from engine.observe.observer import AMBIGUITY_MARGIN, Observer
from verifiers.common import frame_scope, pyramid, signature_name


def _leaves(check: Any) -> list[Any]:
    return [leaf for c in check.checks for leaf in _leaves(c)] if isinstance(check, CombinedCheck) else [check]


def threshold_of(check: Any, evidence: Evidence | None) -> float | None:
    """The score at or above which `evidence` of `check` hits: a template's or OCR's threshold, a colour's
    ``1 - tolerance / 255`` (the colour score is ``1 - difference / 255``); None when the check has none."""
    leaves = _leaves(check)
    if evidence is not None:
        named = [leaf for leaf in leaves if leaf.name == evidence.signature]
        same = [leaf for leaf in named if leaf.channel == evidence.channel]
        leaves = same or named or leaves
    leaf = leaves[-1]
    if hasattr(leaf, "threshold"):
        if getattr(leaf, "flat", None) and all(leaf.flat):
            return round(1.0 - leaf.color_tolerance / 255.0, 4)
        return round(float(leaf.threshold), 4)
    if hasattr(leaf, "tolerance"):
        return round(1.0 - leaf.tolerance / 255.0, 4)
    return None


def _sources(graph: Any, target: Target) -> list[Any]:
    """The signatures as the graph writes them, for a target's checks (the page's, the popup's or loading's)."""
    try:
        if target.kind == "page":
            return list(graph.page(target.name).signatures)
        if target.kind == "popup":
            return list(graph.popup(target.name).signatures)
    except KeyError:
        return []
    return list(graph.loading_signatures or ())


def _source(sources: list[Any], name: str) -> dict[str, Any] | None:
    """The written signature a compiled check named `name` came from (an any_of is named after its first
    alternative when it has no name of its own), as JSON, to be tested on a folder of frames."""
    for sig in sources:
        names = {signature_name(sig)}
        if getattr(sig, "of", None) and not sig.name:
            names.add(signature_name(sig.of[0]))
        if name in names:
            return sig.model_dump(mode="json", exclude_none=True)
    return None


def _signature(check: Any, evidence: Evidence | None, sources: list[Any]) -> dict[str, Any]:
    leaf = _leaves(check)[-1]
    row: dict[str, Any] = {"signature": check.name, "source": _source(sources, check.name), "channel": evidence.channel if evidence else check.channel,
                           "threshold": threshold_of(check, evidence), "area": list(getattr(leaf, "area", ()) or ()),
                           "search": list(getattr(leaf, "search", ()) or ()) or None, "strong": bool(check.strong)}
    if evidence is None:
        row.update(hit=None, score=None, box=None, text=None, note="not run: an earlier signature missed "
                                                                     "(OCR is slow; the observer stops there too)")
    else:
        row.update(hit=evidence.hit, score=round(float(evidence.score), 4),
                   box=list(evidence.box) if evidence.box else None, text=evidence.text)
    return row


def _candidate(target: Target, rows: list[tuple[Any, Evidence | None]], obs: Observation,
               sources: list[Any]) -> dict[str, Any]:
    signatures = [_signature(check, evidence, sources) for check, evidence in rows]
    hit = bool(rows) and all(e is not None and e.hit for _, e in rows)
    scores = [s["score"] for s in signatures if s["score"] is not None]
    score = min(scores) if hit and scores else 0.0
    if hit and not target.strong:
        score *= WEAK_CONFIDENCE
    chosen = (target.kind == "page" and target.name == obs.page) or (target.kind == "popup" and
                                                                     target.name in obs.popups)
    note = ""
    if target.kind == "popup" and target.pages is not None and obs.page and obs.page not in target.pages:
        note = f"only looked for on {', '.join(sorted(target.pages))}"
    elif hit and not target.strong:
        note = "weak evidence only (colour, a flat or a tiny template)"
    passed = next((i for i, (_, e) in enumerate(rows) if e is None or not e.hit), len(rows))
    return {"name": target.name, "kind": target.kind, "hit": hit, "score": round(score, 4), "strong": target.strong,
            "priority": target.priority, "chosen": chosen, "passed": passed, "note": note, "signatures": signatures}


def _first_miss(candidate: dict[str, Any]) -> str:
    for row in candidate["signatures"]:
        if row["hit"] is False:
            text = f" (read {row['text']!r})" if row.get("text") else ""
            return (f"{candidate['name']}: {row['signature']} ({row['channel']}) scored {row['score']:.3f} below its "
                    f"threshold {row['threshold']}{text}")
    return f"{candidate['name']}: no signature"


def why(obs: Observation, candidates: list[dict[str, Any]]) -> str:
    """One or two sentences: why the observer named this page (and popups), or why it named none."""
    pages = [c for c in candidates if c["kind"] == "page"]
    hits = sorted((c for c in pages if c["hit"]), key=lambda c: (c["strong"], c["score"]), reverse=True)
    popups = [c for c in candidates if c["kind"] == "popup" and c["chosen"]]
    tail = ""
    if popups:
        tail = " Popups: " + ", ".join(f"{c['name']} (priority {c['priority']}, score {c['score']:.3f})"
                                       for c in popups) + "."
    if obs.black_frame:
        return "The frame is flat (black or one colour): nothing is matched on such a frame."
    if obs.loading:
        return "The loading screen's signatures hit: the frame is loading, nothing else is looked for."
    if obs.page is not None:
        won = next((c for c in pages if c["name"] == obs.page), None)
        count = len(won["signatures"]) if won else 0
        lead = ((f"all {count} of its signatures hit, the lowest at" if count > 1 else "its signature hit at") +
                f" {won['score']:.3f}") if won else "it hit"
        others = [c for c in hits if c["name"] != obs.page]
        if not others:
            return f"{obs.page} won: {lead}, and no other page hit.{tail}"
        runner = others[0]
        if won and won["strong"] and not runner["strong"]:
            return (f"{obs.page} won: {lead}; {runner['name']} hit too but on weak evidence only (colour, a flat "
                    f"or tiny template), and strong evidence beats weak.{tail}")
        margin = (won["score"] if won else 0.0) - runner["score"]
        return (f"{obs.page} won: {lead}, {margin:.3f} ahead of {runner['name']} (the margin needed is "
                f"{AMBIGUITY_MARGIN}); the confidence is lowered for the other hits.{tail}")
    if obs.ambiguous:
        listed = ", ".join(f"{c['name']} {c['score']:.3f}" for c in hits[:4])
        return (f"No page named: several hit ({listed}) and none led the next by {AMBIGUITY_MARGIN} on strong "
                f"evidence.{tail}")
    if obs.popups:
        return f"No page hit; a popup covers the screen.{tail}"
    closest = sorted(pages, key=lambda c: (-c["passed"], -max((s["score"] or 0.0) for s in c["signatures"])))[:3]
    return "No page hit. Closest: " + "; ".join(_first_miss(c) for c in closest) + "." if closest else "No page hit."


def explain(observer: Observer, frame: np.ndarray) -> dict[str, Any]:
    """The observer's answer for `frame`, every candidate with its signatures' scores, and why.

    Returns:
        ``{observation: Observation.to_dict(), candidates: [{name, kind, hit, score, strong, priority, chosen,
        passed, note, signatures: [{signature, source, channel, hit, score, threshold, area, search, box, text,
        strong}]}],
        why, width, height}``; candidates are the loading screen, then pages, then popups, hits first.
    """
    obs = observer.observe(frame)
    prepared = observer.prepare(frame)
    candidates = [_candidate(t, rows, obs, _sources(observer.graph, t)) for t, rows in score_all(observer, prepared)]
    candidates.sort(key=lambda c: ({"loading": 0, "page": 1, "popup": 2}.get(c["kind"], 3), not c["chosen"],
                                   not c["hit"], -max([s["score"] or 0.0 for s in c["signatures"]] or [0.0])))
    height, width = prepared.shape[:2]
    return {"observation": obs.to_dict(), "candidates": candidates, "why": why(obs, candidates),
            "width": width, "height": height}


def score_all(observer: Observer, frame: np.ndarray) -> list[tuple[Target, list[tuple[Any, Evidence | None]]]]:
    """Every compiled check of the loading screen, every page and every popup scored on `frame`, where
    ``observe`` stops at a target's first miss (the studio's recognition view). An OCR check after a miss is not
    run (None): it is slow, and the observer would not have run it either."""
    with observer._lock:
        frame = observer.prepare(frame)
        with frame_scope(frame):
            pyramid(frame).convert_whole()
            targets = ([observer.loading] if observer.loading is not None else []) + observer.pages + observer.popups
            scored = []
            for target in targets:
                rows: list[tuple[Any, Evidence | None]] = []
                for check in target.checks:
                    missed = any(e is not None and not e.hit for _, e in rows)
                    rows.append((check, None if missed and check.channel == "ocr" else check.verify(frame)))
                scored.append((target, rows))
            return scored
