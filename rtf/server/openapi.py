"""The OpenAPI document of `rtf serve` as the server really answers: the error
statuses it gives (400, not FastAPI's 422), the JSON error body, and the bearer
scheme (and stream tickets) when it runs with ``--tokens``."""

from __future__ import annotations

from collections.abc import Iterable

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi
from pydantic import BaseModel

#: Paths anyone may read, tokens or not.
PUBLIC = ("/health",)

SECURITY_SCHEMES = {
    "bearer": {"type": "http", "scheme": "bearer",
               "description": "A token of the server's --tokens file (docs/server.md)"},
    "ticket": {"type": "apiKey", "in": "query", "name": "ticket",
               "description": "A short-lived stream ticket (POST /subscribers/{name}/tickets)"},
}


def install(app: FastAPI, tokens_on: bool, bodies: Iterable[type[BaseModel]] = ()) -> None:
    """Make `app.openapi()` give the document as described above, with the schemas of
    `bodies` (request bodies that their routes read themselves, named by a ``$ref``)."""

    def openapi() -> dict:
        if app.openapi_schema:
            return app.openapi_schema
        schema = get_openapi(title=app.title, version=app.version, description=app.description,
                             routes=app.routes)
        for path, operations in schema.get("paths", {}).items():
            for operation in operations.values():
                operation.get("responses", {}).pop("422", None)
                if tokens_on and path not in PUBLIC:
                    operation["security"] = [{"bearer": []}]
                    if path.endswith("/matches"):
                        operation["security"].append({"ticket": []})
        components = schema.setdefault("components", {})
        schemas = components.get("schemas", {})
        for unused in ("HTTPValidationError", "ValidationError"):
            schemas.pop(unused, None)
        for model in bodies:
            schemas[model.__name__] = model.model_json_schema(
                ref_template="#/components/schemas/{model}")
        components["schemas"] = dict(sorted(schemas.items()))
        components["securitySchemes"] = SECURITY_SCHEMES
        app.openapi_schema = schema
        return schema

    app.openapi = openapi  # type: ignore[method-assign]
