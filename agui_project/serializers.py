"""The API's ModelSerializer: DRF's, with its fields worked out once per class.

DRF builds a ModelSerializer's fields from the model on every instance (`get_fields`: a field per
model field with its validators, choices and labels): ~2.4 ms for ApprovalSerializer here, paid by
every response and list page. They depend only on the class (no serializer of ours adds fields per
request), so the first instance's are kept and each instance gets a deep copy, the way DRF
itself hands every instance its own copy of the declared fields.
"""

import copy

from rest_framework import serializers


class ModelSerializer(serializers.ModelSerializer):
    def get_fields(self):
        cls = type(self)
        built = cls.__dict__.get("_built_fields")
        if built is None:  # two threads building at once build the same fields: either is kept
            built = super().get_fields()
            cls._built_fields = built
        return copy.deepcopy(built)
