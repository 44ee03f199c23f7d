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
    for name, method in vars(ApprovalSerializer).items():  # its SerializerMethodFields' methods
        if name.startswith("get_"):
            setattr(Plain, name, method)
    req = transfer_request(demo["alice"])
    assert issubclass(ApprovalSerializer, ModelSerializer)
    assert ApprovalSerializer(req).data == Plain(req).data
    assert ApprovalSerializer(req).data == Plain(req).data  # and again, from the kept fields


def test_each_instance_binds_fields_of_its_own_and_the_kept_ones_stay_unbound(demo):
    """Plain fields are copied shallowly, so binding must never reach the kept field or another
    instance's; a field holding a serializer (the nested decisions) gets a deep copy, so that its
    child is bound to its own parent and reads its own context."""
    req = transfer_request(demo["alice"])
    first, second = ApprovalSerializer(req, context={"n": 1}), ApprovalSerializer(req, context={"n": 2})
    assert first.data == second.data
    kept = ApprovalSerializer._built_fields
    for name in ("status", "tool_call", "can_decide", "decisions", "allowed_decisions"):
        a, b = first.fields[name], second.fields[name]
        assert a is not b and a is not kept[name] and kept[name].parent is None
        assert (a.parent, b.parent, a.field_name) == (first, second, name)
    a, b = first.fields["decisions"], second.fields["decisions"]
    assert a.child is not b.child and a.child.parent is a and b.child.parent is b
    assert first.fields["decisions"].child.context == {"n": 1} and second.fields["decisions"].child.context == {"n": 2}
    assert first.fields["can_decide"].method_name == "get_can_decide" and kept["can_decide"].method_name is None


def test_a_field_with_a_mutable_default_is_not_shared():
    from agui_project.serializers import fresh

    plain, mutable = serializers.CharField(default=""), serializers.JSONField(default={})
    listed = serializers.ListField(child=serializers.CharField())
    assert fresh(plain, {}).__dict__ == plain.__dict__ and fresh(plain, {}) is not plain
    assert fresh(mutable, {}).default is not mutable.default
    assert fresh(listed, {}).child is not listed.child
