from django.contrib import admin
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularRedocView, SpectacularSwaggerView

from personatree_site.ops import views as ops

urlpatterns = [
    # Operations (no auth, no throttle). OpsMiddleware answers these paths first, before the HTTPS
    # redirect and the host check; the routes keep them reversible and served without it.
    path("healthz", ops.healthz, name="healthz"),
    path("readyz", ops.readyz, name="readyz"),
    path("metrics", ops.metrics, name="metrics"),
    path("admin/", admin.site.urls),
    path("v1/", include("memory.api.urls")),
    path("api/schema/", SpectacularAPIView.as_view(), name="openapi-schema"),
    path("api/docs/", SpectacularSwaggerView.as_view(url_name="openapi-schema"), name="api-docs"),
    # Redoc from the sidecar's files, without drf-spectacular's Google Fonts links (no external loads).
    path(
        "api/redoc/",
        SpectacularRedocView.as_view(url_name="openapi-schema", template_name="api/redoc.html"),
        name="api-redoc",
    ),
]
