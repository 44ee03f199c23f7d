"""The audit log as a CSV download (the REST API's ?format=csv and the console's export): one
column set, one cell rule, streamed so that 100,000 rows never sit in memory."""

import csv
import io
import itertools
import json
from datetime import timedelta
from types import SimpleNamespace

from django.http import StreamingHttpResponse
from django.utils import timezone, translation

from .account_audit import ACCOUNT_ACTIONS, summary

# summary: what an account or group event says in words ("finn added to finance"), empty for the others
CSV_COLUMNS = ["id", "created_at", "action", "actor", "request", "tool_name", "object_ref", "before", "after",
               "summary"]
CSV_LIMIT = 100_000
FORMULA_STARTS = frozenset("=+-@＝＋－＠")


def csv_cell(value):
    if isinstance(value, dict | list):
        value = json.dumps(value, sort_keys=True)
    text = "" if value is None else str(value)
    # spreadsheet formula injection: a cell starting with = + - @ (after any spaces and line breaks,
    # which a spreadsheet may trim before it reads a formula; full-width ＝ ＋ － ＠ too) is shown as text
    start = text.lstrip(" \t\r\n\u3000")[:1]
    return "'" + text if start in FORMULA_STARTS or text[:1] in ("\t", "\r") else text


CHUNK_CHARS = 64 * 1024  # a streamed chunk: one per row was 100,000 writes to the socket for a full export


def csv_rows(rows):
    """CSV text of an iterable of rows (lists of cells, cell rule applied), in chunks of whole rows
    of about CHUNK_CHARS."""
    buf = io.StringIO()
    writer = csv.writer(buf)
    for row in rows:
        writer.writerow([csv_cell(v) for v in row])
        if buf.tell() >= CHUNK_CHARS:
            yield buf.getvalue()
            buf.seek(0)
            buf.truncate(0)
    if buf.tell():
        yield buf.getvalue()


AUDIT_CSV_FIELDS = ("pk", "created_at", "action", "actor__username", "request_id", "tool_name", "object_ref",
                    "before", "after")


PRIVATE_AUDIT_KEYS = ("recipients",)  # the reviewers' mail addresses a reminder or an escalation went to


def audit_for(data, staff):
    """An audit row's `before` / `after` as a reader outside the staff may see it: without the
    addresses mail went to (a requester, an end user or an outside agent's account, reads the
    events of its own requests)."""
    if staff or not isinstance(data, dict) or not any(k in data for k in PRIVATE_AUDIT_KEYS):
        return data
    return {k: v for k, v in data.items() if k not in PRIVATE_AUDIT_KEYS}


def audit_csv_response(events, staff=True, request=None, until_inclusive=True):
    """A streamed download of audit events (a queryset). Their columns only: the model instances, and
    the request each joined with its arguments, schema and context, cost most of a full export.
    Cut at CSV_LIMIT rows, it says so: a `Link` header to the next download (`request`'s own query,
    `until` the oldest row's moment, which that download repeats: rows of the same moment are never
    lost between the two), `until_inclusive` as the asker's filter reads `until`."""
    language = translation.get_language()  # the rows are written after the view has returned
    # the row the cut falls on and one beyond it: two when there is more (an index walk of 100,000)
    edge = list(events.values_list("created_at", flat=True)[CSV_LIMIT - 1:CSV_LIMIT + 1])

    def said(action, ref, before, after):
        if action not in ACCOUNT_ACTIONS:
            return ""
        return summary(SimpleNamespace(action=action, object_ref=ref, before=before, after=after), language)

    # created_at stays UTC ISO 8601 whoever asks (a machine output: sorted and parsed as it is); the
    # audit page writes the same moment the reader's way
    rows = ([pk, created.isoformat(), action, actor or "", request or "", tool, ref, audit_for(before, staff),
             audit_for(after, staff), said(action, ref, before, after)]
            for pk, created, action, actor, request, tool, ref, before, after
            in events[:CSV_LIMIT].values_list(*AUDIT_CSV_FIELDS).iterator(chunk_size=2000))
    stamp = timezone.now().strftime("%Y%m%dT%H%M%SZ")
    response = StreamingHttpResponse(csv_rows(itertools.chain([CSV_COLUMNS], rows)),
                                     content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="audit-{stamp}.csv"'
    if len(edge) > 1 and request is not None:
        until = edge[0] if until_inclusive else edge[0] + timedelta(microseconds=1)
        query = request.GET.copy()
        query["until"] = until.isoformat()
        response["Link"] = f'<{request.path}?{query.urlencode()}>; rel="next"'
    return response
