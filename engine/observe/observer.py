"""The observer: one frame (and what the navigator expects) -> an Observation, cheapest check first.

Every page's and popup's signatures are compiled once (verifiers.color/template/ocr), so observing is slicing
and matching only. Order of work for ``observe(frame, expected)``:

1. a flat frame (black, or one colour) is ``black_frame`` and nothing else;
2. the graph's loading screen signatures: a hit is ``loading`` and nothing else;
3. the expected page; when it hits on a template (or OCR), no other page is scanned;
4. popups by priority (those allowed on the page found, or all of them when no page is known yet), and for a popup
   seen, the buttons its dismiss taps search for (engine.observe.taps);
5. the expected page's neighbours (one link away, either direction), then every other page in definition order
   (ALAS's order), recording every page that hits so that ambiguity is seen rather than hidden;
6. only with ``escalate=True``: free-text OCR (when the observer was given ``ocr``) and the vision model (when
   given ``vision``) for a frame nothing explained;
7. a page named with no popup: is something covering it (engine.observe.cover)? Against the page's clean reference
   once a caller ``remember``ed one (a frame a tap went through), else by the brightness of its matched templates.
   A covered page comes back with ``Observation.cover`` set, and is not verified (a known popup's own signatures
   are its fast path: a page with a popup named is never checked).

Within a page or popup, signatures run cheapest first (colour, template, OCR) and stop at the first miss. When
no page is named, the evidence ends with the closest misses (engine.observe.checks.closest_misses): the best-scoring
miss of each of the few pages that came nearest, named ``page/signature``, so a graph author sees why.

Evidence rules: colour alone never names a page or popup whose button has a template in the asset pack (the
colour check is kept as a cheap pre-filter and the template is required as well), and a page or popup whose
template is missing from the pack is never named (it is reported once in the log and in ``unavailable``).

Strength: a "strong" page or popup has a textured template of at least 256 pixels or an OCR signature; colour,
flat templates and tiny templates (ALAS's 9x16 IDLE marks, which match textured backgrounds by chance) are weak.
A weak popup is not reported over a page seen on strong evidence, unless that page is covered (7.): the cover is it.

Ambiguity rule: when several pages hit, "strong" pages (at least one template or OCR signature) beat colour-only
ones; among strong hits the best score wins when it leads the runner-up by at least ``AMBIGUITY_MARGIN``, and is
reported with the others in ``Observation.ambiguous`` and a confidence scaled by 0.8; otherwise the answer is
page None with every hit in ``ambiguous`` and a low confidence. A page with no signatures (the graph's
unknown_page) is never observed.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any, Callable, Sequence

import numpy as np

from engine.config.assets import AssetPack
from engine.config.schema import AnyOfSignature, ColorSignature, Graph, OcrSignature, Page, Popup, TemplateSignature
from engine.core.errors import BadFrame, VerificationError
from engine.core.results import Evidence, Observation
from engine.device.frames import fit, frame_problem
from engine.observe.checks import CombinedCheck, Target, closest_misses, template_means
from engine.observe.cover import CoverReport, Thumb, judge, thumb
from engine.observe.taps import compile_search_taps, locate
from verifiers import color as color_verifier
from verifiers import ocr as ocr_verifier
from verifiers import template as template_verifier
from verifiers.common import frame_scope, pyramid, signature_name

log = logging.getLogger(__name__)

AMBIGUITY_MARGIN = 0.05


class _Unavailable(Exception):
    pass


# --------------------------------------------------------------------------------------------------- observer


class Observer:
    """Classifies frames of one server-resolved graph against one asset pack (see the module docstring)."""

    def __init__(
        self,
        graph: Graph,
        assets: AssetPack,
        *,
        ocr: bool | Callable[[np.ndarray], list] | None = None,
        vision: Any = None,
    ) -> None:
        self.graph = graph.require_resolved()
        self.assets = assets
        self.ocr = ocr_verifier.find_text if ocr is True else (ocr or None)
        self.vision = vision
        self.last_vision: Any = None
        """The vision model's last usable answer (its `tap` for a blocking element no list names), or None."""
        self.resolution = tuple(graph.resolution)
        self.unavailable: dict[str, str] = {}
        self._lock = threading.Lock()
        self._latency: dict[str, float] = {}
        start = time.perf_counter()

        self.pages: list[Target] = []
        for page in graph.pages:
            if page.name == graph.unknown_page or not page.signatures:
                continue
            target = self._compile_target(page.name, "page", page.signatures, page)
            if target is not None:
                self.pages.append(target)
        self.page_by_name = {t.name: t for t in self.pages}

        popups: list[Target] = []
        for popup in graph.popups:
            target = self._compile_target(popup.name, "popup", popup.signatures, None, popup)
            if target is not None:
                popups.append(target)
        # Stable sort: equal priorities keep definition order, as ALAS's handlers do.
        self.popups = sorted(popups, key=lambda t: -t.priority)
        self.loading = (
            self._compile_target("loading", "loading", graph.loading_signatures, None)
            if graph.loading_signatures
            else None
        )
        self.neighbours = self._neighbours(graph)
        self.search_taps = compile_search_taps(self.graph, assets)  # dismiss taps that find their button first
        self.references: dict[str, Thumb] = {}
        """A clean frame of each page, reduced (engine.observe.cover.thumb): what a page looks like uncovered."""
        self._means = {t.name: template_means(t) for t in self.pages}
        log.debug(
            "observer compiled %d pages, %d popups in %.1f ms (%d unavailable)",
            len(self.pages), len(self.popups), (time.perf_counter() - start) * 1000, len(self.unavailable),
        )

    def adopt(self, graph: Graph, assets: AssetPack) -> None:
        """Take up a changed graph and pack in place (a popup learned or demoted mid-run, engine.learning.learner):
        every holder of this observer sees the new targets; the vision client and the latency record stay."""
        fresh = Observer(graph, assets, ocr=self.ocr, vision=self.vision)
        with self._lock:
            for key, value in vars(fresh).items():
                if key not in ("_lock", "_latency", "last_vision", "references"):
                    setattr(self, key, value)

    # ---- compiling

    @staticmethod
    def _neighbours(graph: Graph) -> dict[str, list[str]]:
        """Pages one link away from each page, out-links first (where a mis-tap most likely lands)."""
        into: dict[str, list[str]] = {}
        for page in graph.pages:
            for link in page.links:
                into.setdefault(link.expected_page, []).append(page.name)
        result: dict[str, list[str]] = {}
        for page in graph.pages:
            out = [link.expected_page for link in page.links]
            result[page.name] = list(dict.fromkeys(n for n in out + into.get(page.name, []) if n != page.name))
        return result

    def _compile_target(
        self, name: str, kind: str, signatures: Sequence[Any], page: Page | None, popup: Popup | None = None
    ) -> Target | None:
        try:
            checks = [self._compile(sig, page) for sig in signatures]
        except _Unavailable as exc:
            self.unavailable[name] = str(exc)
            log.warning("%s %s cannot be observed: %s", kind, name, exc)
            return None
        strong = any(c.strong for c in checks)
        return Target(
            name=name,
            kind=kind,
            checks=tuple(sorted(checks, key=lambda c: c.cost)),
            strong=strong,
            priority=popup.priority if popup else 0,
            pages=frozenset(popup.pages) if popup and popup.pages is not None else None,
        )

    def _compile(self, sig: Any, page: Page | None):
        if isinstance(sig, ColorSignature):
            check = color_verifier.compile_color(sig, self.graph, page)
            asset = self._button_asset(sig.button)
            if asset is None:
                return check
            # A template exists for this button: colour is only the pre-filter.
            confirm = TemplateSignature(type="template", button=sig.button, name=check.name)
            return CombinedCheck(check.name, [check, self._compile(confirm, page)], need_all=True)
        if isinstance(sig, TemplateSignature):
            try:
                return template_verifier.compile_template(sig, self.graph, self.assets, page)
            except VerificationError as exc:
                raise _Unavailable(exc.message) from None
        if isinstance(sig, OcrSignature):
            return ocr_verifier.compile_ocr(sig, self.graph, page)
        if isinstance(sig, AnyOfSignature):
            alternatives, reasons = [], []
            for alternative in sig.of:
                try:
                    alternatives.append(self._compile(alternative, page))
                except _Unavailable as exc:
                    reasons.append(str(exc))
            if not alternatives:
                raise _Unavailable("; ".join(reasons))
            return CombinedCheck(signature_name(sig) if sig.name else alternatives[0].name, alternatives,
                                 need_all=False)
        raise TypeError(f"unknown signature {sig!r}")

    def _button_asset(self, button: str | None) -> str | None:
        if not button:
            return None
        try:
            asset = self.graph.button(button).asset
        except KeyError:
            return None
        if not isinstance(asset, str) or self.assets.get(asset) is None:
            return None
        return asset

    # ---- observing

    def prepare(self, frame: np.ndarray) -> np.ndarray:
        """`frame` at the graph's resolution (scaled when it has the same shape at another size).

        Raises:
            BadFrame: not a BGR image, or a shape that cannot be scaled to the graph's resolution.
        """
        if frame is None or frame.ndim != 3 or frame.shape[2] != 3 or frame.dtype != np.uint8:
            raise BadFrame(f"not a BGR uint8 frame: {getattr(frame, 'shape', None)}")
        if (frame.shape[1], frame.shape[0]) != self.resolution:
            frame = fit(frame, self.resolution)
        return frame

    def observe(
        self, frame: np.ndarray, expected: str | None = None, escalate: bool = False, near: bool = False
    ) -> Observation:
        """What `frame` shows (see the module docstring for the order of work and the ambiguity rule).

        Args:
            expected: the page the caller expects; checked first.
            escalate: ask the vision verifier when nothing is recognised.
            near: only the expected page, its neighbours and the popups (not every page): for looks while a
                hop is still settling, where a frame that is none of them counts as loading anyway.
        """
        with self._lock:
            frame = self.prepare(frame)
            with frame_scope(frame):
                return self._observe(frame, expected, escalate, near and expected is not None)

    def _observe(self, frame: np.ndarray, expected: str | None, escalate: bool, near: bool = False) -> Observation:
        start = time.perf_counter()
        self._latency: dict[str, float] = {}
        if frame_problem(frame) is not None:
            return Observation(None, black_frame=True, confidence=1.0,
                               latency_ms={"total": (time.perf_counter() - start) * 1000.0})
        if expected is None:
            pyramid(frame).convert_whole()  # every page will be checked: their areas add up to more than the frame
        evidence: list[Evidence] = []
        if self.loading is not None:
            hit, score, found = self.loading.match(frame, None, self._latency)
            if hit:
                evidence.extend(found)
                return self._finish(start, None, (), evidence, loading=True, confidence=score)

        hits: list[tuple[Target, float]] = []
        misses: list[tuple[Target, list[Evidence]]] = []
        scanned: set[str] = set()
        settled = False
        target = self.page_by_name.get(expected) if expected else None
        if target is not None:
            scanned.add(target.name)
            hit, score, found = target.match(frame, evidence, self._latency)  # the expected page's is always reported
            if hit:
                hits.append((target, score))
                settled = target.strong
            else:
                misses.append((target, found))

        popup_hits: list[tuple[Target, float]] = []
        if settled:
            popup_hits = self._popups(frame, evidence, target.name, strong_only=True)
        else:
            order = list(self.neighbours.get(expected, ())) if expected else []
            if not near:
                order += [t.name for t in self.pages]
                pyramid(frame).convert_whole()  # the expected page missed: every page will be checked
            for name in order:
                if name in scanned or name not in self.page_by_name:
                    continue
                scanned.add(name)
                candidate = self.page_by_name[name]
                hit, score, found = candidate.match(frame, None, self._latency)
                if hit:
                    evidence.extend(found)
                    hits.append((candidate, score))
                else:
                    misses.append((candidate, found))
            page_name = self._choose(hits)[0]
            popup_hits = self._popups(frame, evidence, page_name)

        page, ambiguous, confidence = self._choose(hits)
        if page is not None and self.page_by_name[page].strong:
            # Weak evidence (colour, tiny or flat templates) never overrides a page seen on strong evidence.
            popup_hits = [(t, score) for t, score in popup_hits if t.strong]
        popups = tuple(t.name for t, _ in popup_hits)
        evidence.extend(locate(self.search_taps, frame, popups))  # where a moving button is now
        if page is None and not ambiguous:
            confidence = popup_hits[0][1] if popup_hits else confidence
            evidence.extend(closest_misses(misses))  # so a graph author sees why no page was named
        if escalate and page is None and not popups and not ambiguous:
            page, popups, confidence = self._escalate(frame, evidence)
        cover = self._cover(frame, page, evidence) if page is not None and not popups and not ambiguous else None
        if cover is not None and (weak := [t.name for t, _ in self._popups(frame, evidence, page) if not t.strong]):
            popups, cover = tuple(weak), None  # a weak popup's own evidence, and the page under it is covered
        return self._finish(start, page, popups, evidence, ambiguous=ambiguous, confidence=confidence, cover=cover)

    def _cover(self, frame: np.ndarray, page: str, evidence: list[Evidence]) -> CoverReport | None:
        """What covers `page` on `frame` when no popup was named (engine.observe.cover): against the page's clean
        reference when one was remembered, else the brightness of its own matched templates. None: nothing."""
        t = time.perf_counter()
        means = self._means.get(page, {})
        report = judge(frame, self.references.get(page), [(e.box, means[e.signature]) for e in evidence
                                                          if e.hit and e.box is not None and e.signature in means])
        self._latency["cover"] = self._latency.get("cover", 0.0) + (time.perf_counter() - t) * 1000.0
        return report if report.covered else None

    def remember(self, page: str, frame: np.ndarray) -> None:
        """`frame` shows `page` with nothing over it (the caller knows: a tap on it went through): it becomes the
        page's clean reference, what a later frame of the page is compared with (engine.observe.cover)."""
        if page in self.page_by_name:
            with self._lock:
                self.references[page] = thumb(self.prepare(frame), detail=True)

    def _popups(
        self, frame: np.ndarray, evidence: list[Evidence], page: str | None, strong_only: bool = False
    ) -> list[tuple[Target, float]]:
        found_popups = []
        for popup in self.popups:
            if page is not None and popup.pages is not None and page not in popup.pages:
                continue
            if strong_only and not popup.strong:
                continue  # it could not be reported over a strongly seen page anyway
            hit, score, found = popup.match(frame, None, self._latency)
            if hit:
                evidence.extend(found)
                found_popups.append((popup, score))
        return found_popups

    @staticmethod
    def _choose(hits: list[tuple[Target, float]]) -> tuple[str | None, tuple[str, ...], float]:
        if not hits:
            return None, (), 0.0
        if len(hits) == 1:
            return hits[0][0].name, (), hits[0][1]
        ranked = sorted(hits, key=lambda h: (h[0].strong, h[1]), reverse=True)
        (best, best_score), (second, second_score) = ranked[0], ranked[1]
        others = tuple(t.name for t, _ in ranked[1:])
        if best.strong and (not second.strong or best_score - second_score >= AMBIGUITY_MARGIN):
            return best.name, others, best_score * 0.8
        return None, tuple(t.name for t, _ in ranked), min(0.3, best_score * 0.3)

    def _escalate(self, frame: np.ndarray, evidence: list[Evidence]):
        page, popups, confidence = None, (), 0.0
        if self.ocr is not None:
            t = time.perf_counter()
            try:
                boxes = self.ocr(frame)
                text = " | ".join(b.text for b in boxes)
                evidence.append(Evidence("ocr", "free_text", bool(text), max((b.confidence for b in boxes),
                                                                                default=0.0),
                                         latency_ms=(time.perf_counter() - t) * 1000.0, text=text))
            except VerificationError as exc:
                log.warning("free-text OCR failed: %s", exc)
        if self.vision is not None:
            t = time.perf_counter()
            # Every declared page and popup is a candidate: the model is asked exactly about what the templates
            # could not recognise (a popup whose template the pack lacks, for one).
            pages = [p for p in self.graph.page_names if p != self.graph.unknown_page]
            try:
                answer = self.vision.classify(frame, pages, [p.name for p in self.graph.popups])
            except VerificationError as exc:
                log.warning("vision answer not used: %s", exc)
                evidence.append(Evidence("vision", "vision", False, 0.0,
                                         latency_ms=(time.perf_counter() - t) * 1000.0, text=exc.message))
            else:
                self.last_vision = answer
                evidence.append(answer.evidence())
                page = answer.page
                popups = (answer.popup,) if answer.popup else ()
                confidence = answer.confidence
        return page, popups, confidence

    def escalate(self, frame: np.ndarray) -> Observation:
        """Ask the slow channels (free-text OCR, the vision model) what `frame` shows, whatever the fast ones said.

        Only declared pages and popups come back (an answer naming anything else is not used); the evidence
        says what each channel answered and how long it took.
        """
        with self._lock:
            frame = self.prepare(frame)
            start = time.perf_counter()
            self._latency = {}
            self.last_vision = None
            evidence: list[Evidence] = []
            page, popups, confidence = self._escalate(frame, evidence)
            return self._finish(start, page, popups, evidence, confidence=confidence)

    def _finish(self, start: float, page, popups, evidence, *, ambiguous=(), confidence=0.0,
                loading=False, cover=None) -> Observation:
        latency = dict(self._latency)
        for e in evidence:
            if e.channel == "vision" or e.signature == "free_text":
                latency[e.channel] = latency.get(e.channel, 0.0) + e.latency_ms
        latency["total"] = (time.perf_counter() - start) * 1000.0
        return Observation(
            page=page,
            popups=tuple(popups),
            loading=loading,
            confidence=float(confidence),
            evidence=tuple(evidence),
            latency_ms=latency,
            ambiguous=tuple(ambiguous),
            cover=cover,
        )

    def verify_page(self, frame: np.ndarray, page: str) -> tuple[bool, list[Evidence]]:
        """Whether `frame` shows `page` (its signatures only, no scan): the navigator's cheapest question."""
        target = self.page_by_name.get(page)
        if target is None:
            return False, []
        with self._lock:
            frame = self.prepare(frame)
            with frame_scope(frame):
                hit, _, found = target.match(frame, None)
        return hit, found

    def find_button(self, frame: np.ndarray, button: str) -> Evidence | None:
        """Whether a named button's template shows on `frame` (the recovery ladder looks for a home button).

        None when the button has no template in this asset pack. Compiled checks are cached per button.
        """
        cache = self.__dict__.setdefault("_button_checks", {})
        if button not in cache:
            try:
                cache[button] = (
                    self._compile(TemplateSignature(type="template", button=button), None)
                    if self._button_asset(button)
                    else None
                )
            except _Unavailable:
                cache[button] = None
        check = cache[button]
        if check is None:
            return None
        with self._lock:
            frame = self.prepare(frame)
            with frame_scope(frame):
                return check.verify(frame)

