"""ackreplay.api — the REST API (FastAPI) over ``core``. Thin: routes, schemas, error rendering."""
