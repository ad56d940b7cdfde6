"""The web pages' templates: this package's `templates/`, then the shared layout of `pages`."""

from pathlib import Path

from pages.render import Templates

templates = Templates(Path(__file__).parent / "templates")
render = templates.render
