"""REST: approvals (list with filters and search, decide, bulk-decide), tool policies (admins,
keyed by tool name), the audit log (filters, ?format=csv) and "always allow in this thread" grants.

Views stay thin: every change goes through approvals.services.
"""

import ipaddress
from urllib.parse import urlsplit

from django.conf import settings
from django.contrib.auth.models import Group
from django.core.exceptions import ValidationError as DjangoValidationError
from django.db.models import Prefetch
from django.utils.translation import gettext as _
from django_filters.rest_framework import DjangoFilterBackend
from drf_spectacular.utils import (
    OpenApiParameter,
    OpenApiResponse,
    extend_schema,
    extend_schema_field,
    extend_schema_view,
)
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.permissions import DjangoModelPermissions
from rest_framework.renderers import BaseRenderer
from rest_framework.response import Response
from rest_framework.settings import api_settings

from agui_project import destinations
from agui_project.answer_first import answer_first
from agui_project.permissions import StaffWithModelPermissions
from agui_project.serializers import ErrorSerializer, ModelSerializer

from . import account_audit, exports, outside, policy_versions, reach, registry, selectors, services
from .access import is_admin, memberships
from .filters import ApprovalFilter, AuditFilter, GrantFilter
from .models import (
    ApprovalRequest,
    AuditEvent,
    Decision,
    OutsideCall,
    Risk,
    ThreadGrant,
    ToolPolicy,
    arguments_hash,
    said,
)
from .validators import policy_errors
from .waiting import MAX_WAIT


def _error_response(exc):
    data = {"message": exc.message, "code": exc.code}
    if isinstance(exc, services.InvalidArguments):
        data["arguments"] = exc.errors
        if exc.labels:  # what a page names each argument by ("Amount"), in the caller's language
            data["labels"] = {field: exc.labels[field] for field in exc.errors if field in exc.labels}
    elif exc.errors:
        data.update(exc.errors)
    retry_after = getattr(exc, "retry_after", None)
    return Response(data, status=exc.status_code, headers={"Retry-After": str(retry_after)} if retry_after else None)


# --- approvals ------------------------------------------------------------------------------------


class DecisionSerializer(ModelSerializer):
    user = serializers.CharField(source="user.username", read_only=True)
    withdrawn = serializers.SerializerMethodField()

    class Meta:
        model = Decision
        fields = ["user", "decision", "arguments", "arguments_hash", "feedback", "withdrawn", "withdrawn_at",
                  "created_at"]

    def get_withdrawn(self, obj) -> bool:
        return obj.withdrawn_at is not None


class OutsideInfoSerializer(ModelSerializer):
    class Meta:
        model = OutsideCall
        fields = ["callback_url", "outcome", "outcome_detail", "outcome_at"]


def _http_url(value):
    if value and not value.lower().startswith(("http://", "https://")):
        raise ValidationError(_("only http(s) URLs are accepted"))


class OutsideRequestSerializer(serializers.Serializer):
    """POST /api/approvals/: a call an agent running elsewhere wants to make."""

    tool_name = serializers.RegexField(r"^[A-Za-z0-9_.\-]+$", max_length=100)
    arguments = serializers.DictField(help_text="The call's arguments (a JSON object)")
    description = serializers.CharField(required=False, allow_blank=True, max_length=5000, default="",
                                        help_text="What the call does, in words for the reviewer")
    reason = serializers.CharField(required=False, allow_blank=True, max_length=5000, default="")
    reversible = serializers.BooleanField(required=False, default=False)
    impact = serializers.CharField(required=False, allow_blank=True, max_length=5000, default="")
    risk = serializers.ChoiceField(choices=Risk.choices, required=False,
                                   help_text="May raise the risk policy gives, never lower it")
    thread = serializers.CharField(required=False, allow_blank=True, max_length=200, default="")
    run = serializers.CharField(required=False, allow_blank=True, max_length=200, default="")
    agent_name = serializers.CharField(required=False, allow_blank=True, max_length=100, default="",
                                       help_text="Your agent's name, shown to reviewers; not the name of one of "
                                       "this project's agents")
    schema = serializers.DictField(required=False, help_text="JSON Schema of the arguments, for a tool this "
                                   "project does not know (the arguments are checked against it)")
    callback_url = serializers.URLField(required=False, allow_blank=True, max_length=2000, validators=[_http_url],
                                        help_text="Called (as a webhook) when the request is answered")
    user_wrote_at = serializers.DateTimeField(
        required=False, help_text="When the person last wrote in `thread`: the same call rejected earlier in that "
        "thread is rejected again at once with the earlier feedback, unless the rejection came before this moment")

    def validate_callback_url(self, value):
        # an address, not a name: it is judged now, as each delivery would judge it (a name may resolve
        # elsewhere by then). It was taken, and each delivery refused and retried for hours unseen
        try:
            host = urlsplit(value).hostname if value else None
            urlsplit(value).port  # noqa: B018  (a port out of range: no delivery could be made, none was)
        except ValueError:
            raise ValidationError(_("not a valid URL")) from None
        try:
            ipaddress.ip_address(host or "")
        except ValueError:
            return value
        if destinations.refused(value, settings.AGUI_WEBHOOK_ALLOWED_NETWORKS, "AGUI_WEBHOOK_ALLOWED_NETWORKS"):
            raise ValidationError(_("an internal address this site does not call"))
        return value

    def validate_agent_name(self, value):
        if registry.names_an_agent_here(value):
            raise serializers.ValidationError(
                _("“%(name)s” is the name of an agent of this project: reviewers would take this agent for it. "
                  "Give your agent a name of its own.") % {"name": value.strip()})
        return value


class OutcomeSerializer(serializers.Serializer):
    outcome = serializers.ChoiceField(choices=OutsideCall.Outcome.choices)
    detail = serializers.CharField(required=False, allow_blank=True, max_length=5000, default="")


class WithdrawSerializer(serializers.Serializer):
    reason = serializers.CharField(required=False, allow_blank=True, max_length=5000, default="",
                                   help_text="Why, for the reviewers and the audit (the request's feedback)")


class ApprovalSerializer(ModelSerializer):
    thread = serializers.SerializerMethodField(help_text="The conversation: ours, or the outside agent's own ref")
    run = serializers.SerializerMethodField()
    tool_call = serializers.CharField(source="tool_call_ref", read_only=True)
    requester = serializers.CharField(source="requester.username", read_only=True)
    approver = serializers.CharField(source="approver_label", read_only=True)
    approver_group = serializers.CharField(source="approver_group.name", read_only=True, default=None, allow_null=True)
    escalation_group = serializers.CharField(source="escalation_group.name", read_only=True, default=None, allow_null=True)
    decided_by = serializers.CharField(source="decided_by.username", read_only=True, default=None, allow_null=True)
    can_decide = serializers.SerializerMethodField()
    approvals = serializers.SerializerMethodField()
    arguments_hash = serializers.SerializerMethodField()
    decisions = DecisionSerializer(many=True, read_only=True)
    outside = serializers.SerializerMethodField(
        help_text="Requests made through POST /api/approvals/: the callback URL and the reported outcome")

    class Meta:
        model = ApprovalRequest
        fields = [
            "id", "status", "tool_name", "arguments", "final_arguments", "description", "reason", "self_check",
            "reversible", "impact", "risk", "matched_rule", "thread", "run", "tool_call", "agent_name", "requester",
            "approver", "approver_group", "required_approvals", "approvals", "expires_at", "timeout_action",
            "remind_at", "reminded_at", "escalation_group", "escalate_at", "escalated_at", "feedback", "decided_by",
            "decided_at", "created_at", "can_decide", "decisions", "outside", "allowed_decisions", "arguments_hash",
        ]
        extra_kwargs = {"allowed_decisions": {"help_text": "What reviewers may answer (approve, edit, reject, "
                                                           "respond), from the tool's policy when it was asked"}}

    def to_representation(self, instance):
        data = super().to_representation(instance)
        # in the caller's language where the request was said in every language (our own tools')
        data["description"], data["impact"] = said(instance, "description"), said(instance, "impact")
        return data

    @extend_schema_field(OutsideInfoSerializer(allow_null=True))
    def get_outside(self, obj):
        try:
            row = obj.outside
        except OutsideCall.DoesNotExist:
            return None
        data = OutsideInfoSerializer(row).data
        request = self.context.get("request")
        if request is None or not (is_admin(request.user) or request.user.pk == obj.requester_id):
            data["callback_url"] = destinations.where_it_goes(data["callback_url"])
        return data

    def get_thread(self, obj) -> str:
        return obj.thread_ref or outside.refs(obj)["thread"]

    def get_run(self, obj) -> str:
        return obj.run_ref or outside.refs(obj)["run"]

    def get_can_decide(self, obj) -> bool:
        request = self.context.get("request")
        return bool(request and obj.is_pending
                    and services.can_decide(request.user, obj, group_ids=memberships(request.user)[0]))

    def get_arguments_hash(self, obj) -> str:
        """The digest of the arguments an approval now approves (the latest edit, else as asked): send it
        back with an approve to approve exactly those."""
        return arguments_hash(obj.current_arguments)

    def get_approvals(self, obj) -> int:
        """Approvals that count now: distinct approvers of the current arguments, not withdrawn, who may
        still decide it (selectors.quorum)."""
        return selectors.quorum(approval=obj)["have"]


class DecideSerializer(serializers.Serializer):
    decision = serializers.ChoiceField(
        choices=[*Decision.Kind.choices, ("edit", "edit")],
        help_text="approve (with `arguments`: approve with edits), edit (the same, `arguments` required: the word "
        "`allowed_decisions` and AG-UI's resume use), reject, or respond (the call does not run; "
        "`feedback`, required, is what the agent reads instead). Only the request's `allowed_decisions` are "
        "taken (else 400 decision_not_allowed).")
    arguments = serializers.DictField(required=False, help_text="Edited arguments (validated against the tool)")
    arguments_hash = serializers.RegexField(
        r"^[0-9a-f]{64}$", required=False,
        help_text="With approve and no `arguments`: the `arguments_hash` of the arguments you read; when another "
        "approver has edited them since, 409 arguments_changed instead of approving what you did not read")
    feedback = serializers.CharField(required=False, allow_blank=True, max_length=5000, default="")
    always_allow_in_thread = serializers.BooleanField(
        required=False, default=False,
        help_text="With approve, on a request you confirm yourself: run this tool without asking again in "
        "this thread (revocable under /api/grants/)",
    )

    def validate(self, data):
        if data["decision"] == "edit":  # an approval of the edited arguments, as the services take it
            if "arguments" not in data:
                raise ValidationError({"arguments": [_("an edit needs the edited arguments")]})
            data["decision"] = Decision.Kind.APPROVE
        return data


class BulkDecideSerializer(serializers.Serializer):
    ids = serializers.ListField(child=serializers.CharField(max_length=64), min_length=1,
                                max_length=services.BULK_LIMIT)
    decision = serializers.ChoiceField(choices=Decision.Kind.choices)
    feedback = serializers.CharField(required=False, allow_blank=True, max_length=5000, default="")


class BulkItemSerializer(serializers.Serializer):
    id = serializers.CharField()
    ok = serializers.BooleanField()
    status = serializers.CharField(required=False)
    code = serializers.CharField(required=False)
    message = serializers.CharField(required=False)
    errors = serializers.DictField(required=False)


class BulkResultSerializer(serializers.Serializer):
    results = BulkItemSerializer(many=True)
    succeeded = serializers.IntegerField()
    failed = serializers.IntegerField()


def _check_params(params):
    """Query values reach SQL filters: a NUL byte (which PostgreSQL refuses) is a 400, not a 500."""
    for name, values in params.lists():
        if any("\x00" in v for v in values):
            raise ValidationError({name: [_("NUL characters are not accepted")]})


class ListFilters:
    """django-filter's FilterSet (`filterset_class`) on the list only: a detail URL ignores the
    list's query parameters, as it always did (GenericAPIView.get_object filters too)."""

    filter_backends = [DjangoFilterBackend]

    def filter_queryset(self, queryset):
        if self.action != "list":
            return queryset
        _check_params(self.request.query_params)
        return super().filter_queryset(queryset)


# the requests' decisions with their deciders: one query joined to the users (a prefetch of
# decisions__user is two), and the deciders' groups in one more, which a row's count of approvals
# reads (selectors.quorum: only those who may still decide count) instead of a query per row
DECISIONS = Prefetch("decisions", queryset=Decision.objects.select_related("user").prefetch_related("user__groups"))


def with_decisions(qs):
    return qs.prefetch_related(DECISIONS)


class ApprovalViewSet(ListFilters, viewsets.ReadOnlyModelViewSet):
    """Approval requests. Agents running elsewhere create them (POST, with an Idempotency-Key),
    wait for the answer (GET ...?wait=N) and report how the call went (POST .../outcome/)."""

    serializer_class = ApprovalSerializer
    filterset_class = ApprovalFilter
    lookup_value_regex = r"[^/.\x00]+"
    queryset = ApprovalRequest.objects.none()  # for the schema; get_queryset scopes to the caller

    def get_queryset(self):
        qs = selectors.visible_requests(user=self.request.user).select_related("decided_by", "outside")
        if self.action != "decide":  # a decision looks up only the row; its response reads it again, whole
            qs = with_decisions(qs)
        return qs.order_by("-created_at", "-id")  # the id: a stable order across pages for equal times

    def _answer(self, pk, code=status.HTTP_200_OK, headers=None):
        approval = self.get_queryset().get(pk=pk)  # with its decisions (not a decision's own lookup)
        return Response(ApprovalSerializer(approval, context={"request": self.request}).data, status=code,
                        headers=headers)

    @extend_schema(
        request=OutsideRequestSerializer,
        responses={201: ApprovalSerializer, 200: OpenApiResponse(ApprovalSerializer, description="a retry with the "
                                                                 "same Idempotency-Key: the same request"),
                   400: OpenApiResponse(ErrorSerializer, description="field errors, unknown_tool, invalid_schema, "
                                        "invalid_arguments"),
                   422: OpenApiResponse(ErrorSerializer, description="idempotency_key_reused"),
                   429: OpenApiResponse(ErrorSerializer, description="too_many_pending, too_many_requests "
                                        "(with Retry-After)")},
        parameters=[OpenApiParameter("Idempotency-Key", str, OpenApiParameter.HEADER, description=(
            "A retry with the same key returns the same request (200); the same key with another body is 422"))],
        description="Ask for approval of a call by an agent running elsewhere (a user's or a service "
        "account's token). Judged by the tool's policy: never -> approved at once, deny -> denied with the "
        "rule, a tool this project does not know (send `schema`) -> the reviewers group, high risk.",
    )
    def create(self, request):
        body = OutsideRequestSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        key = request.headers.get("Idempotency-Key", "").strip() or None
        if key and len(key) > 200:
            raise ValidationError({"idempotency_key": [_("at most 200 characters")]})
        try:
            approval, created = outside.create(requester=request.user, body=body.validated_data, idempotency_key=key)
        except services.DecisionError as exc:
            return _error_response(exc)
        return self._answer(approval.pk, status.HTTP_201_CREATED if created else status.HTTP_200_OK,
                            headers={"Location": f"/api/approvals/{approval.pk}/"})

    @extend_schema(parameters=[OpenApiParameter("wait", float, description=(
        f"Wait up to this many seconds (at most {MAX_WAIT}) for a pending request to be answered; "
        "above the limit: 400"))], responses={200: ApprovalSerializer, 400: ErrorSerializer, 404: ErrorSerializer})
    def retrieve(self, request, *args, **kwargs):
        return super().retrieve(request, *args, **kwargs)

    @extend_schema(request=OutcomeSerializer, responses={
        200: ApprovalSerializer, 400: ErrorSerializer, 403: ErrorSerializer, 404: ErrorSerializer,
        409: OpenApiResponse(ErrorSerializer, description="outcome_already_reported, not_approved, not_outside")})
    @action(detail=True, methods=["post"], serializer_class=OutcomeSerializer)
    def outcome(self, request, pk=None):
        """How the approved call went, reported once by the agent that asked (a second report: 409)."""
        return self._by_the_agent(request, OutcomeSerializer, outside.report_outcome)

    @extend_schema(request=WithdrawSerializer, responses={
        200: ApprovalSerializer, 400: ErrorSerializer, 403: ErrorSerializer, 404: ErrorSerializer,
        409: OpenApiResponse(ErrorSerializer, description="already_decided (settled), not_outside")})
    @action(detail=True, methods=["post"], serializer_class=WithdrawSerializer)
    def withdraw(self, request, pk=None):
        """The agent that asked withdraws its pending request (it stopped waiting): cancelled, so nobody
        approves a call that will never run."""
        return self._by_the_agent(request, WithdrawSerializer, outside.withdraw)

    def _by_the_agent(self, request, serializer_class, act):
        """What the agent that asked says of its request (outcome, withdraw): the body checked, `act`
        done (its refusal said as the API says them), the request answered."""
        approval = self.get_object()
        body = serializer_class(data=request.data)
        body.is_valid(raise_exception=True)
        try:
            act(request_id=approval.pk, user=request.user, **body.validated_data)
        except services.DecisionError as exc:
            return _error_response(exc)
        return self._answer(approval.pk)

    @extend_schema(request=DecideSerializer, responses={
        200: ApprovalSerializer,
        400: OpenApiResponse(ErrorSerializer, description="field errors, feedback_required, decision_not_allowed, "
                             "invalid_arguments, edit_denied, edit_needs_other_approver"),
        403: OpenApiResponse(ErrorSerializer, description="the caller may see the request but not decide it"),
        404: OpenApiResponse(ErrorSerializer, description="no such request, or not one the caller may see"),
        409: OpenApiResponse(ErrorSerializer, description="already_decided; already_approved (by the caller); "
                             "arguments_changed (another approver edited them since what arguments_hash names); "
                             "requester_inactive (the requester's account is switched off: reject it)")})
    @action(detail=True, methods=["post"], serializer_class=DecideSerializer)
    def decide(self, request, pk=None):
        """The decision reads the request once, under its lock, and answers with that row: the
        request is not looked up through the visible list first nor read back whole after (two
        reads of five joined tables and the visibility filter, about a quarter of a decision's
        time). Who may not decide it gets 403, and 404 when they may not even see it."""
        body = DecideSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        try:
            with answer_first():  # the inbox's notices follow the answer
                approval = services.decide(
                    pk, request.user, body.validated_data["decision"],
                    arguments=body.validated_data.get("arguments"), feedback=body.validated_data.get("feedback", ""),
                    always_allow_in_thread=body.validated_data.get("always_allow_in_thread", False),
                    seen=body.validated_data.get("arguments_hash"),
                )
        except services.NotFound:
            raise NotFound(_("no such request")) from None
        except services.DecisionError as exc:
            if isinstance(exc, services.Forbidden) and not self.get_queryset().filter(pk=pk).exists():
                raise NotFound(_("no such request")) from None
            return _error_response(exc)
        # what the answer shows beyond the locked row (its requester, groups and outside call came with it)
        selectors.with_decisions(approval=approval)
        return Response(ApprovalSerializer(approval, context={"request": request}).data)

    @extend_schema(request=BulkDecideSerializer, responses={200: BulkResultSerializer})
    @action(detail=False, methods=["post"], url_path="bulk-decide", serializer_class=BulkDecideSerializer)
    def bulk_decide(self, request):
        """Decide many requests with one reason; each is validated on its own and reported per item."""
        body = BulkDecideSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        with answer_first():
            results = services.bulk_decide(body.validated_data["ids"], request.user, body.validated_data["decision"],
                                           feedback=body.validated_data.get("feedback", ""))
        ok = sum(1 for r in results if r["ok"])
        return Response({"results": results, "succeeded": ok, "failed": len(results) - ok})


# --- policies --------------------------------------------------------------------------------------


class PolicySerializer(ModelSerializer):
    approver_group = serializers.SlugRelatedField(slug_field="name", queryset=Group.objects.all(), allow_null=True,
                                                  required=False)
    escalation_group = serializers.SlugRelatedField(slug_field="name", queryset=Group.objects.all(),
                                                    allow_null=True, required=False)
    source = serializers.SerializerMethodField(help_text="policy: an admin's row; default: the tool's code defaults")
    registered = serializers.SerializerMethodField(help_text="Whether a loaded agent offers this tool")
    server = serializers.SerializerMethodField(help_text="The MCP server the tool comes from; null for our own tools")
    quorum_warnings = serializers.SerializerMethodField(
        help_text="Where the approvals this policy asks for outnumber the active members of the groups that would "
                  "give them, as the groups stand now (such requests can never be approved): a sentence each")

    class Meta:
        model = ToolPolicy
        fields = ["tool_name", "source", "registered", "server", "quorum_warnings", "mode", "conditions", "approver_kind", "approver_group",
                  "required_approvals", "timeout_seconds", "timeout_action", "risk", "reminder_fraction",
                  "escalation_group", "escalation_fraction", "allowed_decisions", "updated_at"]
        read_only_fields = ["updated_at"]
        # the URL names the tool; uniqueness is the upsert's. A tool on its code defaults has no row: updated_at null
        extra_kwargs = {"tool_name": {"validators": []}, "updated_at": {"allow_null": True}}

    def get_source(self, obj) -> str:
        return "policy" if obj.pk else "default"

    def get_registered(self, obj) -> bool:
        return registry.get(obj.tool_name) is not None

    def get_server(self, obj) -> str | None:
        defaults = registry.get(obj.tool_name)
        return (defaults.extra or {}).get("server") if defaults else None

    def get_quorum_warnings(self, obj) -> list[str]:
        return reach.short_quorums(obj)

    def validate(self, attrs):
        """The one policy validator (also behind ToolPolicy.clean and the admin form)."""
        base = self.instance
        merged = {f: getattr(base, f) for f in services.POLICY_FIELDS} if base is not None else {}
        merged.update({k: v for k, v in attrs.items() if k in services.POLICY_FIELDS})
        merged["tool_name"] = attrs.get("tool_name", getattr(base, "tool_name", ""))
        defaults = ToolPolicy()  # model defaults for fields a create leaves out
        for field in services.POLICY_FIELDS:
            merged.setdefault(field, getattr(defaults, field))
        errors = policy_errors(merged, schema=registry.schema_of(merged["tool_name"]))
        if errors:
            raise ValidationError(errors)
        return attrs


def _plain(data):
    """A JSON object or form as a plain dict (one value per key); anything else as is (400 later)."""
    return {k: data[k] for k in data.keys()} if hasattr(data, "keys") else data


_TOOL_NAME = OpenApiParameter("tool_name", str, OpenApiParameter.PATH, description="The tool's name")
_IF_MATCH = OpenApiParameter(
    "If-Match", str, OpenApiParameter.HEADER, required=False,
    description="The ETag a GET of this policy answered: the change is made only if the policy still says what it "
                "said then (else 412, code policy_changed). Without it the change is made whatever happened since.")
_CHANGED = OpenApiResponse(ErrorSerializer, description="policy_changed: another change was saved since the ETag "
                                                        "sent in If-Match; GET the policy again")
_POLICY_SAVED = {200: PolicySerializer, 201: OpenApiResponse(PolicySerializer, description="the tool had no policy "
                                                               "row: created"), 400: ErrorSerializer, 412: _CHANGED}


def _if_match(request):
    """The version an If-Match header names (its first entity tag, quotes and W/ dropped), or None: no
    precondition. `*` asks only that the policy exist, which every tool's does (its code defaults)."""
    header = request.headers.get("If-Match", "").strip()
    if not header or header == "*":
        return None
    tag = header.split(",")[0].strip()
    if tag.startswith("W/"):
        tag = tag[2:]
    return tag.strip('"')


def _etag(policy):
    return f'"{policy_versions.version_of(policy)}"'


def _changed(exc):
    """412 for a change based on a policy version that is no longer the policy's."""
    current = selectors.policy_for(tool_name=exc.tool_name)
    if exc.by and exc.at:
        message = _("%(name)s changed this policy at %(when)s, after the version you sent in If-Match: nothing was "
                    "changed. Read it again (GET) and send your change with its new ETag.") % {
            "name": exc.by, "when": exc.at.isoformat()}
    else:
        message = _("This policy changed after the version you sent in If-Match: nothing was changed. Read it again "
                    "(GET) and send your change with its new ETag.")
    body = {"message": message, "code": "policy_changed", "changed_by": exc.by,
            "changed_at": exc.at.isoformat() if exc.at else None}
    headers = {"ETag": _etag(current)} if current is not None else {}
    return Response(body, status=status.HTTP_412_PRECONDITION_FAILED, headers=headers)


class PolicyPermissions(StaffWithModelPermissions):
    """Every admin reads the policies; a save or a delete asks the model's permission, as the admin
    site does (policy_versions checks it again for whatever sends a save)."""

    perms_map = DjangoModelPermissions.perms_map

    def has_permission(self, request, view):
        allowed = super().has_permission(request, view)
        if not allowed and request.user and request.user.is_staff:
            self.message = str(policy_versions.NOT_YOURS_TO_CHANGE)
        return allowed


# the tool's name is a path parameter of the detail routes only (the list's path has none)
@extend_schema_view(
    create=extend_schema(responses={201: PolicySerializer, 400: ErrorSerializer,
                                    409: OpenApiResponse(ErrorSerializer, description="exists: use PUT or PATCH")}),
    retrieve=extend_schema(parameters=[_TOOL_NAME], responses={200: PolicySerializer, 404: ErrorSerializer}),
    update=extend_schema(parameters=[_TOOL_NAME, _IF_MATCH], responses=_POLICY_SAVED),
    partial_update=extend_schema(parameters=[_TOOL_NAME, _IF_MATCH], responses=_POLICY_SAVED),
    destroy=extend_schema(parameters=[_TOOL_NAME, _IF_MATCH], responses={204: None, 404: ErrorSerializer,
                                                                          412: _CHANGED}),
)
class PolicyViewSet(viewsets.GenericViewSet):
    """Tool policies, admins only. Every registered tool is listed (source "default" until an admin
    saves a row); PUT/PATCH create or change the row (PUT replaces it whole: a field left out takes
    the model's default; PATCH changes only what it sends), DELETE returns the tool to its code defaults.
    Every change is audited with before/after. A policy's GET and every save answer its ETag (the
    digest of what it says); PUT, PATCH and DELETE sent with If-Match are refused with 412
    (policy_changed) once the policy says something else; without If-Match they are made as before."""

    serializer_class = PolicySerializer
    permission_classes = [PolicyPermissions]
    queryset = ToolPolicy.objects.all()
    lookup_field = "tool_name"
    lookup_value_regex = r"[A-Za-z0-9_.\-]+"

    def list(self, request):
        page = self.paginate_queryset([policy for _, policy, _ in selectors.policies()])
        return self.get_paginated_response(PolicySerializer(page, many=True).data)

    def retrieve(self, request, tool_name=None):
        policy = selectors.policy_for(tool_name=tool_name)
        if policy is None:
            raise NotFound(_("no policy or registered tool by that name"))
        return Response(PolicySerializer(policy).data, headers={"ETag": _etag(policy)})

    def create(self, request):
        body = PolicySerializer(data=_plain(request.data))
        body.is_valid(raise_exception=True)
        tool_name = body.validated_data["tool_name"]
        if ToolPolicy.objects.filter(tool_name=tool_name).exists():
            return Response({"message": _("%(tool)s already has a policy; use PUT or PATCH") % {"tool": tool_name},
                             "code": "exists"}, status=status.HTTP_409_CONFLICT)
        return self._save(tool_name, body.validated_data, status.HTTP_201_CREATED)

    def update(self, request, tool_name=None):
        return self._write(request, tool_name, partial=False)

    def partial_update(self, request, tool_name=None):
        return self._write(request, tool_name, partial=True)

    def destroy(self, request, tool_name=None):
        try:
            deleted = policy_versions.delete_policy(tool_name, request.user, seen=_if_match(request))
        except policy_versions.PolicyChanged as exc:
            return _changed(exc)
        if not deleted:
            raise NotFound(_("this tool has no policy row (it runs on its code defaults)"))
        return Response(status=status.HTTP_204_NO_CONTENT)

    def _write(self, request, tool_name, partial):
        current = selectors.policy_for(tool_name=tool_name)  # PATCH of a default-only tool starts from its code defaults
        data = _plain(request.data)
        if isinstance(data, dict):
            data["tool_name"] = tool_name  # the URL names the tool
        # PUT replaces the whole policy: validated, and saved, from the model defaults (not the stored row)
        base = current if partial else ToolPolicy(tool_name=tool_name)
        body = PolicySerializer(base if partial else None, data=data, partial=partial)
        body.is_valid(raise_exception=True)
        created = current is None or current.pk is None
        return self._save(tool_name, body.validated_data, status.HTTP_201_CREATED if created else status.HTTP_200_OK,
                          base=base, merge=partial and not created)

    def _save(self, tool_name, validated, code, base=None, merge=False):
        """Saves every policy field: those `validated` names, the others as `base` has them (the
        values they were validated with: the model defaults for POST and PUT, a default-only tool's
        code defaults for PATCH), never whatever the stored row holds. `merge` (PATCH of a stored
        policy): only the fields sent, onto the row as it stands under its lock; the others as read
        before would undo a change another admin saved meanwhile (the whole row is validated again)."""
        base = base if base is not None else ToolPolicy(tool_name=tool_name)
        values = {} if merge else {f: getattr(base, f) for f in services.POLICY_FIELDS}
        values.update({k: v for k, v in validated.items() if k in services.POLICY_FIELDS})
        try:
            row = policy_versions.save_policy(tool_name, values, self.request.user, seen=_if_match(self.request))
        except DjangoValidationError as exc:  # a concurrent change made it invalid
            raise ValidationError(exc.message_dict) from exc
        except policy_versions.PolicyChanged as exc:
            return _changed(exc)
        return Response(PolicySerializer(row).data, status=code, headers={"ETag": _etag(row)})


# --- audit -----------------------------------------------------------------------------------------


class AuditSerializer(ModelSerializer):
    actor = serializers.CharField(source="actor.username", read_only=True, default=None, allow_null=True)
    request = serializers.CharField(source="request_id", read_only=True, default=None, allow_null=True)
    summary = serializers.SerializerMethodField(
        help_text="What an account or group event says, in the reader's language (\"finn added to finance\", "
                  "\"bob switched off\"); null for the other events")

    class Meta:
        model = AuditEvent
        fields = ["id", "created_at", "action", "actor", "request", "tool_name", "object_ref", "before", "after",
                  "summary"]

    def get_summary(self, obj) -> str | None:
        return account_audit.summary(obj) or None

    def to_representation(self, instance):
        data = super().to_representation(instance)
        request = self.context.get("request")
        staff = bool(request and is_admin(request.user))
        return {**data, "before": exports.audit_for(data["before"], staff), "after": exports.audit_for(data["after"], staff)}


class CSVRenderer(BaseRenderer):
    """Declares text/csv so that ?format=csv negotiates; AuditViewSet.list streams the rows itself."""

    media_type = "text/csv"
    format = "csv"
    charset = "utf-8"

    def render(self, data, accepted_media_type=None, renderer_context=None):
        rows = data if isinstance(data, list) else [data]
        keys = list(rows[0].keys()) if rows and isinstance(rows[0], dict) else ["message"]
        lines = [keys] + [[row.get(k) for k in keys] if isinstance(row, dict) else [row] * len(keys) for row in rows]
        return "".join(exports.csv_rows(lines)).encode()


@extend_schema(parameters=[OpenApiParameter("format", str, enum=["json", "csv"],
                                            description="csv: every matching row as a download")])
class AuditViewSet(ListFilters, viewsets.ReadOnlyModelViewSet):
    """The append-only audit log: staff see everything, others the events of requests they can see."""

    serializer_class = AuditSerializer
    filterset_class = AuditFilter
    queryset = AuditEvent.objects.none()  # for the schema; get_queryset scopes to the caller
    lookup_value_regex = r"\d+"
    renderer_classes = [*api_settings.DEFAULT_RENDERER_CLASSES, CSVRenderer]

    def get_queryset(self):
        return selectors.audit_events(user=self.request.user)

    def list(self, request, *args, **kwargs):
        if getattr(request.accepted_renderer, "format", None) == "csv":
            return exports.audit_csv_response(self.filter_queryset(self.get_queryset()), staff=is_admin(request.user),
                                              request=request, until_inclusive=False)  # the API's until is exclusive
        return super().list(request, *args, **kwargs)


# --- "always allow in this thread" -----------------------------------------------------------------


class GrantSerializer(ModelSerializer):
    user = serializers.CharField(source="user.username", read_only=True)
    thread = serializers.CharField(source="thread_ref", read_only=True)
    revoked_by = serializers.CharField(source="revoked_by.username", read_only=True, default=None, allow_null=True)
    source_request = serializers.CharField(source="source_request_id", read_only=True, default=None, allow_null=True)
    active = serializers.BooleanField(read_only=True)

    class Meta:
        model = ThreadGrant
        fields = ["id", "tool_name", "thread", "user", "active", "source_request", "created_at", "revoked_at",
                  "revoked_by"]


class GrantViewSet(ListFilters, mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    """Your "always allow in this thread" grants (staff: everyone's); created by deciding with
    always_allow_in_thread, ended with POST .../revoke/ (kept, never deleted)."""

    serializer_class = GrantSerializer
    filterset_class = GrantFilter
    queryset = ThreadGrant.objects.none()  # for the schema; get_queryset scopes to the caller
    lookup_value_regex = r"[0-9]+"  # integer ids: /api/grants/abc/ is a 404, not a ValueError (500)

    def get_queryset(self):
        return selectors.visible_grants(user=self.request.user).order_by("-created_at", "-id")  # stable pages

    @extend_schema(request=None, responses={200: GrantSerializer, 404: ErrorSerializer,
                                            409: OpenApiResponse(ErrorSerializer, description="already revoked")})
    @action(detail=True, methods=["post"])
    def revoke(self, request, pk=None):
        try:
            grant = services.revoke_grant(pk, request.user)
        except services.DecisionError as exc:
            return _error_response(exc)
        return Response(GrantSerializer(grant).data)

