"""Changes between two OpenAPI documents that break existing clients.

No maintained OpenAPI diff tool installs here (oasdiff is Go; npm's ``openapi-diff`` stops at a
recursive schema, Optic's CLI does not start on Node 20), so this compares the two documents
itself, after resolving ``$ref``s. Breaking, for a client built on the old document:

- a removed path or operation, or a removed success status;
- a request that the new document refuses and the old one allowed: a new required parameter or
  body field, a removed parameter or body field (a closed body refuses it), a changed type, a
  removed enum value, a tighter bound (``minLength``, ``maxLength``, ``minimum``, ``maximum``,
  ``minItems``, ``maxItems``) or a new or changed ``pattern``;
- a success answer that no longer holds what it held: a removed field, a field no longer
  required (it may be missing), a changed type, a new enum value, a field now nullable.

Each change is a line ``METHOD /path: what`` (``breaking_changes``).
"""

from __future__ import annotations

REQUEST_TIGHTER = {
    "minLength": 1,
    "minimum": 1,
    "minItems": 1,
    "maxLength": -1,
    "maximum": -1,
    "maxItems": -1,
}
METHODS = ("get", "put", "post", "delete", "patch", "head", "options")


class Resolver:
    def __init__(self, document: dict):
        self.document = document

    def __call__(self, schema: dict | None, depth: int = 0) -> dict:
        """``schema`` with its top-level ``$ref`` and single-``allOf`` wrappers resolved."""
        schema = schema or {}
        for _ in range(20):
            if "$ref" in schema:
                node = self.document
                for part in schema["$ref"].lstrip("#/").split("/"):
                    node = node[part]
                schema = {**node, **{k: v for k, v in schema.items() if k != "$ref"}}
            elif len(schema.get("allOf", ())) == 1:
                inner = schema["allOf"][0]
                schema = {**{k: v for k, v in schema.items() if k != "allOf"}, **inner}
            else:
                break
        return schema


def _nullable(schema: dict) -> bool:
    """Whether null is valid: ``nullable`` on the schema or on a ``oneOf``/``anyOf`` branch."""
    branches = [*schema.get("oneOf", ()), *schema.get("anyOf", ())]
    return bool(schema.get("nullable")) or any(b.get("nullable") for b in branches)


def _body(operation: dict, resolve: Resolver) -> dict | None:
    content = (operation.get("requestBody") or {}).get("content") or {}
    media = content.get("application/json")
    return resolve(media.get("schema")) if media else None


def _success(operation: dict) -> dict[str, dict]:
    return {s: r for s, r in operation.get("responses", {}).items() if s.startswith("2")}


class Comparer:
    def __init__(self, old: dict, new: dict):
        self.old, self.new = old, new
        self.old_ref, self.new_ref = Resolver(old), Resolver(new)
        self.changes: list[str] = []

    def run(self) -> list[str]:
        for path, old_ops in self.old.get("paths", {}).items():
            new_ops = self.new.get("paths", {}).get(path)
            for method in METHODS:
                if method not in old_ops:
                    continue
                label = f"{method.upper()} {path}"
                if new_ops is None or method not in new_ops:
                    self.changes.append(f"{label}: operation removed")
                    continue
                self.operation(label, old_ops[method], new_ops[method])
        return self.changes

    def operation(self, label: str, old: dict, new: dict) -> None:
        old_params = {(p["in"], p["name"]): p for p in old.get("parameters", [])}
        new_params = {(p["in"], p["name"]): p for p in new.get("parameters", [])}
        for key, param in new_params.items():
            if param.get("required") and not old_params.get(key, {}).get("required"):
                self.changes.append(f"{label}: parameter {key[1]} ({key[0]}) is now required")
        for key, param in old_params.items():
            if key not in new_params:
                self.changes.append(f"{label}: parameter {key[1]} ({key[0]}) removed")
            else:
                self.request(
                    f"{label}: parameter {key[1]}", param.get("schema"), new_params[key].get("schema"), 0
                )
        old_body, new_body = _body(old, self.old_ref), _body(new, self.new_ref)
        if old_body is not None and new_body is None:
            self.changes.append(f"{label}: JSON request body removed")
        elif new_body is not None:
            if old_body is None and (new.get("requestBody") or {}).get("required"):
                self.changes.append(f"{label}: a request body is now required")
            elif old_body is not None:
                self.request(f"{label}: request", old_body, new_body, 0, resolved=True)
        old_ok, new_ok = _success(old), _success(new)
        for status, response in old_ok.items():
            if status not in new_ok:
                self.changes.append(f"{label}: response {status} removed")
                continue
            old_schema = ((response.get("content") or {}).get("application/json") or {}).get("schema")
            new_schema = ((new_ok[status].get("content") or {}).get("application/json") or {}).get("schema")
            if old_schema is not None:
                self.response(f"{label}: response {status}", old_schema, new_schema, 0)

    def request(self, where: str, old, new, depth: int, *, resolved: bool = False) -> None:
        """What the old document let a client send that the new one refuses."""
        if depth > 8 or old is None or new is None:
            return
        old = old if resolved else self.old_ref(old)
        new = new if resolved else self.new_ref(new)
        if old.get("type") and new.get("type") and old["type"] != new["type"]:
            self.changes.append(f"{where}: type {old['type']} -> {new['type']}")
            return
        if (
            "enum" in new
            and set(old.get("enum", new["enum"])) - set(new["enum"])
            or ("enum" in new and "enum" not in old)
        ):
            self.changes.append(f"{where}: enum values removed")
        for keyword, sign in REQUEST_TIGHTER.items():
            if keyword in new and (keyword not in old or (new[keyword] - old[keyword]) * sign > 0):
                self.changes.append(f"{where}: {keyword} {old.get(keyword, 'none')} -> {new[keyword]}")
        if "pattern" in new and new.get("pattern") != old.get("pattern"):
            self.changes.append(f"{where}: pattern {old.get('pattern', 'none')!r} -> {new['pattern']!r}")
        if _nullable(old) and not _nullable(new):
            self.changes.append(f"{where}: null no longer accepted")
        old_props, new_props = old.get("properties") or {}, new.get("properties") or {}
        for name in set(new.get("required", ())) - set(old.get("required", ())):
            self.changes.append(f"{where}: field {name} is now required")
        for name, schema in old_props.items():
            if name not in new_props:
                if new.get("additionalProperties") is False:
                    self.changes.append(f"{where}: field {name} removed (now refused)")
            else:
                self.request(f"{where}.{name}", schema, new_props[name], depth + 1)
        if "items" in old and "items" in new:
            self.request(f"{where}[]", old["items"], new["items"], depth + 1)

    def response(self, where: str, old, new, depth: int) -> None:
        """What a client read in the old answer that the new one may not hold."""
        if depth > 8 or old is None:
            return
        if new is None:
            self.changes.append(f"{where}: JSON body removed")
            return
        old, new = self.old_ref(old), self.new_ref(new)
        if old.get("type") and new.get("type") and old["type"] != new["type"]:
            self.changes.append(f"{where}: type {old['type']} -> {new['type']}")
            return
        if "enum" in old and set(new.get("enum", ())) - set(old["enum"]):
            self.changes.append(f"{where}: new enum values {sorted(set(new['enum']) - set(old['enum']))}")
        if _nullable(new) and not _nullable(old):
            self.changes.append(f"{where}: may now be null")
        old_props, new_props = old.get("properties") or {}, new.get("properties") or {}
        for name, schema in old_props.items():
            if name not in new_props:
                self.changes.append(f"{where}: field {name} removed")
                continue
            if name in old.get("required", ()) and name not in new.get("required", ()):
                self.changes.append(f"{where}: field {name} no longer always present")
            self.response(f"{where}.{name}", schema, new_props[name], depth + 1)
        if "items" in old and "items" in new:
            self.response(f"{where}[]", old["items"], new["items"], depth + 1)


def breaking_changes(old: dict, new: dict) -> list[str]:
    """Every change from ``old`` to ``new`` that breaks a client of ``old`` (sorted, unique)."""
    return sorted(set(Comparer(old, new).run()))
