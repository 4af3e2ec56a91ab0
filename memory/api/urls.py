"""Routes of the v1 API (mounted at ``/v1/``)."""

from django.urls import path, re_path

from memory.api import (
    chunks,
    history,
    imports,
    ingest,
    keys,
    leaves,
    query,
    schemas,
    search,
    subjects,
    webhooks,
)
from memory.api import schema_migrations as migrations
from memory.api.errors import ApiNotFoundView

#: Where the routes of a subject, of one of its leaves and of a webhook endpoint start.
S = "subjects/<str:external_id>"
LEAF = f"{S}/tree/leaves/<path:leaf_path>"
HOOK = "webhooks/<uuid:public_id>"

urlpatterns = [
    path("subjects", subjects.SubjectListView.as_view(), name="subject-list"),
    path(f"{S}/tree", subjects.SubjectTreeView.as_view(), name="subject-tree"),
    path(f"{S}/versions", subjects.SubjectVersionsView.as_view(), name="subject-versions"),
    path(f"{S}/export", subjects.SubjectExportView.as_view(), name="subject-export"),
    path(S, subjects.SubjectDetailView.as_view(), name="subject-detail"),
    # Before the leaf route, whose <path:> would take ".../history" as part of a leaf path.
    path(f"{LEAF}/history", history.LeafHistoryView.as_view(), name="subject-leaf-history"),
    path(
        f"{S}/versions/<int:a>/diff/<int:b>", history.VersionDiffView.as_view(), name="subject-version-diff"
    ),
    path(
        f"{S}/versions/<int:number>/revert",
        history.VersionRevertView.as_view(),
        name="subject-version-revert",
    ),
    path(LEAF, leaves.SubjectLeafView.as_view(), name="subject-leaf"),
    path(f"{S}/messages", ingest.SubjectMessagesView.as_view(), name="subject-messages"),
    path(f"{S}/ingest", ingest.SubjectIngestStatusView.as_view(), name="subject-ingest"),
    path(f"{S}/flush", ingest.SubjectFlushView.as_view(), name="subject-flush"),
    path(
        f"{S}/chunks/<int:chunk_id>/requeue", chunks.ChunkRequeueView.as_view(), name="subject-chunk-requeue"
    ),
    path("imports", imports.ImportListView.as_view(), name="imports"),
    path("imports/<uuid:public_id>", imports.ImportDetailView.as_view(), name="import"),
    path(f"{S}/context", query.SubjectContextView.as_view(), name="subject-context"),
    path(f"{S}/answer", query.SubjectAnswerView.as_view(), name="subject-answer"),
    path(f"{S}/search", search.SubjectSearchView.as_view(), name="subject-search"),
    path("keys", keys.ApiKeyListView.as_view(), name="api-keys"),
    path("keys/<str:prefix>", keys.ApiKeyDetailView.as_view(), name="api-key"),
    path("keys/<str:prefix>/rotate", keys.ApiKeyRotateView.as_view(), name="api-key-rotate"),
    path("webhooks", webhooks.WebhookListView.as_view(), name="webhooks"),
    path(HOOK, webhooks.WebhookDetailView.as_view(), name="webhook"),
    path(f"{HOOK}/rotate-secret", webhooks.WebhookRotateSecretView.as_view(), name="webhook-rotate-secret"),
    path(f"{HOOK}/deliveries", webhooks.WebhookDeliveriesView.as_view(), name="webhook-deliveries"),
    path("schemas", schemas.SchemaListView.as_view(), name="schemas"),
    path("schemas/default", schemas.SchemaDefaultView.as_view(), name="schema-default"),
    path(
        "schemas/<str:schema_id>/versions/<int:version>",
        schemas.SchemaVersionView.as_view(),
        name="schema-version",
    ),
    path("schema-migrations", migrations.SchemaMigrationListView.as_view(), name="schema-migrations"),
    path(
        "schema-migrations/dry-runs/<str:run_id>",
        migrations.SchemaMigrationDryRunView.as_view(),
        name="schema-migration-dry-run",
    ),
    path(
        "schema-migrations/<str:mapping_id>",
        migrations.SchemaMigrationDetailView.as_view(),
        name="schema-migration",
    ),
]

# Anything else under /v1/ (an empty id, an id holding "/", a trailing slash, an unknown path) is the
# API's JSON 404, not Django's HTML page. Appended after every block above: keep it last.
urlpatterns.append(re_path(r"^[\s\S]*$", ApiNotFoundView.as_view(), name="api-not-found"))
