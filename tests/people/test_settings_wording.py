"""The settings page's words where one English phrase serves two nouns: "Your browser's" is the
language's in one select and the time zone's in the other, and French gives them different genders
(la langue: "Celle de votre navigateur"; le fuseau: "Celui de votre navigateur")."""

import re

import pytest
from django.test import Client


def _first_option(body, select_id):
    select = body.split(f'id="{select_id}"', 1)[1].split("</select>", 1)[0]
    return re.search(r'<option value=""[^>]*>([^<]*)</option>', select).group(1)


@pytest.mark.django_db
@pytest.mark.parametrize(("accept", "language", "zone"), [
    ("fr-FR", "Celle de votre navigateur", "Celui de votre navigateur"),
    ("pt-BR", "O do seu navegador", "O do seu navegador"),
])
def test_your_browsers_agrees_with_the_noun_it_stands_for(demo, accept, language, zone):
    client = Client(HTTP_ACCEPT_LANGUAGE=accept)
    client.force_login(demo["finn"])
    body = client.get("/settings/").content.decode()
    assert _first_option(body, "id_language") == language
    assert _first_option(body, "id_time_zone") == zone
    client.cookies["agui_tz"] = "Asia/Jakarta"
    body = client.get("/settings/").content.decode()
    assert _first_option(body, "id_time_zone").startswith(zone + " (")
