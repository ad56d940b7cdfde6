"""Verify a credential in a test as the surfaces do (`core.access.credentials`, on the executor)."""

import anyio

from core.access import credentials
from core.base import executor, raw


async def _nothing(_db, _principal) -> None:
    return None


def principal_of(authorization: str, resource: str):
    """The caller behind `authorization` for `resource` (its use noted), or the Unauthorized raised."""
    async def unit(db):
        principal, _ = await credentials.authenticate(db, authorization, resource=resource, then=_nothing)
        return principal

    async def on_a_loop_of_its_own():
        try:
            return await executor.run(unit)
        finally:
            await raw.close_postgres_connections()  # they belong to this loop, which ends here
    return anyio.run(on_a_loop_of_its_own)
