"""The product's own deploy checks (`manage.py check --deploy`): settings that start fine but break a
production site. Django's deploy checks were clean with mail links to http://localhost:8000, with
AGUI_HTTPS behind a TLS proxy that nobody named (every request taken for plain HTTP and redirected),
and with mail from noreply@localhost. Warnings, not errors: a site may have reasons (a test deploy,
Daphne terminating TLS itself). Registered by approvals' AppConfig.ready (it reads the mail settings too)."""

from urllib.parse import urlsplit

from django.conf import settings
from django.core.checks import Tags, Warning, register

DEFAULT_PUBLIC_URL = "http://localhost:8000"
DEFAULT_FROM_EMAIL = "agui-inbox <noreply@localhost>"


@register(Tags.security, deploy=True)
def public_url(app_configs, **kwargs):
    url = settings.AGUI_PUBLIC_URL
    if not settings.DEBUG and url.rstrip("/") == DEFAULT_PUBLIC_URL:
        return [Warning(f"AGUI_PUBLIC_URL is its development default ({DEFAULT_PUBLIC_URL}) with DJANGO_DEBUG=0: "
                        "every link in mail (Approve, Reject, Decide) leads to localhost.",
                        hint="Set AGUI_PUBLIC_URL to the address people reach the site at, such as "
                             "https://inbox.example.com (the same in every process).", id="agui.W001")]
    if settings.AGUI_HTTPS and urlsplit(url).scheme != "https":
        return [Warning(f"AGUI_PUBLIC_URL is {url} while AGUI_HTTPS is on: the links in mail are plain http.",
                        hint="Give AGUI_PUBLIC_URL the https:// address of the site.", id="agui.W002")]
    return []


@register(Tags.security, deploy=True)
def proxy_ssl_header(app_configs, **kwargs):
    if settings.AGUI_HTTPS and not getattr(settings, "SECURE_PROXY_SSL_HEADER", None):
        return [Warning("AGUI_HTTPS is on without AGUI_PROXY_SSL_HEADER: behind a proxy that terminates TLS every "
                        "request reaches the site as plain HTTP and is redirected to HTTPS (a loop, or sign-ins "
                        "that bounce back to the login page).",
                        hint="Behind a TLS proxy, set AGUI_PROXY_SSL_HEADER=X-Forwarded-Proto (the proxy must always "
                             "set or strip it). Ignore this if Daphne terminates TLS itself.", id="agui.W003")]
    return []


@register(Tags.security, deploy=True)
def from_email(app_configs, **kwargs):
    if settings.DEFAULT_FROM_EMAIL == DEFAULT_FROM_EMAIL:
        return [Warning(f"DJANGO_DEFAULT_FROM_EMAIL is its default ({DEFAULT_FROM_EMAIL}): mail servers refuse or "
                        "file as spam mail from a localhost address.",
                        hint="Set DJANGO_DEFAULT_FROM_EMAIL to an address of your domain, such as "
                             "\"agui-inbox <inbox@example.com>\".", id="agui.W004")]
    return []


@register(Tags.security, deploy=True)
def mail_backend(app_configs, **kwargs):
    module = settings.EMAIL_BACKEND.split(".")[-2:-1]
    if not settings.DEBUG and module and module[0] in {"console_mail", "console", "locmem"}:
        return [Warning("Mail is printed to the log, or kept in memory, with DJANGO_DEBUG=0 (DJANGO_EMAIL_BACKEND is "
                        "unset or console): nobody is told of a request, and the log holds each mail's one-click "
                        "decision links, which decide without a sign-in.",
                        hint="Set DJANGO_EMAIL_BACKEND=smtp and DJANGO_EMAIL_HOST (and its port, user, password and "
                             "TLS), or filebased with DJANGO_EMAIL_FILE_PATH for a site that sends no mail.",
                        id="agui.W006")]
    return []


LOCAL_HOSTS = {"localhost", "127.0.0.1", "[::1]", "::1"}


@register(Tags.security, deploy=True)
def allowed_hosts(app_configs, **kwargs):
    if not settings.DEBUG and set(settings.ALLOWED_HOSTS) <= LOCAL_HOSTS:
        return [Warning("DJANGO_ALLOWED_HOSTS names only this machine with DJANGO_DEBUG=0: every request by the site's "
                        "public name is refused (400), while /healthz, which takes any host, answers 200.",
                        hint="Set DJANGO_ALLOWED_HOSTS to the names people reach the site by, such as "
                             "inbox.example.com (the same in every web process).", id="agui.W007")]
    return []
