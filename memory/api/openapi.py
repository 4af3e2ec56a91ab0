"""OpenAPI (drf-spectacular) description of our API-key authentication.

Imported from ``MemoryConfig.ready`` so the extension is registered before the
schema is generated.
"""

from drf_spectacular.extensions import OpenApiAuthenticationExtension, OpenApiSerializerExtension


class ApiKeyAuthenticationScheme(OpenApiAuthenticationExtension):
    target_class = "memory.api.auth.ApiKeyAuthentication"
    name = "ApiKey"

    def get_security_definition(self, auto_schema):
        return {
            "type": "http",
            "scheme": "bearer",
            "bearerFormat": "pt_live_<prefix>_<secret>",
            "description": "A tenant API key (shown once at creation). Scopes: ingest, read, "
            "read_special, write (single-leaf edits), admin (key management), erase.",
        }


class _ClosedObject(OpenApiSerializerExtension):
    """A request body whose unknown fields the API refuses (400): ``additionalProperties: false``.

    Without it the schema allowed any extra field, and schema-driven clients (the fuzz test in
    ``tests/fuzz``) sent bodies the ingest API must refuse.
    """

    #: Further keywords per property that the API enforces (an empty list or key is a 400).
    property_keywords: dict[str, dict] = {}

    def map_serializer(self, auto_schema, direction):
        schema = auto_schema._map_serializer(self.target_class, direction, bypass_extensions=True)
        if direction == "request":
            schema["additionalProperties"] = False
            for name, keywords in self.property_keywords.items():
                schema["properties"][name].update(keywords)
        return schema


class MessagesInSchema(_ClosedObject):
    target_class = "memory.api.ingest.MessagesIn"
    property_keywords = {"messages": {"minItems": 1}}


class MessageInSchema(_ClosedObject):
    target_class = "memory.api.ingest.MessageIn"
    # Blank content or key (only whitespace) is refused as well.
    property_keywords = {"content": {"pattern": r"\S"}, "idempotency_key": {"minLength": 1, "pattern": r"\S"}}
