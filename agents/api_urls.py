from django.urls import path
from rest_framework.routers import DefaultRouter

from .api import RunViewSet, ThreadViewSet
from .mcp_servers.api import MCPServerViewSet
from .token_api import TokenView

router = DefaultRouter(trailing_slash=True)
router.include_root_view = False
router.register("threads", ThreadViewSet, basename="thread")
router.register("runs", RunViewSet, basename="run")
router.register("mcp-servers", MCPServerViewSet, basename="mcp-server")
urlpatterns = router.urls + [path("auth/token/", TokenView.as_view(), name="api-token")]
