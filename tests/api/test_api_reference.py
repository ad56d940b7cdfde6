"""The interactive API reference at /api/v1/docs: public, served from this origin only."""

import re


def test_the_reference_page_is_public_html(client):
    response = client.get("/api/v1/docs")
    assert response.status_code == 200 and response.headers["content-type"].startswith("text/html")
    assert "<title>Invoicing API reference</title>" in response.text


def test_the_page_loads_nothing_from_another_origin(client):
    page = client.get("/api/v1/docs")
    assert not re.search(r"""(src|href)=["'](https?:)?//""", page.text)
    assert "script-src" not in page.headers["content-security-policy"]  # default-src 'self' governs scripts
    assert page.headers["content-security-policy"].startswith("default-src 'self'")


def test_every_asset_the_page_names_is_served(client):
    page = client.get("/api/v1/docs").text
    for path in re.findall(r"""(?:src|href)="(docs/[^"]+)\"""", page):
        response = client.get(f"/api/v1/{path}")
        assert response.status_code == 200, path
        assert len(response.content) > 100, path


def test_the_script_points_swagger_ui_at_the_openapi_document(client):
    script = client.get("/api/v1/docs/reference.js")
    assert script.headers["content-type"].startswith("text/javascript")
    assert 'url: "openapi.json"' in script.text


def test_the_swagger_ui_bundle_is_a_version_that_reads_openapi_3_1(client):
    bundle = client.get("/api/v1/docs/assets/swagger-ui-bundle.js").text
    assert "OpenAPI 3.1" in bundle or "openapi31" in bundle.lower()


def test_docs_at_the_origin_redirects_to_the_reference(client):
    response = client.get("/docs", follow_redirects=False)
    assert response.status_code == 308 and response.headers["location"] == "/api/v1/docs"


def test_an_unknown_asset_is_404(client):
    assert client.get("/api/v1/docs/assets/nope.js").status_code == 404
