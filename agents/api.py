"""REST for scripts and tests: threads, messages (starting runs), shared state, runs."""

from django.conf import settings
from django.utils.translation import gettext as _
from django.utils.translation import ngettext
from django_filters.rest_framework import DjangoFilterBackend
from drf_spectacular.utils import OpenApiResponse, extend_schema, extend_schema_view, inline_serializer
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.response import Response

from agui_project import jsoncheck
from agui_project.serializers import ErrorSerializer, ModelSerializer
from state import services as state_services

from . import services, thread_ids
from .catalog import get_agent
from .filters import RunFilter
from .models import Message, Run, Thread
from .runtime import inputs, statesync


class ThreadSerializer(ModelSerializer):
    class Meta:
        model = Thread
        fields = ["id", "agent", "title", "created_at", "updated_at"]
        read_only_fields = ["created_at", "updated_at"]
        extra_kwargs = {"id": {"required": False, "validators": []}}

    def validate_agent(self, value):
        if self.instance is not None and value != self.instance.agent:
            raise serializers.ValidationError(_("a thread keeps its agent; start a new chat instead"))
        if get_agent(value) is None:
            raise serializers.ValidationError(_("unknown agent %(agent)s") % {"agent": repr(value)})
        return value

    def validate_id(self, value):
        if self.instance is not None:  # a PUT or PATCH: saved under another key, the row was copied
            if value != self.instance.pk:
                raise serializers.ValidationError(_("a thread keeps its id; start a new chat instead"))
            return value  # its own, as GET gave it
        if thread_ids.unaddressable(value):
            raise serializers.ValidationError(thread_ids.unaddressable(value))
        if Thread.objects.filter(pk=value).exists() or thread_ids.is_taken(value):
            raise serializers.ValidationError(_("this thread id is already taken or belonged to a deleted chat"))
        return value


class MessageSerializer(ModelSerializer):
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
    content = serializers.CharField(max_length=settings.AGUI_MAX_MESSAGE_CHARS, trim_whitespace=True)
    id = serializers.CharField(max_length=200, required=False)


class AnswerSerializer(serializers.Serializer):
    """An answer to an agent's question (request_info); `answer` is any JSON its responseSchema accepts."""

    request_id = serializers.CharField(max_length=64, required=False,
                                       help_text="Which question; optional when exactly one is open")
    answer = serializers.JSONField(required=False, decoder=jsoncheck.Decoder)
    cancel = serializers.BooleanField(default=False, help_text="Decline to answer: the workflow ends")

    def validate(self, data):
        if not data["cancel"] and "answer" not in data:
            raise serializers.ValidationError({"answer": [_("give an answer, or cancel: true")]})
        return data


TOO_MANY_RUNS = OpenApiResponse(ErrorSerializer, description="too_many_runs: the account started "
                                "AGUI_MAX_RUNS_PER_HOUR runs in the last hour (with Retry-After)")


def too_many_runs(exc):
    """services.TooManyRuns as the API's 429, with when to try again."""
    return Response({"message": exc.message, "code": exc.code}, status=status.HTTP_429_TOO_MANY_REQUESTS,
                    headers={"Retry-After": str(exc.retry_after)})


_ANSWER_STATUS = {"unknown_interrupt": 404, "already_decided": 409, "forbidden": 403, "invalid_payload": 400}


class StateChangeSerializer(serializers.Serializer):
    """PATCH: an RFC 6902 patch; PUT: the whole document (`{}` clears it). Both from `base_version`."""

    base_version = serializers.IntegerField(min_value=0, help_text="The version your change was made from; a "
                                            "stale one is refused (409 state_conflict, with the current state)")
    # decoder: JSON typed into a form field passes the same gate as a JSON body (agui_project/jsoncheck.py)
    patch = serializers.JSONField(required=False, decoder=jsoncheck.Decoder, help_text="PATCH: RFC 6902 operations")
    state = serializers.JSONField(required=False, decoder=jsoncheck.Decoder, help_text="PUT: the whole document")

    def validate(self, data):
        field = "patch" if self.context["request"].method == "PATCH" else "state"
        if field not in data:
            raise serializers.ValidationError({field: [_("This field is required.")]})
        return data


class StateSerializer(serializers.Serializer):
    version = serializers.IntegerField(help_text="The committed version: the base of your next change")
    state = serializers.JSONField(help_text="What the chat shows: committed data with live predictions")
    provisional = serializers.ListField(child=serializers.DictField(), help_text="[{key, tool_call_id}]: keys "
                                        "that show a prediction awaiting a decision (their edits wait)")


class RunSerializer(ModelSerializer):
    class Meta:
        model = Run
        fields = ["id", "thread", "parent_run", "status", "error", "error_code", "created_at", "started_at", "finished_at"]


RunStartedSerializer = inline_serializer("RunStarted", {
    "run_id": serializers.CharField(),
    "message_id": serializers.CharField(allow_null=True, help_text="The user message the run answers"),
    "status": serializers.ChoiceField(choices=Run.Status.choices),
})

RunConflictSerializer = inline_serializer("RunConflict", {
    "message": serializers.CharField(),
    "code": serializers.CharField(),
    "pending": serializers.ListField(child=serializers.CharField(), required=False,
                                     help_text="The requests waiting for a decision (interrupt_pending)"),
})

_QUESTION = {
    "requestId": serializers.CharField(),
    "toolCallId": serializers.CharField(),
    "runId": serializers.CharField(),
    "agent": serializers.CharField(),
    "message": serializers.CharField(help_text="What the agent asks the person"),
    "responseSchema": serializers.JSONField(help_text="The JSON Schema an answer must fit"),
    "status": serializers.CharField(),
    "answer": serializers.JSONField(required=False),
}
QuestionSerializer = inline_serializer("Question", _QUESTION, many=True)
QuestionAnsweredSerializer = inline_serializer("QuestionAnswered", {
    **_QUESTION,
    "continuation_run_id": serializers.CharField(allow_null=True, help_text="The run that continues the workflow"),
})


@extend_schema_view(destroy=extend_schema(responses={204: None, 409: ErrorSerializer}))
class ThreadViewSet(mixins.CreateModelMixin, mixins.ListModelMixin, mixins.RetrieveModelMixin,
                    mixins.UpdateModelMixin, mixins.DestroyModelMixin, viewsets.GenericViewSet):
    serializer_class = ThreadSerializer
    queryset = Thread.objects.none()  # names the model for the schema; get_queryset scopes to the owner
    # a client chooses the id (AG-UI's threadId): "chat.v2" too, which DRF's default ([^/.]+) left
    # unreachable; the router's format-suffix routes come after these, so ".json" is part of an id
    lookup_value_regex = r"[^/\x00]+"

    def get_queryset(self):
        return Thread.objects.filter(owner=self.request.user).order_by("-updated_at")

    def destroy(self, request, *args, **kwargs):
        """Delete a chat; refused while a run works or a request waits (stop the run first)."""
        thread = self.get_object()
        if thread.runs.filter(status__in=Run.ACTIVE).exists() or services.pending_approvals(thread):
            return Response({"message": _("this chat has a run in progress or a request waiting for a decision; "
                                          "stop it first"), "code": "thread_busy"}, status=status.HTTP_409_CONFLICT)
        return super().destroy(request, *args, **kwargs)

    def perform_create(self, serializer):
        try:
            serializer.instance = services.create_thread(
                self.request.user, serializer.validated_data["agent"], serializer.validated_data.get("title", ""),
                thread_id=serializer.validated_data.get("id"),
            )
        except thread_ids.ThreadIdTaken:  # claimed between validation and now
            raise serializers.ValidationError({"id": [_("this thread id is already taken or belonged to a deleted "
                                                        "chat")]}) from None

    @extend_schema(methods=["GET"], request=None, responses={200: MessageSerializer(many=True)})
    @extend_schema(methods=["POST"], request=NewMessageSerializer, responses={
        202: RunStartedSerializer, 400: ErrorSerializer,
        409: OpenApiResponse(RunConflictSerializer, description="a run is active (run_active) or waits on a "
                             "decision (interrupt_pending), or message_exists"), 429: TOO_MANY_RUNS})
    @action(detail=True, methods=["get", "post"], serializer_class=NewMessageSerializer, pagination_class=None)
    def messages(self, request, pk=None):
        thread = self.get_object()
        if request.method == "GET":
            return Response(MessageSerializer(thread.messages.all(), many=True).data)
        body = NewMessageSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        message_id = body.validated_data.get("id")
        if message_id and Message.objects.filter(pk=message_id).exists():
            return Response({"message": _("a message with this id exists"), "code": "message_exists"}, status=409)
        try:
            run = services.start_run(thread, request.user, body.validated_data["content"], message_id=message_id)
        except services.TooManyRuns as exc:
            return too_many_runs(exc)
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


    @extend_schema(responses=QuestionSerializer)
    @action(detail=True, methods=["get"], pagination_class=None)
    def questions(self, request, pk=None):
        """The questions this chat's agents wait on the person to answer, each with the schema its answer fits."""
        return Response([inputs.payload(q) for q in inputs.pending(self.get_object())])

    @extend_schema(request=AnswerSerializer, responses={
        202: QuestionAnsweredSerializer, 400: ErrorSerializer, 403: ErrorSerializer, 404: ErrorSerializer,
        409: OpenApiResponse(ErrorSerializer, description="already answered, or no question is open (nothing_open)")})
    @action(detail=True, methods=["post"], serializer_class=AnswerSerializer)
    def answer(self, request, pk=None):
        """Answer (or cancel) the question an agent asked; the paused run continues (202)."""
        thread = self.get_object()
        body = AnswerSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        request_id = body.validated_data.get("request_id")
        if not request_id:
            open_ = inputs.pending(thread)
            if not open_:  # answered already (a retry after a lost answer), or never asked
                return Response({"message": _("no question is open in this chat"), "code": "nothing_open"}, status=409)
            if len(open_) != 1:
                return Response({"message": ngettext(
                    "%(count)s question is open; name one with request_id",
                    "%(count)s questions are open; name one with request_id", len(open_)) % {"count": len(open_)},
                                 "code": "request_id_required", "pending": [q.pk for q in open_]}, status=400)
            request_id = open_[0].pk
        elif not thread.input_requests.filter(pk=request_id).exists():
            return Response({"message": _("no question %(id)s in this chat") % {"id": request_id},
                             "code": "unknown_interrupt"},
                            status=404)
        try:
            if body.validated_data["cancel"]:
                question = inputs.cancel(request_id, request.user, reason="cancelled by the person")
            else:
                question = inputs.answer(request_id, request.user, body.validated_data["answer"])
        except inputs.InputError as exc:
            return Response({"message": exc.message, "code": exc.code, "errors": exc.errors},
                            status=_ANSWER_STATUS.get(exc.code, 400))
        continuation = Run.objects.filter(parent_run_id=question.run_id).first()
        return Response({**inputs.payload(question), "continuation_run_id": continuation.pk if continuation else None},
                        status=status.HTTP_202_ACCEPTED)


    @extend_schema(methods=["GET"], responses=StateSerializer)
    @extend_schema(methods=["PATCH", "PUT"], request=StateChangeSerializer, responses={
        200: StateSerializer, 400: ErrorSerializer,
        409: OpenApiResponse(ErrorSerializer, description="state_conflict (with the current `snapshot` and "
                             "`version`) or state_provisional"),
        413: OpenApiResponse(ErrorSerializer, description="state_too_large"),
        422: OpenApiResponse(ErrorSerializer, description="state_invalid")})
    @action(detail=True, methods=["get", "patch", "put"], serializer_class=StateChangeSerializer)
    def state(self, request, pk=None):
        """The chat's shared state; people change it from a version (every open chat sees the change)."""
        thread = self.get_object()
        if request.method != "GET":
            body = StateChangeSerializer(data=request.data, context={"request": request})
            body.is_valid(raise_exception=True)
            data = body.validated_data
            try:
                if request.method == "PATCH":
                    statesync.apply_user_patch(thread, request.user, data["patch"], data["base_version"])
                else:
                    statesync.replace_user_state(thread, request.user, data["state"], data["base_version"])
            except state_services.StateError as exc:
                payload = statesync.error_payload(exc)
                return Response(payload, status=statesync.http_status(exc))
        return Response(statesync.document_payload(thread))


class RunViewSet(viewsets.ReadOnlyModelViewSet):
    serializer_class = RunSerializer
    filter_backends = [DjangoFilterBackend]
    filterset_class = RunFilter
    queryset = Run.objects.none()  # names the model for the schema; get_queryset scopes to the owner
    lookup_value_regex = ThreadViewSet.lookup_value_regex  # AG-UI's runId is the client's too

    def get_queryset(self):
        return Run.objects.filter(thread__owner=self.request.user).order_by("-created_at")

    @extend_schema(request=None, responses={202: RunSerializer, 409: ErrorSerializer})
    @action(detail=True, methods=["post"])
    def cancel(self, request, pk=None):
        """Stop the run: 202 when a stop was requested, 409 when it has already ended (or, paused, was
        decided before the Stop and goes on in its continuation)."""
        run = self.get_object()
        stopped = services.cancel_run(run, request.user)
        if not stopped:
            return Response({"message": _("the run already ended (%(status)s)") % {
                "status": run.get_status_display().lower()}, "code": "run_ended"}, status=409)
        if stopped is services.DECIDED_FIRST:  # answered 202, it read as stopped while the call ran
            return Response({"message": _("Too late to stop: what this run waited for was decided first, and it goes "
                                          "on. Stop the run that carries it on instead."), "code": "decided_first"},
                            status=409)
        run.refresh_from_db()
        return Response(RunSerializer(run).data, status=status.HTTP_202_ACCEPTED)

    @extend_schema(request=None, responses={202: RunSerializer, 409: ErrorSerializer, 429: TOO_MANY_RUNS})
    @action(detail=True, methods=["post"])
    def retry(self, request, pk=None):
        """Run the thread's latest failed run again on the same history (no new user message)."""
        run = self.get_object()
        latest = run.thread.runs.order_by("-created_at").first()
        if run.status != Run.Status.FAILED or latest.pk != run.pk:
            return Response({"message": _("only the thread's latest run can be retried, and only when it failed"),
                             "code": "not_retryable"}, status=status.HTTP_409_CONFLICT)
        try:
            new_run = services.start_run(run.thread, request.user)
        except services.TooManyRuns as exc:
            return too_many_runs(exc)
        except services.RunConflict as exc:
            return Response({"message": exc.message, "code": exc.code}, status=status.HTTP_409_CONFLICT)
        return Response(RunSerializer(new_run).data, status=status.HTTP_202_ACCEPTED)


