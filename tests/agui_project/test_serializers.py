"""The API's ModelSerializer builds a class's fields once and gives each instance its own copy."""

import pytest
from rest_framework import serializers

from agui_project.serializers import ModelSerializer
from approvals.api import ApprovalSerializer
from tests.helpers import transfer_request

pytestmark = pytest.mark.django_db


def test_fields_are_built_once_per_class_and_copied_per_instance(demo, monkeypatch):
    built = []
    drf_get_fields = serializers.ModelSerializer.get_fields

    def counting(self):
        built.append(type(self).__name__)
        return drf_get_fields(self)

    monkeypatch.setattr(serializers.ModelSerializer, "get_fields", counting)
    monkeypatch.delattr(ApprovalSerializer, "_built_fields", raising=False)
    req = transfer_request(demo["alice"])
    first, second = ApprovalSerializer(req), ApprovalSerializer(req)
    assert first.data == second.data
    assert built.count("ApprovalSerializer") == 1
    # each instance binds its own fields (DRF sets a field's parent and name on bind)
    assert first.fields["status"] is not second.fields["status"]
    assert first.fields["status"].parent is first and second.fields["status"].parent is second


def test_the_same_representation_as_drf_builds(demo):
    class Plain(serializers.ModelSerializer):  # DRF's own, every field built per instance
        class Meta(ApprovalSerializer.Meta):
            pass

    Plain._declared_fields = ApprovalSerializer._declared_fields
    for name in ("get_outside", "get_thread", "get_run", "get_can_decide", "get_approvals"):
        setattr(Plain, name, getattr(ApprovalSerializer, name))
    req = transfer_request(demo["alice"])
    assert issubclass(ApprovalSerializer, ModelSerializer)
    assert ApprovalSerializer(req).data == Plain(req).data
    assert ApprovalSerializer(req).data == Plain(req).data  # and again, from the kept fields
