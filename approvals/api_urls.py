from rest_framework.routers import DefaultRouter

from .api import ApprovalViewSet, AuditViewSet, GrantViewSet, PolicyViewSet

router = DefaultRouter(trailing_slash=True)
router.include_root_view = False
router.register("approvals", ApprovalViewSet, basename="approval")
router.register("policies", PolicyViewSet, basename="policy")
router.register("audit", AuditViewSet, basename="audit")
router.register("grants", GrantViewSet, basename="grant")
urlpatterns = router.urls
