from django.urls import URLPattern
from rest_framework.routers import DefaultRouter

from .api import ApprovalViewSet, AuditViewSet, GrantViewSet, PolicyViewSet
from .waiting import long_poll

router = DefaultRouter(trailing_slash=True)
router.include_root_view = False
router.register("approvals", ApprovalViewSet, basename="approval")
router.register("policies", PolicyViewSet, basename="policy")
router.register("audit", AuditViewSet, basename="audit")
router.register("grants", GrantViewSet, basename="grant")
# the detail route answers ?wait=N (long-poll) without holding a thread: approvals/waiting.py
urlpatterns = [URLPattern(p.pattern, long_poll(p.callback), p.default_args, p.name) if p.name == "approval-detail"
               else p for p in router.urls]
