"""Form fields and query parameters holding characters no database stores are refused with a page
saying so (400), never a server error."""

import pytest

from tests.web.conftest import PASSWORD


@pytest.mark.parametrize("field", ["email", "password", "next"])
def test_a_nul_in_a_sign_in_field_is_a_400_page(browser, field):
    data = {"email": "someone@example.com", "password": PASSWORD, "next": "/", field: "x\x00y"}
    response = browser.submit("/login", data)
    assert response.status_code == 400
    assert "characters we cannot accept" in response.text


@pytest.mark.parametrize("field", ["email", "password", "name"])
def test_a_control_character_in_a_sign_up_field_is_a_400_page(browser, field):
    data = {"email": "new@example.com", "password": PASSWORD, "name": "Ada", field: "a\x1bb"}
    assert browser.submit("/signup", data).status_code == 400


def test_a_nul_in_a_page_query_parameter_is_a_400_page(browser):
    assert browser.get("/login?next=/%00").status_code == 400


def test_a_multi_line_value_is_left_to_the_form_to_judge(browser):
    data = {"email": "someone@example.com", "password": "line\nbreak", "next": "/"}
    assert browser.submit("/login", data).status_code != 400


def test_a_line_break_in_the_sign_up_name_is_shown_at_the_name_field(browser):
    response = browser.submit("/signup", {"email": "new@example.com", "password": PASSWORD, "name": "Ada\nLovelace"})
    assert response.status_code == 422
    assert "single line" in response.text


def test_a_control_character_in_a_page_path_id_is_a_404_page(signed_in):
    page = signed_in.client.get("/settings/api-keys")
    from tests.web.conftest import csrf_of
    response = signed_in.client.post("/settings/api-keys/%00/revoke", data={"csrf_token": csrf_of(page.text)},
                                     follow_redirects=False)
    assert response.status_code == 404
