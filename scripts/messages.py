"""Compile the translations (locale/*/LC_MESSAGES/*.po -> .mo): the .mo files are build output,
made at install by `make run`, `make test`, `make e2e` (so CI too) and the test session.

Django's `compilemessages` calls GNU gettext's `msgfmt`. Where it is not installed (a fresh
laptop with only Python, which `make run` promises to work on), Babel's reader and writer of
catalogues compile them instead: the same .mo, without a system package. Either way a .mo newer
than its .po is left alone, so running this again costs next to nothing.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LOCALE = ROOT / "locale"


def stale() -> list[Path]:
    """The .po files whose .mo is missing or older."""
    out = []
    for po in sorted(LOCALE.glob("*/LC_MESSAGES/*.po")):
        mo = po.with_suffix(".mo")
        if not mo.exists() or mo.stat().st_mtime < po.stat().st_mtime:
            out.append(po)
    return out


def _with_babel(files: list[Path]) -> None:
    from babel.messages.mofile import write_mo
    from babel.messages.pofile import read_po

    for po in files:
        locale = po.parent.parent.name
        with po.open("rb") as f:
            catalog = read_po(f, locale=locale.replace("-", "_"))
        with po.with_suffix(".mo").open("wb") as f:
            write_mo(f, catalog, use_fuzzy=False)


def compile_messages(quiet: bool = True) -> int:
    """Compile what is stale; returns how many catalogues were compiled."""
    files = stale()
    if not files:
        return 0
    if shutil.which("msgfmt"):
        env = dict(os.environ, DJANGO_SETTINGS_MODULE=os.environ.get("DJANGO_SETTINGS_MODULE", "agui_project.settings"),
                   AGUI_SECRET_KEY_WARNED="1")  # compiling needs no key: the start-up says it once, not this step
        # only our locale/ (LOCALE_PATHS): the walk would otherwise reach the venvs' packages
        subprocess.run([sys.executable, "-m", "django", "compilemessages", "--verbosity", "0" if quiet else "1",
                        "--ignore", ".venv*", "--ignore", "node_modules", "--ignore", "var", "--ignore", "tests"],
                       cwd=ROOT, env=env, check=True)
    else:
        _with_babel(files)
    return len(files)


if __name__ == "__main__":
    count = compile_messages(quiet=False)
    print(f"messages: {count} catalogue(s) compiled" if count else "messages: up to date")
