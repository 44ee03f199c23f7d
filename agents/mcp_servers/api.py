"""/api/mcp-servers/: register MCP servers, see their health and tools (admins only).

env and headers are write-only: they carry secrets (API keys, bearer tokens), so answers list
their names, never their values (`env_keys`, `header_names`).
"""

from django.conf import settings
from django.core.exceptions import ValidationError as DjangoValidationError
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema, extend_schema_view
from rest_framework import serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.response import Response

from agents.registry import AGENTS
from agui_project.permissions import StaffWithModelPermissions
from agui_project.serializers import ErrorSerializer, ModelSerializer

from . import catalog, services
from .models import NAME_PATTERN, MCPServer

_TEXT = serializers.CharField(max_length=2000, allow_blank=False)
# what a stdio server runs: set only by a signed-in admin unless AGUI_MCP_COMMANDS_BY_TOKEN
_COMMAND_FIELDS = {"transport", "command", "args", "env", "cwd"}
# write-only (answers never show them): a PUT that leaves them out keeps them
_SECRETS = {"env", "headers"}


COMMANDS_NEED_SIGN_IN = gettext_lazy(
    "A stdio MCP server runs a command on this machine, so it is set by an admin signed in with a password (the "
    "Django admin, or this API with a session), not with an API token. Set AGUI_MCP_COMMANDS_BY_TOKEN=1 to let "
    "admins' tokens do it.")


class ServerSerializer(ModelSerializer):
    name = serializers.RegexField(NAME_PATTERN, max_length=31)
    args = serializers.ListField(child=serializers.CharField(max_length=2000, allow_blank=True), required=False,
                                 max_length=100)
    env = serializers.DictField(child=serializers.CharField(max_length=10000, allow_blank=True), required=False,
                                write_only=True, help_text="Environment of a stdio server (write-only: secrets)")
    headers = serializers.DictField(child=serializers.CharField(max_length=10000, allow_blank=True), required=False,
                                    write_only=True, help_text="HTTP headers (write-only: secrets)")
    agents = serializers.ListField(child=serializers.CharField(max_length=100), required=False, max_length=100)
    env_keys = serializers.SerializerMethodField(help_text="Names of the environment variables set")
    header_names = serializers.SerializerMethodField(help_text="Names of the headers set")
    tools = serializers.SerializerMethodField(help_text="The tools it offers: our name, its own, hints, policy defaults")

    class Meta:
        model = MCPServer
        fields = ["name", "transport", "command", "args", "env", "env_keys", "cwd", "url", "headers",
                  "header_names", "agents", "enabled", "healthy", "error", "checked_at", "tools"]
        read_only_fields = ["healthy", "error", "checked_at"]
        extra_kwargs = {"name": {"validators": []}}

    def get_env_keys(self, obj) -> list[str]:
        return sorted(obj.env or {})

    def get_header_names(self, obj) -> list[str]:
        return sorted(obj.headers or {})

    def get_tools(self, obj) -> list[dict]:
        out = []
        for listed in obj.tools or []:
            name = listed.get("name", "")
            tool = catalog.get(catalog.tool_name(obj.name, name) or "")
            out.append({"name": tool.name if tool else None, "mcp_name": name, "title": listed.get("title"),
                        "description": listed.get("description", ""), "annotations": listed.get("annotations") or {},
                        **({"mode": tool.approval_mode, "risk": tool.risk, "idempotent": tool.idempotent,
                            "reversible": tool.reversible} if tool else {"offered": False})})
        return out

    def validate_agents(self, value):
        unknown = sorted(set(value) - set(AGENTS))
        if unknown:
            raise ValidationError(_("no agent named %(names)s") % {"names": ", ".join(unknown)})
        return value

    def validate(self, attrs):
        merged = {f: getattr(self.instance, f) for f in services.FIELDS} if self.instance else {}
        merged.update(attrs)
        transport = merged.get("transport") or MCPServer.Transport.STDIO
        if transport == MCPServer.Transport.STDIO and not merged.get("command"):
            raise ValidationError({"command": _("a stdio server needs a command")})
        if transport == MCPServer.Transport.HTTP and not merged.get("url"):
            raise ValidationError({"url": _("a Streamable HTTP server needs a URL")})
        return attrs


_NAME = OpenApiParameter("name", str, OpenApiParameter.PATH, description="The server's name")
_REFUSED = OpenApiResponse(ErrorSerializer, description="commands_need_sign_in: a stdio command set with a token")


# the server's name is a path parameter of the detail routes only (the list's path has none)
@extend_schema_view(
    create=extend_schema(responses={201: ServerSerializer, 400: ErrorSerializer, 403: _REFUSED,
                                    409: OpenApiResponse(ErrorSerializer, description="exists: use PUT or PATCH")}),
    retrieve=extend_schema(parameters=[_NAME], responses={200: ServerSerializer, 404: ErrorSerializer}),
    update=extend_schema(parameters=[_NAME], responses={200: ServerSerializer, 400: ErrorSerializer, 403: _REFUSED,
                                                        404: ErrorSerializer}),
    partial_update=extend_schema(parameters=[_NAME], responses={200: ServerSerializer, 400: ErrorSerializer,
                                                                403: _REFUSED, 404: ErrorSerializer}),
    destroy=extend_schema(parameters=[_NAME], responses={204: None, 404: ErrorSerializer}),
    refresh=extend_schema(parameters=[_NAME]),
)
class MCPServerViewSet(viewsets.GenericViewSet):
    """MCP servers, admins only. A save asks the server for its tools at once (healthy, or the error);
    POST .../refresh/ asks again."""

    serializer_class = ServerSerializer
    permission_classes = [StaffWithModelPermissions]
    action_permissions = {"refresh": "change"}
    queryset = MCPServer.objects.all()
    lookup_field = "name"
    lookup_value_regex = r"[a-z0-9][a-z0-9-]{0,30}"

    def _row(self, name):
        row = MCPServer.objects.filter(name=name).first()
        if row is None:
            raise NotFound(_("no MCP server by that name"))
        return row

    def list(self, request):
        page = self.paginate_queryset(list(MCPServer.objects.all()))
        return self.get_paginated_response(ServerSerializer(page, many=True).data)

    def retrieve(self, request, name=None):
        return Response(ServerSerializer(self._row(name)).data)

    def create(self, request):
        body = ServerSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        name = body.validated_data["name"]
        if MCPServer.objects.filter(name=name).exists():
            return Response({"message": _("%(name)s exists; use PUT or PATCH") % {"name": name}, "code": "exists"},
                            status=status.HTTP_409_CONFLICT)
        return self._save(name, body.validated_data, status.HTTP_201_CREATED)

    def update(self, request, name=None):
        return self._write(request, name, partial=False)

    def partial_update(self, request, name=None):
        return self._write(request, name, partial=True)

    def destroy(self, request, name=None):
        if not services.delete_server(name):
            raise NotFound(_("no MCP server by that name"))
        return Response(status=status.HTTP_204_NO_CONTENT)

    @extend_schema(request=None, responses=ServerSerializer)
    @action(detail=True, methods=["post"])
    def refresh(self, request, name=None):
        self._row(name)
        return Response(ServerSerializer(services.refresh_tools(name)).data)

    def _write(self, request, name, partial):
        row = self._row(name)
        data = dict(request.data) if hasattr(request.data, "keys") else request.data
        if isinstance(data, dict):
            data["name"] = name
        # PUT replaces the server: validated, and saved, from the model defaults (not the stored row),
        # except the write-only secrets (env, headers), which no answer shows: left out, they are kept
        body = ServerSerializer(row if partial else None, data=data, partial=partial)
        body.is_valid(raise_exception=True)
        values = dict(body.validated_data)
        if not partial:
            blank = MCPServer()
            values = {**{f: getattr(blank, f) for f in services.FIELDS if f not in _SECRETS}, **values}
        return self._save(name, values, status.HTTP_200_OK, row)

    def _save(self, name, validated, code, row=None):
        """`row`: the server as it stands (None for a new one)."""
        values = {k: v for k, v in validated.items() if k in services.FIELDS}
        transport = values.get("transport") or (row.transport if row else MCPServer.Transport.STDIO)
        by_token = self.request.auth is not None  # TokenAuthentication sets it; a session leaves it None
        # what the server would run changes (a PUT restates the rest; the same values change nothing)
        changes = {f for f in _COMMAND_FIELDS & set(values) if row is None or getattr(row, f) != values[f]}
        # kept on an http server, a command, its folder or its environment (write-only, never shown) wait
        # for whoever turns it to stdio: a token sets none of them whatever the transport
        planted = {f for f in changes - {"transport"} if values[f] not in ("", [], {}, None)}  # clearing is harmless
        if (by_token and not settings.AGUI_MCP_COMMANDS_BY_TOKEN
                and ((transport == MCPServer.Transport.STDIO and changes) or planted)):
            return Response({"message": str(COMMANDS_NEED_SIGN_IN), "code": "commands_need_sign_in"},
                            status=status.HTTP_403_FORBIDDEN)
        try:
            row = services.save_server(name, values)
        except DjangoValidationError as exc:
            raise ValidationError(exc.message_dict) from exc
        return Response(ServerSerializer(row).data, status=code)
