"""The server's and the tools' icons (SEP-973): every tool has one, light and dark, SVG and PNG,
inlined as data URIs that decode to what they say they are, small, and drawn from the script's drawings."""

from __future__ import annotations

import base64
import importlib.util
import io
from pathlib import Path

import pytest
from lxml import etree
from PIL import Image, ImageChops

from mcp_server import icons
from mcp_server.tools import TOOLS

ROOT = Path(__file__).resolve().parents[2]
# Tools registered outside mcp_server.tools (the invoice view's button, tasks, bulk actions).
MORE_TOOLS = ("confirm_invoice_action", "export_e_invoices", "send_invoices", "send_reminders")
ALL_TOOLS = sorted({tool.name for tool in TOOLS} | set(MORE_TOOLS))
SVG = "{http://www.w3.org/2000/svg}"


def decoded(icon) -> bytes:
    prefix = f"data:{icon.mime_type};base64,"
    assert icon.src.startswith(prefix)
    return base64.b64decode(icon.src[len(prefix):], validate=True)


def check(found: list) -> None:
    """Light and dark, SVG and PNG, each what it says it is."""
    assert sorted((icon.mime_type, icon.theme) for icon in found) == [
        ("image/png", "dark"), ("image/png", "light"), ("image/svg+xml", "dark"), ("image/svg+xml", "light")]
    for icon in found:
        content = decoded(icon)
        if icon.mime_type == "image/svg+xml":
            assert icon.sizes == ["any"]
            root = etree.fromstring(content)
            assert root.tag == f"{SVG}svg" and root.get("viewBox") == "0 0 24 24"
            # Nothing a client should be wary of in an SVG: no script, no link, no external reference.
            assert not [node for node in root.iter() if not isinstance(node.tag, str) or node.tag in (
                f"{SVG}script", f"{SVG}foreignObject", f"{SVG}image", f"{SVG}use", f"{SVG}a")]
            assert b"href" not in content and b"onload" not in content
            assert len(content) < 1024
        else:
            image = Image.open(io.BytesIO(content))
            image.load()
            assert image.format == "PNG" and icon.sizes == [f"{image.width}x{image.height}"] == ["48x48"]
            assert image.has_transparency_data and image.convert("RGBA").getpixel((0, 0))[3] == 0
            assert len(content) < 4096


def test_the_server_has_icons():
    check(icons.server_icons())


@pytest.mark.parametrize("name", ALL_TOOLS)
def test_every_tool_has_icons(name):
    check(icons.tool_icons(name))


def test_a_tool_without_an_icon_is_a_key_error():
    with pytest.raises(KeyError):
        icons.tool_icons("a_tool_nobody_drew")


def test_every_category_is_used_and_every_mapping_names_a_drawn_one():
    assert set(icons.TOOL_CATEGORIES.values()) == set(icons.CATEGORIES)
    assert {tool for tool in icons.TOOL_CATEGORIES if tool not in ALL_TOOLS} <= {"get_e_invoice_export"}


def test_light_and_dark_differ_and_categories_differ():
    sources = {name: {icon.src for icon in icons.tool_icons(tool)} for tool, name in icons.TOOL_CATEGORIES.items()}
    assert all(len(found) == 4 for found in sources.values())
    assert len({frozenset(found) for found in sources.values()}) == len(icons.CATEGORIES)


def test_the_icons_are_returned_fresh_each_time():
    first = icons.tool_icons("get_invoice")
    first[0].theme = "dark"
    assert icons.tool_icons("get_invoice")[0].theme == "light"


def test_the_committed_files_are_the_scripts_drawings():
    spec = importlib.util.spec_from_file_location("mcp_icons_script", ROOT / "scripts" / "mcp-icons.py")
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    folder = ROOT / "mcp_server" / "icons"
    assert sorted(path.name for path in folder.iterdir()) == sorted(
        f"{name}-{theme}.{kind}" for name in (*icons.CATEGORIES, "server") for theme in icons.THEMES
        for kind in ("svg", "png"))
    for name in script.DRAWINGS:
        for theme in icons.THEMES:
            assert (folder / f"{name}-{theme}.svg").read_text() == script.svg(name, theme)
            drawn = Image.open(io.BytesIO(script.png(name, theme))).convert("RGBA")
            committed = Image.open(folder / f"{name}-{theme}.png").convert("RGBA")
            # The same picture (Pillow's own encoder may differ in bytes between versions).
            assert drawn.size == committed.size
            assert max(high for _, high in ImageChops.difference(drawn, committed).getextrema()) <= 8
