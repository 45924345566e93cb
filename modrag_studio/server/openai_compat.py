"""OpenAI-compatible routes of a served graph: ``GET /v1/models`` and
``POST /v1/chat/completions``, so chat front-ends and the ``openai`` SDK can ask it.

The last user message is the graph's question input; the earlier turns go to its ``history``
input when it has one (a JSON chat history, as the studio's playground sends). The reply's
``content`` is the answer with its ``[n]`` markers and one line per citation; the message
also carries ``citations`` (each with its passage) and ``grounding`` (the check's verdict),
fields strict clients ignore. ``stream: true`` sends OpenAI chunks while the graph runs: the
answering model's tokens as they come, a line when a check sends a draft back, then whatever
the checked answer adds (its source lines, or the answer itself when it differs from the
last draft), the citations and the verdict, and ``data: [DONE]``.

These routes go through the same middleware (Host check, API key as ``X-API-Key`` or
``Authorization: Bearer``, body limit), the same ``RunManager`` (time limit, concurrency,
queue, read-only stores) and the same ``Exposure`` (only the inputs a client may set) as
``/run``; a chat request sets nothing else.
"""

from __future__ import annotations

import contextlib
import functools
import json
import re
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, StreamingResponse
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from modrag_studio.engine.core.datatypes import Answer
from modrag_studio.engine.core.document import GraphDocument
from modrag_studio.engine.core.graph_io import graph_interface
from modrag_studio.engine.core.registry import NodeRegistry
from modrag_studio.engine.run.executor import RunResult
from modrag_studio.reporting.answer_view import (
    HISTORY_INPUT,
    answer_value,
    citation_line,
    cited_passages,
    grounding_of,
    question_input,
)
from modrag_studio.server.disclosure import ClientView
from modrag_studio.server.exposure import Exposure, PathOutsideRoot
from modrag_studio.server.runs import (
    QueueFull,
    RunManager,
    _QueueHook,
    answer_text,
    result_body,
    run_events,
)

ACCEPTED_VERDICTS = ("grounded", "supported")


class ChatMessageIn(BaseModel):
    """One message of a chat request (other fields, such as ``name``, are ignored)."""

    model_config = ConfigDict(extra="allow")
    role: str
    content: str | list[dict[str, Any]] | None = None

    def text(self) -> str:
        """The message's text (the text parts of a multi-part content, joined)."""
        if isinstance(self.content, list):
            return "\n".join(str(p.get("text", "")) for p in self.content
                             if p.get("type") == "text")
        return self.content or ""


class ChatCompletionRequest(BaseModel):
    """The fields a served graph reads; sampling options (temperature, max_tokens ...) are
    accepted and ignored: the graph's own model settings apply."""

    model_config = ConfigDict(extra="allow")
    model: str
    messages: list[ChatMessageIn] = Field(min_length=1)
    stream: bool = False


def openai_error(status: int, message: str, code: str, *, param: str | None = None,
                 kind: str = "invalid_request_error",
                 headers: dict[str, str] | None = None) -> JSONResponse:
    """An error in the OpenAI shape (``{"error": {"message", "type", "param", "code"}}``)."""
    return JSONResponse(status_code=status, headers=headers, content={
        "error": {"message": message, "type": kind, "param": param, "code": code}})


class ChatRequestError(ValueError):
    """A chat request this graph cannot answer; ``code`` and ``param`` as OpenAI names them."""

    def __init__(self, message: str, code: str, param: str | None = None,
                 status: int = 400) -> None:
        super().__init__(message)
        self.code, self.param, self.status = code, param, status


@dataclass
class Reply:
    """A finished run as a chat reply."""

    answer: str
    footer: str
    citations: list[dict[str, Any]]
    grounding: dict[str, Any] | None
    failed: str = ""  # why the run gave no answer ("" when it did)

    @property
    def content(self) -> str:
        return self.answer + self.footer

    def extra(self) -> dict[str, Any]:
        """The message fields beyond OpenAI's own."""
        return {"citations": self.citations, "grounding": self.grounding}


def reply_of(result: RunResult, *, timed_out: bool, view: ClientView) -> Reply:
    """The chat reply of a finished run (errors and values as ``view`` shows them)."""
    body = result_body(result, with_trace=False, timed_out=timed_out, view=view)
    text, failed = answer_text(result, body, timed_out=timed_out, view=view)
    if failed:
        return Reply(text, "", [], None, failed=text)
    answer: Answer | None = answer_value(result.outputs)
    citations = [view.value(c.to_dict()) for c in cited_passages(answer)] if answer else []
    grounding = grounding_of(result.trace, answer)
    footer = "".join("\n" + citation_line(c["ref"], c["doc_id"], c["chunk_id"])
                     for c in citations)
    return Reply(text, "\n" + footer if footer else "", citations,
                 view.value(grounding.to_dict()) if grounding else None)


def answer_writers(doc: GraphDocument, registry: NodeRegistry) -> set[str]:
    """The nodes upstream of the graph's outputs that write an answer (their streamed tokens
    are drafts of it; a grader's or a judge's tokens are not)."""
    feeds: dict[str, set[str]] = {}
    for edge in doc.edges:
        feeds.setdefault(edge.target_node, set()).add(edge.source_node)
    todo = [port.node_id for port in graph_interface(doc, registry).outputs]
    seen: set[str] = set()
    while todo:
        node = todo.pop()
        if node not in seen:
            seen.add(node)
            todo += feeds.get(node, ())
    writers = set()
    for spec in doc.nodes:
        node_type = registry.get(spec.type) if spec.type in registry else None
        if spec.id in seen and node_type is not None and any(
                port.type is Answer for port in node_type.outputs):
            writers.add(spec.id)
    return writers


class _ChatHook(_QueueHook):
    """Forwards the answer writers' tokens and the checks' verdicts."""

    def __init__(self, loop: Any, queue: Any, view: ClientView, *, writers: set[str]) -> None:
        super().__init__(loop, queue, view)
        self.writers = writers

    def on_node_start(self, **kwargs: Any) -> None:
        return None

    def on_node_stream(self, *, run_id: str, node_id: str, text: str) -> None:
        if node_id in self.writers:
            self._put("token", {"node_id": node_id, "text": text})

    def on_node_end(self, *, run_id: str, visit: Any, inputs: dict, outputs: dict) -> None:
        verdict = visit.details.get("verdict")
        if verdict is not None:
            self._put("verdict", {"verdict": str(verdict),
                                  "reason": self.view.text(str(visit.details.get("reason", "")))})


def _words(text: str) -> str:
    """The words of ``text`` (punctuation and brackets a parser trims do not count)."""
    return " " + " ".join(re.findall(r"\w+", text)) + " "


class ChatStream:
    """Turns run events into OpenAI chunks (``data: {...}``) for one streamed request."""

    def __init__(self, completion_id: str, model: str) -> None:
        self.completion_id, self.model = completion_id, model
        self.created = int(time.time())
        self.draft = ""        # text of the current draft (since the last note)
        self.sent_any = False

    def chunk(self, delta: dict[str, Any], finish: str | None = None) -> bytes:
        body = {"id": self.completion_id, "object": "chat.completion.chunk",
                "created": self.created, "model": self.model,
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish,
                             "logprobs": None}]}
        return sse_data(body)

    def content(self, text: str) -> bytes:
        self.sent_any = self.sent_any or bool(text)
        return self.chunk({"content": text})

    def token(self, text: str) -> bytes:
        self.draft += text
        return self.content(text)

    def verdict(self, verdict: str, reason: str) -> bytes | None:
        """A line saying a check sent the draft back (None when it accepted it)."""
        if verdict in ACCEPTED_VERDICTS or not self.draft:
            return None
        self.draft = ""
        why = f": {reason}" if reason else ""
        return self.content(f"\n\n(The check sent this draft back{why}.)\n\n")

    def finish(self, reply: Reply) -> list[bytes]:
        """The rest of the checked answer, its citations and verdict, the stop and [DONE]."""
        if self.draft and _words(reply.answer).strip() and \
                _words(reply.answer) in _words(self.draft):
            rest = reply.footer
        else:
            rest = ("\n\n" if self.draft else "") + reply.content
        out = [self.content(rest)] if rest else []
        out.append(self.chunk(reply.extra(), finish="stop"))
        out.append(b"data: [DONE]\n\n")
        return out


def sse_data(body: dict[str, Any]) -> bytes:
    try:
        return f"data: {json.dumps(body, ensure_ascii=False)}\n\n".encode()
    except UnicodeEncodeError:  # a lone surrogate in a text: send it as a \u escape
        return f"data: {json.dumps(body)}\n\n".encode()


def error_event(message: str, code: str) -> bytes:
    return sse_data({"error": {"message": message, "type": "server_error", "param": None,
                               "code": code}})


def add_openai_routes(app: FastAPI, *, doc: GraphDocument, registry: NodeRegistry,
                      manager: RunManager, exposure: Exposure, inputs_model: type[BaseModel],
                      view: ClientView, run_timeout_s: float,
                      run_until_disconnect: Callable[..., Any]) -> None:
    """``/v1/models`` and ``/v1/chat/completions`` on ``app`` (``inputs_model``: the
    ``/run`` body, which checks the question and history like any request)."""
    model_id = doc.metadata.name or "graph"
    question = question_input(exposure.exposed)
    takes_history = HISTORY_INPUT in exposure.exposed
    writers = answer_writers(doc, registry)

    def run_inputs(chat: ChatCompletionRequest) -> dict[str, Any]:
        if chat.model != model_id:
            raise ChatRequestError(f"this server serves the model '{model_id}' (the graph's "
                                   f"name), not '{chat.model}'", "model_not_found", "model",
                                   status=404)
        if question is None:
            raise ChatRequestError("this graph has no question input (an input named "
                                   "question or query) a chat message could go to",
                                   "no_question_input")
        users = [i for i, m in enumerate(chat.messages) if m.role == "user"]
        if not users:
            raise ChatRequestError("messages: there is no user message to answer",
                                   "no_user_message", "messages")
        last = users[-1]
        body: dict[str, Any] = {question: chat.messages[last].text()}
        if takes_history:
            earlier = [{"role": m.role, "content": m.text()} for m in chat.messages[:last]
                       if m.role in ("user", "assistant")]
            body[HISTORY_INPUT] = json.dumps(earlier, ensure_ascii=False)
        try:
            checked = inputs_model.model_validate(body)
            return exposure.run_inputs(checked.model_dump(exclude_unset=True))
        except ValidationError as exc:
            problem = exc.errors()[0]
            name = ".".join(str(p) for p in problem.get("loc", ()))
            raise ChatRequestError(f"input '{name}': {problem.get('msg', 'invalid')}",
                                   "invalid_input", "messages") from None
        except PathOutsideRoot as exc:
            raise ChatRequestError(str(exc), "invalid_input", "messages") from None

    def busy() -> JSONResponse:
        retry = str(max(1, min(int(run_timeout_s), 60)))
        return openai_error(503, "server busy: too many runs waiting; retry later",
                            "server_busy", kind="server_error", headers={"Retry-After": retry})

    @app.get("/v1/models", summary="The served graph as the one model (OpenAI-compatible)")
    async def models() -> dict[str, Any]:
        return {"object": "list", "data": [
            {"id": model_id, "object": "model", "created": 0, "owned_by": "modrag-studio"}]}

    @app.post("/v1/chat/completions", summary="Ask the graph a chat question (OpenAI-compatible;"
              " stream: true sends server-sent events)",
              responses={200: {"content": {"application/json": {}, "text/event-stream": {}}}})
    async def chat_completions(request: Request, chat: ChatCompletionRequest) -> Any:
        try:
            inputs = run_inputs(chat)
        except ChatRequestError as exc:
            return openai_error(exc.status, str(exc), exc.code, param=exc.param)
        if chat.stream:
            if not manager.has_room():
                return busy()
            return StreamingResponse(stream_chat(inputs), media_type="text/event-stream",
                                     headers={"Cache-Control": "no-cache"})
        try:
            result, timed_out = await run_until_disconnect(manager, request, inputs)
        except QueueFull:
            return busy()
        reply = reply_of(result, timed_out=timed_out, view=view)
        if reply.failed:
            status, code = (504, "run_timeout") if timed_out else (500, "run_failed")
            return openai_error(status, reply.failed, code, kind="server_error")
        message = {"role": "assistant", "content": reply.content, "refusal": None,
                   **reply.extra()}
        return {"id": f"chatcmpl-{result.trace.run_id}", "object": "chat.completion",
                "created": int(time.time()), "model": model_id,
                "choices": [{"index": 0, "message": message, "finish_reason": "stop",
                             "logprobs": None}]}

    async def stream_chat(inputs: dict[str, Any]) -> AsyncIterator[bytes]:
        import uuid

        out = ChatStream(f"chatcmpl-{uuid.uuid4().hex[:12]}", model_id)
        yield out.chunk({"role": "assistant", "content": ""})
        hook = functools.partial(_ChatHook, writers=writers)
        async with contextlib.aclosing(run_events(manager, inputs, hook)) as events:
            async for event, data in events:
                if event == "token":
                    yield out.token(data["text"])
                elif event == "verdict":
                    note = out.verdict(data["verdict"], data["reason"])
                    if note is not None:
                        yield note
                elif event == "busy":
                    yield error_event("server busy: too many runs waiting", "server_busy")
                    return
                elif event == "finished":
                    result, timed_out = data
                    reply = reply_of(result, timed_out=timed_out, view=view)
                    if reply.failed:
                        yield error_event(reply.failed,
                                          "run_timeout" if timed_out else "run_failed")
                        return
                    for part in out.finish(reply):
                        yield part
                    return
