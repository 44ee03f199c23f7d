"""The API's ModelSerializer: DRF's, with its fields worked out once per class.

DRF builds a ModelSerializer's fields from the model on every instance (`get_fields`: a field per
model field with its validators, choices and labels): ~2.4 ms for ApprovalSerializer here, paid by
every response and list page. They depend only on the class (no serializer of ours adds fields per
request), so the first instance's are kept and each instance gets copies of them (`fresh`).
"""

import copy

from drf_spectacular.openapi import AutoSchema
from drf_spectacular.utils import OpenApiResponse
from rest_framework import serializers
from rest_framework.fields import empty
from rest_framework.permissions import IsAuthenticated


def fresh(field, memo):
    """`field` (a kept, unbound one) for one serializer instance to bind.

    DRF hands each instance a deep copy, which for a field means constructing it again from its
    arguments, deep-copied (a ChoiceField's choices rebuilt, ...): 350 µs for ApprovalSerializer's
    fields, a tenth of a decision's time. A plain field only needs its own object: binding sets
    its name, parent, label and source on it, and nothing changes the containers it shares with
    the kept one (choices, validators, error messages) afterwards; assigning `choices` replaces
    them on the copy. A field that holds another field or serializer (a nested serializer, a list
    or dict field's child, a many-relation's child) is bound to it, and a mutable default would be
    shared with every response, so those are deep-copied as DRF does."""
    if (isinstance(field, serializers.BaseSerializer) or hasattr(field, "child") or hasattr(field, "child_relation")
            or isinstance(getattr(field, "default", empty), (dict, list, set))):
        return copy.deepcopy(field, memo)
    clone = object.__new__(type(field))  # copy.copy's result (a plain object) at a third of its cost
    clone.__dict__.update(field.__dict__)
    return clone


class ModelSerializer(serializers.ModelSerializer):
    def get_fields(self):
        cls = type(self)
        built = cls.__dict__.get("_built_fields")
        if built is None:  # two threads building at once build the same fields: either is kept
            built = super().get_fields()
            cls._built_fields = built
        memo = {}
        return {name: fresh(field, memo) for name, field in built.items()}


class ErrorSerializer(serializers.Serializer):
    """What every refused API call answers (agui_project/api_errors.py, limits.py, busy.py), for the
    OpenAPI schema: a `message` and a `code`; field errors (`{"field": ["..."]}`) and the call's own
    details (`pending`, `snapshot`, ...) come alongside."""

    message = serializers.CharField(help_text="in the caller's language: for people")
    code = serializers.CharField(help_text="what a program reads: the call's own, DRF's, or invalid_input")


class TokenRefusedSerializer(ErrorSerializer):
    """A 401's: only there is `reason` the token's. In every error it typed a field error of a request
    field named `reason` (a list of sentences), which a client generated from the schema failed to read."""

    reason = serializers.ChoiceField(["unknown", "expired", "inactive"], required=False,
                                     help_text="invalid_token: why the token was refused")


RETRY_AFTER = {"Retry-After": {"schema": {"type": "integer"}, "description": "seconds to wait before trying again"}}
# answered in front of every view (agui_project/limits.py) to a call with a body
BODY_REFUSALS = {"413": "body_too_large (with `limit`, in bytes)",
                 "415": "unsupported_media_type (a body neither JSON nor a form) or unsupported_content_encoding "
                        "(a compressed body; send it uncompressed)"}


class ApiSchema(AutoSchema):
    """The OpenAPI schema's operations with the refusals DRF itself answers, which no view's
    extend_schema names: 401 (no token, or a bad one), 403 (a permission stricter than being signed
    in: admins only), 404 (a path naming nothing the caller may see; a list page past its end) and
    400 (a body its serializer refuses, a list's filter with a value it does not take), 406 (an Accept
    header it cannot satisfy); and the ones made in front of every view: 503 (agui_project/busy.py)
    and, for a call with a body, 413 and 415 (agui_project/limits.py). A client generated from the
    schema met them as answers it was never told of."""

    def _get_response_bodies(self, direction="response"):
        responses = super()._get_response_bodies(direction)
        if direction == "response":
            described = dict(BODY_REFUSALS) if self.method in ("POST", "PUT", "PATCH", "DELETE") else {}
            described["503"] = "database_busy or redis_unavailable: try again after Retry-After"
            # DRF's content negotiation, before the view: an Accept header naming no type the call answers
            described["406"] = "not_acceptable: the Accept header names no type this call answers"
            for code, description in described.items():
                if code not in responses:
                    responses[code] = self._get_response_for_code(
                        OpenApiResponse(ErrorSerializer, description=description), code, direction=direction)
            responses["503"].setdefault("headers", {}).update(RETRY_AFTER)
        codes = ["401"]
        if any(not isinstance(p, IsAuthenticated) for p in self.view.get_permissions()):
            codes.append("403")
        listed = self._is_list_view() and self.method == "GET"
        if "{" in self.path or (listed and getattr(self.view, "pagination_class", None)):
            codes.append("404")
        if (listed and getattr(self.view, "filterset_class", None)) or (
                self.method in ("POST", "PUT", "PATCH") and self.get_request_serializer() is not None):
            codes.append("400")
        for code in codes:
            if code not in responses:
                responses[code] = self._get_response_for_code(
                    TokenRefusedSerializer if code == "401" else ErrorSerializer, code, direction=direction)
        return responses
