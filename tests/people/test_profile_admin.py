"""The admin's profile form takes what the person's settings page takes: it saved a language the site
does not have ("xx-klingon") and a zone zoneinfo does not know ("Mars/Olympus"), which every page then
ignored without a word. What the browser reported is shown, not edited."""

import pytest

from people.models import Profile

pytestmark = pytest.mark.django_db


@pytest.fixture
def admin(client, demo):
    client.force_login(demo["admin"])
    return client


def form(profile, **changes):
    return {"user": profile.user_id, "language": profile.language, "time_zone": profile.time_zone,
            "inbox_keys": "on" if profile.inbox_keys else "", **changes}


def test_an_unknown_language_or_zone_is_refused_in_words_and_a_known_one_saved(admin, demo):
    profile, _ = Profile.objects.get_or_create(user=demo["alice"])
    url = f"/admin/people/profile/{profile.pk}/change/"
    refused = admin.post(url, form(profile, language="xx-klingon", time_zone="Mars/Olympus"))
    assert refused.status_code == 200
    page = refused.content.decode()
    assert "Choose one of the languages listed." in page
    assert "“Mars/Olympus” is not a time zone this site knows." in page
    profile.refresh_from_db()
    assert (profile.language, profile.time_zone) == ("", "")
    assert admin.post(url, form(profile, language="fr", time_zone=" Europe/Paris ")).status_code == 302
    profile.refresh_from_db()
    assert (profile.language, profile.time_zone) == ("fr", "Europe/Paris")


def test_what_the_browser_reported_is_shown_and_not_taken_from_the_form(admin, demo):
    profile, _ = Profile.objects.get_or_create(user=demo["alice"])
    Profile.objects.filter(pk=profile.pk).update(browser_language="pt-br", browser_time_zone="America/Sao_Paulo")
    url = f"/admin/people/profile/{profile.pk}/change/"
    page = admin.get(url).content.decode()
    assert "America/Sao_Paulo" in page and 'name="browser_time_zone"' not in page
    assert admin.post(url, form(profile, browser_time_zone="Mars/Olympus")).status_code == 302
    assert Profile.objects.get(pk=profile.pk).browser_time_zone == "America/Sao_Paulo"
