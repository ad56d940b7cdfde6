"""core.mailer: SMTP delivery to a loopback server, the .eml outbox, refusals as MailRejected."""

from __future__ import annotations

import email
import logging
import ssl
from email.policy import default as default_policy

import pytest
import trustme
from aiosmtpd.smtp import AuthResult

from core.outbound import mailer
from core.outbound.mailer import Attachment, MailRejected, compose, parse_smtp_url
from tests.smtp import Handler, free_port, mail_settings, smtp_server


def message(**overrides):
    fields = dict(to="customer@example.com", subject="Invoice INV-0001", body="Hello",
                  attachments=[Attachment("INV-0001.pdf", b"%PDF-1.4 test")])
    return compose(**{**fields, **overrides})


def test_compose_sets_headers_body_and_attachment():
    composed = message(cc=["a@example.com", "b@example.com"], reply_to="billing@acme.test", sender="Acme <x@y.test>")
    assert composed["To"] == "customer@example.com"
    assert composed["Cc"] == "a@example.com, b@example.com"
    assert composed["Reply-To"] == "billing@acme.test"
    assert composed["From"] == "Acme <x@y.test>"
    assert composed.get_body(("plain",)).get_content().strip() == "Hello"
    [attachment] = list(composed.iter_attachments())
    assert attachment.get_filename() == "INV-0001.pdf"
    assert attachment.get_content_type() == "application/pdf"
    assert attachment.get_content() == b"%PDF-1.4 test"


def test_compose_uses_the_configured_sender_by_default():
    with mail_settings(mail_from="billing@service.test"):
        assert message()["From"] == "billing@service.test"


def test_compose_with_html_is_an_alternative_of_the_text_beside_the_attachment():
    composed = message(html="<p>Hello</p>")
    assert composed.get_content_type() == "multipart/mixed"
    alternative = next(part for part in composed.iter_parts() if part.get_content_type() == "multipart/alternative")
    assert [part.get_content_type() for part in alternative.iter_parts()] == ["text/plain", "text/html"]
    assert composed.get_body(("html",)).get_content().strip() == "<p>Hello</p>"
    assert [a.get_filename() for a in composed.iter_attachments()] == ["INV-0001.pdf"]


@pytest.mark.parametrize("origin, sender", [
    ("https://invoicing.example.com", "invoices@invoicing.example.com"),
    ("http://127.0.0.1:8000", "invoices@localhost"), ("http://localhost:8000", "invoices@localhost"),
    ("http://[::1]:8000", "invoices@localhost"),
])
def test_default_sender_is_on_the_origins_host_name(origin, sender):
    with mail_settings(mail_from=None, origin=origin):
        assert message()["From"] == sender


def test_without_smtp_url_writes_an_eml_file_to_the_outbox(tmp_path):
    with mail_settings(smtp_url=None, data_dir=tmp_path):
        mailer.send(message(), kind="invoice")
    [written] = list((tmp_path / "outbox").iterdir())
    assert written.suffix == ".eml"
    stamp, _, ident = written.stem.partition("-")
    assert stamp[:8].isdigit() and len(ident) == 12
    parsed = email.message_from_bytes(written.read_bytes(), policy=default_policy)
    assert parsed["Subject"] == "Invoice INV-0001"
    assert parsed["Message-ID"] and parsed["Date"]
    assert [a.get_filename() for a in parsed.iter_attachments()] == ["INV-0001.pdf"]


def test_outbox_files_are_readable_by_the_service_user_only(tmp_path):
    (tmp_path / "outbox").mkdir(mode=0o755)
    with mail_settings(smtp_url=None, data_dir=tmp_path):
        mailer.send(message(), kind="invoice")
    [written] = list((tmp_path / "outbox").iterdir())
    assert written.stat().st_mode & 0o777 == 0o600
    assert (tmp_path / "outbox").stat().st_mode & 0o777 == 0o700


def test_smtp_server_receives_the_message_for_to_and_cc():
    with smtp_server() as (handler, url), mail_settings(smtp_url=url, mail_from="invoices@service.test"):
        mailer.send(message(cc=["copy@example.com"]), kind="invoice")
    [received] = handler.received
    assert received.mail_from == "invoices@service.test"
    assert received.rcpt_tos == ["customer@example.com", "copy@example.com"]
    assert received.message["Subject"] == "Invoice INV-0001"
    assert received.attachments()[0].get_content() == b"%PDF-1.4 test"


def test_refusing_server_raises_mail_rejected_with_its_reply():
    with smtp_server(Handler(refuse="550 Mailbox unavailable")) as (_, url), mail_settings(smtp_url=url):
        with pytest.raises(MailRejected) as caught:
            mailer.send(message(), kind="invoice")
    assert "550 Mailbox unavailable" in caught.value.detail


def test_unreachable_server_raises_mail_rejected():
    with mail_settings(smtp_url=f"smtp://127.0.0.1:{free_port()}"):
        with pytest.raises(MailRejected) as caught:
            mailer.send(message(), kind="invoice")
    assert "could not be reached" in caught.value.detail


def test_credentials_never_appear_in_the_error_or_the_log(caplog):
    def refuse_all(server, session, envelope, mechanism, auth_data):
        return False

    caplog.set_level(logging.DEBUG)
    options = dict(authenticator=refuse_all, auth_require_tls=False)
    with smtp_server(**options) as (_, url), \
            mail_settings(smtp_url=url.replace("smtp://", "smtp://mailuser:s3cr3t-pw@")):
        with pytest.raises(MailRejected) as caught:
            mailer.send(message(), kind="invoice")
    assert "535" in caught.value.detail
    assert "s3cr3t-pw" not in caught.value.detail
    assert "s3cr3t-pw" not in caplog.text


def test_misconfigured_url_raises_mail_rejected():
    with mail_settings(smtp_url="http://mail.example.com"):
        with pytest.raises(MailRejected):
            mailer.send(message(), kind="invoice")


@pytest.mark.parametrize("url, expected", [
    ("smtp://mail.example.com", (False, "mail.example.com", 25, None, None)),
    ("smtps://mail.example.com", (True, "mail.example.com", 465, None, None)),
    ("smtp://u%40x:p%3Aw@mail.example.com:587", (False, "mail.example.com", 587, "u@x", "p:w")),
])
def test_parse_smtp_url(url, expected):
    target = parse_smtp_url(url)
    assert (target.implicit_tls, target.host, target.port, target.username, target.password) == expected


def test_smtp_url_upgrades_with_starttls_and_logs_in_over_tls(tmp_path, monkeypatch):
    authority = trustme.CA()
    server_context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    authority.issue_cert("127.0.0.1").configure_cert(server_context)
    authority.cert_pem.write_to_path(str(tmp_path / "ca.pem"))
    monkeypatch.setenv("SSL_CERT_FILE", str(tmp_path / "ca.pem"))  # the mailer's default context trusts it
    logins = []

    def authenticator(server, session, envelope, mechanism, auth_data):
        logins.append((auth_data.login, auth_data.password, session.ssl is not None))
        return AuthResult(success=True)

    options = dict(tls_context=server_context, require_starttls=True, authenticator=authenticator)
    with smtp_server(**options) as (handler, url), \
            mail_settings(smtp_url=url.replace("smtp://", "smtp://mailuser:s3cr3t@")):
        mailer.send(message(), kind="invoice")
    assert logins == [(b"mailuser", b"s3cr3t", True)]
    assert len(handler.received) == 1


def test_untrusted_starttls_certificate_is_mail_rejected():
    server_context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    trustme.CA().issue_cert("127.0.0.1").configure_cert(server_context)
    with smtp_server(tls_context=server_context, require_starttls=True) as (handler, url), \
            mail_settings(smtp_url=url):
        with pytest.raises(MailRejected):
            mailer.send(message(), kind="invoice")
    assert handler.received == []
