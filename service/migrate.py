"""Alembic migrations, applied by `invoicing db upgrade` and at server start."""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config

import migrations
from core.base.db import get_engine


def alembic_config() -> Config:
    config = Config()
    config.set_main_option("script_location", str(Path(migrations.__file__).parent))
    return config


def upgrade(revision: str = "head") -> None:
    config = alembic_config()
    engine = get_engine()
    with engine.begin() as connection:
        config.attributes["connection"] = connection
        command.upgrade(config, revision)
