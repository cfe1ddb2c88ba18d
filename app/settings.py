"""Gateway settings: one pydantic-settings model for env vars, `.env` and CLI flags.

vLLM's own engine flags (`--max-model-len`, `--max-num-seqs`, ...) are not declared
here: the CLI reuses vLLM's parser for them (see `app.cli`), and `GATEWAY_<FLAG>`
environment variables reach them through `app.engine_args.engine_env_argv`.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from app.model_names import parse_aliases

DEFAULT_MODEL = "Qwen/Qwen3-0.6B"
ENV_PREFIX = "GATEWAY_"


class Settings(BaseSettings):
    """Everything the gateway itself needs; engine flags live in `engine_argv`."""

    model_config = SettingsConfigDict(
        env_prefix=ENV_PREFIX,
        env_file=".env",
        env_file_encoding="utf-8",
        extra="ignore",
        protected_namespaces=(),
    )

    model: str | None = Field(
        default=None,
        description="Model path or hub id; unset means Qwen/Qwen3-0.6B with demo fallback.",
    )
    host: str = Field(default="0.0.0.0", description="Address to listen on.")
    port: int = Field(default=8000, ge=0, le=65535, description="Port to listen on.")
    log_level: Literal["debug", "info", "warning", "error"] = Field(
        default="info", description="Log level of the gateway and uvicorn."
    )
    log_format: Literal["text", "json"] = Field(
        default="text", description="Log lines as text, or as one JSON object per line."
    )
    access_log: bool = Field(
        default=False,
        description="Log one line per request: id, route, status, latency, token counts.",
    )
    allow_demo_fallback: bool = Field(
        default=True,
        description="Serve the built-in tiny demo model when the default model can't be had.",
    )
    demo_model_dir: str = Field(
        default="~/.cache/vllm-gateway/tiny-qwen3",
        description="Where the tiny demo model is written when it is needed.",
    )
    download_timeout: float = Field(
        default=5.0, gt=0, description="Seconds to wait for a model hub before giving up."
    )
    models_dir: str = Field(
        default="~/.cache/vllm-gateway/models",
        description="Where `vllm-gateway download` puts models and serve finds them by name.",
    )
    model_aliases: str = Field(
        default="", description="Extra model names, e.g. 'qwen=/models/Qwen3-0.6B,q3=...'."
    )
    default_system_prompt: str = Field(
        default="", description="System message added to conversations that have none."
    )
    fill_system_message: bool = Field(
        default=True,
        description="Add the default system message (empty or not) where a conversation has"
        " none; off sends conversations as they come (7 fewer prompt tokens on Qwen3).",
    )
    default_enable_thinking: bool | None = Field(
        default=None,
        description="enable_thinking when the request says nothing (unset: the template's own).",
    )
    default_temperature: float | None = Field(
        default=None, ge=0, le=2, description="temperature when the request has none."
    )
    default_top_p: float | None = Field(
        default=None, gt=0, le=1, description="top_p when the request has none."
    )
    default_top_k: int | None = Field(
        default=None, ge=-1, description="top_k when the request has none."
    )
    reasoning_in_content: bool = Field(
        default=False,
        description="Keep <think> blocks inline in content (for clients that drop reasoning).",
    )
    api_key: str = Field(
        default="", description="API key(s), comma-separated; empty means no key is needed."
    )
    api_key_file: str | None = Field(
        default=None, description="File with one API key per line (added to api_key)."
    )
    protect_health_and_metrics: bool = Field(
        default=False, description="Require the API key on /health and /metrics too."
    )
    cors_allow_origins: str = Field(
        default="", description="Origins allowed by CORS, comma-separated ('*' for any)."
    )
    max_pending_requests: int = Field(
        default=1024, ge=1, description="Inference requests inside the gateway before 503."
    )
    drain_timeout: float = Field(
        default=30.0, ge=0, description="Seconds to let in-flight requests finish on SIGTERM."
    )
    exit_on_engine_death: bool = Field(
        default=True, description="Exit (so a supervisor restarts us) when the engine dies."
    )
    engine_death_exit_code: int = Field(
        default=3, ge=1, le=255, description="Exit status when the engine has died."
    )
    api_server_count: int = Field(
        default=0,
        ge=0,
        le=64,
        description="HTTP worker processes sharing the one engine (as vllm serve's flag); "
        "0 = auto: 1 on CPU, one per 4 cores up to 2 with a GPU.",
    )
    connections_per_worker: int = Field(
        default=0,
        ge=0,
        description="With several HTTP workers: the open connections each worker fills up to "
        "before the next takes new ones (fewer engine clients busy at moderate "
        "concurrency); 0 = off (see `--spread-connections`).",
    )
    spread_connections: bool = Field(
        default=True,
        description="With several HTTP workers: each listens on a socket of its own "
        "(SO_REUSEPORT) and the kernel deals new connections out among them, so a burst "
        "spreads over the workers (off: one shared socket, and the first worker awake "
        "accepts every connection waiting, as vllm serve's workers do).",
    )
    worker_start: Literal["spawn", "forkserver"] = Field(
        default="forkserver",
        description="With several HTTP workers: how they are started; forkserver forks "
        "each from one process that imported vLLM and loaded the tokenizer once, so the "
        "workers share those pages (spawn: each imports and loads them afresh, as vllm "
        "serve's workers do).",
    )
    warmup: bool = Field(
        default=True,
        description="Before serving, run a few short generations with the default sampling "
        "(first-use costs, and vLLM 0.26's sampling-kernel compiles on a GPU, leave the "
        "first client's path).",
    )
    fast_tokenizer: bool | None = Field(
        default=None,
        description="Encode prompts with fastokens (the Rust tokenizer of vLLM's Rust "
        "frontend) where it gives the Hugging Face tokenizer's ids on a check sample "
        "(off: the Hugging Face tokenizer, as vllm serve's Python frontend); unset = auto: "
        "on with a GPU, off on CPU, where the engine's prefill dwarfs the encode and "
        "fastokens' ~30 MiB per process count more.",
    )
    max_body_bytes: int = Field(
        default=8 * 1024 * 1024, gt=0, description="Largest request body accepted, in bytes."
    )
    engine_switch_interval_ms: float | None = Field(
        default=None,
        gt=0,
        description="The engine core process's interpreter-lock switch interval, in ms "
        "(unset: Python's 5): shorter lets its engine loop win the lock back sooner while "
        "its input thread takes a burst of requests in (an experiment that did not pay on "
        "the H200, see docs/benchmarks/profiling.md, session 42).",
    )
    fast_block_hashes: bool = Field(
        default=True,
        description="The engine core computes the prefix cache's block hashes with less "
        "Python per block (the same hashes; requests with multimodal, LoRA, cache-salt or "
        "prompt-embedding keys get vLLM's own): less work under the interpreter lock "
        "while a burst of requests comes in (docs/benchmarks/profiling.md, session 41).",
    )
    engine_overrides: dict[str, Any] | None = Field(
        default=None,
        description="vLLM engine options set by the CLI; None reads GATEWAY_<FLAG> env vars.",
        exclude=True,
    )

    @field_validator("model_aliases")
    @classmethod
    def _aliases_parse(cls, value: str) -> str:
        """`ALIAS=TARGET,...` checked at start-up, not after the engine has loaded."""
        parse_aliases(value)
        return value

    @property
    def model_is_default(self) -> bool:
        """True when the user did not choose a model."""
        return self.model is None or self.model == ""


def gateway_field_names() -> list[str]:
    """Settings fields that the CLI exposes as `--flag` options."""
    return [name for name in Settings.model_fields if name not in {"engine_overrides", "model"}]
