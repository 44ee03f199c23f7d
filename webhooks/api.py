"""REST for admins: /api/webhooks/ (endpoints; the create answer alone carries the secret) and
/api/webhook-deliveries/ (with their attempts, and replay); for any account, its own callback secret
(/api/webhooks/callback-secret/)."""

from django.utils.translation import gettext as _
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response
from rest_framework.views import APIView

from agui_project.permissions import StaffWithModelPermissions
from agui_project.serializers import ErrorSerializer, ModelSerializer

from . import services
from .models import EVENT_TYPES, WebhookAttempt, WebhookDelivery, WebhookEndpoint


class EndpointSerializer(ModelSerializer):
    events = serializers.ListField(child=serializers.ChoiceField(choices=EVENT_TYPES), required=False)
    url = serializers.CharField()  # checked by services.check_url (http(s) only, bounded length)

    class Meta:
        model = WebhookEndpoint
        fields = ["id", "url", "events", "description", "is_active", "created_at"]
        read_only_fields = ["id", "created_at"]

    def validate_url(self, value):
        problem = services.check_url(value)
        if problem:
            raise serializers.ValidationError(problem)
        return value


class CreatedEndpointSerializer(EndpointSerializer):
    class Meta(EndpointSerializer.Meta):
        fields = [*EndpointSerializer.Meta.fields, "secret"]


class AttemptSerializer(ModelSerializer):
    class Meta:
        model = WebhookAttempt
        fields = ["id", "started_at", "latency_ms", "response_status", "response_body", "error", "succeeded"]


class DeliverySerializer(ModelSerializer):
    attempt_log = AttemptSerializer(source="attempt_rows", many=True, read_only=True)

    class Meta:
        model = WebhookDelivery
        fields = ["id", "message_id", "endpoint", "url", "event_type", "payload", "approval_ref", "status", "attempts",
                  "next_attempt_at", "created_at", "delivered_at", "attempt_log"]


class EndpointViewSet(viewsets.ModelViewSet):
    permission_classes = [StaffWithModelPermissions]
    serializer_class = EndpointSerializer
    queryset = WebhookEndpoint.objects.all()

    @extend_schema(responses={201: CreatedEndpointSerializer})
    def create(self, request, *args, **kwargs):
        form = self.get_serializer(data=request.data)
        form.is_valid(raise_exception=True)
        data = form.validated_data
        endpoint = services.create_endpoint(url=data["url"], events=data.get("events", []), created_by=request.user,
                                            description=data.get("description", ""))
        return Response(CreatedEndpointSerializer(endpoint).data, status=status.HTTP_201_CREATED)

    def perform_update(self, serializer):
        data = serializer.validated_data
        services.update_endpoint(serializer.instance, url=data.get("url"), events=data.get("events"),
                                 is_active=data.get("is_active"), description=data.get("description"))


class DeliveryViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    permission_classes = [StaffWithModelPermissions]
    action_permissions = {"replay": "change"}
    serializer_class = DeliverySerializer
    queryset = WebhookDelivery.objects.prefetch_related("attempt_rows")

    @extend_schema(request=None, responses={
        202: DeliverySerializer, 404: ErrorSerializer,
        409: OpenApiResponse(ErrorSerializer, description="delivery_pending: it is still being sent")})
    @action(detail=True, methods=["post"])
    def replay(self, request, pk=None):
        delivery = self.get_object()
        if not services.replay(delivery.pk):  # the API's error shape, in the caller's language
            return Response({"message": _("this delivery is still being sent"), "code": "delivery_pending"},
                            status=status.HTTP_409_CONFLICT)
        delivery.refresh_from_db()
        return Response(self.get_serializer(delivery).data, status=status.HTTP_202_ACCEPTED)


class CallbackSecretSerializer(serializers.Serializer):
    secret = serializers.CharField(help_text="The whsec_ secret that signs deliveries to your requests' callback_url")


class CallbackSecretView(APIView):
    """The caller's own callback secret: an outside agent verifies the callbacks of its account's
    requests with it, and holds no other account's (services.callback_secret)."""

    permission_classes = [IsAuthenticated]

    @extend_schema(responses={200: CallbackSecretSerializer})
    def get(self, request):
        return Response({"secret": services.callback_secret(request.user.pk)})
