"""No words in the style sheets: text drawn by CSS (`content:`) cannot be translated, so a French
or Chinese page showed "Requester:", "Steps:", "(stopped)" in English. Words come from the page
(a translated data-label, read with attr()); CSS keeps only symbols."""

import re
from pathlib import Path

import pytest

from tests.inbox_helpers import make_request, user

CSS = Path(__file__).resolve().parents[2] / "static" / "css"


def test_no_style_sheet_draws_words():
    words = []
    for sheet in sorted(CSS.glob("*.css")):
        for value in re.findall(r"(?<![\w-])content:\s*([^;}]+)", sheet.read_text()):
            text = re.sub(r"attr\([^)]*\)|\\[0-9A-Fa-f]{1,6}\s?", "", value)
            if re.search(r"[^\W\d_]{2,}", text):
                words.append(f"{sheet.name}: content: {value.strip()}")
    assert not words, words


@pytest.mark.django_db
def test_a_phone_inbox_and_the_chat_label_in_the_readers_language(client, demo, api):
    make_request("alice")
    client.force_login(user("finn"))
    body = client.get("/inbox/", HTTP_ACCEPT_LANGUAGE="fr").content.decode()
    row = body[body.index('<tr data-approval-id="'):]
    row = row[:row.index("</tr>")]
    for label in ("Demandeur", "Décideur", "Ancienneté", "Échéance"):
        assert f'data-label="{label}"' in row, label
    thread = api("alice").post("/api/threads/", {"agent": "support"}, format="json").json()["id"]
    client.force_login(user("alice"))
    chat = client.get(f"/chat/{thread}/", HTTP_ACCEPT_LANGUAGE="fr").content.decode()
    assert 'class="step-trail" aria-label="Étapes du workflow" data-label="Étapes du workflow"' in chat
