"""Who decides a request, in the reader's words: a request its requester confirms said "requester"
(the engine's value) on every language's request page, reading pane, mail confirmation and audit trail."""

import re

import pytest

from tests.inbox_helpers import make_request

pytestmark = pytest.mark.django_db


def test_the_request_page_says_the_requester_decides_in_the_readers_language(login):
    req = make_request("alice", group=None)
    page = login("admin").get(f"/inbox/{req.pk}/", HTTP_ACCEPT_LANGUAGE="fr").content.decode()
    who = re.search(r"<dt>Qui décide</dt><dd>(.*?)</dd>", page, re.S)
    assert who and who[1].startswith("le demandeur"), who and who[1]
    lines = " ".join(re.findall(r'<ul class="change-lines">(.*?)</ul>', page, re.S))
    assert "le demandeur" in lines and ">requester<" not in lines, lines
    preview = login("admin").get(f"/inbox/{req.pk}/?partial=preview", HTTP_ACCEPT_LANGUAGE="fr").content.decode()
    assert ">requester<" not in preview and "le demandeur" in preview
