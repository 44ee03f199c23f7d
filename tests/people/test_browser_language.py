"""Someone who never chose a language reads their pages in their browser's; what is written for them
away from any page (a chat's cards and the run's outcomes, made in a worker or a socket, and their
mails) is in that language too, not LANGUAGE_CODE: a Chinese browser's chat page showed its approval
card in English beside a Chinese chat list."""

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from agents import selectors as agent_selectors
from agents import services as agent_services
from agents.models import Run
from people import selectors as people
from people import services
from people.models import Profile

pytestmark = pytest.mark.django_db


def signed_in(user):
    client = Client()
    client.force_login(user)
    return client


def profile_writes(queries):
    return [q["sql"] for q in queries if "people_profile" in q["sql"] and not q["sql"].startswith("SELECT")]


def test_the_language_a_page_was_shown_in_is_the_one_written_for_them(demo):
    alice = demo["alice"]
    thread = agent_services.create_thread(alice, "banking")
    run = Run.objects.create(thread=thread)
    assert agent_selectors.run_language(run.pk) == "en"
    client = signed_in(alice)
    page = client.get("/chat/", HTTP_ACCEPT_LANGUAGE="zh-CN,zh;q=0.9")
    assert page.status_code == 200 and 'lang="zh-hans"' in page.content.decode()
    assert Profile.objects.get(user=alice).browser_language == "zh-hans"
    assert agent_selectors.run_language(run.pk) == "zh-hans"  # the worker's cards and outcomes
    alice.refresh_from_db()
    assert agent_selectors.user_language(alice) == "zh-hans"  # the socket's snapshot, the decided card
    assert people.language_for(alice) == "zh-hans"
    assert people.reader_of(alice)[0] == "zh-hans"  # her mails
    assert people.readers_by_email([alice.email])[alice.email][0] == "zh-hans"

    # noted once a session, not written on every page
    with CaptureQueriesContext(connection) as queries:
        client.get("/chat/", HTTP_ACCEPT_LANGUAGE="zh-CN,zh;q=0.9")
    assert profile_writes(queries) == []
    # a script's API call asks for no language: it changes nothing
    client.get("/api/threads/", HTTP_ACCEPT_LANGUAGE="")
    assert Profile.objects.get(user=alice).browser_language == "zh-hans"
    # the browser changes its mind: so do the cards
    client.get("/chat/", HTTP_ACCEPT_LANGUAGE="pt-BR")
    assert agent_selectors.run_language(run.pk) == "pt-br"


def test_a_chosen_language_wins_over_the_browsers(demo):
    finn = demo["finn"]
    services.set_language(user=finn, language="fr")
    signed_in(finn).get("/inbox/", HTTP_ACCEPT_LANGUAGE="id")
    profile = Profile.objects.get(user=finn)
    assert profile.language == "fr"
    assert people.reader_of(finn)[0] == "fr" and people.language_for(finn) == "fr"


@pytest.mark.parametrize("language", ["fr", "zh-hans", "id", "pt-br", "en"])
def test_the_header_picker_names_each_language_in_itself_whatever_the_page(demo, language):
    """An English reader who lands on a French or Chinese page finds "English", not "Anglais" or "英语"."""
    import re

    for client, path in ((Client(), "/accounts/login/"), (signed_in(demo["finn"]), "/inbox/")):
        response = client.get(path, HTTP_ACCEPT_LANGUAGE=language)
        assert response.status_code == 200
        page = response.content.decode()
        picker = page[page.index('id="language-select"'):]
        picker = picker[:picker.index("</select>")]
        assert re.findall(r'<option value="([^"]+)" lang="[^"]+"[^>]*>([^<]+)</option>', picker) == [
            ("en", "English"), ("id", "Bahasa Indonesia"), ("fr", "Français"), ("pt-br", "Português (Brasil)"),
            ("zh-hans", "简体中文")]
