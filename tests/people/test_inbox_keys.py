"""The inbox's single-key shortcuts (j, k, a, r...) as a person's setting (WCAG 2.1.4): on unless they
switch them off on /settings/; the inbox pages say which it is to their script and to the reader."""

import pytest
from django.test import Client

from people import selectors
from people.models import Profile
from tests.inbox_helpers import make_request

OFF_HINT = 'Single-key shortcuts are off: switch them on in <a href="/settings/">your settings</a>.'


def signed_in(user):
    client = Client()
    client.force_login(user)
    return client


@pytest.mark.django_db
def test_the_setting_is_on_until_switched_off_and_saved_with_the_others(demo):
    finn = signed_in(demo["finn"])
    assert selectors.inbox_keys_on(demo["finn"]) is True  # no profile yet
    body = finn.get("/settings/").content.decode()
    assert '<input type="checkbox" name="inbox_keys" id="id_inbox_keys" aria-describedby="inbox-keys-help" checked>' in body
    assert '<label for="id_inbox_keys">Single-key shortcuts in the inbox</label>' in body

    # a form sent with the box unticked (a browser leaves it out) switches them off
    response = finn.post("/settings/", {"language": "", "time_zone": "Asia/Jakarta"})
    assert response.status_code == 302 and response["Location"] == "/settings/"
    profile = Profile.objects.get(user=demo["finn"])
    assert (profile.inbox_keys, profile.time_zone) == (False, "Asia/Jakarta")
    assert selectors.inbox_keys_on(demo["finn"]) is False
    body = finn.get("/settings/").content.decode()
    assert 'aria-describedby="inbox-keys-help">' in body and 'inbox-keys-help" checked' not in body

    # ticked: on again, the other settings as sent
    assert finn.post("/settings/", {"language": "", "time_zone": "Asia/Jakarta", "inbox_keys": "on"}).status_code == 302
    assert Profile.objects.get(user=demo["finn"]).inbox_keys is True
    # a refused form saves nothing, the box as it was sent
    refused = finn.post("/settings/", {"language": "", "time_zone": "Mars/Olympus"})
    assert refused.status_code == 400
    assert 'inbox-keys-help" checked' not in refused.content.decode()
    assert Profile.objects.get(user=demo["finn"]).inbox_keys is True


@pytest.mark.django_db
def test_the_inbox_pages_say_whether_the_keys_are_on(demo):
    req = make_request("alice", group="finance", description="Keys or not")
    finn = signed_in(demo["finn"])
    for url in ("/inbox/", f"/inbox/{req.pk}/"):
        body = finn.get(url).content.decode()
        assert 'data-single-keys="on"' in body, url
        assert "<kbd>a</kbd> approve" in body and OFF_HINT not in body, url

    Profile.objects.update_or_create(user=demo["finn"], defaults={"inbox_keys": False})  # a page noted its language
    for url in ("/inbox/", f"/inbox/{req.pk}/"):
        body = finn.get(url).content.decode()
        assert 'data-single-keys="off"' in body, url  # inbox.js binds no single key
        assert "<kbd>a</kbd> approve" not in body, url
        # the hint and the keys dialog say so, and where to switch them on
        assert body.count(OFF_HINT) == 2, url
    # another reviewer's pages keep theirs
    assert 'data-single-keys="on"' in signed_in(demo["rita"]).get("/inbox/").content.decode()
