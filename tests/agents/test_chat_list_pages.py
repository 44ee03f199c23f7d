"""Every chat can be reached from the list: it showed the latest 100 and nothing of the older ones
(3,002 chats, 2,902 out of reach but by their address). Past 100 it offers the older chats, a page at a
time, and the way back to the newest; a chat opened from an older page keeps the list there."""

import re
from datetime import timedelta

import pytest
from django.utils import timezone

from agents import selectors, services
from agents.models import Thread

pytestmark = pytest.mark.django_db


def chats(owner, count):
    """`count` chats, the newest first by their last change: "chat 0" the newest."""
    now = timezone.now()
    made = [services.create_thread(owner, "banking") for _ in range(count)]
    for n, thread in enumerate(made):
        Thread.objects.filter(pk=thread.pk).update(title=f"chat {n}", updated_at=now - timedelta(minutes=n))
    return [t.pk for t in made]


def titles(page):
    return re.findall(r'<span class="thread-title">([^<]*)</span>', page)


def older_link(page):
    found = re.search(r'<a href="([^"]+)" id="older-chats">', page)
    return found.group(1).replace("&amp;", "&") if found else None


def test_the_older_chats_are_a_page_away_and_every_one_is_reached_once(login, demo, monkeypatch):
    monkeypatch.setattr(selectors, "CHATS_A_PAGE", 4)
    ids = chats(demo["alice"], 10)
    client = login("alice")
    page = client.get("/chat/").content.decode()
    seen, pages = titles(page), 1
    assert seen == ["chat 0", "chat 1", "chat 2", "chat 3"] and 'id="newest-chats"' not in page
    while older_link(page):
        page = client.get(older_link(page)).content.decode()
        seen += titles(page)
        pages += 1
        assert 'id="newest-chats"' in page
    assert seen == [f"chat {n}" for n in range(10)] and pages == 3

    # a chat opened from an older page keeps the list there; the list alone (another tab's refresh) too
    second = client.get(older_link(client.get("/chat/").content.decode())).content.decode()
    link = re.search(rf'href="(/chat/{ids[5]}/\?before=[^"]+)"', second)
    assert link
    opened = client.get(link.group(1).replace("&amp;", "&")).content.decode()
    assert titles(opened) == ["chat 4", "chat 5", "chat 6", "chat 7"] and 'aria-current="page"' in opened
    partial = client.get(link.group(1).replace("&amp;", "&") + "&partial=threads").content.decode()
    assert titles(partial) == ["chat 4", "chat 5", "chat 6", "chat 7"]


@pytest.mark.parametrize("cursor", ["x", "2026-13-01T00:00:00|a", "|", "9999-12-31T23:59:59-23:59|z"])
def test_a_mangled_cursor_shows_the_newest(login, demo, monkeypatch, cursor):
    monkeypatch.setattr(selectors, "CHATS_A_PAGE", 4)
    chats(demo["alice"], 5)
    page = login("alice").get("/chat/", {"before": cursor})
    assert page.status_code == 200 and titles(page.content.decode())[0] == "chat 0"


def test_a_hundred_chats_or_fewer_offer_no_older_page(login, demo):
    chats(demo["alice"], 3)
    page = login("alice").get("/chat/").content.decode()
    assert 'id="older-chats"' not in page and 'id="newest-chats"' not in page and len(titles(page)) == 3


def test_the_pages_links_keep_a_thread_id_that_holds_a_hash_or_a_question_mark(login, demo, monkeypatch):
    monkeypatch.setattr(selectors, "CHATS_A_PAGE", 1)
    chats(demo["alice"], 2)
    odd = services.create_thread(demo["alice"], "banking", thread_id="a#b?c d")
    client = login("alice")
    page = client.get("/chat/a%23b%3Fc%20d/").content.decode()
    assert 'href="/chat/a%23b%3Fc%20d/?before=' in page
    older = re.search(r'<a href="([^"]+)" id="older-chats">', page).group(1).replace("&amp;", "&")
    assert 'href="/chat/a%23b%3Fc%20d/" id="newest-chats"' in client.get(older).content.decode()
    assert odd.pk == "a#b?c d"
