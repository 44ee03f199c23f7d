#!/usr/bin/env python
import os
import sys

if __name__ == "__main__":
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "agui_project.settings")
    from django.conf import settings
    from django.core.exceptions import ImproperlyConfigured
    from django.core.management import execute_from_command_line

    try:  # the settings check each variable as they load: a bad one is a sentence, not a traceback
        _ = settings.INSTALLED_APPS
    except ImproperlyConfigured as exc:
        sys.exit(f"configuration error: {exc}")
    execute_from_command_line(sys.argv)
