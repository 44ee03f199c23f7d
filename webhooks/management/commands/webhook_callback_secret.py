from django.core.management.base import BaseCommand

from webhooks import services


class Command(BaseCommand):
    help = "Print the secret that signs deliveries to a request's callback_url (give it to the outside agents)."

    def handle(self, *args, **options):
        self.stdout.write(services.callback_secret())
