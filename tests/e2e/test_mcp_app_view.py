"""The invoice view (MCP Apps) in Chromium, inside a small host page that speaks the host's side of
the protocol: it loads the view from the server's `ui://` resource into a sandboxed frame, feeds it a
tool result, and carries the view's `tools/call` and `resources/read` to the live server (as an MCP
Apps host without elicitation would), so the view's Finalize goes through the person's confirmation."""

from __future__ import annotations

import json
import uuid

import httpx
import pytest

from tests.conftest import make_tenant
from tests.e2e.test_browser import page, shot  # noqa: F401  (the Chromium page fixture)

pytestmark = [pytest.mark.e2e, pytest.mark.browser]

HOST_PAGE = """<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Assistant host</title>
<style>body{font:14px system-ui;margin:16px;background:#f6f8fc} iframe{width:720px;height:560px;border:1px solid #ccc;
border-radius:12px;background:#fff}</style></head><body><main><h1>Assistant</h1>
<p>The assistant called a tool; its view:</p><iframe title="Invoice view" sandbox="allow-scripts allow-downloads"></iframe>
</main><script>
const frame = document.querySelector("iframe");
let result = null;
window.addEventListener("message", async (event) => {
  const message = event.data;
  if (!message || message.jsonrpc !== "2.0" || event.source !== frame.contentWindow) return;
  const reply = (payload) => frame.contentWindow.postMessage({ jsonrpc: "2.0", id: message.id, ...payload }, "*");
  if (message.method === "ui/initialize") {
    reply({ result: { protocolVersion: "2026-01-26", hostInfo: { name: "test-host", version: "1" },
                      hostCapabilities: { serverTools: {}, serverResources: {} }, hostContext: { theme: "light" } } });
  } else if (message.method === "ui/notifications/initialized") {
    frame.contentWindow.postMessage({ jsonrpc: "2.0", method: "ui/notifications/tool-result", params: result }, "*");
  } else if (message.method === "tools/call" || message.method === "resources/read") {
    window.calls.push(message);
    const answer = JSON.parse(await window.forward(message.method, JSON.stringify(message.params)));
    reply(answer.error ? { error: answer.error } : { result: answer.result });
  }
});
window.calls = [];
window.show = (view, toolResult) => { result = toolResult; frame.srcdoc = view; };
</script></body></html>"""


class Mcp:
    """The host's connection to the server: an MCP Apps host that cannot ask through elicitation."""

    def __init__(self, origin: str, key: str) -> None:
        self.url, self.headers = f"{origin}/mcp", {
            "Authorization": f"Bearer {key}", "Accept": "application/json, text/event-stream",
            "Content-Type": "application/json", "MCP-Protocol-Version": "2025-11-25"}
        session = self.rpc("initialize", {"protocolVersion": "2025-11-25", "clientInfo": {"name": "host", "version": "1"},
                                          "capabilities": {"extensions": {"io.modelcontextprotocol/ui": {
                                              "mimeTypes": ["text/html;profile=mcp-app"]}}}}, raw=True)
        self.headers["Mcp-Session-Id"] = session.headers["mcp-session-id"]

    def rpc(self, method: str, params: dict, *, raw: bool = False):
        response = httpx.post(self.url, headers=self.headers, timeout=30,
                              json={"jsonrpc": "2.0", "id": uuid.uuid4().hex, "method": method, "params": params})
        return response if raw else response.json()


def test_the_view_shows_the_invoice_and_finalizes_it_after_the_persons_confirmation(live_server, page):  # noqa: F811
    tenant = make_tenant(None)
    api = httpx.Client(base_url=f"{live_server}/api/v1", headers={"Authorization": f"Bearer {tenant.key}"})
    customer = api.post("/customers", json={"name": "Globex Corp", "email": "ap@globex.example"}).json()["data"]
    invoice = api.post("/invoices", headers={"Idempotency-Key": uuid.uuid4().hex}, json={
        "customer": customer["id"], "items": [
            {"description": "Brand design workshop", "unit_amount": 250000, "tax_rate": 20},
            {"description": "Hosting (months)", "unit_amount": 1500, "quantity": 3, "unit": "MON"}]}).json()["data"]
    mcp = Mcp(live_server, tenant.key)
    view = mcp.rpc("resources/read", {"uri": "ui://invoicing/invoice-view.html"})["result"]["contents"][0]["text"]
    shown = mcp.rpc("tools/call", {"name": "get_invoice", "arguments": {"invoice": invoice["id"]}})["result"]

    page.expose_function("forward", lambda method, params: json.dumps(mcp.rpc(method, json.loads(params))))
    page.set_content(HOST_PAGE)
    page.evaluate("([view, result]) => window.show(view, result)", [view, shown])
    inside = page.frame_locator("iframe")
    inside.get_by_role("heading", name="Draft invoice").wait_for()
    for text in ("Globex Corp", "Brand design workshop", "2,545.00 USD", "3,045.00 USD", "Hosting (months)"):
        assert inside.get_by_text(text).first.is_visible(), text
    shot(page, "70-mcp-invoice-view")

    inside.get_by_role("button", name="Finalize").click()
    question = inside.get_by_text("Finalize the draft for Globex Corp, 3,045.00 USD")
    question.wait_for()
    assert inside.get_by_role("button", name="Confirm").is_visible()
    assert api.get(f"/invoices/{invoice['id']}").json()["data"]["status"] == "draft"
    shot(page, "71-mcp-invoice-view-confirm")

    inside.get_by_role("button", name="Confirm").click()
    inside.get_by_role("heading", name="INV-0001").wait_for()
    assert api.get(f"/invoices/{invoice['id']}").json()["data"]["status"] == "open"
    shot(page, "72-mcp-invoice-view-finalized")
    calls = [(call["method"], call["params"].get("name")) for call in page.evaluate("window.calls")]
    # An issued invoice's view also asks for its credit notes and payments.
    assert calls == [("tools/call", "finalize_invoice"), ("tools/call", "confirm_invoice_action"),
                     ("tools/call", "list_credit_notes"), ("tools/call", "list_payments")]


def asking_in_the_view(live_server, page, tool: str, customer: dict, amount: int, **arguments):  # noqa: F811
    """A draft for a new customer; `tool` called on it by the host and its result (the question) shown
    in the view: (the REST client, the invoice, the view's frame)."""
    tenant = make_tenant(None)
    api = httpx.Client(base_url=f"{live_server}/api/v1", headers={"Authorization": f"Bearer {tenant.key}"})
    customer_id = api.post("/customers", json=customer).json()["data"]["id"]
    invoice = api.post("/invoices", headers={"Idempotency-Key": uuid.uuid4().hex}, json={
        "customer": customer_id, "items": [{"description": "Design", "unit_amount": amount}]}).json()["data"]
    mcp = Mcp(live_server, tenant.key)
    view = mcp.rpc("resources/read", {"uri": "ui://invoicing/invoice-view.html"})["result"]["contents"][0]["text"]
    asked = mcp.rpc("tools/call", {"name": tool, "arguments": {"invoice": invoice["id"], **arguments}})["result"]
    page.expose_function("forward", lambda method, params: json.dumps(mcp.rpc(method, json.loads(params))))
    page.set_content(HOST_PAGE)
    page.evaluate("([view, result]) => window.show(view, result)", [view, asked])
    return api, invoice, page.frame_locator("iframe")


GLOBEX = {"name": "Globex Corp", "email": "ap@globex.example"}


def test_cancel_in_the_view_leaves_the_draft(live_server, page):  # noqa: F811
    api, invoice, inside = asking_in_the_view(live_server, page, "finalize_invoice", {"name": "Initech"}, 90000)
    inside.get_by_text("Finalize the draft for Initech").wait_for()  # the view has drawn the question: it can answer
    inside.get_by_role("button", name="Cancel").click()
    inside.get_by_text("The person declined").wait_for()
    assert api.get(f"/invoices/{invoice['id']}").json()["data"]["status"] == "draft"


def test_confirm_after_the_draft_changed_shows_the_new_question_and_finalizes_nothing(live_server, page):  # noqa: F811
    api, invoice, inside = asking_in_the_view(live_server, page, "finalize_invoice", GLOBEX, 250000)
    inside.get_by_text("Finalize the draft for Globex Corp, 2,500.00 USD").wait_for()

    api.patch(f"/invoices/{invoice['id']}", json={"items": [{"description": "Design", "unit_amount": 9900000}]})
    inside.get_by_role("button", name="Confirm").click()

    inside.get_by_text("Finalize the draft for Globex Corp, 99,000.00 USD").wait_for()
    assert inside.get_by_role("alert").inner_text().startswith("The invoice changed after the person was asked")
    assert api.get(f"/invoices/{invoice['id']}").json()["data"]["status"] == "draft"
    shot(page, "73-mcp-invoice-view-asked-again")


def test_the_send_question_shows_the_note_as_written(live_server, page):  # noqa: F811
    note = "Thank you for the workshop.\n<b>Our bank details changed</b>: see the PDF."
    _, _, inside = asking_in_the_view(live_server, page, "send_invoice", GLOBEX, 250000, message=note,
                                      cc=["cfo@globex.example"])
    question = inside.get_by_role("region", name="Confirmation")
    question.wait_for()
    text = question.inner_text()
    assert "to ap@globex.example (a copy to cfo@globex.example), with the PDF attached and the note below?" in text
    assert "Thank you for the workshop.\n<b>Our bank details changed</b>: see the PDF." in text  # as written, not as HTML
    shot(page, "74-mcp-invoice-view-send-note")


def test_the_view_shows_an_invoices_credit_notes_and_what_they_took_off(live_server, page):  # noqa: F811
    tenant = make_tenant(None)
    api = httpx.Client(base_url=f"{live_server}/api/v1", headers={"Authorization": f"Bearer {tenant.key}"})
    customer = api.post("/customers", json={"name": "Globex Corp", "email": "ap@globex.example"}).json()["data"]
    invoice = api.post("/invoices", headers={"Idempotency-Key": uuid.uuid4().hex}, json={
        "customer": customer["id"], "items": [{"description": "Workshop", "unit_amount": 100000, "quantity": 2}]}
                       ).json()["data"]
    api.post(f"/invoices/{invoice['id']}/finalize", headers={"Idempotency-Key": uuid.uuid4().hex})
    note = api.post("/credit-notes", headers={"Idempotency-Key": uuid.uuid4().hex}, json={
        "invoice": invoice["id"], "lines": [{"invoice_line": invoice["lines"]["data"][0]["id"], "quantity": 1}]}
                    ).json()["data"]
    mcp = Mcp(live_server, tenant.key)
    view = mcp.rpc("resources/read", {"uri": "ui://invoicing/invoice-view.html"})["result"]["contents"][0]["text"]
    shown = mcp.rpc("tools/call", {"name": "get_invoice", "arguments": {"invoice": invoice["id"]}})["result"]

    page.expose_function("forward", lambda method, params: json.dumps(mcp.rpc(method, json.loads(params))))
    page.set_content(HOST_PAGE)
    page.evaluate("([view, result]) => window.show(view, result)", [view, shown])
    inside = page.frame_locator("iframe")
    inside.get_by_role("heading", name="Credit notes").wait_for()
    for text in (note["number"], "Credited", "1,000.00 USD"):
        assert inside.get_by_text(text).first.is_visible(), text
    shot(page, "75-mcp-invoice-view-credit-notes")


def test_the_view_records_a_payment_after_the_persons_confirmation_and_shows_the_part_paid_invoice(
        live_server, page):  # noqa: F811
    tenant = make_tenant(None)
    api = httpx.Client(base_url=f"{live_server}/api/v1", headers={"Authorization": f"Bearer {tenant.key}"})
    customer = api.post("/customers", json={"name": "Globex Corp", "email": "ap@globex.example"}).json()["data"]
    invoice = api.post("/invoices", headers={"Idempotency-Key": uuid.uuid4().hex}, json={
        "customer": customer["id"], "items": [{"description": "Workshop", "unit_amount": 100000, "quantity": 2}]}
                       ).json()["data"]
    number = api.post(f"/invoices/{invoice['id']}/finalize", headers={"Idempotency-Key": uuid.uuid4().hex}
                      ).json()["data"]["number"]
    bounced = api.post("/payments", headers={"Idempotency-Key": uuid.uuid4().hex}, json={
        "invoice": invoice["id"], "amount": 20000, "method": "cheque"}).json()["data"]
    api.post(f"/payments/{bounced['id']}/reverse", json={"reason": "Bounced"}, headers={"Idempotency-Key": "r-1"})
    mcp = Mcp(live_server, tenant.key)
    view = mcp.rpc("resources/read", {"uri": "ui://invoicing/invoice-view.html"})["result"]["contents"][0]["text"]
    asked = mcp.rpc("tools/call", {"name": "record_payment", "arguments": {
        "invoice": invoice["id"], "amount": 50000, "method": "bank_transfer", "reference": "TRF-1",
        "paid_on": "2026-11-20"}})["result"]

    page.expose_function("forward", lambda method, params: json.dumps(mcp.rpc(method, json.loads(params))))
    page.set_content(HOST_PAGE)
    page.evaluate("([view, result]) => window.show(view, result)", [view, asked])
    inside = page.frame_locator("iframe")
    inside.get_by_text(f"Record a payment of 500.00 USD on {number} for Globex Corp").wait_for()
    assert api.get("/payments", params={"invoice": invoice["id"]}).json()["data"][0]["id"] == bounced["id"]

    inside.get_by_role("button", name="Confirm").click()
    inside.get_by_role("heading", name="Payment of 500.00 USD").wait_for()
    inside.get_by_role("button", name=f"Open {number}").click()
    inside.get_by_role("heading", name="Payments").wait_for()
    assert inside.get_by_text("Part paid").first.is_visible()
    for text in ("Paid", "500.00 USD", "1,500.00 USD", "TRF-1", "bank transfer", "Reversed"):
        assert inside.get_by_text(text, exact=True).first.is_visible(), text
    shot(page, "76-mcp-invoice-view-payments")
