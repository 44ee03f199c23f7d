"""REST: approvals visible to the caller, and deciding them."""

from rest_framework import serializers, viewsets
from rest_framework.decorators import action
from rest_framework.response import Response

from . import services
from .models import ApprovalRequest


class ApprovalSerializer(serializers.ModelSerializer):
    thread = serializers.CharField(source="thread_ref", read_only=True)
    run = serializers.CharField(source="run_ref", read_only=True)
    tool_call = serializers.CharField(source="tool_call_ref", read_only=True)
    requester = serializers.CharField(source="requester.username", read_only=True)
    approver = serializers.CharField(source="approver_label", read_only=True)
    decided_by = serializers.CharField(source="decided_by.username", read_only=True, default=None)
    can_decide = serializers.SerializerMethodField()

    class Meta:
        model = ApprovalRequest
        fields = [
            "id", "status", "tool_name", "arguments", "final_arguments", "description", "reason", "reversible",
            "impact", "risk", "matched_rule", "thread", "run", "tool_call", "agent_name", "requester", "approver",
            "required_approvals", "expires_at", "feedback", "decided_by", "decided_at", "created_at", "can_decide",
        ]

    def get_can_decide(self, obj) -> bool:
        request = self.context.get("request")
        return bool(request and obj.is_pending and services.can_decide(request.user, obj))


class DecideSerializer(serializers.Serializer):
    decision = serializers.ChoiceField(choices=["approve", "reject"])
    arguments = serializers.DictField(required=False)
    feedback = serializers.CharField(required=False, allow_blank=True, max_length=5000, default="")


class ApprovalViewSet(viewsets.ReadOnlyModelViewSet):
    serializer_class = ApprovalSerializer

    def get_queryset(self):
        qs = services.visible_to(self.request.user).select_related("decided_by")
        status = self.request.query_params.get("status")
        if status:
            qs = qs.filter(status=status)
        thread = self.request.query_params.get("thread")
        if thread:
            qs = qs.filter(thread_ref=thread)
        tool = self.request.query_params.get("tool")
        if tool:
            qs = qs.filter(tool_name=tool)
        return qs.order_by("-created_at")

    @action(detail=True, methods=["post"], serializer_class=DecideSerializer)
    def decide(self, request, pk=None):
        approval = self.get_object()
        body = DecideSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        try:
            approval = services.decide(
                approval.pk, request.user, body.validated_data["decision"],
                arguments=body.validated_data.get("arguments"), feedback=body.validated_data.get("feedback", ""),
            )
        except services.DecisionError as exc:
            data = {"message": exc.message, "code": exc.code}
            if isinstance(exc, services.InvalidArguments):
                data["arguments"] = exc.errors
            elif exc.errors:
                data.update(exc.errors)
            return Response(data, status=exc.status_code)
        return Response(ApprovalSerializer(approval, context={"request": request}).data)
