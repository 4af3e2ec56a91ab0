"""OpenAPI (drf-spectacular) description of our API-key authentication.

Imported from ``MemoryConfig.ready`` so the extension is registered before the
schema is generated.
"""

from drf_spectacular.extensions import OpenApiAuthenticationExtension


class ApiKeyAuthenticationScheme(OpenApiAuthenticationExtension):
    target_class = "memory.api.auth.ApiKeyAuthentication"
    name = "ApiKey"

    def get_security_definition(self, auto_schema):
        return {
            "type": "http",
            "scheme": "bearer",
            "bearerFormat": "pt_live_<prefix>_<secret>",
            "description": "A tenant API key (shown once at creation). Scopes: ingest, read, "
            "read_special, admin, erase.",
        }
