"""The stats page: rates, median / p90 time to decision, fast decisions, rejection reasons, the chart,
all checked against numbers worked out by hand."""

import re
from datetime import timedelta

import pytest
from django.utils import dateformat, formats, timezone, translation

from approvals import services, stats
from approvals.models import ApprovalRequest
from tests.inbox_helpers import backdate, decide_at, make_request, user

pytestmark = pytest.mark.django_db


@pytest.fixture
def history(demo):
    """transfer_money (banking): approved after 10 s and 30 s, rejected after 1 s ("Wrong account."),
    approved with edits after 100 s, one pending, one expired; send_email (ops): rejected after
    50 s ("wrong account"), one cancelled; and one transfer 40 days old (outside 30 days)."""

    def at(req, seconds):
        return req.created_at + timedelta(seconds=seconds)

    t = [make_request("alice") for _ in range(6)]
    decide_at(t[0], "finn", "approve", at(t[0], 10))
    decide_at(t[1], "finn", "approve", at(t[1], 30))
    decide_at(t[2], "finn", "reject", at(t[2], 1), feedback="Wrong account.")
    decide_at(t[3], "finn", "approve", at(t[3], 100), arguments={**t[3].arguments, "amount": 450})
    ApprovalRequest.objects.filter(pk=t[5].pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    assert services.expire(t[5].pk)
    e = [make_request("bob", tool="send_email", agent="ops") for _ in range(2)]
    decide_at(e[0], "finn", "reject", at(e[0], 50), feedback="  wrong   account ")
    services.cancel(e[1].pk, user("bob"))
    old = backdate(make_request("alice"), created=timezone.now() - timedelta(days=40))
    return {"transfers": t, "emails": e, "old": old}


def test_numbers_per_tool_agent_and_overall(history):
    data = stats.compute(user("finn"), days=30)
    overall = data["overall"]
    assert overall.requests == 8 and overall.pending == 1 and overall.cancelled == 1
    assert overall.resolved == 6  # approved 2, modified 1, rejected 2, expired 1
    assert overall.approved_rate == pytest.approx(2 / 6) and overall.rejected_rate == pytest.approx(2 / 6)
    assert sorted(overall.durations) == pytest.approx([1, 10, 30, 50, 100])
    assert overall.median == pytest.approx(30) and overall.p90 == pytest.approx(100)
    assert (overall.fast, overall.decisions) == (1, 5)

    tools = {g.key: g for g in data["per_tool"]}
    transfer, email = tools["transfer_money"], tools["send_email"]
    assert (transfer.requests, transfer.pending, transfer.resolved) == (6, 1, 5)
    assert transfer.approved_rate == pytest.approx(0.4) and transfer.modified_rate == pytest.approx(0.2)
    assert transfer.rejected_rate == pytest.approx(0.2) and transfer.expired_rate == pytest.approx(0.2)
    assert transfer.median == pytest.approx(20) and transfer.p90 == pytest.approx(100)  # (10+30)/2; rank 4 of 4
    assert (transfer.fast, transfer.decisions) == (1, 4)
    assert (email.requests, email.resolved, email.cancelled) == (2, 1, 1)
    assert email.rejected_rate == 1 and email.median == pytest.approx(50) and email.fast == 0
    agents = {g.key: g for g in data["per_agent"]}
    assert agents["banking"].requests == 6 and agents["ops"].requests == 2

    assert len(data["reasons"]) == 1
    reason = data["reasons"][0]
    assert reason["count"] == 2 and set(reason["tools"].split(", ")) == {"transfer_money", "send_email"}
    assert data["fast_reviewers"] == [{"user": "finn", "fast": 1, "decisions": 5, "share": pytest.approx(0.2)}]
    assert data["fast_recent"][0]["id"] == history["transfers"][2].pk


def test_the_window_and_filters(history):
    assert stats.compute(user("finn"), days=90)["overall"].requests == 9
    assert stats.compute(user("finn"), days=30, tool="send_email")["overall"].requests == 2
    assert stats.compute(user("finn"), days=30, agent="banking")["overall"].requests == 6
    # rita (reviewers, support) sees none of finance's requests
    assert stats.compute(user("rita"), days=30)["overall"].requests == 0


def test_percentile_is_nearest_rank():
    assert stats.percentile([5], 0.9) == 5
    assert stats.percentile(list(range(1, 11)), 0.9) == 9
    assert stats.percentile(list(range(1, 11)), 0.5) == 5
    assert stats.percentile([3, 1, 2], 1.0) == 3


def test_the_page_shows_them_with_an_svg_chart(client, history):
    client.force_login(user("finn"))
    body = client.get("/inbox/stats/").content.decode()
    assert re.search(r'id="stat-requests">8<', body)
    assert re.search(r'id="stat-median">30 s<', body) and re.search(r'id="stat-p90">1 min 40 s<', body)
    assert re.search(r'id="stat-fast">1<', body) and 'class="stat-card flagged"' in body
    assert re.search(r'id="stat-approved">33 %<', body)
    assert "Wrong account." in body or "wrong   account" in body
    row = body[body.index('data-key="transfer_money"'):]
    row = row[:row.index("</tr>")]
    assert "40 %" in row and "20 %" in row and "20 s" in row and "⚑ 1/4" in row
    svg = body[body.index('<svg class="chart"'):body.index("</svg>")]
    assert svg.count("<rect") >= 5  # today's stacked bar: approved, modified, rejected, expired, cancelled, pending
    assert "2 approved" in svg and "2 rejected" in svg and "1 pending" in svg
    assert "http" not in svg.replace('xmlns="http://www.w3.org/2000/svg"', "")
    hourly = client.get("/inbox/stats/?days=1").content.decode()
    assert "Requests per hour" in hourly


def test_chart_buckets_are_counted_by_the_database_hour_by_hour_and_day_by_day(demo):
    """Requests at chosen moments land in their hour (1 day) or day (7 days), edges included."""
    from datetime import UTC, datetime

    now = datetime(2026, 3, 10, 15, 30, tzinfo=UTC)
    for moment in (datetime(2026, 3, 9, 16, 0, tzinfo=UTC),  # the first hour of the day's window
                   datetime(2026, 3, 10, 9, 59, 59, 999000, tzinfo=UTC),
                   datetime(2026, 3, 10, 10, 0, tzinfo=UTC),
                   datetime(2026, 3, 10, 10, 30, tzinfo=UTC),
                   datetime(2026, 3, 4, 0, 0, 0, 1000, tzinfo=UTC)):  # a week ago, just after midnight
        backdate(make_request("alice"), created=moment)

    hourly = stats.compute(user("finn"), days=1, now=now)["chart"]
    counts = {bar["when"]: bar["total"] for bar in hourly["bars"] if bar["total"]}
    assert counts == {"16:00": 1, "09:00": 1, "10:00": 2}
    daily = stats.compute(user("finn"), days=7, now=now)["chart"]
    counts = {bar["when"]: bar["total"] for bar in daily["bars"] if bar["total"]}
    assert counts == {"March 4": 1, "March 9": 1, "March 10": 3}


@pytest.mark.parametrize("language", ["fr", "id", "pt-br"])
def test_the_chart_draws_in_a_language_with_a_decimal_comma(client, history, language):
    """The SVG's coordinates stay SVG numbers ("206,0" is no length: Chromium drew no bar) and
    its days are written in the page's language; a phone's stacked rows are labelled in it too."""
    client.force_login(user("finn"))
    body = client.get("/inbox/stats/", HTTP_ACCEPT_LANGUAGE=language).content.decode()
    svg = body[body.index('<svg class="chart"'):body.index("</svg>")]
    coordinates = re.findall(r' (?:x|y|x1|x2|y1|y2|width|height)="([^"]*)"', svg)
    assert coordinates and all(re.fullmatch(r"-?\d+(\.\d+)?", c) for c in coordinates), coordinates
    with translation.override(language):
        today = dateformat.format(timezone.localtime(), formats.get_format("MONTH_DAY_FORMAT").replace("F", "N"))
    assert f">{today}</text>" in svg or f"<title>{today}: " in svg
    assert re.search(r"[A-Z][a-z]{2} \d\d", svg) is None  # no English "Dec 05"
    assert 'data-label="Under' not in body


def test_an_answer_with_guidance_is_an_outcome_of_its_own(demo):
    """A request answered with guidance (not run) counts in the rates, the time to decision and the
    chart as its own outcome, not as a rejection and not left out."""
    answered, approved = make_request("alice"), make_request("alice")
    ApprovalRequest.objects.filter(pk=answered.pk).update(allowed_decisions=["approve", "reject", "respond"])
    decide_at(answered, "finn", "respond", answered.created_at + timedelta(seconds=20), feedback="Pay 450 first")
    decide_at(approved, "finn", "approve", approved.created_at + timedelta(seconds=40))
    overall = stats.compute(user("finn"), days=30)["overall"]
    assert overall.resolved == 2 and overall.responded_rate == pytest.approx(0.5)
    assert overall.rejected_rate == 0 and sorted(overall.durations) == pytest.approx([20, 40])
    chart = stats.compute(user("finn"), days=1)["chart"]
    labels = [s["label"] for bar in chart["bars"] for s in bar["segments"]]
    assert labels.count("answered with guidance") == 1


def test_the_days_and_hours_are_the_readers_own_across_a_daylight_saving_change(demo):
    """A reader in New York: clocks went forward on 8 March 2026 and back on 1 November. A request at
    00:30 on 10 March is that day's, not the 9th's (a fixed 24-hour step from the window's first
    midnight put it there), and on 1 November the hour from 01:00 comes twice, each its own bar."""
    from datetime import UTC, datetime

    with timezone.override("America/New_York"):
        backdate(make_request("alice"), created=datetime(2026, 3, 10, 4, 30, tzinfo=UTC))  # 00:30 EDT
        backdate(make_request("alice"), created=datetime(2026, 3, 8, 4, 59, tzinfo=UTC))  # 23:59 EST, the 7th
        backdate(make_request("alice"), created=datetime(2026, 3, 8, 5, 0, tzinfo=UTC))  # midnight, the 8th
        daily = stats.compute(user("finn"), days=7, now=datetime(2026, 3, 10, 15, 30, tzinfo=UTC))["chart"]
        counts = {bar["when"]: bar["total"] for bar in daily["bars"] if bar["total"]}
        assert counts == {"March 7": 1, "March 8": 1, "March 10": 1}
        assert [bar["when"] for bar in daily["bars"]][-3:] == ["March 8", "March 9", "March 10"]

        for moment in (datetime(2026, 11, 1, 5, 30, tzinfo=UTC),  # 01:30 EDT
                       datetime(2026, 11, 1, 6, 30, tzinfo=UTC),  # 01:30 EST, an hour later
                       datetime(2026, 11, 1, 7, 15, tzinfo=UTC)):  # 02:15 EST
            backdate(make_request("alice"), created=moment)
        # the 1st is 25 hours long: its last hour is still the 1st's
        backdate(make_request("alice"), created=datetime(2026, 11, 2, 4, 30, tzinfo=UTC))  # 23:30 EST, the 1st
        backdate(make_request("alice"), created=datetime(2026, 11, 2, 5, 10, tzinfo=UTC))  # 00:10 EST, the 2nd
        daily = stats.compute(user("finn"), days=7, now=datetime(2026, 11, 3, 12, 0, tzinfo=UTC))["chart"]
        counts = {bar["when"]: bar["total"] for bar in daily["bars"] if bar["total"]}
        assert counts == {"Nov. 1": 4, "Nov. 2": 1}

        hourly = stats.compute(user("finn"), days=1, now=datetime(2026, 11, 1, 12, 0, tzinfo=UTC))["chart"]
        whens = [bar["when"] for bar in hourly["bars"]]
        assert whens.count("01:00") == 2 and len(whens) == 25
        assert [(bar["when"], bar["total"]) for bar in hourly["bars"] if bar["total"]] == [
            ("01:00", 1), ("01:00", 1), ("02:00", 1)]


@pytest.mark.django_db
def test_the_per_agent_and_per_tool_tables_show_the_busiest_and_say_how_many_more(client, demo, monkeypatch):
    """An outside agent names itself: a caller that put its run id in the name made the page a row per
    request (10,003 names, 1.1 MB). The busiest rows show; the rest are counted, a filter away."""
    from approvals import stats
    from tests.inbox_helpers import make_request

    monkeypatch.setattr(stats, "TABLE_ROWS", 3)
    for n in range(5):
        for _ in range(5 - n):  # bot-0 the busiest
            make_request("alice", agent=f"bot-{n}")
    figures = stats.compute(demo["admin"])
    assert [g.key for g in figures["per_agent"]] == ["bot-0", "bot-1", "bot-2"] and figures["per_agent_more"] == 2
    client.force_login(demo["admin"])
    page = client.get("/inbox/stats/").content.decode()
    assert "And 2 more with fewer requests" in page and 'data-key="bot-3"' not in page
    assert 'id="per-tool-more"' not in page  # one tool: nothing left out
