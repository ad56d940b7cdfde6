"""The validation harness itself: the official examples pass as their README says, a changed total
fails BR-CO-16, and without the rules no test passes unvalidated."""

from __future__ import annotations

import pytest

from tests import einvoicing
from tests.einvoicing import rules


def example(name: str) -> bytes:
    return (rules().folder / "examples" / name).read_bytes()


def test_the_peppol_base_example_passes_both_rule_sets():
    assert einvoicing.schema_errors("ubl", example("peppol-base-example.xml")) == []
    assert rules().errors("cen-ubl", example("peppol-base-example.xml")) == []
    assert rules().errors("peppol", example("peppol-base-example.xml")) == []


def test_the_cen_examples_pass():
    assert rules().errors("cen-ubl", example("cen-ubl-example1.xml")) == []
    assert rules().errors("cen-cii", example("cen-cii-example1.xml")) == []


def test_a_changed_total_fails_br_co_16():
    changed = example("peppol-base-example.xml").replace(
        b'<cbc:PayableAmount currencyID="EUR">', b'<cbc:PayableAmount currencyID="EUR">9')
    assert [finding.id for finding in rules().errors("cen-ubl", changed)] == ["BR-CO-16"]


def test_the_shipped_wrong_total_example_fails_br_co_16():
    assert "BR-CO-16" in {finding.id for finding in rules().errors("cen-ubl",
                                                                   example("peppol-base-example-wrong-total.xml"))}


def test_without_the_rules_and_without_a_download_the_test_fails_saying_how_to_get_them(tmp_path, monkeypatch):
    monkeypatch.setenv("INVOICING_EINVOICE_RULES", str(tmp_path / "nothing-here"))
    monkeypatch.setattr(einvoicing, "CACHE", tmp_path / "cache")

    def offline(*args, **kwargs):
        raise OSError("network unreachable")
    monkeypatch.setattr(einvoicing.urllib.request, "urlopen", offline)
    with pytest.raises(pytest.fail.Exception, match="INVOICING_EINVOICE_RULES"):
        einvoicing.rules_folder()


def test_a_download_that_is_not_the_pinned_release_is_refused(tmp_path, monkeypatch):
    monkeypatch.setenv("INVOICING_EINVOICE_RULES", str(tmp_path / "nothing-here"))
    monkeypatch.setattr(einvoicing, "CACHE", tmp_path / "cache")

    class Tampered:
        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

        def read(self):
            return b"<xsl:stylesheet/>"
    monkeypatch.setattr(einvoicing.urllib.request, "urlopen", lambda *a, **k: Tampered())
    with pytest.raises(pytest.fail.Exception, match="SHA-256 differs"):
        einvoicing.rules_folder()
