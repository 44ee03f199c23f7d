from django.urls import path
from rest_framework.routers import DefaultRouter

from .api import CallbackSecretView, DeliveryViewSet, EndpointViewSet

router = DefaultRouter(trailing_slash=True)
router.include_root_view = False
router.register("webhooks", EndpointViewSet, basename="webhook")
router.register("webhook-deliveries", DeliveryViewSet, basename="webhook-delivery")
# before the router's webhooks/<pk>/, which would take it for an endpoint's id
urlpatterns = [path("webhooks/callback-secret/", CallbackSecretView.as_view(), name="webhook-callback-secret"),
               *router.urls]
