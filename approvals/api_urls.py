from rest_framework.routers import DefaultRouter

from .api import ApprovalViewSet

router = DefaultRouter(trailing_slash=True)
router.include_root_view = False
router.register("approvals", ApprovalViewSet, basename="approval")
urlpatterns = router.urls
