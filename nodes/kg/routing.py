"""Graph-first routing rules for ``route.intent``: relation questions go to graph search.

Use ``GRAPH_FIRST_ROUTER_PARAMS`` as the router's params (route ``graph`` on output
``route_1``, everything else on ``default`` named ``vector``), or add ``GRAPH_ROUTE`` to
existing routes. English words are matched as whole words; Chinese words by pattern, because
Chinese has no spaces to delimit words.
"""

from __future__ import annotations

from typing import Any

RELATION_KEYWORDS = [
    "depends", "depend", "depending", "dependency", "dependencies", "calls", "call",
    "affects", "affect", "affected", "impact", "impacts", "upstream", "downstream",
    "caused by", "root cause", "responsible for", "imports", "imported",
]
RELATION_PATTERNS = [r"依赖|调用|影响|上游|下游|原因|负责"]
# Relations of one corpus (the demo corpus's mentoring: "mentor", 导师) belong in its
# graphs' router params, not here.

GRAPH_ROUTE: dict[str, Any] = {
    "name": "graph",
    "description": "questions about how things are connected: dependencies, calls, causes, "
                   "upstream and downstream effects, who owns what",
    "keywords": RELATION_KEYWORDS,
    "patterns": RELATION_PATTERNS,
}

GRAPH_FIRST_ROUTER_PARAMS: dict[str, Any] = {
    "routes": [GRAPH_ROUTE],
    "default_route": "vector",
    "use_llm": False,
}
