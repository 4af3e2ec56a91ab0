"""`--memlistener` / `--responder` endpoint specs -> the serving package's own configs.

Spec forms (the MemListener's default is the product's: the configured listener,
`PERSONATREE_MEMLISTENER_BACKEND`, extractive unless set; the responder's default is `local`, the
settings' local GGUF):
- `local` or `local:/path/model.gguf` — llama.cpp in this process;
- `extractive` — the extractive listener (no language model; the pointing pipeline's rules);
- `recorded:/path/recording.jsonl` — replays a named recording (tests, demos);
- `openai:http://host:port/v1` or `openai:http://host:port/v1#model-name` — an OpenAI-compatible
  server (API key from `PERSONATREE_OPENAI_API_KEY`);
- `ray:http://127.0.0.1:8000/memlistener` — the Ray Serve MemListener app (MemListener only);
- `standin:derived` / `standin:no_op` — the serving package's zero-latency stand-in (MemListener
  only; not a model: for harness tests and backend checks, never for reported numbers).
"""

from __future__ import annotations

from memory import conf
from serving.client import ClientConfig

KINDS = ("local", "extractive", "recorded", "openai", "ray", "standin")


class EndpointError(ValueError):
    pass


def parse_spec(spec: str | None) -> tuple[str, str]:
    spec = (spec or "local").strip()
    kind, _, rest = spec.partition(":")
    if kind not in KINDS:
        raise EndpointError(
            f"unknown endpoint '{spec}': expected one of {', '.join(k + ':...' for k in KINDS)}"
        )
    if kind in ("recorded", "openai", "ray", "standin") and not rest:
        raise EndpointError(f"endpoint '{spec}' needs a value after '{kind}:'")
    return kind, rest


def memlistener_config(spec: str | None) -> ClientConfig:
    """The MemListener client config for `spec`, starting from the settings (so limits stay as
    configured); no spec: the settings' own listener, as the product runs it."""
    base = conf.listener_client_config(ClientConfig)
    if spec is None:
        return base
    kind, rest = parse_spec(spec)
    engine = base.engine
    if kind == "ray":
        return base.model_copy(update={"backend": "ray", "url": rest})
    if kind == "extractive":
        engine = engine.model_copy(update={"kind": "extractive", "prompt_mode": "pointing"})
        return base.model_copy(update={"backend": "extractive", "engine": engine})
    if kind == "local":
        engine = engine.model_copy(update={"kind": "llamacpp", **({"model_path": rest} if rest else {})})
        return base.model_copy(update={"backend": "local", "engine": engine})
    if kind == "recorded":
        engine = engine.model_copy(update={"kind": "recorded", "recording_path": rest})
        return base.model_copy(update={"backend": "recorded", "engine": engine})
    if kind == "standin":
        if rest not in ("derived", "no_op"):
            raise EndpointError("standin endpoint must be standin:derived or standin:no_op")
        engine = engine.model_copy(update={"kind": "standin", "standin_mode": rest})
        return base.model_copy(update={"backend": "standin", "engine": engine})
    url, _, model = rest.partition("#")
    engine = engine.model_copy(
        update={"kind": "openai", "base_url": url, **({"model": model} if model else {})}
    )
    return base.model_copy(update={"backend": "openai", "engine": engine})


def responder_settings(spec: str | None, *, max_tokens: int = 48) -> dict:
    """`settings.PERSONATREE` overrides that point the recall runtime's responder engine at `spec`."""
    kind, rest = parse_spec(spec)
    if kind in ("ray", "standin"):
        raise EndpointError(f"the responder cannot be '{kind}' (MemListener only); use local/openai/recorded")
    out: dict = {"RESPONDER_BACKEND": kind, "RESPONDER_MAX_TOKENS": max_tokens}
    if kind == "local" and rest:
        out["LOCAL_MODEL_PATH"] = rest
    elif kind == "recorded":
        out["RESPONDER_RECORDING_PATH"] = rest
    elif kind == "openai":
        url, _, model = rest.partition("#")
        out["OPENAI_BASE_URL"] = url
        if model:
            out["OPENAI_MODEL"] = model
    return out
