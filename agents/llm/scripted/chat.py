"""The offline demo model's chat-page demos, for any agent."""

import re

# Chat-page demos (any agent): a paced reply to watch stream (and Stop), model output that tries
# to inject HTML, and a model outage (RUN_ERROR with Retry).
_STORY = (
    "Once upon a time a small bank kept its ledgers in a lighthouse by the sea. "
    "Every evening the keeper climbed the stairs, counted the coins twice and wrote the totals "
    "in a book with a green cover.\n\n"
    "One winter night a storm took the power, and the keeper counted by candlelight. "
    "A clerk from the town knocked on the door and asked to move all the money across the bay "
    "before morning. The keeper smiled, wrote the request on a card and said that a second person "
    "would have to read it first.\n\n"
    "By dawn the storm had passed. The reviewer read the card, changed one number, and signed it. "
    "The money crossed the bay exactly once, the book with the green cover was balanced, and the "
    "keeper went to sleep while the gulls argued about breakfast. The end."
)
_HTML_DEMO = (
    "Here is **bold**, *italic* and `code`, a [safe link](https://example.com/docs) and raw HTML "
    "that must stay text:\n\n"
    "<script>window.aguiPwned = true; document.title = 'pwned';</script>\n"
    "<img src=\"x\" onerror=\"window.aguiPwned = true\">\n"
    "[a javascript link](javascript:window.aguiPwned=true) and <b onclick=\"window.aguiPwned=true\">bold tag</b>"
)


def chat_demo_reply(text):
    if re.search(r"\blong story\b", text, re.I):
        return {"text": _STORY, "pace": 0.05}
    if re.search(r"\b(raw html|html demo)\b", text, re.I):
        return {"text": _HTML_DEMO}
    if re.search(r"\bmodel outage\b", text, re.I):
        return {"error": "the offline demo model simulated an outage"}
    return None
