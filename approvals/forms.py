"""The policy console's edit form: a ModelForm over ToolPolicy's policy fields. Django types and
checks each field; the model's clean() (approvals.validators.policy_errors) judges the whole
policy. Our parts: groups by name, the conditions as typed JSON text (through the input gate),
and messages a person can act on."""

import json

from django import forms
from django.contrib.auth.models import Group
from django.forms.models import construct_instance
from django.utils.text import format_lazy
from django.utils.translation import gettext, gettext_lazy

from agui_project import jsoncheck

from . import argument_errors
from .choices import DEFAULT_DECISIONS, ApproverKind, Mode, Risk, TimeoutAction
from .models import ToolPolicy
from .services import POLICY_FIELDS


def _one_of(choices):
    # lazy: built at import, said in the language of the request that shows it
    message = format_lazy(gettext_lazy("must be one of {values}"), values=", ".join(choices.values))
    return {"required": message, "invalid_choice": message}


class GroupByName(forms.ModelChoiceField):
    def __init__(self, **kwargs):
        super().__init__(Group.objects.all(), to_field_name="name", required=False,
                         error_messages={"invalid_choice": gettext_lazy("no group named %(value)r")}, **kwargs)

    def to_python(self, value):
        return super().to_python(value.strip() if isinstance(value, str) else value)


# the policy console's words for each answer a reviewer may give
DECISION_CHOICES = [
    ("approve", gettext_lazy("Approve")), ("edit", gettext_lazy("Approve with edits")), ("reject", gettext_lazy("Reject")),
    ("respond", gettext_lazy("Answer with guidance instead (the agent reads it; nothing runs)")),
]


class PolicyForm(forms.ModelForm):
    conditions = forms.CharField(required=False)  # JSON text; clean_conditions parses it
    allowed_decisions = forms.MultipleChoiceField(
        choices=DECISION_CHOICES, required=False,
        error_messages={"invalid_choice": gettext_lazy("%(value)s is not a decision reviewers can give")})
    approver_group = GroupByName()
    escalation_group = GroupByName()
    required_approvals = forms.IntegerField(required=False, min_value=1,
                                            error_messages={"invalid": gettext_lazy("a whole number"), "min_value": gettext_lazy("at least 1")})
    timeout_seconds = forms.IntegerField(required=False, min_value=1,
                                         error_messages={"invalid": gettext_lazy("a whole number"), "min_value": gettext_lazy("at least 1")})

    class Meta:
        model = ToolPolicy
        fields = POLICY_FIELDS
        # the page writes them the reader's way ("0,5" in French): read back the same way ("0.5" too)
        localized_fields = ("reminder_fraction", "escalation_fraction")
        error_messages = {
            "mode": _one_of(Mode), "approver_kind": _one_of(ApproverKind), "risk": _one_of(Risk),
            "timeout_action": _one_of(TimeoutAction),
            "reminder_fraction": {"invalid": gettext_lazy("a number such as 0.5")},
            "escalation_fraction": {"invalid": gettext_lazy("a number such as 0.5")},
        }

    def clean_conditions(self):
        text = self.cleaned_data["conditions"]
        if not text:
            return []
        try:
            return jsoncheck.loads(text)  # typed JSON can hold "\ud800", which no page could show again
        except jsoncheck.Refused as exc:
            raise forms.ValidationError(exc.refusal.translated()) from exc
        except json.JSONDecodeError as exc:
            raise forms.ValidationError(argument_errors.json_syntax(exc)) from exc
        except ValueError as exc:  # what json refuses beyond its grammar (an integer of more than 4300 digits): was a 500
            raise forms.ValidationError(gettext("not valid JSON")) from exc

    def clean_allowed_decisions(self):
        chosen = self.cleaned_data["allowed_decisions"]
        if not chosen and "allowed_decisions_shown" not in self.data:  # a form from before the field
            return list(DEFAULT_DECISIONS)
        if not chosen:
            raise forms.ValidationError(gettext("choose at least one answer reviewers can give"))
        return [value for value, _ in DECISION_CHOICES if value in chosen]

    def clean_required_approvals(self):
        return self.cleaned_data["required_approvals"] or 1

    def _post_clean(self):
        # A value that could not be read is reported alone: the policy rules would otherwise judge
        # the stand-in left in its place. The draft still takes every value that could be read.
        if self._errors:
            self.instance = construct_instance(self, self.instance, self._meta.fields)
        else:
            super()._post_clean()

    def values(self):
        """The policy fields for services.save_policy."""
        return {f: self.cleaned_data[f] for f in POLICY_FIELDS}

    def error_lists(self):
        """{field: [messages]}, as the template shows them."""
        return {field: list(messages) for field, messages in self.errors.items()}
