"""Where the model comes from: a path, a local hub cache, a download, or the demo model."""

from __future__ import annotations

import logging
import os
import socket
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


def local_candidates(hub_id: str, home: Path | None = None) -> list[Path]:
    """Directories where ModelScope and Hugging Face keep `hub_id` (ModelScope first)."""
    home = home or Path.home()
    org, _, name = hub_id.partition("/")
    ms_root = Path(os.environ.get("MODELSCOPE_CACHE", home / ".cache" / "modelscope"))
    candidates = [
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


def find_local(hub_id: str, home: Path | None = None) -> Path | None:
    for candidate in local_candidates(hub_id, home):
        if is_model_dir(candidate):
            return candidate
    return None


def _reachable(host: str, timeout: float) -> bool:
    try:
        with socket.create_connection((host, 443), timeout=timeout):
            return True
    except OSError:
        return False


def download(hub_id: str, timeout: float) -> Path | None:
    """Fetch `hub_id` (ModelScope first, then Hugging Face); None when offline."""
    if _reachable("www.modelscope.cn", timeout):
        try:
            from modelscope import snapshot_download as ms_download

            return Path(ms_download(hub_id))
        except Exception as exc:  # not installed, or the hub failed
            logger.warning("ModelScope download of %s failed: %s", hub_id, exc)
    if _reachable("huggingface.co", timeout):
        try:
            from huggingface_hub import snapshot_download as hf_download

            return Path(hf_download(hub_id))
        except Exception as exc:
            logger.warning("Hugging Face download of %s failed: %s", hub_id, exc)
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
        return _explicit(requested)
    local = find_local(DEFAULT_MODEL)
    if local is None:
        local = download(DEFAULT_MODEL, settings.download_timeout)
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


def _explicit(requested: str) -> ModelSource:
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
    local = find_local(requested)
    if local is not None:
        return ModelSource(path=str(local), requested=requested, hub_id=requested)
    # Let vLLM fetch it (it uses the Hugging Face cache and honours HF_HUB_OFFLINE).
    return ModelSource(path=requested, requested=requested, hub_id=requested)
