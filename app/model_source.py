"""Where the model comes from: a path, a local hub cache, a download, or the demo model."""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from pathlib import Path

from app.settings import DEFAULT_MODEL, Settings

logger = logging.getLogger(__name__)

DEMO_WARNING = (
    "DEMO MODE: the default model Qwen/Qwen3-0.6B could not be found locally or downloaded, "
    "so the built-in tiny random model is served; its answers are noise. Pass a model path "
    "(vllm-gateway serve /path/to/Qwen3-0.6B) or run `vllm-gateway download` when online."
)


class ModelUnavailableError(RuntimeError):
    """The model the user asked for cannot be loaded."""


@dataclass(frozen=True)
class ModelSource:
    """The resolved model: what the engine loads and what the user called it."""

    path: str  # local directory or hub id handed to vLLM
    requested: str  # what the user asked for (or the default)
    hub_id: str | None = None
    demo: bool = False


def models_root(models_dir: str | None = None, home: Path | None = None) -> Path:
    """The gateway's own model store (`GATEWAY_MODELS_DIR`, ~/.cache/vllm-gateway/models)."""
    if models_dir:
        return Path(models_dir).expanduser()
    return (home or Path.home()) / ".cache" / "vllm-gateway" / "models"


def default_download_dir(hub_id: str, models_dir: str | None = None) -> Path:
    """Where `vllm-gateway download` puts `hub_id`: `<models_dir>/<org>/<name>`."""
    org, _, name = hub_id.partition("/")
    return models_root(models_dir) / org / name


def local_candidates(
    hub_id: str, home: Path | None = None, models_dir: str | None = None
) -> list[Path]:
    """Directories that may hold `hub_id`: the gateway's own downloads (`models_dir`),
    then the ModelScope cache, then the Hugging Face cache."""
    home = home or Path.home()
    org, _, name = hub_id.partition("/")
    ms_root = Path(os.environ.get("MODELSCOPE_CACHE", home / ".cache" / "modelscope"))
    candidates = [
        models_root(models_dir, home) / org / name,
        ms_root / "hub" / "models" / org / name,
        ms_root / "hub" / "models" / org.lower() / name,
        ms_root / "hub" / org / name,
        ms_root / "models" / org / name,
    ]
    hf_home = Path(os.environ.get("HF_HOME", home / ".cache" / "huggingface"))
    hf_hub = Path(os.environ.get("HF_HUB_CACHE", hf_home / "hub"))
    snapshots = hf_hub / f"models--{org}--{name}" / "snapshots"
    if snapshots.is_dir():
        candidates.extend(
            sorted(snapshots.iterdir(), key=lambda p: p.stat().st_mtime, reverse=True)
        )
    return candidates


def is_model_dir(path: Path) -> bool:
    return (path / "config.json").is_file()


def find_local(hub_id: str, home: Path | None = None, models_dir: str | None = None) -> Path | None:
    for candidate in local_candidates(hub_id, home, models_dir):
        if is_model_dir(candidate):
            return candidate
    return None


def download(hub_id: str, timeout: float, models_dir: str | None = None) -> Path | None:
    """Fetch `hub_id` into the gateway's models dir (ModelScope first, then Hugging Face);
    None when no hub can be reached."""
    from app.download import DownloadError, fetch_model

    try:
        return fetch_model(hub_id, default_download_dir(hub_id, models_dir), timeout=timeout)
    except DownloadError as exc:
        logger.info("%s", exc)
        return None


def write_demo_model(directory: str) -> Path:
    from app.tiny_model import write_tiny_model

    target = Path(directory).expanduser()
    if not is_model_dir(target):
        write_tiny_model(target)
    return target


def resolve_model_source(settings: Settings) -> ModelSource:
    """The model to load. A model the user chose must load; the default may fall back."""
    if not settings.model_is_default:
        requested = str(settings.model)
        return _explicit(requested, settings.models_dir)
    local = find_local(DEFAULT_MODEL, models_dir=settings.models_dir)
    if local is None:
        local = download(DEFAULT_MODEL, settings.download_timeout, settings.models_dir)
    if local is not None:
        return ModelSource(path=str(local), requested=DEFAULT_MODEL, hub_id=DEFAULT_MODEL)
    if not settings.allow_demo_fallback:
        raise ModelUnavailableError(
            f"The default model {DEFAULT_MODEL} is not in the local ModelScope or Hugging Face "
            "cache and could not be downloaded. Pass a model path, or enable the demo fallback."
        )
    logger.warning(DEMO_WARNING)
    demo = write_demo_model(settings.demo_model_dir)
    return ModelSource(path=str(demo), requested=str(demo), demo=True)


def _explicit(requested: str, models_dir: str | None = None) -> ModelSource:
    path = Path(requested).expanduser()
    if path.exists():
        if not is_model_dir(path):
            raise ModelUnavailableError(
                f"{requested} has no config.json: it is not a model directory."
            )
        return ModelSource(path=str(path.resolve()), requested=requested)
    looks_like_hub_id = requested.count("/") == 1 and not requested.startswith((".", "/", "~"))
    if not looks_like_hub_id:
        raise ModelUnavailableError(f"Model directory {requested} does not exist.")
    local = find_local(requested, models_dir=models_dir)
    if local is not None:
        return ModelSource(path=str(local), requested=requested, hub_id=requested)
    # Let vLLM fetch it (it uses the Hugging Face cache and honours HF_HUB_OFFLINE).
    return ModelSource(path=requested, requested=requested, hub_id=requested)
