"""Query filters of the lists (django-filter): the REST API's approvals, audit and grants, and the
console's audit page. DjangoFilterBackend applies them and drf-spectacular documents them as the
lists' OpenAPI parameters. The form fields below are ours only for their messages (what a person
reads in a 400) and the comma lists; the filtering itself is django-filter's."""

import re
from datetime import UTC, datetime, time, timedelta

import django_filters
from django import forms
from django.db.models import Q
from django.utils import timezone
from django.utils.dateparse import parse_date, parse_datetime
from django.utils.translation import gettext as _
from django_filters.rest_framework import BooleanFilter
from rest_framework.exceptions import ValidationError

from agui_project.queries import one

from . import selectors
from .models import ApprovalRequest, AuditEvent, Risk, ThreadGrant

MAX_AGE_SECONDS = 10 * 366 * 24 * 3600
MAX_ROW_ID = 2**63 - 1  # BigAutoField's largest
_ROW_ID = re.compile(r"[0-9]{1,19}")
MAX_SEARCH_WORDS = 8


def _aware(moment):
    return timezone.make_aware(moment, UTC) if timezone.is_naive(moment) else moment


def parse_moment(text):
    """An ISO 8601 date-time from outside, aware (UTC when naive); None when it names no moment:
    unreadable, well formed but impossible (month 13, February 30), or outside the years the
    database stores once in UTC (9999-12-31T23:59:59-23:59 is in year 10000, 0001-01-01T00:00+01:00
    in year 0: filtering on it raised OverflowError, a 500)."""
    try:
        moment = parse_datetime(text)
    except ValueError:
        return None
    return _storable(_aware(moment)) if moment is not None else None


def parse_row_id(text):
    """A row id (an audit event's, a held decision's) from outside as an int; None unless it is
    ASCII digits the database's integer holds. str.isdigit() also takes "²" and "١٢", which int()
    refuses or reads, and 25 digits overflow the column: both were 500s."""
    if not isinstance(text, str) or not _ROW_ID.fullmatch(text):
        return None
    value = int(text)
    return value if value <= MAX_ROW_ID else None


def _storable(moment):
    try:
        moment.astimezone(UTC)
    except OverflowError:
        return None
    return moment


# --- form fields: parsing and the messages of a 400 ---------------------------------------------


class CommaChoicesField(forms.CharField):
    """"a,b" -> ["a", "b"], each one of `allowed`."""

    def __init__(self, *, allowed, noun, **kwargs):
        self.allowed, self.noun = list(allowed), noun
        super().__init__(**kwargs)

    def clean(self, value):
        values = [v.strip() for v in (super().clean(value) or "").split(",") if v.strip()]
        bad = [v for v in values if v not in self.allowed]
        if bad:
            # params, not a formatted message: django-filter formats it again, and a "%" the caller sent
            # (?status=%s) was a 500
            raise forms.ValidationError(_("unknown %(field)s %(values)s; use %(allowed)s"), params={
                "field": self.noun, "values": ", ".join(bad), "allowed": ", ".join(self.allowed)})
        return values


class SecondsField(forms.Field):
    def to_python(self, value):
        if value in self.empty_values:
            return None
        try:
            seconds = int(value)
        except (TypeError, ValueError):
            raise forms.ValidationError(_("a whole number of seconds")) from None
        if not 0 <= seconds <= MAX_AGE_SECONDS:
            raise forms.ValidationError(_("between 0 and %(max)s seconds"), params={"max": MAX_AGE_SECONDS})
        return seconds


class MomentField(forms.Field):
    """An ISO 8601 date-time; aware (UTC when naive)."""

    def to_python(self, value):
        if value in self.empty_values:
            return None
        moment = parse_moment(value)
        if moment is None:
            raise forms.ValidationError(_("an ISO 8601 date-time, e.g. 2026-01-31T12:00:00Z"))
        return moment


class DayOrMomentField(forms.Field):
    """The console's: a date (its first moment, or with end=True its last) or an ISO date-time."""

    def __init__(self, *, end=False, **kwargs):
        self.end = end
        super().__init__(**kwargs)

    def to_python(self, value):
        raw = (value or "").strip()
        if not raw:
            return None
        try:
            day = parse_date(raw)
        except ValueError:  # well formed, but no such day
            day = None
        moment = parse_moment(raw) if day is None else _aware(datetime.combine(day, time.max if self.end else time.min))
        if moment is None:
            raise forms.ValidationError(_("a date or an ISO 8601 date-time"))
        return moment


# --- filters --------------------------------------------------------------------------------------


# Each filter subclasses the django-filter class whose OpenAPI type drf-spectacular knows (its
# description then comes from help_text); the form field is what differs.


class CommaChoicesFilter(django_filters.CharFilter):
    field_class = CommaChoicesField

    def __init__(self, *, allowed, noun, **kwargs):
        super().__init__(lookup_expr="in", allowed=allowed, noun=noun, **kwargs)


class SecondsFilter(django_filters.Filter):
    """Used with a FilterSet method, whose `value: int` hint is the parameter's OpenAPI type."""

    field_class = SecondsField


class MomentFilter(django_filters.IsoDateTimeFilter):
    field_class = MomentField


class DayOrMomentFilter(django_filters.Filter):
    field_class = DayOrMomentField


class ApprovalFilter(django_filters.FilterSet):
    status = CommaChoicesFilter(allowed=ApprovalRequest.Status.values, noun="status",
                                help_text="Comma-separated: " + ", ".join(ApprovalRequest.Status.values))
    tool = django_filters.CharFilter(field_name="tool_name", help_text="Tool name")
    group = django_filters.CharFilter(method="by_group",
                                      help_text="Approver group name (or escalation group, once escalated)")
    risk = CommaChoicesFilter(allowed=Risk.values, noun="risk", help_text="Comma-separated: " + ", ".join(Risk.values))
    thread = django_filters.CharFilter(method="by_thread", help_text="Thread id: ours, or the outside agent's own "
                                       "ref it sent with its request")
    min_age = SecondsFilter(method="at_least_old", help_text="Only requests at least this many seconds old")
    max_age = SecondsFilter(method="at_most_old", help_text="Only requests at most this many seconds old")
    search = django_filters.CharFilter(method="by_words", help_text="Words in the description, tool, reason, "
                                       "impact, requester, thread or id")
    after = django_filters.CharFilter(method="after_request", help_text=(
        "A request id: only the requests after it in the list's order (newest first). Page on with the last id "
        "of each page: requests decided or made meanwhile neither hide nor repeat any, as they do with ?page="))

    class Meta:
        model = ApprovalRequest
        fields = []

    def after_request(self, qs, name, value):
        """Keyset paging on the list's order (-created_at, -id): a mirror that pages ?status=pending with
        ?page= missed a request for each one decided meanwhile on the pages it had read (the rest moved up)."""
        seen = one(selectors.visible_requests(user=self.request.user).filter(pk=value).values_list(
            "created_at", flat=True))
        if seen is None:
            raise ValidationError({"after": [_("no such request")]})
        return qs.filter(Q(created_at__lt=seen) | Q(created_at=seen, pk__lt=value))

    def at_least_old(self, qs, name, value: int):
        return qs.filter(created_at__lte=timezone.now() - timedelta(seconds=value))

    def at_most_old(self, qs, name, value: int):
        return qs.filter(created_at__gte=timezone.now() - timedelta(seconds=value))

    def by_thread(self, qs, name, value):
        return qs.filter(selectors.in_thread(value))

    def by_group(self, qs, name, value):
        return qs.filter(selectors.routed_to_group_named(value))

    def by_words(self, qs, name, value):
        for word in value.split()[:MAX_SEARCH_WORDS]:
            qs = qs.filter(Q(description__icontains=word)
                           | Q(tool_name__icontains=word)
                           | Q(reason__icontains=word)
                           | Q(impact__icontains=word)
                           | Q(requester__username__iexact=word)
                           | selectors.in_thread(word) | Q(pk=word))
        return qs


class AuditFilter(django_filters.FilterSet):
    action = CommaChoicesFilter(allowed=AuditEvent.Action.values, noun="action",
                                help_text="Comma-separated: " + ", ".join(AuditEvent.Action.values))
    actor = django_filters.CharFilter(field_name="actor__username", help_text="Username")
    request = django_filters.CharFilter(field_name="request", help_text="Approval request id")
    tool = django_filters.CharFilter(field_name="tool_name", help_text="Tool name")
    object_ref = django_filters.CharFilter(help_text="e.g. policy:<tool>, toolcall:<id>, grant:<id>")
    since = MomentFilter(field_name="created_at", lookup_expr="gte", help_text="ISO 8601, inclusive")
    until = MomentFilter(field_name="created_at", lookup_expr="lt", help_text="ISO 8601, exclusive")

    class Meta:
        model = AuditEvent
        fields = []


class AuditPageFilter(AuditFilter):
    """The console's /audit/: the same filters, where a day may stand for a moment and `until`
    includes its day. Unreadable values are left out (the page shows everything else)."""

    since = DayOrMomentFilter(field_name="created_at", lookup_expr="gte")
    until = DayOrMomentFilter(field_name="created_at", lookup_expr="lte", end=True)


class GrantFilter(django_filters.FilterSet):
    thread = django_filters.CharFilter(field_name="thread_ref", help_text="Thread id")
    tool = django_filters.CharFilter(field_name="tool_name", help_text="Tool name")
    active = BooleanFilter(field_name="revoked_at", lookup_expr="isnull", help_text="true: only grants in force")

    class Meta:
        model = ThreadGrant
        fields = []
