from datetime import timedelta

from django.core.management.base import BaseCommand
from django.utils import timezone

from webhooks.models import WebhookDelivery

DONE = (WebhookDelivery.Status.SUCCEEDED, WebhookDelivery.Status.FAILED)


class Command(BaseCommand):
    help = ("Delete webhook deliveries that were delivered or failed more than --days ago, with their attempts, "
            "a batch at a time (the admin's page lists every row it deletes, and logs each: months of them made "
            "a confirmation page of megabytes). Pending deliveries are never deleted. Run it from cron if you like.")

    def add_arguments(self, parser):
        parser.add_argument("--days", type=int, default=30, help="keep the last this many days (default 30)")
        parser.add_argument("--batch", type=int, default=1000, help="rows a transaction (default 1000)")

    def handle(self, *args, days, batch, **options):
        if days < 0 or batch < 1:
            self.stderr.write("--days must be 0 or more and --batch 1 or more")
            raise SystemExit(2)
        cutoff = timezone.now() - timedelta(days=days)
        old = WebhookDelivery.objects.filter(status__in=DONE, created_at__lt=cutoff)
        deleted = 0
        while True:
            ids = list(old.order_by("pk").values_list("pk", flat=True)[:batch])
            if not ids:
                break
            # the attempts go with them (CASCADE); a delivery replayed meanwhile is pending again and stays
            _, by_model = WebhookDelivery.objects.filter(pk__in=ids, status__in=DONE).delete()
            deleted += by_model.get(WebhookDelivery._meta.label, 0)
        self.stdout.write(f"{deleted} webhook deliveries older than {days} days deleted")
