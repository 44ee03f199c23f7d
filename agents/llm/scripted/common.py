"""Small helpers every part of the offline demo model uses: a tool call, the tool names, a message's text."""

import json
import uuid


def call(name, arguments, **dumps):
    """A tool call as the model would stream it; `dumps` passes json.dumps options (ensure_ascii)."""
    return {"id": f"call_{uuid.uuid4().hex[:24]}", "name": name, "arguments": json.dumps(arguments, **dumps)}


def tool_names(tools):
    return {t.get("function", {}).get("name") for t in tools or []}


def text_of(content):
    if isinstance(content, list):  # content parts
        return " ".join(p.get("text", "") for p in content if isinstance(p, dict))
    return content or ""
