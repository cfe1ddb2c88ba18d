"""`bench.engine_trace` in every process started with this folder on PYTHONPATH, when
ENGINE_TRACE_DIR is set (the checkout's root goes last on sys.path, for `bench`; a gateway
run from another checkout still imports its own `app` from its working directory)."""

import os

if os.environ.get("ENGINE_TRACE_DIR"):
    import sys
    from pathlib import Path

    sys.path.append(str(Path(__file__).resolve().parent.parent.parent))
    from bench.engine_trace import install

    install(os.environ["ENGINE_TRACE_DIR"])
