"""The start page and onboarding (the business profile form)."""

from __future__ import annotations

from core.access.accounts import account_by_email
from core.base import db
from core.billing.business import find_profile
from tests.web.conftest import BUSINESS_FORM


def profile_of(email: str):
    with db.transaction() as session:
        return find_profile(session, account_by_email(session, email).id)


def test_onboarding_requires_sign_in(browser):
    response = browser.get("/onboarding")
    assert response.headers["location"] == "/login?next=%2Fonboarding"


def test_start_page_links_to_onboarding_while_no_profile_exists(signed_in):
    html = signed_in.get("/").text
    assert 'href="/onboarding"' in html
    assert 'href="/settings/api-keys"' in html


def test_start_page_offers_to_resend_verification_until_verified(signed_in):
    assert 'action="/verify-email/resend"' in signed_in.get("/").text


def test_onboarding_form_has_every_business_field(signed_in):
    html = signed_in.get("/onboarding").text
    for name in BUSINESS_FORM:
        assert f'name="{name}"' in html, name
        assert f'<label for="f-{name.replace(".", "-")}">' in html, name
    assert f'value="{signed_in.email}"' in html  # billing e-mail prefilled


def test_onboarding_saves_the_profile_and_goes_to_the_start_page(signed_in):
    response = signed_in.submit("/onboarding", BUSINESS_FORM)
    assert response.status_code == 303
    assert response.headers["location"] == "/?notice=profile_saved"
    profile = profile_of(signed_in.email)
    assert profile.legal_name == "Acme Trading Ltd"
    assert profile.currency == "GBP"
    assert profile.invoice_prefix == "ACM"
    assert profile.address["city"] == "London"
    assert profile.address["line2"] is None
    assert profile.bank["account_number"] == "12345678"
    html = signed_in.get("/?notice=profile_saved").text
    assert "<h1>Acme</h1>" in html
    assert 'href="/onboarding"' not in html


def test_onboarding_is_not_shown_once_a_profile_exists(onboarded):
    response = onboarded.get("/onboarding")
    assert response.status_code == 303
    assert response.headers["location"] == "/"


def test_onboarding_with_only_required_fields(signed_in):
    form = {"legal_name": "Solo", "country_code": "de", "currency": "eur"}
    assert signed_in.submit("/onboarding", form).status_code == 303
    profile = profile_of(signed_in.email)
    assert (profile.country_code, profile.currency, profile.invoice_prefix) == ("DE", "EUR", "INV")
    assert profile.email is None


def test_onboarding_errors_are_shown_next_to_their_fields(signed_in):
    form = BUSINESS_FORM | {"legal_name": "", "currency": "XXQ", "address.country_code": "GBR",
                            "email": "nope"}
    response = signed_in.submit("/onboarding", form)
    assert response.status_code == 422
    html = response.text
    for field_id in ("legal_name", "currency", "address-country_code", "email"):
        assert f'id="f-{field_id}-error"' in html, field_id
        assert f'aria-describedby="f-{field_id}-error' in html, field_id
    assert 'id="f-trade_name-error"' not in html
    assert 'value="Acme"' in html  # what was typed is kept
    assert 'role="alert"' in html  # and summarised at the top
    assert profile_of(signed_in.email) is None


def test_onboarding_refuses_a_bad_invoice_prefix(signed_in):
    response = signed_in.submit("/onboarding", BUSINESS_FORM | {"invoice_prefix": "no spaces"})
    assert response.status_code == 422
    assert 'id="f-invoice_prefix-error"' in response.text
