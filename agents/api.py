"""REST for scripts and tests: threads, messages (starting runs), runs."""

from rest_framework import mixins, serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.response import Response

from . import services
from .catalog import get_agent
from .models import Message, Run, Thread


class ThreadSerializer(serializers.ModelSerializer):
    class Meta:
        model = Thread
        fields = ["id", "agent", "title", "created_at", "updated_at"]
        read_only_fields = ["created_at", "updated_at"]
        extra_kwargs = {"id": {"required": False, "validators": []}}

    def validate_agent(self, value):
        if get_agent(value) is None:
            raise serializers.ValidationError(f"unknown agent {value!r}")
        return value

    def validate_id(self, value):
        if Thread.objects.filter(pk=value).exists():
            raise serializers.ValidationError("a thread with this id exists")
        return value


class MessageSerializer(serializers.ModelSerializer):
    class Meta:
        model = Message
        fields = ["id", "role", "content", "tool_calls", "tool_call_id", "run", "created_at"]

    def to_representation(self, instance):
        data = super().to_representation(instance)
        if not data["tool_calls"]:
            data.pop("tool_calls")
        if not data["tool_call_id"]:
            data.pop("tool_call_id")
        return data


class NewMessageSerializer(serializers.Serializer):
    content = serializers.CharField(max_length=20000, trim_whitespace=True)
    id = serializers.CharField(max_length=200, required=False)


class RunSerializer(serializers.ModelSerializer):
    class Meta:
        model = Run
        fields = ["id", "thread", "parent_run", "status", "error", "error_code", "created_at", "started_at", "finished_at"]


class ThreadViewSet(mixins.CreateModelMixin, mixins.ListModelMixin, mixins.RetrieveModelMixin,
                    mixins.UpdateModelMixin, mixins.DestroyModelMixin, viewsets.GenericViewSet):
    serializer_class = ThreadSerializer

    def get_queryset(self):
        return Thread.objects.filter(owner=self.request.user).order_by("-updated_at")

    def perform_create(self, serializer):
        serializer.instance = services.create_thread(
            self.request.user, serializer.validated_data["agent"], serializer.validated_data.get("title", ""),
            thread_id=serializer.validated_data.get("id"),
        )

    @action(detail=True, methods=["get", "post"], serializer_class=NewMessageSerializer)
    def messages(self, request, pk=None):
        thread = self.get_object()
        if request.method == "GET":
            return Response(MessageSerializer(thread.messages.all(), many=True).data)
        body = NewMessageSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        message_id = body.validated_data.get("id")
        if message_id and Message.objects.filter(pk=message_id).exists():
            return Response({"message": "a message with this id exists", "code": "message_exists"}, status=409)
        try:
            run = services.start_run(thread, request.user, body.validated_data["content"], message_id=message_id)
        except services.RunConflict as exc:
            return Response(
                {"message": exc.message, "code": exc.code, "pending": [r.pk for r in exc.pending]},
                status=status.HTTP_409_CONFLICT,
            )
        user_message = run.messages.filter(role=Message.Role.USER).first()
        return Response(
            {"run_id": run.pk, "message_id": user_message.pk if user_message else None, "status": run.status},
            status=status.HTTP_202_ACCEPTED,
        )


class RunViewSet(viewsets.ReadOnlyModelViewSet):
    serializer_class = RunSerializer

    def get_queryset(self):
        return Run.objects.filter(thread__owner=self.request.user).order_by("-created_at")

    @action(detail=True, methods=["post"])
    def cancel(self, request, pk=None):
        """Stop the run: 202 when a stop was requested, 409 when it has already ended."""
        run = self.get_object()
        if not services.cancel_run(run, request.user):
            return Response({"message": f"the run already ended ({run.status})", "code": "run_ended"}, status=409)
        run.refresh_from_db()
        return Response(RunSerializer(run).data, status=status.HTTP_202_ACCEPTED)


