"""Intent router: keyword and regex rules first, an LLM for undecided questions, a default.

The node has a fixed set of outputs (``route_1`` .. ``route_4`` and ``default``) because a
node type's ports are static; the ``routes`` param names each route and lists its rules, in
port order. Exactly one output carries the query (with ``Query.route`` set).
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from modrag_nodes.generation.llm_call import SamplingAware, ask
from modrag_nodes.llm.client import LLMSpec
from modrag_studio.engine.core.node import InputPort, NodeContext, NodeType, OutputPort, Query

MAX_ROUTES = 4
CLASSIFY_PROMPT = (
    "Classify the question into one of these categories:\n{routes}\n\n"
    "Question: {question}\n\nReply with the category name only."
)


class Route(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str = Field(min_length=1, max_length=64, description="Route name (trace, Query.route)")
    description: str = Field("", description="What belongs here (shown to the LLM)")
    keywords: list[str] = Field(default_factory=list, description="Whole words or phrases")
    patterns: list[str] = Field(default_factory=list, description="Regular expressions")

    @field_validator("patterns")
    @classmethod
    def _compiles(cls, patterns: list[str]) -> list[str]:
        for pattern in patterns:
            try:
                re.compile(pattern)
            except re.error as exc:
                raise ValueError(f"invalid regular expression {pattern!r}: {exc}") from None
        return patterns


class RouterParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    routes: list[Route] = Field(
        default_factory=list, max_length=MAX_ROUTES,
        description="Up to 4 routes; the first goes to output route_1, the second to route_2…",
    )
    default_route: str = Field("default", description="Name given to the default branch")
    case_sensitive: bool = Field(False, description="Match keywords and patterns by case")
    use_llm: bool = Field(True, description="Ask the connected model when rules do not decide")
    classify_prompt: str = Field(CLASSIFY_PROMPT, json_schema_extra={"multiline": True},
                                 description="LLM prompt ({routes}, {question})")


    @field_validator("routes")
    @classmethod
    def _unique_names(cls, routes: list[Route]) -> list[Route]:
        names = [r.name.lower() for r in routes]
        repeated = sorted({n for n in names if names.count(n) > 1})
        if repeated:
            raise ValueError(f"route names must differ; repeated: {', '.join(repeated)}")
        return routes


class IntentRouter(SamplingAware, NodeType):
    type_id = "route.intent"
    key_params = ("default_route", "use_llm")
    title = "Intent router"
    category = "Query"
    description = (
        "Sends the query down exactly one branch: keyword and regex rules first, then the "
        "model for undecided questions, else the default branch."
    )
    routes = True
    Params = RouterParams
    inputs = (
        InputPort("query", Query, description="The question to route"),
        InputPort("llm", LLMSpec, required=False, description="Classifies undecided questions"),
    )
    outputs = tuple(
        OutputPort(f"route_{i}", Query, f"The query when route {i} is chosen")
        for i in range(1, MAX_ROUTES + 1)
    ) + (OutputPort("default", Query, "The query when no route applies"),)

    def run(self, ctx: NodeContext, params: RouterParams, query: Query,
            llm: LLMSpec | None = None) -> dict[str, Any]:
        index, tied, reason = _by_rules(params, query.text)
        if index is None and params.routes and llm is not None and params.use_llm:
            candidates = tied or list(range(len(params.routes)))
            index, reason = _by_llm(ctx, params, llm, query.text, candidates, reason)
        elif index is None and params.routes and llm is None and params.use_llm and not tied:
            reason += "; no model connected"
        if index is None and tied:
            index = tied[0]
            reason += "; the first tied route (in param order) wins"
        if index is None:
            name, port = params.default_route, "default"
            reason += f"; default route '{name}' taken"
        else:
            name, port = params.routes[index].name, f"route_{index + 1}"
        ctx.note(route=name, port=port, reason=reason)
        return {port: query.model_copy(update={"route": name})}


def _by_rules(params: RouterParams, text: str) -> tuple[int | None, list[int], str]:
    """The route the rules pick, or the tied routes, and why."""
    flags = 0 if params.case_sensitive else re.IGNORECASE
    hits: dict[int, list[str]] = {}
    for i, route in enumerate(params.routes):
        found = [f"keyword '{k}'" for k in route.keywords
                 if re.search(rf"(?<!\w){re.escape(k)}(?!\w)", text, flags)]
        found += [f"pattern /{p}/" for p in route.patterns if re.search(p, text, flags)]
        if found:
            hits[i] = found
    if not hits:
        return None, [], "no rule matched"
    best = max(len(f) for f in hits.values())
    top = [i for i, f in hits.items() if len(f) == best]
    if len(top) == 1:
        route = params.routes[top[0]]
        return top[0], [], f"rules: {', '.join(hits[top[0]])} matched route '{route.name}'"
    names = ", ".join(f"'{params.routes[i].name}'" for i in top)
    return None, top, f"rules tie between {names}"


def _by_llm(ctx: NodeContext, params: RouterParams, llm: LLMSpec, text: str,
            candidates: list[int], reason: str) -> tuple[int | None, str]:
    listing = "\n".join(
        f"- {params.routes[i].name}" + (f": {params.routes[i].description}"
                                        if params.routes[i].description else "")
        for i in candidates
    )
    listing += f"\n- {params.default_route}: anything else"
    prompt = params.classify_prompt.replace("{routes}", listing).replace("{question}", text)
    reply = ask(ctx, llm, "", prompt, purpose="classify", max_tokens=16)
    chosen = match_route_name(reply, [params.routes[i].name for i in candidates])
    if chosen is None:
        return None, f"{reason}; the model's reply named no route"
    index = candidates[chosen]
    return index, f"{reason}; the model chose '{params.routes[index].name}'"


def match_route_name(reply: str, names: list[str]) -> int | None:
    """Which of ``names`` the reply names: exact line, then the earliest whole-word mention."""
    cleaned = re.sub(r"[*`\"'.]", "", reply).strip()
    lowered = [n.lower() for n in names]
    for line in cleaned.splitlines():
        candidate = re.sub(r"^(?:category|route|answer|intent)\s*[:=\-]\s*", "",
                           line.strip(), flags=re.IGNORECASE).strip().lower()
        if candidate in lowered:
            return lowered.index(candidate)
    positions = []
    for i, name in enumerate(lowered):
        match = re.search(rf"(?<!\w){re.escape(name)}(?!\w)", cleaned, re.IGNORECASE)
        if match:
            positions.append((match.start(), -len(name), i))
    return min(positions)[2] if positions else None
