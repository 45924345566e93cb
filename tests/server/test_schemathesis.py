"""Property-based requests generated from the server's own OpenAPI schema: never a 5xx."""

import schemathesis
from hypothesis import HealthCheck, settings

from modrag_studio.server import ServerSettings, create_app
from tests.server.conftest import echo_graph, make_registry

app = create_app(echo_graph(), ServerSettings(cache_dir=None, max_body_bytes=50_000,
                                                allowed_hosts=["*"]),
                 registry=make_registry())
schema = schemathesis.openapi.from_asgi("/openapi.json", app)


@schema.parametrize()
@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
def test_no_server_errors(case):
    response = case.call()
    assert response.status_code < 500, (case.method, case.path, response.text[:300])
