from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path
from django.utils.translation import gettext_lazy
from drf_spectacular.views import SpectacularAPIView

from agents.views import home
from agui_project.health import healthz
from agui_project.login_throttle import ThrottledAdminAuthenticationForm, ThrottledAuthenticationForm

# the site's error pages (agui_project/errors.py), JSON for machine endpoints
handler400 = "agui_project.errors.bad_request"
handler403 = "agui_project.errors.permission_denied"
handler404 = "agui_project.errors.page_not_found"
handler500 = "agui_project.errors.server_error"

admin.site.login_form = ThrottledAdminAuthenticationForm  # the admin's sign-in says why it is refused too
admin.site.site_header = admin.site.site_title = gettext_lazy("agui-inbox administration")
admin.site.index_title = gettext_lazy("Records: requests, decisions, policies, users")

urlpatterns = [
    path("", home, name="home"),
    path("healthz", healthz, name="healthz"),
    path("admin/", admin.site.urls),
    path("accounts/login/", auth_views.LoginView.as_view(authentication_form=ThrottledAuthenticationForm),
         name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("", include("people.urls")),  # the language picker and the JavaScript catalog
    path("api/schema/", SpectacularAPIView.as_view(), name="api-schema"),
    path("api/", include("agents.api_urls")),
    path("api/", include("approvals.api_urls")),
    path("api/", include("webhooks.api_urls")),
    path("", include("agents.urls")),
    path("", include("approvals.urls")),
]
