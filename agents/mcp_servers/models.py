"""MCP servers as data: how to reach each one, which agents use it, and what it offered last."""

from django.core.validators import RegexValidator, URLValidator
from django.db import models
from django.utils.translation import gettext_lazy as _

NAME_PATTERN = r"^[a-z0-9][a-z0-9-]{0,30}$"  # no "_": a tool's name is <server>__<tool>


class MCPServer(models.Model):
    class Transport(models.TextChoices):
        STDIO = "stdio", _("stdio (a command started by each worker)")
        HTTP = "http", _("Streamable HTTP (a URL)")

    name = models.CharField(_("name"), max_length=31, unique=True, validators=[RegexValidator(
        NAME_PATTERN, _("Lower-case letters, digits and hyphens, starting with a letter or digit."))])
    transport = models.CharField(_("transport"), max_length=8, choices=Transport.choices, default=Transport.STDIO)
    command = models.CharField(_("command"), max_length=500, blank=True)
    args = models.JSONField(_("arguments"), default=list, blank=True)
    # secrets (API keys, tokens): written, never shown back (the API and the admin show their names only)
    env = models.JSONField(_("environment"), default=dict, blank=True)
    cwd = models.CharField(_("working directory"), max_length=500, blank=True)
    url = models.CharField(_("URL"), max_length=2000, blank=True, validators=[URLValidator(schemes=["http", "https"])])
    headers = models.JSONField(_("headers"), default=dict, blank=True)
    agents = models.JSONField(_("agents"), default=list, blank=True, help_text=_("Names of the agents that use it"))
    enabled = models.BooleanField(_("enabled"), default=True)
    healthy = models.BooleanField(_("healthy"), default=False)
    error = models.TextField(_("last error"), blank=True)
    tools = models.JSONField(_("tools"), default=list, blank=True, help_text=_("Its last tools/list answer"))
    checked_at = models.DateTimeField(_("checked at"), null=True, blank=True)
    # bumped by every change: each process compares it to rebuild its tools (catalog.sync)
    revision = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]
        verbose_name = _("MCP server")
        verbose_name_plural = _("MCP servers")

    def __str__(self):
        return self.name
