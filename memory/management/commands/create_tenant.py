"""``manage.py create_tenant NAME --scopes ingest read``: a tenant (or a key for one), the key printed once."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from memory.models import ApiKey, Tenant
from memory.services import ServiceError
from memory.services.keys import api_key_create
from memory.services.subjects import tenant_create
from memory.services.tree import Actor


class Command(BaseCommand):
    help = "Create a tenant and an API key for it. The raw key is printed once and never stored."

    def add_arguments(self, parser):
        parser.add_argument("name")
        parser.add_argument(
            "--scopes",
            nargs="+",
            default=["ingest", "read"],
            choices=ApiKey.SCOPES,
            help="Scopes of the new key (default: ingest read).",
        )
        parser.add_argument("--key-name", default="", help="A label for the key.")
        parser.add_argument(
            "--existing", action="store_true", help="Add a key to an existing tenant instead of failing."
        )
        parser.add_argument("--lenient-gate", action="store_true", help="Tenant policy: lenient gate.")
        parser.add_argument(
            "--no-review-special", action="store_true", help="Tenant policy: apply special tier."
        )
        parser.add_argument("--mass-delete-threshold", type=int, default=None)

    def handle(self, *args, name, scopes, key_name, existing, lenient_gate, no_review_special, **options):
        tenant = Tenant.objects.filter(name=name).first()
        if tenant is not None and not existing:
            raise CommandError(f"Tenant {name!r} exists; pass --existing to add a key to it.")
        try:
            if tenant is None:
                policy = {"gate_lenient": lenient_gate, "review_special_tier": not no_review_special}
                if options["mass_delete_threshold"] is not None:
                    policy["mass_delete_threshold"] = options["mass_delete_threshold"]
                tenant = tenant_create(name=name, **policy)
            key, raw = api_key_create(
                tenant=tenant, scopes=scopes, name=key_name, actor=Actor.system("create_tenant")
            )
        except ServiceError as exc:
            raise CommandError(exc.message) from exc
        self.stderr.write(
            f"tenant {tenant.name} (id {tenant.pk}); key {key.prefix} scopes {' '.join(key.scopes)}"
        )
        self.stderr.write("Store this key now; it cannot be shown again:")
        self.stdout.write(raw)
