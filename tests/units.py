"""Units of `core.base.executor` run from a test (a loop of their own), and a credential verified as
the surfaces verify it."""

import anyio

from authz import verifier
from core.access import credentials
from core.base import executor, raw


async def _nothing(_db, _principal) -> None:
    return None


def run_unit(unit, *arguments):
    """`unit(db, *arguments)` on the test's database, as the pipeline runs it."""
    async def on_a_loop_of_its_own():
        try:
            return await executor.run(unit, *arguments)
        finally:
            await raw.close_postgres_connections()  # they belong to this loop, which ends here
    return anyio.run(on_a_loop_of_its_own)


def principal_of(authorization: str, resource: str):
    """The caller behind `authorization` for `resource` (its use noted), or the Unauthorized raised.
    Access tokens are verified by the authorization server's verifier, as the application plugs it in."""
    credentials.register_oauth_verifier(verifier.verify_access_token, verifier.verify_access_token_counted)

    async def unit(db):
        principal, _ = await credentials.authenticate(db, authorization, resource=resource, then=_nothing)
        return principal
    return run_unit(unit)
