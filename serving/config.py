"""Configuration of the MemListener engines and of the Ray Serve app, validated at the edge (settings,
``serve deploy`` YAML) and handed in, so nothing in ``serving`` needs Django."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

EngineKind = Literal["llamacpp", "openai", "vllm", "recorded", "standin", "extractive"]
PromptMode = Literal["pointing", "full_enum"]


class EngineConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    kind: EngineKind = "llamacpp"
    # Generation limits shared by all model engines.
    max_tokens: int = Field(default=256, ge=1, le=4096)
    temperature: float = Field(default=0.0, ge=0.0, le=2.0)
    constrained: bool = True  # send the JSON schema (path enum) to engines that support it
    max_ops: int = Field(default=12, ge=1, le=64)  # maxItems of the constrained op list
    # "pointing" (ops cite the fact pipeline's numbered clauses and candidate leaves) or "full_enum"
    # (every leaf path as an enum; large GPU models); None: the kind's default (``prompt_mode_for``).
    prompt_mode: PromptMode | None = None
    # Directory of the fact pipeline's embedded leaf texts per schema and embedder ("": off).
    leaf_vectors_dir: str = ""
    # llama.cpp (local GGUF).
    model_path: str = ""
    n_ctx: int = Field(default=8192, ge=512)
    n_threads: int | None = None
    chat_format: str | None = None  # None: the GGUF's own template
    # Directory of llama.cpp's disk prompt cache: the KV state of the static prefix survives restarts.
    prompt_cache_dir: str = ""
    # OpenAI-compatible endpoint.
    base_url: str = ""
    api_key: str = ""
    model: str = ""
    timeout_s: float = Field(default=60.0, gt=0)
    max_retries: int = Field(default=3, ge=0, le=10)
    # vLLM (in-process async engine, serving/engines/vllm_engine.py).
    vllm_model: str = ""
    vllm_max_model_len: int = Field(default=4096, ge=256)
    vllm_gpu_memory_utilization: float = Field(default=0.85, gt=0, le=1)
    vllm_enable_prefix_caching: bool = True  # the static prompt prefix computed once per replica
    vllm_max_num_seqs: int = Field(default=128, ge=1)  # sequences decoding at once (continuous batching)
    # Recorded engine (replays a recording file; see serving/engines/recorded.py).
    recording_path: str = ""
    # Stand-in (benchmarks of the backend only; see serving/engines/standin.py).
    standin_mode: Literal["no_op", "derived"] = "no_op"
    standin_latency_ms: float = Field(default=0.0, ge=0)


class Autoscaling(BaseModel):
    model_config = ConfigDict(extra="forbid")

    min_replicas: int = Field(default=1, ge=0)
    max_replicas: int = Field(default=1, ge=1)
    # Requests in flight per replica Serve aims for: about one @serve.batch of work.
    target_ongoing_requests: float = Field(default=4.0, gt=0)
    upscale_delay_s: float = Field(default=30.0, ge=0)
    downscale_delay_s: float = Field(default=600.0, ge=0)

    @model_validator(mode="after")
    def _bounds(self) -> Autoscaling:
        if self.min_replicas > self.max_replicas:
            raise ValueError("autoscaling.min_replicas is above max_replicas")
        return self


class AppConfig(BaseModel):
    """The Ray Serve MemListener application."""

    model_config = ConfigDict(extra="forbid")

    engine: EngineConfig = Field(default_factory=EngineConfig)
    max_batch_size: int = Field(default=16, ge=1, le=256)
    batch_wait_timeout_s: float = Field(default=0.05, ge=0)
    # A fixed replica count, or (``autoscaling`` set) Serve scales between its bounds by load.
    num_replicas: int = Field(default=1, ge=1)
    autoscaling: Autoscaling | None = None
    num_cpus: float = Field(default=1.0, gt=0)
    num_gpus: float = Field(default=0.0, ge=0)
    max_ongoing_requests: int = Field(default=64, ge=1)
    lenient_gate: bool = False

    @model_validator(mode="after")
    def _scaling(self) -> AppConfig:
        if self.autoscaling and self.max_ongoing_requests < self.autoscaling.target_ongoing_requests:
            raise ValueError(
                "max_ongoing_requests is below autoscaling.target_ongoing_requests: it would never scale"
            )
        return self

    def replica_options(self) -> dict[str, Any]:
        if self.autoscaling is None:
            return {"num_replicas": self.num_replicas}
        return {"autoscaling_config": self.autoscaling.model_dump()}


def prompt_mode_for(config: EngineConfig) -> PromptMode:
    """The stand-in's outputs and the recordings are full-enum JSON; every other kind points."""
    if config.prompt_mode is not None:
        return config.prompt_mode
    return "full_enum" if config.kind in ("standin", "recorded") else "pointing"


def check_engine_config(config: EngineConfig) -> None:
    """Combinations the field types cannot express; raises ValueError."""
    if config.kind == "extractive" and prompt_mode_for(config) != "pointing":
        raise ValueError("the extractive listener works on the pointing pipeline (prompt_mode='pointing')")
