"""The assistant experience over raw JSON-RPC (2025-11-25): the PDF as a resource, prompts,
completions, the invoice view for MCP Apps hosts and its Confirm and Cancel, sessions that carry what
a client can do."""

from __future__ import annotations

import base64
import json

import pytest

from tests.api.invoicing import adhoc, customer, draft
from tests.mcp.jsonrpc import HEADERS, call, post, structured

APPS = {"extensions": {"io.modelcontextprotocol/ui": {"mimeTypes": ["text/html;profile=mcp-app"]}}}


def rpc(client, key, method, params=None, **kw):
    response = post(client, method, params, key=key, **kw)
    assert response.status_code == 200, response.text
    return response.json()


def initialize(client, key, capabilities) -> str | None:
    response = post(client, "initialize", {"protocolVersion": "2025-11-25", "capabilities": capabilities,
                                           "clientInfo": {"name": "host", "version": "1"}}, key=key)
    assert response.status_code == 200, response.text
    return response.headers.get("mcp-session-id")


# --- resources -----------------------------------------------------------------------------------

def test_the_invoice_its_pdf_and_exports_are_resource_templates(client, tenant):
    templates = rpc(client, tenant.key, "resources/templates/list")["result"]["resourceTemplates"]
    assert [(t["uriTemplate"], t["mimeType"]) for t in templates] == [
        ("invoice://{invoice_id}", "application/json"), ("invoice://{invoice_id}/pdf", "application/pdf"),
        ("credit-note://{credit_note_id}/pdf", "application/pdf"), ("e-invoice-export://{export_id}", "application/zip")]


def test_reading_the_pdf_gives_the_documents_bytes(client, tenant):
    invoice = draft(tenant)
    contents = rpc(client, tenant.key, "resources/read", {"uri": f"invoice://{invoice['id']}/pdf"})["result"]["contents"]
    assert contents[0]["mimeType"] == "application/pdf"
    assert base64.b64decode(contents[0]["blob"]).startswith(b"%PDF")


def test_reading_the_pdf_without_invoices_read_is_a_403_step_up(client, tenant):
    invoice = draft(tenant)
    response = post(client, "resources/read", {"uri": f"invoice://{invoice['id']}/pdf"},
                    key=tenant.key_with(["clients:read"]))
    assert response.status_code == 403
    assert 'scope="invoices:read"' in response.headers["www-authenticate"]


@pytest.mark.parametrize("which", ["unknown", "malformed", "foreign"])
def test_an_invoice_that_is_not_the_callers_is_resource_not_found(client, tenant, other_tenant, which):
    invoice_id = {"unknown": "in_" + "0" * 32, "malformed": "nope", "foreign": draft(other_tenant)["id"]}[which]
    error = rpc(client, tenant.key, "resources/read", {"uri": f"invoice://{invoice_id}/pdf"})["error"]
    assert error["code"] == -32002 and error["message"] == "Resource not found"


def test_the_invoice_view_is_a_self_contained_app(client, tenant):
    listed = rpc(client, tenant.key, "resources/list")["result"]["resources"]
    assert [(r["uri"], r["mimeType"]) for r in listed] == [("ui://invoicing/invoice-view.html", "text/html;profile=mcp-app")]
    [content] = rpc(client, tenant.key, "resources/read", {"uri": "ui://invoicing/invoice-view.html"})["result"]["contents"]
    assert content["mimeType"] == "text/html;profile=mcp-app"
    assert content["_meta"]["ui"]["csp"] == {"connectDomains": [], "resourceDomains": []}
    html = content["text"]
    assert "<script src" not in html and "<link" not in html and "http://" not in html and "https://" not in html


def test_tools_that_show_an_invoice_declare_the_view(client, tenant):
    tools = {t["name"]: t for t in rpc(client, tenant.key, "tools/list")["result"]["tools"]}
    for name in ("get_invoice", "create_invoice", "preview_invoice", "finalize_invoice", "send_invoice"):
        assert tools[name]["_meta"]["ui"]["resourceUri"] == "ui://invoicing/invoice-view.html", name
    assert tools["confirm_invoice_action"]["_meta"]["ui"]["visibility"] == ["app"]
    assert "_meta" not in tools["list_customers"]


def test_results_link_the_pdf_and_the_public_page(client, tenant):
    invoice = draft(tenant)
    result = call(client, tenant.key, "finalize_invoice", invoice=invoice["id"])
    links = {block["uri"]: block for block in result["content"] if block["type"] == "resource_link"}
    assert links[f"invoice://{invoice['id']}/pdf"]["mimeType"] == "application/pdf"
    assert any(uri.startswith("http://testserver/i/") for uri in links)
    drafted = call(client, tenant.key, "get_invoice", invoice=draft(tenant)["id"])
    assert [b["uri"][:10] for b in drafted["content"] if b["type"] == "resource_link"] == ["invoice://"]


def test_the_apps_extension_is_advertised(client, tenant):
    response = post(client, "initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                           "clientInfo": {"name": "host", "version": "1"}}, key=tenant.key)
    assert "io.modelcontextprotocol/ui" in response.json()["result"]["capabilities"]["extensions"]


# --- prompts and completions -----------------------------------------------------------------------

def test_the_prompts(client, tenant):
    prompts = {p["name"]: p for p in rpc(client, tenant.key, "prompts/list")["result"]["prompts"]}
    assert set(prompts) == {"draft_invoice_from_notes", "chase_overdue_invoices", "month_end_summary"}
    assert [a["name"] for a in prompts["draft_invoice_from_notes"]["arguments"]] == ["notes", "customer"]


def test_drafting_from_notes_leads_through_look_up_preview_and_confirmation(client, tenant):
    text = rpc(client, tenant.key, "prompts/get", {"name": "draft_invoice_from_notes", "arguments": {
        "notes": "3 days of design for Globex"}})["result"]["messages"][0]["content"]["text"]
    assert "3 days of design for Globex" in text
    assert text.index("list_customers") < text.index("preview_invoice") < text.index("create_invoice")


@pytest.mark.parametrize(("name", "arguments"), [("draft_invoice_from_notes", {}),
                                                 ("month_end_summary", {"month": "2026-13"}), ("nope", {})])
def test_bad_prompt_arguments_are_invalid_params(client, tenant, name, arguments):
    assert rpc(client, tenant.key, "prompts/get", {"name": name, "arguments": arguments})["error"]["code"] == -32602


def test_month_end_names_the_month(client, tenant):
    text = rpc(client, tenant.key, "prompts/get", {"name": "month_end_summary", "arguments": {"month": "2026-11"}}
               )["result"]["messages"][0]["content"]["text"]
    assert "2026-11-01" in text


def prompt_text(client, key, name, arguments=None) -> str:
    return rpc(client, key, "prompts/get", {"name": name, "arguments": arguments or {}}
               )["result"]["messages"][0]["content"]["text"]


def test_chasing_starts_from_the_receivables_and_sends_only_what_the_person_approves(client, tenant):
    text = prompt_text(client, tenant.key, "chase_overdue_invoices")
    assert text.index("get_receivables") < text.index("list_invoices") < text.index("send_reminder")
    assert "days_over_90" in text and "Do not add up invoices yourself" in text
    assert "record_payment" in text  # paid meanwhile: recorded, not reminded


def test_the_month_end_takes_what_is_due_from_the_receivables_not_from_sums_of_lists(client, tenant):
    text = prompt_text(client, tenant.key, "month_end_summary", {"month": "2026-11"})
    assert "list_invoices" in text and "list_payments" in text and "get_receivables" in text
    assert "as of today (`as_of`)" in text and "Do not change anything" in text
    assert "add up their totals by status" not in text


def complete(client, key, ref, name, value):
    return post(client, "completion/complete", {"ref": ref, "argument": {"name": name, "value": value}}, key=key)


CUSTOMER_REF = {"type": "ref/prompt", "name": "draft_invoice_from_notes"}
PDF_REF = {"type": "ref/resource", "uri": "invoice://{invoice_id}/pdf"}


def test_customer_completion_gives_the_callers_customers_by_name(client, tenant, other_tenant):
    globex, _ = customer(tenant, name="Globex Corp"), customer(tenant, name="Initech")
    customer(other_tenant, name="Globex Rival")
    values = complete(client, tenant.key, CUSTOMER_REF, "customer", "glo").json()["result"]["completion"]["values"]
    assert values == [globex["id"]]


def test_invoice_completion_gives_the_callers_invoices_by_number(client, tenant, other_tenant):
    invoice = draft(tenant)
    tenant.post(f"/invoices/{invoice['id']}/finalize", idem=True)
    draft(other_tenant)
    values = complete(client, tenant.key, PDF_REF, "invoice_id", "inv-").json()["result"]["completion"]["values"]
    assert values == [invoice["id"]]


def test_completion_takes_the_scope_of_the_matching_read_tool(client, tenant):
    key = tenant.key_with(["business:read"])
    assert complete(client, key, CUSTOMER_REF, "customer", "a").status_code == 403
    assert complete(client, key, PDF_REF, "invoice_id", "a").status_code == 403


# --- sessions and the invoice view's confirmation -------------------------------------------------

def test_a_client_that_declares_nothing_gets_no_session(client, tenant):
    assert initialize(client, tenant.key, {}) is None


def test_a_session_carries_what_the_client_declared(client, tenant):
    session = initialize(client, tenant.key, APPS)
    assert session
    invoice = draft(tenant)
    response = post(client, "tools/call", {"name": "finalize_invoice", "arguments": {"invoice": invoice["id"]}},
                    key=tenant.key, headers={"Mcp-Session-Id": session})
    result = response.json()["result"]
    assert result["structuredContent"]["confirmation_required"] is True
    assert tenant.get(f"/invoices/{invoice['id']}").json()["data"]["status"] == "draft"


def test_a_tampered_session_is_not_found(client, tenant):
    session = initialize(client, tenant.key, APPS)
    response = post(client, "tools/list", key=tenant.key, headers={"Mcp-Session-Id": session[:-4] + "AAAA"})
    assert response.status_code == 404


def awaiting(client, tenant, tool="finalize_invoice", **arguments):
    session = initialize(client, tenant.key, APPS)
    invoice = draft(tenant)
    response = post(client, "tools/call", {"name": tool, "arguments": {"invoice": invoice["id"], **arguments}},
                    key=tenant.key, headers={"Mcp-Session-Id": session})
    result = response.json()["result"]
    return invoice, result, session


def test_an_apps_host_gets_the_question_and_a_token_for_the_view_only(client, tenant):
    invoice, result, _ = awaiting(client, tenant)
    assert result["isError"] is False
    structured_content = result["structuredContent"]
    assert structured_content["question"].startswith("Finalize the draft for Jane Doe")
    assert structured_content["data"]["id"] == invoice["id"] and "formatted" in structured_content["data"]
    token = result["_meta"]["invoicing"]["confirmation_token"]
    assert token not in json.dumps(structured_content) and token not in result["content"][0]["text"]


def decide(client, key, token, decision, session=None):
    headers = {"Mcp-Session-Id": session} if session else None
    return post(client, "tools/call", {"name": "confirm_invoice_action", "arguments": {
        "token": token, "decision": decision}}, key=key, headers=headers).json()["result"]


def test_confirming_in_the_view_acts_once(client, tenant):
    invoice, result, session = awaiting(client, tenant)
    token = result["_meta"]["invoicing"]["confirmation_token"]
    confirmed = decide(client, tenant.key, token, "confirm", session)
    assert confirmed["structuredContent"]["status"] == "open"
    again = decide(client, tenant.key, token, "confirm", session)
    assert again["isError"] is True and "used already" in again["content"][0]["text"]


def test_cancelling_in_the_view_changes_nothing(client, tenant):
    invoice, result, session = awaiting(client, tenant)
    cancelled = decide(client, tenant.key, result["_meta"]["invoicing"]["confirmation_token"], "cancel", session)
    assert cancelled["structuredContent"]["declined"] is True
    assert tenant.get(f"/invoices/{invoice['id']}").json()["data"]["status"] == "draft"


def test_a_token_is_good_for_its_credential_only(client, tenant):
    invoice, result, _ = awaiting(client, tenant)
    other_key = tenant.key_with(["invoices:finalize"])
    refused = decide(client, other_key, result["_meta"]["invoicing"]["confirmation_token"], "confirm")
    assert refused["isError"] is True
    assert tenant.get(f"/invoices/{invoice['id']}").json()["data"]["status"] == "draft"


@pytest.mark.parametrize("token", ["forged", "eyJhbGciOiJIUzI1NiJ9.eyJ0b29sIjoiZmluYWxpemVfaW52b2ljZSJ9.c2ln"])
def test_a_forged_token_is_refused(client, tenant, token):
    assert decide(client, tenant.key, token, "confirm")["isError"] is True


def test_the_confirmed_action_still_needs_its_scope(client, tenant):
    invoice, result, session = awaiting(client, tenant)
    token = result["_meta"]["invoicing"]["confirmation_token"]
    weaker = tenant.key_with(["invoices:read"])
    assert decide(client, weaker, token, "confirm")["isError"] is True


def test_the_question_of_a_send_names_the_recipient(client, tenant):
    _, result, _ = awaiting(client, tenant, "send_invoice", to="billing@globex.example", cc=["boss@globex.example"])
    assert "to billing@globex.example (a copy to boss@globex.example), with the PDF attached?" in (
        result["structuredContent"]["question"])


def test_an_answer_to_no_question_is_dropped(client, tenant):
    session = initialize(client, tenant.key, {"elicitation": {}})
    response = client.post("/mcp", content=json.dumps({"jsonrpc": "2.0", "id": "confirm-nothing", "result": {
        "action": "accept", "content": {"confirm": True}}}), headers={
        **HEADERS, "Authorization": f"Bearer {tenant.key}", "Mcp-Session-Id": session})
    assert response.status_code == 202


def test_preview_needs_nothing_but_read(client, tenant):
    assert structured(client, tenant.key_with(["invoices:read"]), "preview_invoice",
                      customer=customer(tenant)["id"], items=[adhoc()])["object"] == "invoice_preview"
