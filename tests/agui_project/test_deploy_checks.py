"""`manage.py check --deploy` names the product's settings that start fine but break production: it was
clean with mail links to http://localhost:8000, with AGUI_HTTPS behind a TLS proxy nobody named (every
proxied request redirected) and with mail from noreply@localhost."""

import pytest
from django.core.checks import run_checks


def ids():
    return {m.id for m in run_checks(include_deployment_checks=True) if m.id.startswith("agui.")}


@pytest.fixture
def production(settings):
    settings.DEBUG = False
    settings.AGUI_PUBLIC_URL = "https://inbox.example.com"
    settings.AGUI_HTTPS = True
    settings.SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    settings.DEFAULT_FROM_EMAIL = "agui-inbox <inbox@example.com>"
    settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    settings.ALLOWED_HOSTS = ["inbox.example.com", "localhost"]
    return settings


def test_production_settings_raise_none_of_the_products_checks(production):
    assert ids() == set()


@pytest.mark.parametrize("url", ["http://localhost:8000", "http://localhost:8000/"])
def test_mail_links_to_localhost_with_debug_off(production, url):
    production.AGUI_PUBLIC_URL = url
    production.AGUI_HTTPS = False
    [warning] = [m for m in run_checks(include_deployment_checks=True) if m.id.startswith("agui.")]
    assert warning.id == "agui.W001" and "AGUI_PUBLIC_URL" in warning.msg and "AGUI_PUBLIC_URL" in warning.hint


def test_the_default_address_is_fine_in_development(production):
    production.DEBUG = True
    production.AGUI_HTTPS = False
    production.AGUI_PUBLIC_URL = "http://localhost:8000"
    assert "agui.W001" not in ids()


def test_plain_http_links_on_an_https_site(production):
    production.AGUI_PUBLIC_URL = "http://inbox.example.com"
    assert ids() == {"agui.W002"}


def test_https_without_the_proxys_header(production):
    del production.SECURE_PROXY_SSL_HEADER
    [warning] = [m for m in run_checks(include_deployment_checks=True) if m.id.startswith("agui.")]
    assert warning.id == "agui.W003"
    assert "AGUI_PROXY_SSL_HEADER=X-Forwarded-Proto" in warning.hint and "Daphne terminates TLS" in warning.hint


def test_mail_from_localhost(production):
    production.DEFAULT_FROM_EMAIL = "agui-inbox <noreply@localhost>"
    [warning] = [m for m in run_checks(include_deployment_checks=True) if m.id.startswith("agui.")]
    assert warning.id == "agui.W004" and "DJANGO_DEFAULT_FROM_EMAIL" in warning.msg


@pytest.mark.parametrize("backend", ["agui_project.console_mail.EmailBackend",
                                     "django.core.mail.backends.locmem.EmailBackend"])
def test_mail_to_the_log_with_debug_off(production, backend):
    """The default backend in production printed every mail, its one-click decision links whole, to the
    worker's log, and told nobody of a request."""
    production.EMAIL_BACKEND = backend
    [warning] = [m for m in run_checks(include_deployment_checks=True) if m.id.startswith("agui.")]
    assert warning.id == "agui.W006" and "DJANGO_EMAIL_BACKEND=smtp" in warning.hint
    production.DEBUG = True
    assert "agui.W006" not in ids()


@pytest.mark.parametrize("hosts", [["localhost", "127.0.0.1", "[::1]"], []])
def test_hosts_of_this_machine_only_with_debug_off(production, hosts):
    """The default (and a blank value) with DEBUG off: every page refused by the public name, /healthz green."""
    production.ALLOWED_HOSTS = hosts
    [warning] = [m for m in run_checks(include_deployment_checks=True) if m.id.startswith("agui.")]
    assert warning.id == "agui.W007" and "DJANGO_ALLOWED_HOSTS" in warning.hint


def test_a_backend_of_ones_own_is_not_named(production):
    production.EMAIL_BACKEND = "mailer"  # a dotless path of the site's own
    assert ids() == set()


def test_the_checks_are_deploy_checks_only(settings):
    settings.DEBUG = False
    settings.AGUI_PUBLIC_URL = "http://localhost:8000"
    assert not [m for m in run_checks() if m.id.startswith("agui.")]
