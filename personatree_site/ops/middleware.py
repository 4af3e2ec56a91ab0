"""First middleware of the chain: answers the ops paths, counts and times everything else per route.

A probe calls the pod by IP over plain HTTP, which the production settings would answer with the
HTTPS redirect or a 400 (the IP is not an allowed host); nothing on the ops paths builds URLs from
the Host header, so answering them before ``SecurityMiddleware`` and ``CommonMiddleware`` is safe.
"""

from __future__ import annotations

import time

from personatree_site.ops import views
from personatree_site.ops.metrics import record_request

OPS_VIEWS = {"/healthz": views.healthz, "/readyz": views.readyz, "/metrics": views.metrics}


class OpsMiddleware:
    def __init__(self, get_response) -> None:
        self.get_response = get_response

    def __call__(self, request):
        view = OPS_VIEWS.get(request.path_info)
        if view is not None:
            return view(request)
        started = time.perf_counter()
        response = self.get_response(request)
        record_request(request, response.status_code, time.perf_counter() - started)
        return response
