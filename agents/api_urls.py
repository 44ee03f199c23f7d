from django.urls import path
from rest_framework.routers import DefaultRouter

from .api import RunViewSet, ThreadViewSet
from .token_api import TokenView

router = DefaultRouter(trailing_slash=True)
router.include_root_view = False
router.register("threads", ThreadViewSet, basename="thread")
router.register("runs", RunViewSet, basename="run")
urlpatterns = router.urls + [path("auth/token/", TokenView.as_view(), name="api-token")]
