"""The translations are complete: `makemessages`, run over a copy of the sources, finds no string
that a catalogue lacks, and no catalogue has a fuzzy or an empty entry.

makemessages writes into the locale directory nearest to each source file, so it runs in a
temporary copy of the project (the sources and the committed .po files): the checkout is never
touched. A msgid it finds that the committed catalogue lacks comes out untranslated in the copy;
one whose English changed comes out fuzzy.
"""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from babel.messages.pofile import read_po
from django.conf import settings

ROOT = Path(__file__).resolve().parents[2]
LOCALES = [code for code, _ in settings.LANGUAGES if code != "en"]
SOURCES = ["agui_project", "agents", "approvals", "state", "people", "webhooks", "templates", "static", "locale",
           "manage.py"]
IGNORE = ["node_modules", "vendor", "migrations", "__pycache__"]


def _locale_dir(code):
    from django.utils.translation import to_locale

    return to_locale(code)  # "pt-br" -> "pt_BR", "zh-hans" -> "zh_Hans"


def _gaps(catalogue_path):
    """[(msgid, why)] of a catalogue's entries that are fuzzy or lack a translation."""
    with open(catalogue_path, "rb") as f:
        catalogue = read_po(f)
    gaps = []
    for message in catalogue:
        if not message.id:
            continue
        strings = message.string if isinstance(message.string, tuple) else (message.string,)
        if message.fuzzy:
            gaps.append((message.id, "fuzzy"))
        elif not all(s and s.strip() for s in strings):
            gaps.append((message.id, "empty"))
    return gaps


@pytest.fixture(scope="module")
def regenerated(tmp_path_factory):
    """The project's sources copied, makemessages run there for both domains: its locale/ dir."""
    copy = tmp_path_factory.mktemp("i18n")
    for name in SOURCES:
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, copy / name, ignore=shutil.ignore_patterns(*IGNORE, "*.mo"))
        else:
            shutil.copy2(source, copy / name)
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "agui_project.settings", "PYTHONPATH": str(copy),
           "AGUI_VAR_DIR": str(copy / "var")}
    locales = [arg for code in LOCALES for arg in ("-l", _locale_dir(code))]
    for domain in ("django", "djangojs"):
        subprocess.run([sys.executable, "-m", "django", "makemessages", "-d", domain, *locales, "--no-obsolete",
                        "--ignore", "vendor", "--ignore", "node_modules", "--verbosity", "0"],
                       cwd=copy, env=env, check=True, capture_output=True)
    return copy / "locale"


@pytest.mark.parametrize("code", LOCALES)
@pytest.mark.parametrize("domain", ["django", "djangojs"])
def test_makemessages_finds_nothing_the_catalogue_lacks(regenerated, code, domain):
    gaps = _gaps(regenerated / _locale_dir(code) / "LC_MESSAGES" / f"{domain}.po")
    assert not gaps, (f"{len(gaps)} strings of the sources are untranslated or changed in {code} ({domain}); "
                      f"run makemessages and translate them:\n" + "\n".join(f"  {why}: {mid!r}" for mid, why in gaps[:30]))


@pytest.mark.parametrize("code", LOCALES)
@pytest.mark.parametrize("domain", ["django", "djangojs"])
def test_the_committed_catalogues_have_no_fuzzy_or_empty_entries(code, domain):
    gaps = _gaps(ROOT / "locale" / _locale_dir(code) / "LC_MESSAGES" / f"{domain}.po")
    assert not gaps, "\n".join(f"{why}: {mid!r}" for mid, why in gaps[:30])


def test_every_language_has_both_catalogues():
    assert {code for code, _ in settings.LANGUAGES} == {"en", "id", "fr", "pt-br", "zh-hans"}
    for code in LOCALES:
        for domain in ("django", "djangojs"):
            assert (ROOT / "locale" / _locale_dir(code) / "LC_MESSAGES" / f"{domain}.po").is_file(), (code, domain)
