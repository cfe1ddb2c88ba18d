"""Fixtures shared by the unit tests of the tiny test model."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from app.tiny_model import write_tiny_model


@pytest.fixture(scope="session")
def tiny_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_tiny_model(tmp_path_factory.mktemp("tiny") / "model", "tiny", seed=0)


@pytest.fixture(scope="session")
def tokenizer(tiny_dir: Path) -> Any:
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(tiny_dir)
