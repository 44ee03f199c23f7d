"""Time zones: the IANA names this site accepts (zoneinfo's), the ones the settings page lists, and
how a zone is named beside a time."""

import functools
import re
import zoneinfo
from datetime import UTC, datetime

# static/js/time-zone.js writes the browser's own zone here (Intl's resolvedOptions().timeZone)
COOKIE = "agui_tz"
MAX_NAME = 64  # the longest IANA name is 32 characters; a longer cookie is not looked up
# the settings page lists Area/City names; the legacy ones ("US/Eastern", "Etc/GMT+3") are accepted, not listed
AREAS = frozenset(("Africa", "America", "Antarctica", "Arctic", "Asia", "Atlantic", "Australia", "Europe",
                   "Indian", "Pacific"))


# names of the zone files that are no zone a browser knows (Intl refuses them: a page formatting times
# in one threw, and the chat showed nothing)
NOT_ZONES = frozenset(("localtime", "posixrules", "Factory"))


@functools.cache
def known():
    # available_timezones() walks the zone files (~0.2 s): once per process
    return frozenset(n for n in zoneinfo.available_timezones() if n not in NOT_ZONES)


def valid(name):
    """`name` if zoneinfo knows it as a zone, else "": a cookie or a form may bring anything."""
    if isinstance(name, str) and 0 < len(name) <= MAX_NAME and name in known():
        return name
    return ""


@functools.cache
def offered():
    return ("UTC", *sorted(n for n in known() if n.split("/", 1)[0] in AREAS and "/" in n))


def choices(current=""):
    """(name, "America/Sao Paulo (UTC-3)") for the settings page's select, offsets as of now; a
    chosen zone the list leaves out (a legacy name) is kept in it."""
    names = offered() if not current or current in offered() else (current, *offered())
    now = datetime.now(UTC)
    return [(n, f"{n.replace('_', ' ')} ({utc_offset(now.astimezone(zoneinfo.ZoneInfo(n)).utcoffset())})")
            for n in names]


def utc_offset(delta):
    """A timedelta as "UTC", "UTC-3", "UTC+5:30"."""
    minutes = round(delta.total_seconds() / 60)
    if not minutes:
        return "UTC"
    hours, rest = divmod(abs(minutes), 60)
    return f"UTC{'-' if minutes < 0 else '+'}{hours}" + (f":{rest:02d}" if rest else "")


LETTERS = re.compile(r"^[A-Za-z]+$")


@functools.cache
def ambiguous():
    """The abbreviations tzdata gives zones of different offsets ("CST": Chicago's -6, Shanghai's +8,
    Havana's -5; "IST": India, Israel, Ireland), in January or July of this year: a reader in Shanghai
    read "CST" as the Americans' Central time. Once per process, from the known zones."""
    year = datetime.now(UTC).year
    offsets = {}
    for name in known():
        zone = zoneinfo.ZoneInfo(name)
        for month in (1, 7):
            local = datetime(year, month, 15, 12, tzinfo=UTC).astimezone(zone)
            offsets.setdefault(local.tzname(), set()).add(local.utcoffset())
    return frozenset(a for a, seen in offsets.items() if a and len(seen) > 1)


def label(local):
    """How a time in the reader's zone names that zone: tzdata's abbreviation where it is one in
    letters that names one offset ("UTC", "CET", "WIB"), else the offset ("UTC-3", "UTC+8"): tzdata
    writes "-03" for São Paulo, which reads like a typo beside "14:05"."""
    abbreviation = local.tzname() or ""
    if LETTERS.match(abbreviation) and abbreviation not in ambiguous():
        return abbreviation
    return utc_offset(local.utcoffset())
