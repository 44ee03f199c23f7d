from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from webhooks import services


class Command(BaseCommand):
    help = ("Print the secret that signs deliveries to the callback_url of one account's requests (give it to "
            "that account's outside agents; each account has its own).")

    def add_arguments(self, parser):
        parser.add_argument("username", help="the account the outside agent calls the API as")

    def handle(self, *args, username, **options):
        user = get_user_model().objects.filter(username=username).first()
        if user is None:
            raise CommandError(f"no account {username!r}")
        self.stdout.write(services.callback_secret(user.pk))
