"""What a task sees on the navigator's last frame: where a button's template matches, and the values of the
graph's OCR fields. Templates are compiled once per runner, fields read once per frame (a condition that names
one field twice, or a repeat that checks it every round on an unchanged frame, costs one OCR call)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from engine.core.errors import MissingAsset

if TYPE_CHECKING:
    from engine.core.context import RunContext
    from engine.navigation.navigator import Navigator


class TaskSight:
    def __init__(self, nav: Navigator, ctx: RunContext, templates: dict[str, Any]) -> None:
        self.nav, self.ctx, self.templates = nav, ctx, templates
        self._reads: tuple[Any, dict[str, str | None]] = (None, {})

    def matches(self, button: str, area: Any, limit: int) -> list:
        """The button's template matches on the last frame inside `area` (default the screen), best first."""
        from verifiers.template import find_matches

        frame = self.nav.observer.prepare(self.nav.last_frame)
        return find_matches(frame, self.template(button), tuple(area) if area else None, limit=limit)

    def shows(self, button: str) -> bool | None:
        """Whether the button's template matches anywhere on the last frame; None when it has no template."""
        try:
            return bool(self.matches(button, None, 1))
        except MissingAsset:
            return None

    def template(self, button: str) -> Any:
        """The button's template compiled once per runner (verifiers.template)."""
        from engine.config.schema import TemplateSignature
        from verifiers.template import compile_template

        if button not in self.templates:
            sig = TemplateSignature(type="template", button=button)
            self.templates[button] = compile_template(sig, self.nav.graph, self.nav.observer.assets)
        return self.templates[button]

    def field(self, name: str, page: str | None) -> str | None:
        """A text field's value (its pattern's extract) on the last frame, read once per frame; None unread.
        Each read goes to the transcript with the page it was read on."""
        from verifiers.ocr import read_value

        frame = self.nav.last_frame
        if frame is None:
            return None
        if self._reads[0] is not frame:
            self._reads = (frame, {})
        cache = self._reads[1]
        if name not in cache:
            spec = next((f for p in self.nav.graph.pages for f in p.fields if f.name == name), None)
            if spec is None:
                return None
            text, value, confidence = read_value(self.nav.observer.prepare(frame), spec.area, spec.pattern)
            self.ctx.record("read", field=name, page=page, text=text, value=value,
                            confidence=round(float(confidence or 0), 3))
            cache[name] = value
        return cache[name]
