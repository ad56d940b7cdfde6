"""The interactive API reference at /api/v1/docs: Swagger UI over the OpenAPI document.

Its assets come from the `swagger-ui-py` package and are served by the service itself (no CDN): the
page works offline and behind a strict Content-Security-Policy (scripts only from this origin).
"""

from __future__ import annotations

from pathlib import Path

import swagger_ui
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles

ASSETS = Path(swagger_ui.__file__).parent / "static"
# Swagger UI draws its icons from data: URLs and sets inline styles; scripts stay same-origin only.
HEADERS = {
    "Content-Security-Policy": "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; "
                               "frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
}
# Relative URLs: the page is /api/v1/docs, so they resolve under /api/v1 wherever it is mounted.
PAGE = """<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <meta name="viewport" content="width=device-width, initial-scale=1">
  <title>Invoicing API reference</title>
  <link rel="stylesheet" href="docs/assets/swagger-ui.css">
  <link rel="icon" type="image/png" href="docs/assets/favicon-32x32.png">
</head>
<body>
  <noscript>The interactive reference needs JavaScript; the document itself is <a href="openapi.json">openapi.json</a>.</noscript>
  <div id="reference"></div>
  <script src="docs/assets/swagger-ui-bundle.js"></script>
  <script src="docs/reference.js"></script>
</body>
</html>
"""
SCRIPT = """window.addEventListener("load", function () {
  var ui = SwaggerUIBundle({
    url: "openapi.json",
    dom_id: "#reference",
    deepLinking: true,
    defaultModelsExpandDepth: 0,
    displayRequestDuration: true,
    tryItOutEnabled: false,
    oauth2RedirectUrl: new URL("docs/assets/oauth2-redirect.html", window.location.href).href,
    presets: [SwaggerUIBundle.presets.apis],
    layout: "BaseLayout"
  });
  ui.initOAuth({usePkceWithAuthorizationCodeGrant: true});
});
"""


async def _page(_: Request) -> Response:
    return HTMLResponse(PAGE, headers=HEADERS)


async def _script(_: Request) -> Response:
    return Response(SCRIPT, media_type="text/javascript", headers=HEADERS)


def routes() -> list[BaseRoute]:
    return [Route("/docs", _page, methods=["GET"]), Route("/docs/reference.js", _script, methods=["GET"]),
            Mount("/docs/assets", app=StaticFiles(directory=ASSETS))]
