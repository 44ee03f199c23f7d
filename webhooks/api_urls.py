from rest_framework.routers import DefaultRouter

from .api import DeliveryViewSet, EndpointViewSet

router = DefaultRouter(trailing_slash=True)
router.include_root_view = False
router.register("webhooks", EndpointViewSet, basename="webhook")
router.register("webhook-deliveries", DeliveryViewSet, basename="webhook-delivery")
urlpatterns = router.urls
