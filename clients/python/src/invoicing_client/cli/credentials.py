"""What `invoicing-cli login` keeps: per server, the client it registered and the person's tokens.

One JSON file in the user's config directory (`$XDG_CONFIG_HOME/invoicing/credentials.json` on
Linux), readable by its owner only (0600, written whole and renamed into place). Refreshing happens
under a lock on the file, because the server treats a refresh token presented twice as stolen and
revokes the sign-in: two commands started together must not both refresh.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import platformdirs

from invoicing_client.errors import InvoicingError


class LoginFailed(InvoicingError):
    """The sign-in did not complete, or what it keeps cannot be used; the message says what to do."""

FILE_NAME = "credentials.json"


def config_dir() -> Path:
    return Path(platformdirs.user_config_dir("invoicing", appauthor=False))


def path() -> Path:
    return config_dir() / FILE_NAME


def load() -> dict[str, Any]:
    try:
        data = json.loads(path().read_text())
    except FileNotFoundError:
        return {"servers": {}}
    except (OSError, ValueError) as exc:
        raise LoginFailed(f"Cannot read {path()} ({exc}); remove it and run `invoicing-cli login` again.") from None
    if not isinstance(data, dict) or not isinstance(data.get("servers"), dict):
        return {"servers": {}}
    data["servers"] = {url: entry for url, entry in data["servers"].items() if isinstance(entry, dict)}
    return data


def save(data: dict[str, Any]) -> None:
    directory = config_dir()
    directory.mkdir(parents=True, exist_ok=True, mode=0o700)
    handle, temporary = tempfile.mkstemp(dir=directory, prefix=".credentials-", suffix=".json")  # mode 0600
    try:
        with os.fdopen(handle, "w") as out:
            json.dump(data, out, indent=2)
            out.flush()
            os.fsync(out.fileno())
        os.replace(temporary, path())
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)
        raise


def server(base_url: str) -> dict[str, Any]:
    """What is kept for one API (empty when nothing is)."""
    return dict(load()["servers"].get(base_url, {}))


def update_server(base_url: str, *, make_default: bool = True, **values: Any) -> None:
    """Set (or, given None, remove) values for one API, under the lock; `make_default`: commands
    without --base-url use this server from now on."""
    with locked():
        data = load()
        entry = data["servers"].setdefault(base_url, {})
        for name, value in values.items():
            if value is None:
                entry.pop(name, None)
            else:
                entry[name] = value
        if make_default:
            data["default"] = base_url
        save(data)


def default_server() -> str | None:
    value = load().get("default")
    return value if isinstance(value, str) else None


_held = threading.local()


@contextlib.contextmanager
def locked() -> Iterator[None]:
    """Hold the credentials lock across processes (re-entrant in a thread; a no-op where the
    platform has no `fcntl`)."""
    try:
        import fcntl
    except ImportError:  # Windows: commands rarely race there, and the server limits the damage
        yield
        return
    if getattr(_held, "depth", 0):
        _held.depth += 1
        try:
            yield
        finally:
            _held.depth -= 1
        return
    directory = config_dir()
    directory.mkdir(parents=True, exist_ok=True, mode=0o700)
    with open(directory / ".credentials.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        _held.depth = 1
        try:
            yield
        finally:
            _held.depth = 0
            fcntl.flock(lock, fcntl.LOCK_UN)
