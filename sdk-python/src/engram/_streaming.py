"""The live event stream's wire format: Server-Sent Events (docs/architecture.md#live-events)."""
from __future__ import annotations

from typing import Any, Dict, List, Optional

from typing import TypedDict


class EngramEvent(TypedDict):
    """One event of GET /v1/events/stream: `id` its number, `type` its event type, `data` the webhook body."""

    id: str
    type: str
    data: Dict[str, Any]


class SSEDecoder:
    """Turns lines into messages as the SSE specification parses them; comments (keepalives) are skipped."""

    def __init__(self) -> None:
        self._id: Optional[str] = None
        self._event: Optional[str] = None
        self._data: List[str] = []

    def line(self, line: str) -> Optional[Dict[str, Optional[str]]]:
        """Feeds one line (without its end); answers a message when the line ends one."""
        line = line.rstrip("\r\n")
        if line == "":
            if not self._data and self._event is None and self._id is None:
                return None
            message = {"id": self._id, "event": self._event, "data": "\n".join(self._data)}
            self._id, self._event, self._data = None, None, []
            return message
        if line.startswith(":"):
            return None
        field, _, value = line.partition(":")
        if value.startswith(" "):
            value = value[1:]
        if field == "data":
            self._data.append(value)
        elif field == "event":
            self._event = value
        elif field == "id" and "\0" not in value:
            self._id = value
        return None
