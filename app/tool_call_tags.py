"""The tags around a Qwen3 tool call, shared by the grammar that writes calls and the
parser that reads them back."""

from __future__ import annotations

from typing import Final

__all__ = ["TOOL_CALL_CLOSE", "TOOL_CALL_OPEN"]

TOOL_CALL_OPEN: Final = "<tool_call>"
TOOL_CALL_CLOSE: Final = "</tool_call>"
