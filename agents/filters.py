"""The runs list's filters (`GET /api/runs/?thread=&parent_run=&status=`). Ids as text, not choices
of every thread or run: a choice filter said "not one of the available choices" for an id that does
not exist and gave an empty list for another account's, telling which ids are live."""

import django_filters

from .models import Run


class RunFilter(django_filters.FilterSet):
    thread = django_filters.CharFilter(field_name="thread_id", help_text="The chat's id")
    parent_run = django_filters.CharFilter(
        field_name="parent_run_id", help_text="The run this one continues: a Stop or a decision of a paused run "
                                              "is carried out by the run that continues it")
    status = django_filters.ChoiceFilter(choices=Run.Status.choices)

    class Meta:
        model = Run
        fields = ["thread", "parent_run", "status"]
