"""The settings page's form: a person's language, time zone and the inbox's single-key shortcuts."""

from django import forms
from django.conf import settings
from django.utils.translation import gettext_lazy as _
from django.utils.translation import pgettext_lazy

from . import zones


class SettingsForm(forms.Form):
    language = forms.ChoiceField(label=_("Language"), required=False,
                                 error_messages={"invalid_choice": _("Choose one of the languages listed.")})
    # a text field checked against zoneinfo, not a ChoiceField: a legacy name the list leaves out
    # ("Asia/Calcutta", which some browsers report) stays a zone a person may keep
    time_zone = forms.CharField(label=_("Time zone"), required=False, max_length=zones.MAX_NAME)
    # a checkbox: a form sent without it (unticked) switches them off
    inbox_keys = forms.BooleanField(label=_("Single-key shortcuts in the inbox"), required=False)

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        # its own context: the language's word is feminine in French ("Celle de…"), the zone's masculine
        self.fields["language"].choices = [("", pgettext_lazy("language", "Your browser's")), *settings.LANGUAGES]

    def clean_time_zone(self):
        return checked_zone(self.cleaned_data["time_zone"])


def checked_zone(name):
    """A time zone as typed, stripped; refused when zoneinfo does not know it."""
    name = (name or "").strip()
    if name and not zones.valid(name):
        raise forms.ValidationError(
            _("“%(zone)s” is not a time zone this site knows. Choose one from the list, such as "
              "America/Sao_Paulo or Asia/Jakarta."), code="unknown_zone", params={"zone": name})
    return name


class ProfileAdminForm(forms.ModelForm):
    """The admin's profile form takes what the settings page takes: a language of the site and a zone
    zoneinfo knows (it saved "xx-klingon" and "Mars/Olympus", which every page then ignored silently)."""

    language = forms.ChoiceField(label=_("Language"), required=False,
                                 error_messages={"invalid_choice": _("Choose one of the languages listed.")})

    class Meta:
        fields = "__all__"

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["language"].choices = [("", pgettext_lazy("language", "Your browser's")), *settings.LANGUAGES]

    def clean_time_zone(self):
        return checked_zone(self.cleaned_data["time_zone"])
