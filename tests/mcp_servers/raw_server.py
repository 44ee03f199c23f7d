"""A test MCP server written by hand (JSON-RPC lines over stdio, no SDK): it says what the SDK's own
servers refuse to send (their results are validated before they leave), as a server written with
anything else may. `RAW_TOOLS`: the JSON list its tools/list answers; `RAW_CALL_RESULT`: what every tools/call gets
(default: the text "ran")."""

import json
import os
import sys


def answer(request_id, result):
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": request_id, "result": result}) + "\n")
    sys.stdout.flush()


for line in sys.stdin:
    message = json.loads(line)
    method, request_id = message.get("method"), message.get("id")
    if request_id is None:  # a notification
        continue
    if method == "initialize":
        answer(request_id, {"protocolVersion": message["params"]["protocolVersion"], "capabilities": {"tools": {}},
                            "serverInfo": {"name": "raw", "version": "1"}})
    elif method == "tools/list":
        answer(request_id, {"tools": json.loads(os.environ["RAW_TOOLS"])})
    elif method == "tools/call":
        answer(request_id, json.loads(os.environ.get("RAW_CALL_RESULT") or '{"content": [{"type": "text", "text": "ran"}]}'))
    else:
        answer(request_id, {})
