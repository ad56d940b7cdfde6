"""Schemathesis' stateful run over the OpenAPI document: sequences of calls chained by its links
(create a customer, then read, update, archive it; draft an invoice, then finalize, pay, send…),
checked for server errors and conformance to the document. Bounded here; long in `make fuzz`."""

from __future__ import annotations

import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis import checks

from tests import hostile
from tests.conftest import make_tenant


@pytest.fixture
def machine(app, client, monkeypatch):
    hostile.lift_request_limit(monkeypatch)
    tenant = make_tenant(client)
    schema = schemathesis.openapi.from_asgi("/api/v1/openapi.json", app)

    class Machine(schema.as_state_machine()):
        def get_call_kwargs(self, case):
            return {"headers": {**(case.headers or {}), **tenant.headers}}

        def validate_response(self, response, case, additional_checks=None, **kwargs):
            # Every other built-in check runs. These two read the document more strictly than the
            # API is decided to be: any schema-valid request need not be accepted (cursors, ids and
            # business rules are refused with a 422), and an unknown query parameter is ignored, not
            # refused (decisions.md). tests/api/test_hostile_input.py covers refusals instead.
            case.validate_response(response, transport_kwargs=kwargs, excluded_checks=[
                checks.positive_data_acceptance, checks.negative_data_rejection])

    return Machine


@pytest.mark.fuzz
def test_chained_calls_conform_and_never_fail(machine):
    machine.run(settings=settings(max_examples=hostile.EXAMPLES, stateful_step_count=10, deadline=None,
                                  database=None, derandomize=True, suppress_health_check=list(HealthCheck)))
