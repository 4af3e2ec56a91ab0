"""An OpenAI-compatible ``POST .../v1/chat/completions`` on the MemListener deployment's engine, so
the web tier's responder (``PERSONATREE_RESPONDER_BACKEND=openai``) answers with the deployment's
model when the web image has none. Only what that client sends is read (``messages``, a
``json_schema`` ``response_format``; the engine's own limits apply); anything malformed is a 400
in OpenAI's error shape, an engine failure a 503 or 500."""

from __future__ import annotations

import time
import uuid
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from serving.engines.base import Generation, Prompt

CHAT_PATH = "/v1/chat/completions"
PROMPT_VERSION = "chat-compat"


class ChatMessage(BaseModel):
    model_config = ConfigDict(extra="ignore")

    role: Literal["system", "user", "assistant"]
    content: str


class ChatRequest(BaseModel):
    model_config = ConfigDict(extra="ignore")

    model: str = ""
    messages: list[ChatMessage] = Field(min_length=1)
    response_format: dict[str, Any] | None = None

    def json_schema(self) -> dict[str, Any] | None:
        fmt = self.response_format or {}
        if fmt.get("type") != "json_schema":
            return None
        schema = (fmt.get("json_schema") or {}).get("schema")
        if not isinstance(schema, dict):
            raise ValueError("response_format.json_schema.schema must be an object")
        return schema

    def prompt(self) -> Prompt:
        """System messages form the static (cacheable) part, the conversation the per-call part."""
        system = "\n\n".join(m.content for m in self.messages if m.role == "system")
        turns = [m for m in self.messages if m.role != "system"]
        if not turns:
            raise ValueError("messages has no user message")
        dynamic = (
            turns[0].content if len(turns) == 1 else "\n\n".join(f"{m.role}: {m.content}" for m in turns)
        )
        return Prompt(static=system, dynamic=dynamic, prompt_version=PROMPT_VERSION)


def error_body(message: str, kind: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": kind, "code": None, "param": None}}


def parse(body: Any) -> tuple[Prompt, dict[str, Any] | None]:
    """``(prompt, json_schema)`` from a request body; ValueError with a readable reason."""
    try:
        request = ChatRequest.model_validate(body)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        raise ValueError(problems) from None
    return request.prompt(), request.json_schema()


def completion(gen: Generation) -> tuple[int, dict[str, Any]]:
    """``(HTTP status, body)`` of one generation in the chat-completions shape."""
    if gen.error:
        status = 503 if gen.retryable else 500
        return status, error_body(gen.error, "engine_unavailable" if gen.retryable else "engine_error")
    return 200, {
        "id": f"chatcmpl-{uuid.uuid4().hex}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": gen.model_id,  # the model that answered, whatever name the caller asked for
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": gen.text},
                "finish_reason": "stop",
            }
        ],
        "usage": {
            "prompt_tokens": gen.prompt_tokens,
            "completion_tokens": gen.completion_tokens,
            "total_tokens": gen.prompt_tokens + gen.completion_tokens,
        },
    }
