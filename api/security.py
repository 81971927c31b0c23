"""Response headers that keep a browser from running anything the service did not ship.

- ``Content-Security-Policy``: scripts, styles, fonts and requests from this origin only (no inline
  script; inline *styles* are allowed because plotly.js and Swagger UI set element styles), images from
  this origin and ``data:``/``blob:`` URLs (plot exports), no plugins, no framing, no ``<base>``.
- ``X-Content-Type-Options: nosniff``: a stored capture or CSV is never run as a script.
- ``Referrer-Policy: no-referrer`` and ``X-Frame-Options: DENY``.
"""

from __future__ import annotations

CSP = ("default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data: blob:; "
       "font-src 'self' data:; connect-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'; "
       "form-action 'self'")
HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
}
