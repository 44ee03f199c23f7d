from django.contrib import admin

from .models import Profile


@admin.register(Profile)
class ProfileAdmin(admin.ModelAdmin):
    list_display = ("user", "language", "updated_at")
    list_filter = ("language",)
    search_fields = ("user__username", "user__email")
    autocomplete_fields = ("user",)
