"""Webhook endpoints: register, list, delete; url rules, event kinds, the 16-per-account limit."""

import base64
import uuid

import pytest

from core.models import EVENT_TYPES
from core.outbound import netguard

PUBLIC_URL = "https://hooks.example.com/invoicing"
DNS = {"hooks.example.com": ["93.184.216.34"], "internal.example.com": ["10.1.2.3"],
       "mixed.example.com": ["93.184.216.34", "127.0.0.1"]}


@pytest.fixture(autouse=True)
def fake_dns(monkeypatch):
    """No real DNS in tests: names resolve through this table."""
    def resolve(host, _port):
        if host not in DNS:
            raise OSError("name not known")
        return DNS[host]
    monkeypatch.setattr(netguard, "default_resolver", resolve)


def create(tenant, **fields):
    response = tenant.post("/webhook-endpoints", json={"url": PUBLIC_URL, **fields})
    assert response.status_code == 201, response.text
    return response.json()["data"]


def error_paths(response):
    assert response.status_code == 422, response.text
    assert response.json()["code"] == "validation"
    return [e["path"] for e in response.json()["errors"]]


def test_create_returns_201_with_the_endpoint_and_its_secret(tenant):
    response = tenant.post("/webhook-endpoints", json={"url": PUBLIC_URL, "events": ["invoice.paid"]})
    assert response.status_code == 201
    data = response.json()["data"]
    assert str(uuid.UUID(data["id"])) == data["id"]
    assert data["url"] == PUBLIC_URL
    assert data["events"] == ["invoice.paid"]
    assert data["active"] is True and data["disabled_at"] is None and data["failure_count"] == 0
    assert data["created_at"].endswith("Z")
    assert data["secret"].startswith("whsec_")
    assert len(base64.b64decode(data["secret"][6:], validate=True)) >= 24


def test_each_endpoint_gets_its_own_secret(tenant):
    assert create(tenant)["secret"] != create(tenant)["secret"]


def test_events_omitted_means_every_kind(tenant):
    assert create(tenant)["events"] == ["*"]


def test_star_means_every_kind(tenant):
    assert create(tenant, events=["*"])["events"] == ["*"]


def test_star_with_other_kinds_is_422(tenant):
    response = tenant.post("/webhook-endpoints", json={"url": PUBLIC_URL, "events": ["*", "invoice.paid"]})
    assert error_paths(response) == ["events"]


def test_repeated_kinds_are_kept_once(tenant):
    assert create(tenant, events=["invoice.paid", "invoice.voided", "invoice.paid"])["events"] == \
        ["invoice.paid", "invoice.voided"]


def test_every_kind_of_the_events_list_is_accepted(tenant):
    assert create(tenant, events=list(EVENT_TYPES))["events"] == list(EVENT_TYPES)


def test_unknown_event_kind_is_422_at_its_index(tenant):
    response = tenant.post("/webhook-endpoints",
                           json={"url": PUBLIC_URL, "events": ["invoice.paid", "invoice.exploded"]})
    assert error_paths(response) == ["events.1"]
    assert "invoice.exploded" in response.json()["errors"][0]["message"]


def test_empty_events_list_is_422(tenant):
    assert error_paths(tenant.post("/webhook-endpoints", json={"url": PUBLIC_URL, "events": []})) == ["events"]


def test_missing_url_is_422(tenant):
    assert error_paths(tenant.post("/webhook-endpoints", json={"events": ["invoice.paid"]})) == ["url"]


def test_missing_body_is_422(tenant):
    assert error_paths(tenant.post("/webhook-endpoints")) == ["body"]


def test_unknown_field_is_422(tenant):
    response = tenant.post("/webhook-endpoints", json={"url": PUBLIC_URL, "secret": "whsec_mine"})
    assert error_paths(response) == ["secret"]


@pytest.mark.parametrize("url", [
    "http://hooks.example.com/invoicing",          # not https
    "ftp://hooks.example.com/invoicing",
    "https://user:pass@hooks.example.com/hook",    # userinfo
    "https://user@hooks.example.com/hook",
    "https://10.0.0.5/hook",                       # private
    "https://192.168.1.1/hook",
    "https://127.0.0.2/hook",                      # loopback (not in the test allow list)
    "https://[::1]/hook",
    "https://169.254.169.254/latest/meta-data",    # link-local (cloud metadata)
    "https://100.64.0.1/hook",                     # carrier-grade NAT
    "https://[::ffff:10.0.0.1]/hook",              # IPv4-mapped
    "https://[64:ff9b::a00:1]/hook",               # NAT64
    "https://[2002:a00:1::]/hook",                 # 6to4
    "https://2130706433/hook",                     # decimal IPv4
    "https://0x7f.0.0.1/hook",                     # hex IPv4
    "https://internal.example.com/hook",           # a name resolving to a private address
    "https://mixed.example.com/hook",              # one of its addresses is loopback
    "https://unknown.example.com/hook",            # does not resolve
    "https://a..example.com/hook",                 # an empty label
    "https://" + "a" * 64 + ".example.com/hook",   # a label over 63 characters
    "https://public.example.com./hook",            # a trailing dot
    "https://public.example.com../hook",           # trailing dots
    "not a url",
])
def test_disallowed_url_is_422_at_url(tenant, url):
    response = tenant.post("/webhook-endpoints", json={"url": url})
    assert error_paths(response) == ["url"]
    assert response.json()["errors"][0]["message"].startswith("is not an allowed webhook address")


def test_url_over_2048_characters_is_422(tenant):
    response = tenant.post("/webhook-endpoints", json={"url": PUBLIC_URL + "/" + "x" * 2048})
    assert error_paths(response) == ["url"]


def test_the_seventeenth_endpoint_is_422(tenant):
    for _ in range(16):
        create(tenant)
    response = tenant.post("/webhook-endpoints", json={"url": PUBLIC_URL})
    assert error_paths(response) == ["body"]
    assert "16" in response.json()["errors"][0]["message"]


def test_the_limit_is_per_account(tenant, other_tenant):
    for _ in range(16):
        create(other_tenant)
    create(tenant)


def test_deleting_frees_a_place_under_the_limit(tenant):
    made = [create(tenant) for _ in range(16)]
    assert tenant.delete(f"/webhook-endpoints/{made[0]['id']}").status_code == 200
    create(tenant)


def test_create_with_an_idempotency_key_replays(tenant):
    first = tenant.post("/webhook-endpoints", json={"url": PUBLIC_URL}, idem="hook-1")
    second = tenant.post("/webhook-endpoints", json={"url": PUBLIC_URL}, idem="hook-1")
    assert second.status_code == 201
    assert second.headers["Idempotent-Replayed"] == "true"
    assert second.json() == first.json()
    assert len(tenant.get("/webhook-endpoints").json()["data"]) == 1


def test_list_is_newest_first_without_secrets(tenant):
    made = [create(tenant)["id"] for _ in range(3)]
    response = tenant.get("/webhook-endpoints")
    assert response.status_code == 200
    body = response.json()
    assert [e["id"] for e in body["data"]] == made[::-1]
    assert body["next_cursor"] is None
    assert all("secret" not in e for e in body["data"])
    assert "whsec_" not in response.text


def test_list_paginates(tenant):
    made = [create(tenant)["id"] for _ in range(5)]
    first = tenant.get("/webhook-endpoints", params={"limit": 2}).json()
    second = tenant.get("/webhook-endpoints", params={"limit": 2, "cursor": first["next_cursor"]}).json()
    third = tenant.get("/webhook-endpoints", params={"limit": 2, "cursor": second["next_cursor"]}).json()
    assert [e["id"] for e in first["data"] + second["data"] + third["data"]] == made[::-1]
    assert third["next_cursor"] is None


def test_list_with_a_bad_cursor_is_422(tenant):
    assert error_paths(tenant.get("/webhook-endpoints", params={"cursor": "nope"})) == ["cursor"]


def test_list_shows_only_the_callers_endpoints(tenant, other_tenant):
    create(other_tenant)
    assert tenant.get("/webhook-endpoints").json()["data"] == []


def test_delete_returns_the_id_and_deleted_true(tenant):
    endpoint = create(tenant)
    response = tenant.delete(f"/webhook-endpoints/{endpoint['id']}")
    assert response.status_code == 200
    assert response.json() == {"data": {"id": endpoint["id"], "deleted": True}}
    assert tenant.get("/webhook-endpoints").json()["data"] == []


def test_deleting_twice_is_404(tenant):
    endpoint = create(tenant)
    tenant.delete(f"/webhook-endpoints/{endpoint['id']}")
    assert tenant.delete(f"/webhook-endpoints/{endpoint['id']}").status_code == 404


def test_other_accounts_endpoint_is_404(tenant, other_tenant):
    endpoint = create(other_tenant)
    response = tenant.delete(f"/webhook-endpoints/{endpoint['id']}")
    assert response.status_code == 404
    assert response.json()["code"] == "not_found"
    assert len(other_tenant.get("/webhook-endpoints").json()["data"]) == 1


@pytest.mark.parametrize("endpoint_id", ["nope", "we_123", "3f2b8c1e-5d4a-4e7b-9c0d-1a2b3c4d5e6f"])
def test_malformed_or_unknown_id_is_404(tenant, endpoint_id):
    assert tenant.delete(f"/webhook-endpoints/{endpoint_id}").status_code == 404


@pytest.mark.parametrize("method", ["GET", "POST", "DELETE"])
def test_without_webhooks_manage_is_403(tenant, method):
    limited = tenant.as_key(tenant.key_with(["invoices:read", "invoices:write"]))
    path = "/webhook-endpoints" + (f"/{uuid.uuid4()}" if method == "DELETE" else "")
    response = limited.request(method, path, json={"url": PUBLIC_URL} if method == "POST" else None)
    assert response.status_code == 403
    assert "webhooks:manage" in response.json()["detail"]


def test_without_a_key_is_401(client):
    assert client.get("/api/v1/webhook-endpoints").status_code == 401


def test_allowed_test_host_may_use_http(tenant):
    # INVOICING_UNSAFE_WEBHOOK_ALLOW_HOSTS is "127.0.0.1,localhost" in the test settings.
    assert create(tenant, url="http://127.0.0.1:9/hook")["url"] == "http://127.0.0.1:9/hook"
