""".env.example lists every setting, with its real default."""

from __future__ import annotations

import re
from pathlib import Path

from app.settings import ENV_PREFIX, Settings

EXAMPLE = Path(__file__).resolve().parents[2] / ".env.example"


def entries() -> dict[str, str]:
    found = {}
    for line in EXAMPLE.read_text(encoding="utf-8").splitlines():
        match = re.match(rf"^#? ?({ENV_PREFIX}[A-Z0-9_]+)=(.*)$", line)
        if match:
            found.setdefault(match.group(1), match.group(2))
    return found


def test_every_setting_is_listed_with_its_default() -> None:
    listed = entries()
    for name, field in Settings.model_fields.items():
        if field.exclude:
            continue
        key = ENV_PREFIX + name.upper()
        assert key in listed, f"{key} is missing from .env.example"
        if field.default is None or isinstance(field.default, dict):
            continue
        default = field.default
        shown = str(default).lower() if isinstance(default, bool) else str(default)
        assert listed[key] == shown, f"{key}: .env.example says {listed[key]!r}, not {shown!r}"
